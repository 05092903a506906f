-- quotas and credits: the quota day, consume_quota and get_quota, the credit ledger, premium, the time zone
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only.
--
-- Notes carried from the change log before the re-baseline (NNNN names one of its files, in git history):
--
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
--
-- anchor each quota day when it starts, so changing the timezone cannot buy a second free allowance the same day
-- Until now the day of a consume was the date of the clock in the user's current timezone. Moving east across the
-- date line (UTC, then Pacific/Kiritimati) turned "today" into "tomorrow" and gave a fresh allowance at once, and
-- authenticated could change its own timezone column. Now:
--   * a quota day is a daily_usage row that records, when it starts, the instant it ends (resets_at: the next local
--     midnight in the timezone in effect then). Until that instant every consume counts against that row, whatever
--     the timezone says meanwhile;
--   * a new day starts only once the last one has ended AND the local date in the current timezone is later than the
--     last day's date. Keys only grow, and no key can run ahead of the calendar's latest timezone, so hopping
--     timezones gains no allowance the same day, and at most a shorter day once, as a real trip east does;
--   * after a move west the last day lasts until the new timezone's date passes it (its resets_at moves later).
-- A timezone change therefore takes effect from the next local day. Clients change it with public.set_timezone (it
-- validates the name); the column grant that let authenticated update users.timezone directly is revoked.
-- guestpass.quota_day is the one place that decides which day a consume belongs to; quota_state and consume_at use it.
--
-- one home for the quota object that get_quota, consume_quota and set_premium answer (built twice until now)
-- guestpass.quota_json is a single-expression, IMMUTABLE SQL function without a SET clause, so it is inlined where it
-- is called. quota_state and consume_at are redefined to use it; what they answer is unchanged.
--
-- the quota path near PostgreSQL's own ceiling: helpers PostgreSQL inlines, entry points whose plans it keeps
-- Measured on the bench (bench/consume.sh), consume_quota cost PostgreSQL about 0.8 ms of CPU per call where the
-- minimal consume (one upsert, bench/ceiling.sql) costs 0.19, and `select auth.uid()` alone cost more than the rest of
-- its request transaction. Two kinds of cost that are not the work:
--
-- 1. Small SQL functions that PostgreSQL could not inline. A SQL function is inlined into its caller's expression
--    only when its body is a single SELECT of one expression with no FROM, and it has no SET clause and is not
--    SECURITY DEFINER. auth.jwt() and auth.claim_uuid() selected FROM a subquery; guestpass.clock(),
--    guestpass.quota_resets_at() and guestpass.iso_utc() carried `SET search_path`. Each call then ran through the
--    SQL-function executor, which plans the body again on every call of every statement. Here each becomes a single
--    expression without a SET clause, so it costs what its expression costs: every policy that calls auth.uid()
--    gains too. They call only pg_catalog functions by qualified name and auth.* (see 0017 on why the auth helpers pin
--    no search_path); iso_utc and quota_json are STABLE, not IMMUTABLE, because to_char is (an IMMUTABLE function
--    whose body is not immutable is not inlined). sql/tests/26_inlining.sql fails when one of them stops inlining.
--    auth.jwt() keeps its contract (null unless the claims are a JSON object) and now parses the setting twice when it
--    is one; the claim helpers no longer go through it: `->>` on a JSON array or scalar is null, which is what they
--    answered for those before.
--
-- 2. SQL functions that are not inlinable by nature (a FROM clause, SECURITY DEFINER): public.consume_quota,
--    public.get_quota, guestpass.quota_state and guestpass.quota_day were LANGUAGE sql, so their bodies were planned
--    on every call. As plpgsql, each statement's plan is prepared once per connection and reused.
--
-- Behaviour, errors, grants and comments stay as they were; the functions keep their signatures.
--
-- one SECURITY DEFINER boundary per call on the quota path: the internals it calls run as their caller
-- guestpass.require_caller, guestpass.consume_at and guestpass.quota_day are internal: nobody but their owner may
-- execute them (REVOKE … FROM PUBLIC since 0011), and their callers (public.consume_quota, public.get_quota,
-- public.set_timezone, guestpass.quota_state) are SECURITY DEFINER functions of that owner with search_path ''.
-- Their own SECURITY DEFINER and `SET search_path` therefore changed nothing but the cost of every call: a second
-- switch of user, and a save and restore of search_path, nested in the first. Measured on the bench, dropping them
-- gains about 7% of consume_quota's throughput. They now run with their caller's rights and search_path; every name
-- in their bodies is schema-qualified, as before, so a caller with another search_path (the owner in a psql session,
-- the pgTAP suite) sees the same objects.
--
-- get_quota crosses one SECURITY DEFINER boundary, as consume_quota does since 0021: quota_state runs as its caller
-- guestpass.quota_state is internal (REVOKE … FROM PUBLIC) and called only by SECURITY DEFINER functions of its owner
-- with search_path '' (public.get_quota, grant_credits, set_premium, set_timezone). 0021 took the nested boundary off
-- the consume path and left this one on get_quota's: a second switch of user and a save and restore of search_path on
-- every call, buying nothing. Every name in its body is schema-qualified.
--
-- consume_quota finds and locks its caller once: the caller check folds into consume_at's row lock
-- public.consume_quota used to call guestpass.require_caller (a PL/pgSQL call whose query reads the caller's
-- public.users row to check that it exists in the claims' app) and then guestpass.consume_at, whose first statement
-- reads and locks that same row. consume_at now takes the app (p_app, default null): with it, the lock's query also
-- requires the user to be in that app and answers a missing one with require_caller's 42501 'unknown user'. So a
-- consume reads the row once and makes one PL/pgSQL call fewer; every answer is unchanged, except that a request id
-- of the wrong length is now refused (22023) before an unknown caller is (42501). Measured on the bench: about 10-15%
-- of consume_quota's throughput. consume_at keeps its three-argument calls (p_app defaults to null, the old meaning).
--
-- guestpass.quota_day becomes one SQL query that PostgreSQL inlines into its callers' queries
-- consume_quota (through guestpass.consume_at) and get_quota (through guestpass.quota_state) read the user's quota day
-- with guestpass.quota_day, a PL/pgSQL function: a call, a nested executor and a query of its own each time. Its
-- decision is one expression over the user's latest daily_usage row, so it is now a SQL function returning its one
-- row as a table: not STRICT, not VOLATILE, no SET clause and no SECURITY DEFINER, so the planner inlines it where it
-- is used in FROM (consume_at's `select … from guestpass.quota_day(…)`, quota_state's `cross join lateral`), and the
-- day is read by the caller's own statement. The rule is unchanged (23_quota_timezone_hopping and 25_one_clock check
-- it, 26_inlining checks the inlining). It still reads the row after consume_at has locked the user, in a statement of
-- its own: a consume never decides on a day read before the lock.

