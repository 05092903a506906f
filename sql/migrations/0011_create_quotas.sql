-- create quotas and the credit ledger: users' balance and premium flag, daily usage, consumptions and the RPCs
-- get_quota, consume_quota (authenticated), grant_credits and set_premium (service_role)
--
-- Model. A consume takes, in order: premium (unmetered, counted in premium_used), the app's daily free allowance
-- (apps.daily_free_allowance, counted in free_used), one credit (counted in credit_used, and a ledger row); when
-- nothing is left it raises PT429 'quota exceeded' (HTTP 429) with the whole seconds until the reset as detail (the
-- Retry-After value) and hint 'resets_at=<ISO-8601 UTC>'. The day is the date of guestpass.clock() in the user's
-- timezone; it resets at the next local midnight.
--
-- Credits. users.credits_balance changes only through guestpass.apply_credit_change, which writes the ledger row and
-- the balance in one transaction; a trigger refuses any balance that is not the balance_after of the user's newest
-- ledger row, so the balance always equals the sum of the ledger. App roles cannot update credits_balance,
-- is_premium or initial_grant_claimed: the column-level grant of 0006 is left as it is.
--
-- Concurrency. Every writer locks the user row first, FOR NO KEY UPDATE: that serialises all consumes and credit
-- changes of one user (so READ COMMITTED statements after the lock see what the previous holder committed), and it
-- does not conflict with the KEY SHARE lock that inserting a row referencing the user takes (an app's metered insert
-- before its consume cannot deadlock with another). Relies on READ COMMITTED, the server's default.
--
-- Time. guestpass.clock() is now() unless the transaction sets guestpass.clock_override (tests, with set local);
-- requests cannot set it: the RPC endpoint only calls functions, and none exposes set_config.

alter table public.users
    add column if not exists credits_balance integer not null default 0
        constraint users_credits_balance_check check (credits_balance >= 0),
    add column if not exists is_premium boolean not null default false,
    add column if not exists initial_grant_claimed boolean not null default false;

comment on column public.users.credits_balance is
    'GuestPass: credits left; always the balance_after of the user''s newest guestpass.credit_ledger row (0 without '
    'one). Changed only by the server''s functions.';
comment on column public.users.is_premium is
    'GuestPass: premium users are not metered (set by the app''s backend with public.set_premium).';
comment on column public.users.initial_grant_claimed is
    'GuestPass: mirrors Apple''s DeviceCheck bit0 for this user: the welcome grant was given or refused. Server only.';

-- Time zones: IANA names only, checked on write.

create or replace function guestpass.check_user_timezone()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
    if new.timezone is null or new.timezone = 'UTC' then
        return new;  -- null: the NOT NULL constraint answers (23502); UTC: the default, skip the slow lookup
    end if;
    if tg_op = 'UPDATE' and new.timezone = old.timezone then
        return new;
    end if;
    if new.timezone like 'posix/%' or new.timezone like 'right/%'
       or new.timezone in ('localtime', 'posixrules', 'Factory')
       or not exists (select 1 from pg_catalog.pg_timezone_names as z where z.name = new.timezone) then
        raise exception 'unknown time zone' using errcode = '22023',
            detail = format('%s is not an IANA time zone name', left(new.timezone, 100)),
            hint = 'Use a name such as Europe/Paris or UTC (case matters).';
    end if;
    return new;
end
$$;

comment on function guestpass.check_user_timezone() is
    'GuestPass: BEFORE INSERT OR UPDATE OF timezone trigger on public.users: raises 22023 ''unknown time zone'' unless '
    'the new timezone is an IANA name known to PostgreSQL (pg_timezone_names, without the posix/ and right/ copies).';

drop trigger if exists users_check_timezone on public.users;
create trigger users_check_timezone
    before insert or update of timezone on public.users
    for each row
    execute function guestpass.check_user_timezone();

-- The clock.

