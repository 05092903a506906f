-- structure: row-level security everywhere, roles that own and bypass nothing, pinned SECURITY DEFINER functions,
-- and the exact grants and policies on the core tables. The catalog checks iterate over every table and function,
-- so they also hold an app's own migrations to the same rules.
begin;
select plan(17);

\ir lib/catalog.sql

-- Row-level security: enabled and forced on every table in the managed schemas.

select is(
    array(
        select c.oid::regclass::text || ' ' || pg_temp.row_security(c.oid)
        from pg_catalog.pg_class as c
        where c.relnamespace in ('public'::regnamespace, 'auth'::regnamespace, 'guestpass'::regnamespace)
          and c.relkind in ('r', 'p') and pg_temp.row_security(c.oid) <> 'forced'
        order by 1
    ),
    '{}'::text[],
    'every table in public, auth and guestpass has row-level security enabled and forced'
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

-- pg_shdepend records the owner of every object a role other than the bootstrap superuser owns, in every database:
-- tables, views, sequences, indexes, functions, schemas, types alike.
select is(
    array(
        select case when db.datname = current_database()
                    then pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
                    else d.classid::regclass::text || ' ' || d.objid || ' in ' || coalesce(db.datname, 'the cluster')
               end || ' owned by ' || r.rolname
        from pg_catalog.pg_shdepend as d
        join pg_catalog.pg_roles as r on r.oid = d.refobjid
        left join pg_catalog.pg_database as db on db.oid = d.dbid
        where d.deptype = 'o'
          and d.refclassid = 'pg_catalog.pg_authid'::regclass
          and r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
        order by 1
    ),
    '{}'::text[],
    'app-facing roles own no object of any kind (table, view, sequence, index, function …) in any database of the cluster'
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
        select p.oid::regprocedure::text || ': ' || problem.what
        from pg_catalog.pg_proc as p
        cross join lateral (values
            ('no search_path', not exists (select 1 from unnest(p.proconfig) as setting where setting like 'search_path=%')),
            ('executable by PUBLIC', pg_temp.public_may_execute(p.oid))
        ) as problem (what, found)
        where p.pronamespace in ('public'::regnamespace, 'auth'::regnamespace, 'guestpass'::regnamespace)
          and p.prosecdef and problem.found
        order by 1
    ),
    '{}'::text[],
    'every SECURITY DEFINER function in public, auth and guestpass sets search_path and is not executable by PUBLIC'
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

select is(
    pg_temp.table_grants('public.users'),
    array['authenticated SELECT', 'authenticated UPDATE (language, notification_enabled, onboarding_completed)'],
    'the grants on public.users: authenticated selects, and updates only onboarding_completed, language and '
    'notification_enabled (not timezone, which meters); anon and service_role nothing'
);
select is(
    pg_temp.table_grants('public.devices'), array['authenticated SELECT'],
    'the grants on public.devices: authenticated only selects; anon and service_role nothing'
);

-- The exact policy set on the core public tables.

select is(
    pg_temp.policy_commands('public.users'),
    array['users_select_own select to authenticated', 'users_update_own update to authenticated'],
    'public.users: authenticated selects and updates its own row'
);
select is(
    pg_temp.policy_commands('public.devices'), array['devices_select_own select to authenticated'],
    'public.devices: authenticated selects its own devices'
);

select * from finish();
rollback;