create or replace function guestpass.quota_resets_at(p_timezone text, p_at timestamptz)
    returns timestamptz
    language sql stable as $$
    select pg_catalog.timezone(p_timezone, (pg_catalog.timezone(p_timezone, p_at)::date + 1)::timestamp)
$$;

comment on function guestpass.quota_resets_at(text, timestamptz) is
    'GuestPass internal: the next local midnight after p_at in time zone p_timezone (a midnight skipped by a DST change '
    'resolves to the first instant of the new day). Inlinable: one expression, no SET clause.';

create or replace function guestpass.quota_day(p_user uuid, p_timezone text, p_at timestamptz)
    returns table (day date, resets_at timestamptz, free_used integer)
    language sql stable as $$
    select case when c.is_current then l.day else t.local_day end,
           case when not c.is_current then guestpass.quota_resets_at(p_timezone, p_at)
                when p_at < l.resets_at then l.resets_at
                else pg_catalog.timezone(p_timezone, (l.day + 1)::timestamp) end,
           case when c.is_current then l.free_used else 0 end
    from (select pg_catalog.timezone(p_timezone, p_at)::date as local_day) as t
    left join lateral (
        select d.day, d.resets_at, d.free_used
        from guestpass.daily_usage as d
        where d.user_id = p_user
        order by d.day desc
        limit 1
    ) as l on true
    -- The latest day has not ended (or the local date is not past it, after a move west): it is still the current one.
    cross join lateral (
        select coalesce(p_at < l.resets_at or t.local_day <= l.day, false) as is_current
    ) as c
