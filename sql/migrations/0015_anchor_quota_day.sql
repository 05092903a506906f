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

alter table guestpass.daily_usage add column if not exists resets_at timestamptz;

update guestpass.daily_usage as d
set resets_at = ((d.day + 1)::timestamp) at time zone u.timezone
from public.users as u
where u.id = d.user_id and d.resets_at is null;

alter table guestpass.daily_usage alter column resets_at set not null;

comment on column guestpass.daily_usage.resets_at is
    'GuestPass: when this quota day ends: the local midnight after it started, in the timezone in effect then (moved '
    'later only when the user''s timezone moved west and its date has not passed the day yet).';

comment on table guestpass.daily_usage is
    'GuestPass: consumes per user and quota day, by what paid for them: the free allowance, premium, or a credit. day '
    'is the local date the day started on (in the user''s timezone then); resets_at is when it ends. Days only move '
    'forward (see guestpass.quota_day). No row = nothing used yet.';

create or replace function guestpass.quota_day(
    p_user uuid,
    p_timezone text,
    p_at timestamptz,
    out day date,
    out resets_at timestamptz,
    out free_used integer
)
language sql
stable
set search_path = ''
as $$
    select
        case when latest.is_current then latest.day else local.day end,
        case
            when latest.is_current is not true then guestpass.quota_resets_at(p_timezone, p_at)
            when p_at < latest.resets_at then latest.resets_at
            else ((latest.day + 1)::timestamp) at time zone p_timezone
        end,
        case when latest.is_current then latest.free_used else 0 end
    from (select (p_at at time zone p_timezone)::date as day) as local
    left join lateral (
        select d.day, d.resets_at, d.free_used,
               (p_at < d.resets_at or local.day <= d.day) as is_current
        from guestpass.daily_usage as d
        where d.user_id = p_user
        order by d.day desc
        limit 1
    ) as latest on true
$$;

comment on function guestpass.quota_day(uuid, text, timestamptz) is
    'GuestPass internal: the quota day user p_user is in at p_at, with p_timezone the user''s timezone now: the '
    'latest daily_usage row while it has not ended (p_at < resets_at) or while the local date is not past it (after a '
    'move west; resets_at is then the local midnight after that date), else a new day keyed by the local date that '
    'ends at the next local midnight (free_used 0). So a timezone change takes effect from the next day.';

create or replace function guestpass.quota_state(p_user uuid, p_at timestamptz)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
    select jsonb_build_object(
        'quota_remaining', greatest(a.daily_free_allowance - q.free_used, 0),
        'daily_limit', a.daily_free_allowance,
        'credits_remaining', u.credits_balance,
        'is_premium', u.is_premium,
        'resets_at', guestpass.iso_utc(q.resets_at)
    )
    from public.users as u
    join guestpass.apps as a on a.id = u.app_id
    cross join lateral guestpass.quota_day(u.id, u.timezone, p_at) as q
    where u.id = p_user
$$;

comment on function guestpass.quota_state(uuid, timestamptz) is
    'GuestPass internal: user p_user''s quota at p_at: {quota_remaining (free left in the current quota day), '
    'daily_limit, credits_remaining, is_premium, resets_at (when the quota day ends, ISO-8601 UTC)}; null for an '
    'unknown user. The quota day is guestpass.quota_day''s.';

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
    'GuestPass internal: consumes one unit for user p_user at time p_at: premium (unmetered, counted), else the quota '
    'day''s free allowance (guestpass.quota_day), else one credit (ledger reason consume, idempotency key '
    'consume:<request id>). Returns {quota_remaining, daily_limit, credits_remaining, is_premium, resets_at, charged: '
    'premium|free|credit}. With p_request_id, a request id the user used before returns the stored first answer and '
    'charges nothing. When nothing is left raises PT429 ''quota exceeded'', detail = whole seconds until resets_at (at '
    'least 1), hint = resets_at=<ISO-8601 UTC>. Race-free: locks the user row first. Raises 22023 on an unknown user '
    'or bad arguments.';

-- The timezone: set through a function, never through a column grant.

revoke update (timezone) on table public.users from authenticated;

create or replace function public.set_timezone(p_timezone text)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
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

revoke execute on function
    guestpass.quota_day(uuid, text, timestamptz),
    public.set_timezone(text)
    from public;
grant execute on function public.set_timezone(text) to authenticated;

comment on table public.users is
    'GuestPass: users of an app, anonymous guests first (is_anonymous). Clients read their own row and may change '
    'only onboarding_completed, language and notification_enabled; the timezone (it meters the quota day) changes '
    'through public.set_timezone. user_metadata is client-editable data; authorization data belongs in app_metadata.';