create or replace function guestpass.clock()
returns timestamptz
language sql
stable
set search_path = ''
as $$
    select coalesce(nullif(pg_catalog.current_setting('guestpass.clock_override', true), '')::timestamptz,
                    pg_catalog.now())
$$;

comment on function guestpass.clock() is
    'GuestPass internal: the time quotas and welcome-grant claims use: now(), or the transaction''s '
    'guestpass.clock_override setting when set (tests: set local guestpass.clock_override = ''…'').';

-- Daily usage.

create table if not exists guestpass.daily_usage (
    user_id uuid not null,
    app_id uuid not null,
    day date not null,
    free_used integer not null default 0,
    premium_used integer not null default 0,
    credit_used integer not null default 0,
    constraint daily_usage_pkey primary key (user_id, day),
    constraint daily_usage_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint daily_usage_free_used_check check (free_used >= 0),
    constraint daily_usage_premium_used_check check (premium_used >= 0),
    constraint daily_usage_credit_used_check check (credit_used >= 0)
);

comment on table guestpass.daily_usage is
    'GuestPass: consumes per user and local day (the date in the user''s timezone), by what paid for them: the free '
    'allowance, premium, or a credit. No row = nothing used that day.';

alter table guestpass.daily_usage enable row level security;
alter table guestpass.daily_usage force row level security;

-- The credit ledger.

create table if not exists guestpass.credit_ledger (
    id bigserial not null,
    app_id uuid not null,
    user_id uuid not null,
    change integer not null,
    reason text not null,
    balance_after integer not null,
    idempotency_key text,
    created_at timestamptz not null default now(),
    constraint credit_ledger_pkey primary key (id),
    constraint credit_ledger_user_id_fkey foreign key (user_id, app_id)
        references public.users (id, app_id) on delete cascade,
    constraint credit_ledger_user_idempotency_key_key unique (user_id, idempotency_key),
    constraint credit_ledger_change_check check (change <> 0),
    constraint credit_ledger_reason_check check (char_length(reason) between 1 and 200),
    constraint credit_ledger_balance_after_check check (balance_after >= 0),
    constraint credit_ledger_idempotency_key_check check (char_length(idempotency_key) between 1 and 300)
);

comment on table guestpass.credit_ledger is
    'GuestPass: every change of a user''s credits_balance, in order (id): change (non-zero), reason (consume, '
    'welcome_grant, grant, admin, …), balance_after, and an optional idempotency key unique per user (internal '
    'prefixes: consume:, welcome:, grant:). Written only by guestpass.apply_credit_change.';

-- The user's newest row (the balance check) and the user's history.
create index if not exists credit_ledger_user_id_id_idx on guestpass.credit_ledger (user_id, id);

alter table guestpass.credit_ledger enable row level security;
alter table guestpass.credit_ledger force row level security;

create or replace function guestpass.check_credits_balance()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
    v_last integer;
begin
    if tg_op = 'INSERT' then
        if new.credits_balance <> 0 then
            raise exception 'a new user starts with no credits' using errcode = '23514',
                hint = 'Add credits with guestpass.apply_credit_change.';
        end if;
    elsif new.credits_balance is distinct from old.credits_balance then
        select l.balance_after into v_last
        from guestpass.credit_ledger as l
        where l.user_id = new.id
        order by l.id desc
        limit 1;
        if v_last is distinct from new.credits_balance then
            raise exception 'credits_balance changes only with its ledger row' using errcode = '23514',
                hint = 'Use guestpass.apply_credit_change.';
        end if;
    end if;
    return new;
end
$$;

comment on function guestpass.check_credits_balance() is
    'GuestPass: BEFORE INSERT OR UPDATE OF credits_balance trigger on public.users: a new user has 0 credits, and a '
    'new balance must be the balance_after of the user''s newest ledger row (else 23514), so the balance never moves '
    'without its ledger row.';

drop trigger if exists users_check_credits_balance on public.users;
create trigger users_check_credits_balance
    before insert or update of credits_balance on public.users
    for each row
    execute function guestpass.check_credits_balance();