$$;

comment on function guestpass.quota_day(uuid, text, timestamptz) is
    'GuestPass internal: the quota day user p_user is in at p_at (one row), with p_timezone the user''s timezone now: '
    'the latest daily_usage row while it has not ended (p_at < resets_at) or while the local date is not past it '
    '(after a move west; resets_at is then the local midnight after that date), else a new day keyed by the local '
    'date that ends at the next local midnight (free_used 0). So a timezone change takes effect from the next day. '
    'Inlinable where used in FROM: one SQL query, STABLE, no SET clause.';

create or replace function guestpass.quota_json(
    p_allowance integer,
    p_free_used integer,
    p_credits integer,
    p_premium boolean,
    p_resets_at timestamptz
)
    returns jsonb
    language sql stable as $$
    select pg_catalog.jsonb_build_object(
        'quota_remaining', greatest(p_allowance - p_free_used, 0),
        'daily_limit', p_allowance,
        'credits_remaining', p_credits,
        'is_premium', p_premium,
        'resets_at', guestpass.iso_utc(p_resets_at)
    )
$$;

comment on function guestpass.quota_json(integer, integer, integer, boolean, timestamptz) is
    'GuestPass internal: the quota object of get_quota and consume_quota: {quota_remaining (free left in the quota '
    'day), daily_limit, credits_remaining, is_premium, resets_at (ISO-8601 UTC)}. Inlinable: one expression, no SET '
    'clause (STABLE, as guestpass.iso_utc is).';

-- Runs as its caller, with its caller's search_path: it is called only by SECURITY DEFINER functions of its owner
-- with search_path '' (get_quota, grant_credits, set_premium, set_timezone), and every name in it is qualified.
create or replace function guestpass.quota_state(p_user uuid, p_at timestamptz)
    returns jsonb
    language plpgsql stable as $$
declare
    v_result jsonb;
begin
    select guestpass.quota_json(a.daily_free_allowance, q.free_used, u.credits_balance, u.is_premium, q.resets_at)
    into v_result
    from public.users as u
    join guestpass.apps as a on a.id = u.app_id
    cross join lateral guestpass.quota_day(u.id, u.timezone, p_at) as q
    where u.id = p_user;
    return v_result;
end
$$;

comment on function guestpass.quota_state(uuid, timestamptz) is
    'GuestPass internal: user p_user''s quota at p_at (guestpass.quota_json of the current quota day, see '
    'guestpass.quota_day); null for an unknown user.';

create or replace function guestpass.consume_at(p_user uuid, p_request_id text, p_at timestamptz, p_app uuid default null)
    returns jsonb
    language plpgsql as $$
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
    where u.id = p_user and (p_app is null or u.app_id = p_app)
    for no key update of u;
    if not found and p_app is not null then
        raise exception 'unknown user' using errcode = '42501';  -- as guestpass.require_caller answers a caller
    elsif not found then
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

    select q.day, q.resets_at, q.free_used into v_day, v_resets_at, v_free_used
    from guestpass.quota_day(p_user, v_timezone, p_at) as q;

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

    insert into guestpass.daily_usage as d (user_id, app_id, day, resets_at, free_used, premium_used, credit_used)
    values (p_user, v_app, v_day, v_resets_at,
            (v_charged = 'free')::integer, (v_charged = 'premium')::integer, (v_charged = 'credit')::integer)
    on conflict (user_id, day) do update
    set resets_at = excluded.resets_at,
        free_used = d.free_used + excluded.free_used,
        premium_used = d.premium_used + excluded.premium_used,
        credit_used = d.credit_used + excluded.credit_used;

    v_result := guestpass.quota_json(v_allowance, v_free_used, v_balance, v_premium, v_resets_at)
        || jsonb_build_object('charged', v_charged);

    if p_request_id is not null then
        insert into guestpass.consumptions (user_id, request_id, result) values (p_user, p_request_id, v_result);
    end if;
    return v_result;
