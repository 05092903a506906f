-- create the example app's RPC functions: add, list, count, delete and summarise readings, add and list device logs,
-- and fail_with, which raises the error shapes the RPC endpoint must map (custom PT402, plain P0001, unique 23505)
-- Every function is SECURITY INVOKER: it runs as the caller's request role, so the tables' grants and row-level
-- security decide what it reads and writes, exactly as a direct query would. None needs to be a definer. Each still
-- pins search_path = '' and schema-qualifies its names, so a caller's search_path cannot redirect it. Readers are
-- STABLE (the RPC endpoint runs them read-only, and allows GET); writers are VOLATILE. EXECUTE is revoked from
-- PUBLIC and granted to exactly the request roles that should call each function.

-- add_reading is metered: each reading consumes one unit of the caller's quota in the same transaction. The reading
-- is inserted first and then public.consume_quota charges for it: an invalid reading (unknown kind, non-object
-- content) fails on its own constraint and charges nothing, and when the quota is exhausted consume_quota's PT429
-- 'quota exceeded' (with its Retry-After detail and resets_at hint) aborts the statement, so the insert is undone.
-- Either both happen or neither: no reading without a charge, no charge without a reading. (The insert holds a KEY
-- SHARE lock on the user row; consume_quota's FOR NO KEY UPDATE does not conflict with it, so concurrent metered
-- inserts of one user queue on the quota without deadlocking.)
create or replace function public.add_reading(p_kind text, p_content jsonb default '{}')
returns public.readings
language plpgsql volatile set search_path = '' as $$
declare
    v_reading public.readings;
begin
    insert into public.readings (kind, content)
    values (p_kind, coalesce(p_content, '{}'::jsonb))
    returning * into v_reading;
    perform public.consume_quota(null, null);
    return v_reading;
end
$$;

comment on function public.add_reading(text, jsonb) is
    'Example app: adds a reading of kind p_kind (face, palm or coffee; else 23514) with content p_content (a JSON '
    'object, default {}) for the caller (claims sub and app_id), charges one unit of the caller''s quota for it '
    '(public.consume_quota) in the same transaction, and returns it. When the quota is exhausted raises PT429 '
    '''quota exceeded'' and adds nothing.';

create or replace function public.list_readings(p_kind text default null)
returns setof public.readings
language sql stable set search_path = '' as $$
    select r.*
    from public.readings as r
    where p_kind is null or r.kind = p_kind
    order by r.created_at desc, r.id
$$;

comment on function public.list_readings(text) is
    'Example app: the readings the caller may see, newest first, only of kind p_kind when given. A user sees its '
    'own readings, an app''s backend (service_role) those of its app.';

create or replace function public.count_readings()
returns integer
language sql stable set search_path = '' as $$
    select count(*)::integer from public.readings
$$;

comment on function public.count_readings() is 'Example app: how many readings the caller has.';

create or replace function public.delete_reading(p_id uuid)
returns void
language sql volatile set search_path = '' as $$
    delete from public.readings as r where r.id = p_id
$$;

comment on function public.delete_reading(uuid) is
    'Example app: deletes the caller''s reading p_id. Someone else''s id, or an unknown one, deletes nothing and is '
    'not an error.';

create or replace function public.get_user_readings(p_user_id uuid)
returns setof public.readings
language plpgsql stable set search_path = '' as $$
begin
    if p_user_id is distinct from auth.uid() then
        raise exception 'p_user_id must be the caller' using errcode = '42501';
    end if;
    return query
    select r.*
    from public.readings as r
    where r.user_id = p_user_id
    order by r.created_at desc, r.id;
end
$$;

comment on function public.get_user_readings(uuid) is
    'Example app: the readings of user p_user_id, newest first. Kept for the documents'' clients, which pass their own '
    'user id: any id but the caller''s (claim sub), or null, raises 42501.';

create or replace function public.readings_summary()
returns jsonb
language sql stable set search_path = '' as $$
    select jsonb_build_object(
        'total', coalesce(sum(k.n), 0)::bigint,
        'by_kind', coalesce(jsonb_object_agg(k.kind, k.n), '{}'::jsonb)
    )
    from (
        select r.kind, count(*) as n
        from public.readings as r
        group by r.kind
    ) as k
$$;

comment on function public.readings_summary() is
    'Example app: the caller''s readings as {"total": n, "by_kind": {"<kind>": n, …}} (kinds with no reading are '
    'left out).';

create or replace function public.add_device_log(p_message text, p_level text default 'info')
returns bigint
language sql volatile set search_path = '' as $$
    insert into public.device_logs (level, message)
    values (coalesce(p_level, 'info'), p_message)
    returning id
$$;

comment on function public.add_device_log(text, text) is
    'Example app: adds a log line for the caller''s device (claims device_id, sub and app_id) and returns its id. '
    'p_level is debug, info (default), warning or error and p_message at most 2000 characters (else 23514); '
    'without a device in the claims raises 42501.';

create or replace function public.list_device_logs()
returns table (id bigint, level text, message text, created_at timestamptz)
language sql stable set search_path = '' as $$
    select l.id, l.level, l.message, l.created_at
    from public.device_logs as l
    order by l.created_at desc, l.id desc
$$;

comment on function public.list_device_logs() is
    'Example app: the log lines of the caller''s device, newest first. Other devices of the same user are not seen.';

create or replace function public.fail_with(p_kind text)
returns void
language plpgsql volatile set search_path = '' as $$
begin
    case p_kind
        when 'custom' then
            raise exception 'custom failure' using errcode = 'PT402', detail = 'd', hint = 'h';
        when 'plain' then
            raise exception 'plain failure';
        when 'unique' then
            raise unique_violation using message = 'unique failure';
        else
            raise exception 'unknown kind: %', p_kind using errcode = '22023';
    end case;
end
$$;

comment on function public.fail_with(text) is
    'Example app, for error-shape tests: always raises. custom: PT402 ''custom failure'' with detail d and hint h; '
    'plain: P0001 ''plain failure''; unique: 23505 ''unique failure''; anything else: 22023.';

revoke execute on function public.add_reading(text, jsonb), public.list_readings(text), public.count_readings(),
    public.delete_reading(uuid), public.get_user_readings(uuid), public.readings_summary(),
    public.add_device_log(text, text), public.list_device_logs(), public.fail_with(text) from public;

grant execute on function public.add_reading(text, jsonb), public.list_readings(text), public.count_readings(),
    public.delete_reading(uuid), public.get_user_readings(uuid), public.readings_summary(),
    public.add_device_log(text, text), public.list_device_logs() to authenticated;
grant execute on function public.list_readings(text) to service_role;
grant execute on function public.fail_with(text) to anon, authenticated;
