-- pgTAP helpers, included with \ir lib/catalog.sql: the catalog look-ups that several structure checks make, so
-- that each file only names what it checks and what it expects. They only read the catalog; call them as the owner
-- (before any role switch), e.g. `select is(pg_temp.updatable_columns('public.users'), array[…], '…');`.
-- "The request roles" are anon, authenticated, service_role and the login role guestpass_authenticator (NOINHERIT,
-- so it shows what PUBLIC holds). Safe to include more than once (create or replace).
--   pg_temp.executors(fn): the request roles that may EXECUTE fn, comma-separated in name order ('' for none).
--   pg_temp.executors_unlike(expected): for each "<function>": "<roles>" of the JSON object (roles as executors
--     writes them), '<function>: <roles that may EXECUTE it>' where they differ, in order: '{}' when every function is
--     executable by exactly the roles given. guestpass_authenticator (NOINHERIT) holds what PUBLIC holds, so a
--     function PUBLIC may execute differs from any list without it.
--   pg_temp.public_may_execute(fn): whether PUBLIC itself holds EXECUTE on fn (by its ACL, or the default ACL when it
--     has none).
--   pg_temp.proc_traits(fn): '<name> <volatility> <security definer> <config>' of fn, e.g.
--     'get_quota s t {"search_path=\"\""}'.
--   pg_temp.schema_users(schema [, privilege]): the request roles holding USAGE (or p_privilege) on the schema, in
--     order.
--   pg_temp.updatable_columns(table [, role]): the columns of the table that authenticated (or p_role) may UPDATE,
--     in order.
--   pg_temp.fk_on_delete(tables): '<constraint> on delete <cascade | set null | the action code>' for every foreign
--     key of the tables, in order.
--   pg_temp.policies_in(schema): '<table>.<policy>' for every row-level security policy on a table of the schema, in
--     order.
--   pg_temp.policy_commands(table): '<policy> <command> to <role>' for every policy on the table and every role it
--     applies to (command: select, insert, update, delete or all), in order.
--   pg_temp.table_grants(table): '<role> <privilege>' for every table privilege a request role holds on the table,
--     and '<role> UPDATE (<columns>)' for a role that may update only some columns, in order: a table's exact grants.
--   pg_temp.row_security(table): 'forced' when row-level security is enabled and forced on the table, 'enabled' when
--     only enabled, 'disabled' otherwise.
--   pg_temp.extension_member(catalog, oid): whether the object (oid in the catalog, e.g. 'pg_catalog.pg_proc') belongs
--     to an extension (pgTAP's functions and views are not ours).
--   pg_temp.own_functions(): every function of auth, guestpass, guestpass_server and public that is no extension's.
create or replace function pg_temp.executors(p_fn regprocedure)
returns text
language sql
stable
as $$
    select coalesce((
        select string_agg(r.rolname::text collate "default", ',' order by r.rolname)
        from pg_catalog.pg_roles as r
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and pg_catalog.has_function_privilege(r.oid, p_fn, 'EXECUTE')
    ), '')
$$;

create or replace function pg_temp.public_may_execute(p_fn regprocedure)
returns boolean
language sql
stable
as $$
    select exists (
        select 1
        from pg_catalog.pg_proc as p
        cross join pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) as acl
        where p.oid = p_fn and acl.grantee = 0 and acl.privilege_type = 'EXECUTE'
    )
$$;

create or replace function pg_temp.proc_traits(p_fn regprocedure)
returns text
language sql
stable
as $$
    select format('%s %s %s %s', p.proname, p.provolatile, p.prosecdef, p.proconfig)
    from pg_catalog.pg_proc as p
    where p.oid = p_fn
$$;

create or replace function pg_temp.schema_users(p_schema text, p_privilege text default 'USAGE')
returns text[]
language sql
stable
as $$
    select array(
        select r.rolname::text
        from pg_catalog.pg_roles as r
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and pg_catalog.has_schema_privilege(r.oid, p_schema, p_privilege)
        order by 1
    )