end
$$;

comment on function guestpass.consume_at(uuid, text, timestamptz, uuid) is
    'GuestPass internal: consumes one unit for user p_user (of app p_app when given) at time p_at: premium '
    '(unmetered, counted), else the quota day''s free allowance (guestpass.quota_day), else one credit (ledger '
    'reason consume, idempotency key consume:<request id>). Returns {quota_remaining, daily_limit, '
    'credits_remaining, is_premium, resets_at, charged: premium|free|credit} (guestpass.quota_json plus charged). '
    'With p_request_id, a request id the user used before returns the stored first answer and charges nothing. '
    'When nothing is left raises PT429 ''quota exceeded'', detail = whole seconds until resets_at (at least 1), '
    'hint = resets_at=<ISO-8601 UTC>. Race-free: locks the user row first. Raises 22023 on bad arguments or an '
    'unknown user, 42501 on a user unknown in p_app (public.consume_quota passes the caller''s app).';

create or replace function public.consume_quota(p_user_id uuid default null, p_request_id text default null)
    returns jsonb
    language plpgsql security definer set search_path = '' as $$
begin
    -- The user's existence in the claims' app is checked by consume_at's row lock (42501 'unknown user').
    return guestpass.consume_at(guestpass.caller_id(p_user_id), p_request_id, guestpass.clock(), auth.app_id());
end
$$;

comment on function public.consume_quota(uuid, text) is
    'GuestPass: consumes one unit for the caller: premium (unmetered), else today''s free allowance, else one credit. '
    'Returns get_quota''s object after the consume plus charged (premium, free or credit). A p_request_id (or the '
    'Idempotency-Key header) used before for this user returns the first answer without charging again. When nothing '
    'is left raises PT429 ''quota exceeded'' (HTTP 429) with detail = seconds until the reset (Retry-After) and hint '
    'resets_at=<ISO-8601 UTC>. A signed-in user may pass only itself as p_user_id (or null; else 42501); an app''s '
    'backend (service_role) passes a user of its app (else PT404 ''unknown user'', the same for an unknown id and '
    'another app''s user; null is 22023), with the same idempotency, 429 and ledger as the user''s own call. A bad '
    'request id is 22023.';

create or replace function public.get_quota(p_user_id uuid default null)
    returns jsonb
    language plpgsql stable security definer set search_path = '' as $$
begin
    return guestpass.quota_state(guestpass.require_caller(p_user_id), guestpass.clock());
end
$$;

