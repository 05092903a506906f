-- public.readings: row-level security, grants, policies per command and per role, and the readings' RPC functions
-- authenticated reads and writes only its own rows in its own app; service_role (the app's backend, holding the
-- secret key) reads and writes every row of its own app and no other; anon gets nothing. service_role gets select,
-- insert, update and delete but not TRUNCATE, REFERENCES or TRIGGER: TRUNCATE ignores row-level security, so one
-- app's backend could empty every app's readings.
-- Every function is SECURITY INVOKER: it runs as the caller's request role, so the table's grants and row-level
-- security decide what it reads and writes, exactly as a direct query would. None needs to be a definer. Each still
-- pins search_path = '' and schema-qualifies its names, so a caller's search_path cannot redirect it. Readers are
-- STABLE (the RPC endpoint runs them read-only, and allows GET); writers are VOLATILE. EXECUTE is revoked from
-- PUBLIC and granted to exactly the request roles that should call each function.

alter table public.readings enable row level security, force row level security;

-- Grants: the first wall. Clients may change only kind and content; never the owner columns.

grant select, insert, delete on table public.readings to authenticated;
grant update (kind, content) on table public.readings to authenticated;
grant select, insert, update, delete on table public.readings to service_role;

-- Policies: the second wall, per command and role.

drop policy if exists readings_select_own on public.readings;
create policy readings_select_own on public.readings for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_select_own on public.readings is 'A user reads only its own readings, in its own app.';

drop policy if exists readings_insert_own on public.readings;
create policy readings_insert_own on public.readings for insert to authenticated
    with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_insert_own on public.readings is
    'A user adds readings only as itself, in its own app (anything else is 42501).';

drop policy if exists readings_update_own on public.readings;
create policy readings_update_own on public.readings for update to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()))
    with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_update_own on public.readings is 'A user changes only its own readings, in its own app.';

drop policy if exists readings_delete_own on public.readings;
create policy readings_delete_own on public.readings for delete to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));

comment on policy readings_delete_own on public.readings is 'A user deletes only its own readings, in its own app.';

drop policy if exists readings_select_app on public.readings;
create policy readings_select_app on public.readings for select to service_role
    using (app_id = (select auth.app_id()));

comment on policy readings_select_app on public.readings is 'An app''s backend reads every reading of its app only.';

drop policy if exists readings_insert_app on public.readings;
create policy readings_insert_app on public.readings for insert to service_role
    with check (app_id = (select auth.app_id()));

comment on policy readings_insert_app on public.readings is
    'An app''s backend adds readings only in its own app (and, by the foreign key, only for that app''s users).';

drop policy if exists readings_update_app on public.readings;
create policy readings_update_app on public.readings for update to service_role
    using (app_id = (select auth.app_id()))
    with check (app_id = (select auth.app_id()));

comment on policy readings_update_app on public.readings is
    'An app''s backend changes readings of its app only and cannot move one to another app.';

drop policy if exists readings_delete_app on public.readings;
create policy readings_delete_app on public.readings for delete to service_role
    using (app_id = (select auth.app_id()));

comment on policy readings_delete_app on public.readings is 'An app''s backend deletes readings of its app only.';

-- Functions.

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

-- A computed relationship, as PostgREST has them: a function of an exposed schema from a user's row to rows of
-- readings embeds under its own name (users?select=id,latest_reading(kind,created_at)); ROWS 1 makes it to-one, an
-- object or null. SECURITY INVOKER, so the caller's policies decide which readings it can find.
create or replace function public.latest_reading(public.users)
    returns setof public.readings
    rows 1
    language sql stable set search_path = '' as $$
    select r.* from public.readings as r where r.user_id = $1.id order by r.created_at desc, r.id limit 1
$$;

comment on function public.latest_reading(public.users) is
    'Example app (a computed relationship of users): the user''s latest reading the caller may see, or none.';

revoke execute on function public.latest_reading(public.users) from public;
grant execute on function public.latest_reading(public.users) to authenticated, service_role;

revoke execute on function public.add_reading(text, jsonb), public.list_readings(text), public.count_readings(),
    public.delete_reading(uuid), public.get_user_readings(uuid), public.readings_summary() from public;
grant execute on function public.add_reading(text, jsonb), public.list_readings(text), public.count_readings(),
    public.delete_reading(uuid), public.get_user_readings(uuid), public.readings_summary() to authenticated;
grant execute on function public.list_readings(text) to service_role;