$$;

create or replace function pg_temp.updatable_columns(p_table regclass, p_role text default 'authenticated')
returns text[]
language sql
stable
as $$
    select array(
        select a.attname::text
        from pg_catalog.pg_attribute as a
        where a.attrelid = p_table and a.attnum > 0 and not a.attisdropped
          and pg_catalog.has_column_privilege(p_role, a.attrelid, a.attnum, 'UPDATE')
        order by 1
    )
$$;

create or replace function pg_temp.fk_on_delete(p_tables regclass[])
returns text[]
language sql
stable
as $$
    select array(
        select c.conname::text || ' on delete '
               || case c.confdeltype when 'c' then 'cascade' when 'n' then 'set null' else c.confdeltype::text end
        from pg_catalog.pg_constraint as c
        where c.contype = 'f' and c.conrelid = any (p_tables)
        order by 1
    )
$$;

create or replace function pg_temp.policies_in(p_schema regnamespace)
returns text[]
language sql
stable
as $$
    select array(
        select c.relname::text || '.' || p.polname
        from pg_catalog.pg_policy as p
        join pg_catalog.pg_class as c on c.oid = p.polrelid
        where c.relnamespace = p_schema
        order by 1
    )
$$;

create or replace function pg_temp.policy_commands(p_table regclass)
returns text[]
language sql
stable
as $$
    select array(
        select p.polname || ' '
               || case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update'
                                when 'd' then 'delete' else 'all' end
               || ' to ' || pg_catalog.pg_get_userbyid(r.role)
        from pg_catalog.pg_policy as p
        cross join lateral unnest(p.polroles) as r (role)
        where p.polrelid = p_table
        order by 1
    )
$$;

create or replace function pg_temp.row_security(p_table regclass)
returns text
language sql
stable
as $$
    select case when c.relforcerowsecurity and c.relrowsecurity then 'forced'
                when c.relrowsecurity then 'enabled'
                else 'disabled' end
    from pg_catalog.pg_class as c
    where c.oid = p_table
$$;

create or replace function pg_temp.table_grants(p_table regclass)
returns text[]
language sql
stable
as $$
    select array(
        select r.rolname::text || ' ' || p.privilege
        from pg_catalog.pg_roles as r
        cross join unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'])
            as p (privilege)
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and pg_catalog.has_table_privilege(r.oid, p_table, p.privilege)
        union all
        select r.rolname::text || ' UPDATE (' || array_to_string(pg_temp.updatable_columns(p_table, r.rolname), ', ')
               || ')'
        from pg_catalog.pg_roles as r
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and not pg_catalog.has_table_privilege(r.oid, p_table, 'UPDATE')
          and cardinality(pg_temp.updatable_columns(p_table, r.rolname)) > 0
        order by 1
    )
$$;

create or replace function pg_temp.executors_unlike(p_expected jsonb)
returns text[]
language sql
stable
as $$
    select array(
        select e.key || ': ' || pg_temp.executors(e.key::regprocedure)
        from jsonb_each_text(p_expected) as e
        where pg_temp.executors(e.key::regprocedure) <> e.value
        order by 1
    )
$$;

create or replace function pg_temp.extension_member(p_catalog regclass, p_oid oid)
returns boolean
language sql
stable
as $$
    select exists (
        select 1 from pg_catalog.pg_depend as d
        where d.classid = p_catalog and d.objid = p_oid and d.deptype = 'e'
    )
$$;

create or replace function pg_temp.own_functions()
returns setof regprocedure
language sql
stable
as $$
    select p.oid::regprocedure
    from pg_catalog.pg_proc as p
    join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
    where n.nspname in ('auth', 'guestpass', 'guestpass_server', 'public')
      and not pg_temp.extension_member('pg_catalog.pg_proc', p.oid)
$$;