comment on function public.get_quota(uuid) is
    'GuestPass: the caller''s quota: {quota_remaining (free uses left today, in the user''s timezone), daily_limit, '
    'credits_remaining, is_premium, resets_at (ISO-8601 UTC, next local midnight)}. A signed-in user may pass only '
    'itself as p_user_id (or null; else 42501). An app''s backend (service_role) passes a user of its app (else PT404 '
    '''unknown user'', for an unknown id and another app''s user alike; null is 22023).';

create or replace function guestpass.apply_credit_change(
    p_user uuid,
    p_change integer,
    p_reason text,
    p_idempotency_key text
)
    returns integer
    language plpgsql volatile security definer set search_path = '' as $$
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

create or replace function guestpass.grant_credits_admin(p_user uuid, p_amount integer, p_reason text)
    returns integer
    language plpgsql volatile set search_path = '' as $$
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

create or replace function public.grant_credits(
    p_user_id uuid,
    p_amount integer,
    p_reason text default 'grant',
    p_idempotency_key text default null
)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
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
    language plpgsql volatile security definer set search_path = '' as $$
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

create or replace function public.set_timezone(p_timezone text)
    returns jsonb
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_user uuid := guestpass.require_caller(null);
begin
    if p_timezone is null then
        raise exception using errcode = '22023', message = 'p_timezone is required';
    end if;
    -- users_check_timezone (0011) refuses a name that is not an IANA time zone with 22023.
    update public.users as u set timezone = p_timezone where u.id = v_user;
    return guestpass.quota_state(v_user, guestpass.clock());
end
$$;

comment on function public.set_timezone(text) is
    'GuestPass: sets the caller''s timezone (an IANA name, e.g. Europe/Paris; else 22023 ''unknown time zone'') and '
    'returns the quota as get_quota does. Quota days follow it from the next local day: the current day keeps the '
    'end it had (guestpass.quota_day), so a change never adds a free allowance the same day.';

create or replace function guestpass.check_credits_balance()
    returns trigger
    language plpgsql set search_path = '' as $$
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
    'GuestPass: trigger function of public.users'' users_check_new_credits_balance (BEFORE INSERT, when the balance is '
    'not 0) and users_check_credits_balance (BEFORE UPDATE OF credits_balance, when it changes): a new user has 0 '
    'credits, and a new balance must be the balance_after of the user''s newest ledger row (else 23514), so the '
    'balance never moves without its ledger row.';

-- Time zones: IANA names only, checked on write.
create or replace function guestpass.check_user_timezone()
    returns trigger
    language plpgsql set search_path = '' as $$
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
    'GuestPass: trigger function of public.users'' users_check_new_timezone (BEFORE INSERT) and users_check_timezone '
    '(BEFORE UPDATE OF timezone, when it changes), which fire only for a time zone other than UTC: raises 22023 '
    '''unknown time zone'' unless the new timezone is an IANA name known to PostgreSQL (pg_timezone_names, without the '
    'posix/ and right/ copies).';

create or replace trigger users_check_credits_balance
    before update of credits_balance on public.users
    for each row when (new.credits_balance is distinct from old.credits_balance)
    execute function guestpass.check_credits_balance();

comment on trigger users_check_credits_balance on public.users is
    'GuestPass: a changed credits_balance must be the balance_after of the user''s newest ledger row '
    '(guestpass.check_credits_balance).';

create or replace trigger users_check_new_credits_balance
    before insert on public.users
    for each row when (new.credits_balance <> 0)
    execute function guestpass.check_credits_balance();

comment on trigger users_check_new_credits_balance on public.users is
    'GuestPass: a new user starts with no credits (guestpass.check_credits_balance).';

create or replace trigger users_check_timezone
    before update of timezone on public.users
    for each row when (new.timezone is distinct from old.timezone and new.timezone <> 'UTC')
    execute function guestpass.check_user_timezone();

comment on trigger users_check_timezone on public.users is
    'GuestPass: a changed time zone other than UTC must be an IANA name (guestpass.check_user_timezone).';

create or replace trigger users_check_new_timezone
    before insert on public.users
    for each row when (new.timezone <> 'UTC')
    execute function guestpass.check_user_timezone();

comment on trigger users_check_new_timezone on public.users is
    'GuestPass: a new user''s time zone other than UTC must be an IANA name (guestpass.check_user_timezone).';

-- Row-level security, on and forced for the tables of this area (0006_quotas_and_credits.sql): a role, the tables'
-- owner included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.daily_usage enable row level security, force row level security;
alter table guestpass.credit_ledger enable row level security, force row level security;
alter table guestpass.consumptions enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.quota_resets_at(text, timestamptz), guestpass.quota_day(uuid, text, timestamptz),
    guestpass.quota_json(integer, integer, integer, boolean, timestamptz), guestpass.quota_state(uuid, timestamptz),
    guestpass.consume_at(uuid, text, timestamptz, uuid), public.consume_quota(uuid, text), public.get_quota(uuid),
    guestpass.apply_credit_change(uuid, integer, text, text), guestpass.grant_credits_admin(uuid, integer, text),
    public.grant_credits(uuid, integer, text, text), public.set_premium(uuid, boolean), public.set_timezone(text),
    guestpass.check_credits_balance(), guestpass.check_user_timezone() from public;
grant execute on function public.consume_quota(uuid, text), public.get_quota(uuid), public.set_timezone(text)
    to authenticated;
grant execute on function public.grant_credits(uuid, integer, text, text), public.set_premium(uuid, boolean),
    public.get_quota(uuid), public.consume_quota(uuid, text) to service_role;
