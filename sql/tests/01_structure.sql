-- structure: row-level security everywhere, roles that own and bypass nothing, pinned SECURITY DEFINER functions,
-- and the exact grants and policies on the core tables. The catalog checks iterate over every table and function,
-- so they also hold an app's own migrations to the same rules.
begin;
select plan(30);

\ir lib/catalog.sql

-- Row-level security: enabled and forced on every table in the managed schemas.

select is(
    array(
        select n.nspname || '.' || c.relname
        from pg_catalog.pg_class as c
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        where n.nspname in ('public', 'auth', 'guestpass') and c.relkind in ('r', 'p') and not c.relrowsecurity
        order by 1
    ),
    '{}'::text[],
    'every table in public, auth and guestpass has row-level security enabled'
);

select is(
    array(
        select n.nspname || '.' || c.relname
        from pg_catalog.pg_class as c
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        where n.nspname in ('public', 'auth', 'guestpass') and c.relkind in ('r', 'p') and not c.relforcerowsecurity
        order by 1
    ),
    '{}'::text[],
    'every table in public, auth and guestpass has row-level security forced'
);

select cmp_ok(
    (select count(*)::int
     from pg_catalog.pg_class as c
     join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
     where n.nspname in ('public', 'guestpass') and c.relkind in ('r', 'p')),
    '>=', 4,
    'the row-level security checks see the core tables'
);

-- Roles: the app-facing roles own nothing and bypass nothing.

select is(
    array(
        select c.oid::regclass::text || ' owned by ' || r.rolname
        from pg_catalog.pg_class as c
        join pg_catalog.pg_roles as r on r.oid = c.relowner
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
        order by 1
    ),
    '{}'::text[],
    'no table, view, sequence or index is owned by an app-facing role'
);

select is(
    array(
        select p.oid::regprocedure::text || ' owned by ' || r.rolname
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_roles as r on r.oid = p.proowner
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
        order by 1
    ),
    '{}'::text[],
    'no function is owned by an app-facing role'
);

select is(
    array(
        select d.classid::regclass::text || ' ' || d.objid || ' in ' || coalesce(db.datname, 'the cluster')
               || ' owned by ' || r.rolname
        from pg_catalog.pg_shdepend as d
        join pg_catalog.pg_roles as r on r.oid = d.refobjid
        left join pg_catalog.pg_database as db on db.oid = d.dbid
        where d.deptype = 'o'
          and d.refclassid = 'pg_catalog.pg_authid'::regclass
          and r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
        order by 1
    ),
    '{}'::text[],
    'app-facing roles own no object of any kind in any database of the cluster'
);

select is(
    array(
        select rolname::text
        from pg_catalog.pg_roles
        where rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and (rolsuper or rolbypassrls)
        order by 1
    ),
    '{}'::text[],
    'no app-facing role is superuser or has BYPASSRLS'
);

select is(
    array(
        select rolname::text
        from pg_catalog.pg_roles
        where rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and (rolcreaterole or rolcreatedb or rolreplication)
        order by 1
    ),
    '{}'::text[],
    'no app-facing role can create roles or databases or replicate'
);

select is(
    array(
        select rolname::text
        from pg_catalog.pg_roles
        where rolname in ('anon', 'authenticated', 'service_role') and not rolcanlogin and not rolinherit
        order by 1
    ),
    array['anon', 'authenticated', 'service_role'],
    'anon, authenticated and service_role exist, cannot log in and are NOINHERIT'
);

select ok(
    (select rolcanlogin and not rolinherit from pg_catalog.pg_roles where rolname = 'guestpass_authenticator'),
    'guestpass_authenticator exists, can log in and is NOINHERIT'
);

select is(
    array(
        select g.rolname::text
        from pg_catalog.pg_auth_members as m
        join pg_catalog.pg_roles as g on g.oid = m.roleid
        join pg_catalog.pg_roles as u on u.oid = m.member
        where u.rolname = 'guestpass_authenticator'
        order by 1
    ),
    array['anon', 'authenticated', 'service_role'],
    'guestpass_authenticator is a direct member of exactly anon, authenticated and service_role'
);