create or replace function guestpass.apply_credit_change(
    p_user uuid,
    p_change integer,
    p_reason text,
    p_idempotency_key text
)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid;
    v_balance integer;
    v_new bigint;
    v_prior guestpass.credit_ledger%rowtype;
begin
    if p_change is null or p_change = 0 then
        raise exception 'a credit change must be a non-zero integer' using errcode = '22023';
    end if;
    if p_reason is null or char_length(p_reason) not between 1 and 200 then
        raise exception 'a credit change needs a reason of 1 to 200 characters' using errcode = '22023';
    end if;
    if char_length(p_idempotency_key) not between 1 and 300 then
        raise exception 'an idempotency key must have 1 to 300 characters' using errcode = '22023';
    end if;

    select u.app_id, u.credits_balance into v_app, v_balance
    from public.users as u
    where u.id = p_user
    for no key update;
    if not found then
        raise exception 'unknown user' using errcode = '22023';
    end if;

    if p_idempotency_key is not null then
        select l.* into v_prior
        from guestpass.credit_ledger as l
        where l.user_id = p_user and l.idempotency_key = p_idempotency_key;
        if found then
            if v_prior.change <> p_change or v_prior.reason <> p_reason then
                raise exception 'idempotency key already used for another credit change' using errcode = '22023',
                    detail = format('earlier change %s (%s)', v_prior.change, v_prior.reason);
            end if;
            return v_prior.balance_after;
        end if;
    end if;

    v_new := v_balance::bigint + p_change;
    if v_new < 0 then
        raise exception 'insufficient credits' using errcode = '22023',
            detail = format('balance %s, change %s', v_balance, p_change);
    end if;
    if v_new > 2147483647 then
        raise exception 'the credit balance would exceed 2147483647' using errcode = '22023';
    end if;

    insert into guestpass.credit_ledger (app_id, user_id, change, reason, balance_after, idempotency_key)
    values (v_app, p_user, p_change, p_reason, v_new, p_idempotency_key);
    update public.users as u set credits_balance = v_new where u.id = p_user;
    return v_new;
end
$$;

comment on function guestpass.apply_credit_change(uuid, integer, text, text) is
    'GuestPass internal: the only way to change a balance. Locks the user row, writes the ledger row (p_change, '
    'p_reason, balance_after) and the new users.credits_balance, and returns it. A p_idempotency_key the user has '
    'used before returns that row''s balance_after and writes nothing (22023 if it was another change or reason). '
    'Raises 22023 on a zero change, a missing reason, an unknown user, or a balance that would go negative.';

-- Idempotent consumes.

create table if not exists guestpass.consumptions (
    user_id uuid not null,
    request_id text not null,
    result jsonb not null,
    created_at timestamptz not null default now(),
    constraint consumptions_pkey primary key (user_id, request_id),
    constraint consumptions_user_id_fkey foreign key (user_id) references public.users (id) on delete cascade,
    constraint consumptions_request_id_check check (char_length(request_id) between 1 and 255)
);

comment on table guestpass.consumptions is
    'GuestPass: the answer of every consume made with a request id (p_request_id or the Idempotency-Key header), so '
    'a retry returns the first answer without charging again.';

alter table guestpass.consumptions enable row level security;
alter table guestpass.consumptions force row level security;

-- Quota state and consume, internal (they take the user and the time; the RPCs pass the caller and the clock).

create or replace function guestpass.quota_resets_at(p_timezone text, p_at timestamptz)
returns timestamptz
language sql
stable
set search_path = ''
as $$
    select (((p_at at time zone p_timezone)::date + 1)::timestamp) at time zone p_timezone
$$;

comment on function guestpass.quota_resets_at(text, timestamptz) is
    'GuestPass internal: the next local midnight after p_at in time zone p_timezone (a midnight skipped by a DST '
    'change resolves to the first instant of the new day).';

