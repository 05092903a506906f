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

create or replace function auth.jwt()
returns jsonb
language sql
stable
as $$
    select case
        when pg_catalog.jsonb_typeof(nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb) = 'object'
        then nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb
    end
$$;

create or replace function auth.claim_uuid(claim text)
returns uuid
language sql
stable
as $$
    select case
        when (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb ->> claim)
            ~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$'
        then (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb ->> claim)::uuid
    end
$$;

create or replace function auth.role()
returns text
language sql
stable
as $$ select nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::jsonb ->> 'role' $$;

comment on function auth.jwt() is
    'The verified caller''s JWT claims (transaction-local request.jwt.claims) as a JSON object; null when unset or not '
    'an object. Raises 22P02 if the setting is not JSON. Inlinable: one expression, no SET clause.';
comment on function auth.claim_uuid(text) is
    'One claim of the request claims (request.jwt.claims) as a uuid; null when absent, empty, not a canonical uuid, or '
    'when the claims are not a JSON object (never raises on it). Inlinable: one expression, no SET clause, so '
    'auth.uid(), auth.app_id() and auth.device_id() inline to it.';
comment on function auth.role() is
    'The caller''s role claim (anon, authenticated, service_role), or null. Inlinable: one expression, no SET clause.';

create or replace function guestpass.clock()
returns timestamptz
language sql
stable
as $$
    select coalesce(
        nullif(pg_catalog.current_setting('guestpass.clock_override', true), '')::timestamptz,
        pg_catalog.now()
    )
$$;

comment on function guestpass.clock() is
    'GuestPass internal: the only clock GuestPass functions read (quotas, welcome-grant claims, rate limits, '
    'refresh-token rotation and reuse window, sign-out, last_seen_at): now(), or the transaction''s '
    'guestpass.clock_override setting when set (tests: set local guestpass.clock_override = ''…''). Column defaults '
    'and the updated_at trigger, which may run as a request role, keep now(). Inlinable: one expression, no SET clause.';

create or replace function guestpass.quota_resets_at(p_timezone text, p_at timestamptz)
returns timestamptz
language sql
stable
as $$
    select pg_catalog.timezone(p_timezone, (pg_catalog.timezone(p_timezone, p_at)::date + 1)::timestamp)
$$;

comment on function guestpass.quota_resets_at(text, timestamptz) is
    'GuestPass internal: the next local midnight after p_at in time zone p_timezone (a midnight skipped by a DST change '
    'resolves to the first instant of the new day). Inlinable: one expression, no SET clause.';

create or replace function guestpass.iso_utc(p_at timestamptz)
returns text
language sql
stable
as $$ select pg_catalog.to_char(pg_catalog.timezone('UTC', p_at), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') $$;

comment on function guestpass.iso_utc(timestamptz) is
    'GuestPass internal: p_at as ISO-8601 in UTC to the second, e.g. 2025-01-31T10:00:00Z (independent of the '
    'session''s TimeZone). Inlinable: one expression, no SET clause.';

create or replace function guestpass.quota_json(
    p_allowance integer,
    p_free_used integer,
    p_credits integer,
    p_premium boolean,
    p_resets_at timestamptz
)
returns jsonb
language sql
stable
as $$
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

create or replace function guestpass.quota_day(
    p_user uuid,
    p_timezone text,
    p_at timestamptz,
    out day date,
    out resets_at timestamptz,
    out free_used integer
)
returns record
language plpgsql
stable
set search_path = ''
as $$
declare
    v_local_day date := pg_catalog.timezone(p_timezone, p_at)::date;
    v_day date;
    v_resets_at timestamptz;
    v_free_used integer;
begin
    select d.day, d.resets_at, d.free_used into v_day, v_resets_at, v_free_used
    from guestpass.daily_usage as d
    where d.user_id = p_user
    order by d.day desc
    limit 1;

    if found and (p_at < v_resets_at or v_local_day <= v_day) then
        -- The latest day has not ended (or the local date is not past it): it is still the current one.
        day := v_day;
        resets_at := case when p_at < v_resets_at then v_resets_at else pg_catalog.timezone(p_timezone, (v_day + 1)::timestamp) end;
        free_used := v_free_used;
    else
        day := v_local_day;
        resets_at := guestpass.quota_resets_at(p_timezone, p_at);
        free_used := 0;
    end if;
end
$$;

create or replace function guestpass.quota_state(p_user uuid, p_at timestamptz)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
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

create or replace function public.get_quota(p_user_id uuid default null)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
    return guestpass.quota_state(guestpass.require_caller(p_user_id), guestpass.clock());
end
$$;

create or replace function public.consume_quota(p_user_id uuid default null, p_request_id text default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
begin
    return guestpass.consume_at(guestpass.require_caller(p_user_id), p_request_id, guestpass.clock());
end
$$;

-- The grants are unchanged (create or replace keeps them); restated so this file says who may call what.
revoke all on function guestpass.quota_day(uuid, text, timestamptz) from public;
revoke all on function guestpass.quota_state(uuid, timestamptz) from public;
revoke all on function public.get_quota(uuid) from public;
grant execute on function public.get_quota(uuid) to authenticated;
revoke all on function public.consume_quota(uuid, text) from public;
grant execute on function public.consume_quota(uuid, text) to authenticated;
