-- one home for the quota object that get_quota, consume_quota and set_premium answer (built twice until now)
-- guestpass.quota_json is a single-expression, IMMUTABLE SQL function without a SET clause, so it is inlined where it
-- is called. quota_state and consume_at are redefined to use it; what they answer is unchanged.

create or replace function guestpass.quota_json(
    p_allowance integer,
    p_free_used integer,
    p_credits integer,
    p_premium boolean,
    p_resets_at timestamptz
)
returns jsonb
language sql
immutable
as $$
    select jsonb_build_object(
        'quota_remaining', greatest(p_allowance - p_free_used, 0),
        'daily_limit', p_allowance,
        'credits_remaining', p_credits,
        'is_premium', p_premium,
        'resets_at', guestpass.iso_utc(p_resets_at)
    )
$$;

comment on function guestpass.quota_json(integer, integer, integer, boolean, timestamptz) is
    'GuestPass internal: the quota object of get_quota and consume_quota: {quota_remaining (free left in the quota day), '
    'daily_limit, credits_remaining, is_premium, resets_at (ISO-8601 UTC)}. Inlinable: no SET clause.';

create or replace function guestpass.quota_state(p_user uuid, p_at timestamptz)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
    select guestpass.quota_json(a.daily_free_allowance, q.free_used, u.credits_balance, u.is_premium, q.resets_at)
    from public.users as u
    join guestpass.apps as a on a.id = u.app_id
    cross join lateral guestpass.quota_day(u.id, u.timezone, p_at) as q
    where u.id = p_user
$$;

comment on function guestpass.quota_state(uuid, timestamptz) is
    'GuestPass internal: user p_user''s quota at p_at (guestpass.quota_json of the current quota day, see '
    'guestpass.quota_day); null for an unknown user.';

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

    v_result := guestpass.quota_json(v_allowance, v_free_used, v_balance, v_premium, v_resets_at)
        || jsonb_build_object('charged', v_charged);

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
    'premium|free|credit} (guestpass.quota_json plus charged). With p_request_id, a request id the user used before returns the stored first answer and '
    'charges nothing. When nothing is left raises PT429 ''quota exceeded'', detail = whole seconds until resets_at (at '
    'least 1), hint = resets_at=<ISO-8601 UTC>. Race-free: locks the user row first. Raises 22023 on an unknown user '
    'or bad arguments.';

revoke execute on function guestpass.quota_json(integer, integer, integer, boolean, timestamptz) from public;