create or replace function guestpass.iso_utc(p_at timestamptz)
returns text
language sql
immutable
set search_path = ''
as $$
    select pg_catalog.to_char(p_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
$$;

comment on function guestpass.iso_utc(timestamptz) is
    'GuestPass internal: p_at as ISO-8601 in UTC to the second, e.g. 2025-01-31T10:00:00Z (independent of the '
    'session''s TimeZone).';

create or replace function guestpass.quota_state(p_user uuid, p_at timestamptz)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
    select jsonb_build_object(
        'quota_remaining', greatest(a.daily_free_allowance - coalesce(d.free_used, 0), 0),
        'daily_limit', a.daily_free_allowance,
        'credits_remaining', u.credits_balance,
        'is_premium', u.is_premium,
        'resets_at', guestpass.iso_utc(guestpass.quota_resets_at(u.timezone, p_at))
    )
    from public.users as u
    join guestpass.apps as a on a.id = u.app_id
    left join guestpass.daily_usage as d
        on d.user_id = u.id and d.day = (p_at at time zone u.timezone)::date
    where u.id = p_user
$$;

comment on function guestpass.quota_state(uuid, timestamptz) is
    'GuestPass internal: user p_user''s quota at p_at: {quota_remaining (free left that local day), daily_limit, '
    'credits_remaining, is_premium, resets_at (next local midnight, ISO-8601 UTC)}; null for an unknown user.';

create or replace function guestpass.consume_at(p_user uuid, p_request_id text, p_at timestamptz)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_app uuid;
    v_timezone text;
    v_premium boolean;
    v_balance integer;
    v_allowance integer;
    v_day date;
    v_resets_at timestamptz;
    v_free_used integer;
    v_charged text;
    v_result jsonb;
begin
    if p_at is null then
        raise exception 'a time is required' using errcode = '22023';
    end if;
    if char_length(p_request_id) not between 1 and 255 then
        raise exception 'a request id must have 1 to 255 characters' using errcode = '22023';
    end if;

    -- First the lock: every consume and credit change of this user queues here.
    select u.app_id, u.timezone, u.is_premium, u.credits_balance, a.daily_free_allowance
    into v_app, v_timezone, v_premium, v_balance, v_allowance
    from public.users as u
    join guestpass.apps as a on a.id = u.app_id
    where u.id = p_user
    for no key update of u;
    if not found then
        raise exception 'unknown user' using errcode = '22023';
    end if;

    if p_request_id is not null then
        select c.result into v_result
        from guestpass.consumptions as c
        where c.user_id = p_user and c.request_id = p_request_id;
        if found then
            return v_result;
        end if;
    end if;

    v_day := (p_at at time zone v_timezone)::date;
    v_resets_at := guestpass.quota_resets_at(v_timezone, p_at);
    select d.free_used into v_free_used
    from guestpass.daily_usage as d
    where d.user_id = p_user and d.day = v_day;
    v_free_used := coalesce(v_free_used, 0);

    if v_premium then
        v_charged := 'premium';
    elsif v_free_used < v_allowance then
        v_charged := 'free';
        v_free_used := v_free_used + 1;
    elsif v_balance >= 1 then
        v_charged := 'credit';
        v_balance := guestpass.apply_credit_change(
            p_user, -1, 'consume', case when p_request_id is not null then 'consume:' || p_request_id end
        );
    else
        raise exception 'quota exceeded' using errcode = 'PT429',
            detail = greatest(ceil(extract(epoch from v_resets_at - p_at)), 1)::bigint::text,
            hint = 'resets_at=' || guestpass.iso_utc(v_resets_at);
    end if;

    insert into guestpass.daily_usage as d (user_id, app_id, day, free_used, premium_used, credit_used)
    values (p_user, v_app, v_day,
            (v_charged = 'free')::integer, (v_charged = 'premium')::integer, (v_charged = 'credit')::integer)
    on conflict (user_id, day) do update
    set free_used = d.free_used + excluded.free_used,
        premium_used = d.premium_used + excluded.premium_used,
        credit_used = d.credit_used + excluded.credit_used;

    v_result := jsonb_build_object(
        'quota_remaining', greatest(v_allowance - v_free_used, 0),
        'daily_limit', v_allowance,
        'credits_remaining', v_balance,
        'is_premium', v_premium,
        'resets_at', guestpass.iso_utc(v_resets_at),
        'charged', v_charged
    );

    if p_request_id is not null then
        insert into guestpass.consumptions (user_id, request_id, result) values (p_user, p_request_id, v_result);
    end if;
    return v_result;
end
$$;

comment on function guestpass.consume_at(uuid, text, timestamptz) is
    'GuestPass internal: consumes one unit for user p_user at time p_at: premium (unmetered, counted), else the day''s '
    'free allowance, else one credit (ledger reason consume, idempotency key consume:<request id>). Returns '
    '{quota_remaining, daily_limit, credits_remaining, is_premium, resets_at, charged: premium|free|credit}. With '
    'p_request_id, a request id the user used before returns the stored first answer and charges nothing. When '
    'nothing is left raises PT429 ''quota exceeded'', detail = whole seconds until resets_at (at least 1), hint = '
    'resets_at=<ISO-8601 UTC>. Race-free: locks the user row first. Raises 22023 on an unknown user or bad arguments.';

-- The caller's own user, for the client RPCs.

create or replace function guestpass.require_caller(p_user_id uuid)
returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    v_user uuid := auth.uid();
begin
    if v_user is null then
        raise exception 'no user in the request claims' using errcode = '42501';
    end if;
    if p_user_id is not null and p_user_id <> v_user then
        raise exception 'p_user_id must be the caller' using errcode = '42501';
    end if;
    if not exists (select 1 from public.users as u where u.id = v_user and u.app_id = auth.app_id()) then
        raise exception 'unknown user' using errcode = '42501';
    end if;
    return v_user;
end
$$;

comment on function guestpass.require_caller(uuid) is
    'GuestPass internal: the caller''s user id (claim sub) when p_user_id is null or equal to it and the user exists '
    'in the claims'' app; else raises 42501.';

-- A user of the caller's app, for the service-role RPCs.

create or replace function guestpass.require_app_user(p_user_id uuid)
returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
    if auth.app_id() is null then
        raise exception 'no app in the request claims' using errcode = '42501';
    end if;
    if p_user_id is null
       or not exists (select 1 from public.users as u where u.id = p_user_id and u.app_id = auth.app_id()) then
        raise exception 'the user is not a user of this app' using errcode = '42501';
    end if;
    return p_user_id;
end
$$;

comment on function guestpass.require_app_user(uuid) is
    'GuestPass internal: p_user_id when it is a user of the claims'' app; else raises 42501.';

-- The RPCs.

create or replace function public.get_quota(p_user_id uuid default null)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
    select guestpass.quota_state(guestpass.require_caller(p_user_id), guestpass.clock())
$$;

comment on function public.get_quota(uuid) is
    'GuestPass: the caller''s quota: {quota_remaining (free uses left today, in the user''s timezone), daily_limit, '
    'credits_remaining, is_premium, resets_at (ISO-8601 UTC, next local midnight)}. p_user_id is accepted for '
    'compatibility and must be the caller or null (else 42501).';

create or replace function public.consume_quota(p_user_id uuid default null, p_request_id text default null)
returns jsonb
language sql
volatile
security definer
set search_path = ''
as $$
    select guestpass.consume_at(guestpass.require_caller(p_user_id), p_request_id, guestpass.clock())
$$;

comment on function public.consume_quota(uuid, text) is
    'GuestPass: consumes one unit for the caller: premium (unmetered), else today''s free allowance, else one credit. '
    'Returns get_quota''s object after the consume plus charged (premium, free or credit). A p_request_id (or the '
    'Idempotency-Key header) used before returns the first answer without charging again. When nothing is left '
    'raises PT429 ''quota exceeded'' (HTTP 429) with detail = seconds until the reset (Retry-After) and hint '
    'resets_at=<ISO-8601 UTC>. p_user_id must be the caller or null (else 42501); a bad request id is 22023.';

create or replace function public.grant_credits(
    p_user_id uuid,
    p_amount integer,
    p_reason text default 'grant',
    p_idempotency_key text default null
)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid := guestpass.require_app_user(p_user_id);
begin
    if p_amount is null or p_amount <= 0 then
        raise exception 'p_amount must be a positive integer' using errcode = '22023';
    end if;
    if char_length(p_idempotency_key) not between 1 and 255 then
        raise exception 'p_idempotency_key must have 1 to 255 characters' using errcode = '22023';
    end if;
    perform guestpass.apply_credit_change(v_user, p_amount, coalesce(p_reason, 'grant'), 'grant:' || p_idempotency_key);
    return guestpass.quota_state(v_user, guestpass.clock());
end
$$;

comment on function public.grant_credits(uuid, integer, text, text) is
    'GuestPass, for an app''s backend (service_role): adds p_amount (> 0, else 22023) credits to user p_user_id of the '
    'caller''s app (else 42501), with ledger reason p_reason (default grant). A p_idempotency_key (up to 255 '
    'characters, stored as grant:<key>) used before for this user grants nothing again. Returns the user''s quota '
    '(get_quota''s object).';

create or replace function public.set_premium(p_user_id uuid, p_premium boolean)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    v_user uuid := guestpass.require_app_user(p_user_id);
begin
    if p_premium is null then
        raise exception 'p_premium must be true or false' using errcode = '22023';
    end if;
    update public.users as u set is_premium = p_premium where u.id = v_user and u.is_premium <> p_premium;
    return guestpass.quota_state(v_user, guestpass.clock());
end
$$;

comment on function public.set_premium(uuid, boolean) is
    'GuestPass, for an app''s backend (service_role): makes user p_user_id of the caller''s app (else 42501) premium '
    '(unmetered) or not. Returns the user''s quota (get_quota''s object).';

create or replace function guestpass.grant_credits_admin(p_user uuid, p_amount integer, p_reason text)
returns integer
language plpgsql
volatile
set search_path = ''
as $$
begin
    if p_amount is null or p_amount <= 0 then
        raise exception 'the amount must be a positive integer' using errcode = '22023';
    end if;
    return guestpass.apply_credit_change(p_user, p_amount, coalesce(p_reason, 'admin'), null);
end
$$;

comment on function guestpass.grant_credits_admin(uuid, integer, text) is
    'GuestPass, for the guestpass CLI (the owner): adds p_amount (> 0) credits to user p_user with ledger reason '
    'p_reason (default admin) and returns the new balance. Raises 22023 on a bad amount or an unknown user.';

-- Grants: nobody by default, then exactly the request role each RPC serves.

revoke execute on function
    guestpass.check_user_timezone(),
    guestpass.clock(),
    guestpass.check_credits_balance(),
    guestpass.apply_credit_change(uuid, integer, text, text),
    guestpass.quota_resets_at(text, timestamptz),
    guestpass.iso_utc(timestamptz),
    guestpass.quota_state(uuid, timestamptz),
    guestpass.consume_at(uuid, text, timestamptz),
    guestpass.require_caller(uuid),
    guestpass.require_app_user(uuid),
    guestpass.grant_credits_admin(uuid, integer, text),
    public.get_quota(uuid),
    public.consume_quota(uuid, text),
    public.grant_credits(uuid, integer, text, text),
    public.set_premium(uuid, boolean)
    from public;

grant execute on function public.get_quota(uuid), public.consume_quota(uuid, text) to authenticated;
grant execute on function public.grant_credits(uuid, integer, text, text), public.set_premium(uuid, boolean)
    to service_role;