-- SET ROLE follows memberships transitively, so check everything the login role can become.
select is(
    array(
        select rolname::text
        from pg_catalog.pg_roles
        where rolname <> 'guestpass_authenticator' and pg_catalog.pg_has_role('guestpass_authenticator', oid, 'MEMBER')
        order by 1
    ),
    array['anon', 'authenticated', 'service_role'],
    'guestpass_authenticator can switch to anon, authenticated and service_role and nothing else'
);

select is(
    array(
        select rolname::text
        from pg_catalog.pg_roles
        where rolname in ('anon', 'authenticated', 'service_role')
          and (select count(*) from pg_catalog.pg_auth_members where member = pg_roles.oid) > 0
        order by 1
    ),
    '{}'::text[],
    'the request roles are members of no other role'
);

-- SECURITY DEFINER functions: pinned search_path, not executable by PUBLIC.

select is(
    array(
        select format('%I.%I(%s)', n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid))
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
        where n.nspname in ('public', 'auth', 'guestpass')
          and p.prosecdef
          and not exists (select 1 from unnest(p.proconfig) as setting where setting like 'search_path=%')
        order by 1
    ),
    '{}'::text[],
    'every SECURITY DEFINER function in public, auth and guestpass sets search_path'
);

select is(
    array(
        select format('%I.%I(%s)', n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid))
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
        where n.nspname in ('public', 'auth', 'guestpass')
          and p.prosecdef
          and pg_temp.public_may_execute(p.oid)
        order by 1
    ),
    '{}'::text[],
    'no SECURITY DEFINER function in public, auth and guestpass is executable by PUBLIC'
);

-- The internal schema is closed to every app-facing role.

select is(
    pg_temp.schema_users('guestpass'),
    '{}'::text[],
    'no app-facing role has usage on schema guestpass'
);

select is(
    array(
        select n.nspname || '.' || c.relname || ' to ' || r.rolname
        from pg_catalog.pg_class as c
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        cross join pg_catalog.pg_roles as r
        where n.nspname = 'guestpass'
          and c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
          and r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and (pg_catalog.has_table_privilege(
                   r.oid, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
               or pg_catalog.has_any_column_privilege(r.oid, c.oid, 'SELECT, INSERT, UPDATE, REFERENCES'))
        order by 1
    ),
    '{}'::text[],
    'no app-facing role holds any privilege on a guestpass table'
);

-- Grants on the core public tables.

select table_privs_are('public', 'users', 'anon', '{}'::text[], 'anon has no privilege on public.users');
select table_privs_are('public', 'devices', 'anon', '{}'::text[], 'anon has no privilege on public.devices');
select table_privs_are(
    'public', 'users', 'authenticated', array['SELECT'],
    'authenticated may only select public.users at table level'
);
select is(
    pg_temp.updatable_columns('public.users'),
    array['language', 'notification_enabled', 'onboarding_completed'],
    'authenticated may update exactly onboarding_completed, language and notification_enabled (not timezone, which meters)'
);
select table_privs_are(
    'public', 'devices', 'authenticated', array['SELECT'],
    'authenticated may only select public.devices'
);

-- The exact policy set on the core public tables.

select policies_are('public', 'users', array['users_select_own', 'users_update_own']);
select policy_cmd_is('public', 'users', 'users_select_own'::name, 'select');
select policy_roles_are('public', 'users', 'users_select_own', array['authenticated']);
select policy_cmd_is('public', 'users', 'users_update_own'::name, 'update');
select policy_roles_are('public', 'users', 'users_update_own', array['authenticated']);

select policies_are('public', 'devices', array['devices_select_own']);
select policy_cmd_is('public', 'devices', 'devices_select_own'::name, 'select');
select policy_roles_are('public', 'devices', 'devices_select_own', array['authenticated']);

select * from finish();
rollback;
