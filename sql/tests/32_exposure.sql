-- exposure: what the table API (GET/POST/PATCH/DELETE /rest/v1/<table>) could reach. PostgREST serves every table of
-- an exposed schema (public) to the roles holding privileges on it and expands select=* to every column, so:
-- (a) the request roles (and PUBLIC, which they inherit) hold exactly the allowlisted privileges on GuestPass's own
--     tables, views, sequences and columns (schemas auth, guestpass, guestpass_server, guestpass_migrations, and the
--     core public tables users, devices, partners; the example app's tables are the app's business), and exactly the
--     allowlisted schema privileges;
-- (b) no column of a table or view in public is named like a secret (secret, hash, token, sealed);
-- (c) no function of auth, guestpass, guestpass_server or public (outside extensions) is executable by PUBLIC;
-- (d) as authenticated with real claims, select * from public.devices answers the caller's own devices and nothing
--     secret, and the secrets' table (guestpass.device_secrets) refuses every request role;
-- (e) anon and authenticated carry a statement_timeout of their own (0044), service_role none.
-- Fixtures: apps X and Y, users A (devices A1, A2), B (B1) of app X, C (C1) of app Y (lib/fixtures.sql).
begin;
select plan(14);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/catalog.sql

-- (a) Privileges on GuestPass's own relations, from their ACLs (pg_class.relacl, pg_attribute.attacl; a relation
-- without an ACL has its kind's default, which grants nothing to anyone but the owner). The request roles are members
-- of no other role (01), so their own entries and PUBLIC's are all they hold.

create temporary view core_relation as
select c.oid, n.nspname, c.relname, c.relkind, c.relowner, c.relacl
from pg_catalog.pg_class as c
join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
where c.relkind in ('r', 'p', 'v', 'm', 'S', 'f')
  and (n.nspname in ('auth', 'guestpass', 'guestpass_server', 'guestpass_migrations', 'storage')
       or (n.nspname = 'public' and c.relname in ('users', 'devices', 'partners')));

select is(
    (select count(*)::int from core_relation where nspname = 'public'),
    3,
    'the audit sees the core public tables users, devices and partners'
);

select set_eq(
    $$
    select format('%s.%s %s to %s', r.nspname, r.relname, a.privilege_type,
                  case a.grantee when 0 then 'PUBLIC' else pg_catalog.pg_get_userbyid(a.grantee)::text end)
    from core_relation as r
    cross join lateral pg_catalog.aclexplode(
        coalesce(r.relacl,
                 pg_catalog.acldefault((case r.relkind when 'S' then 's' else 'r' end)::"char", r.relowner))
    ) as a
    where a.grantee = 0 or pg_catalog.pg_get_userbyid(a.grantee) in
          ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
    union all
    select format('%s.%s.%s %s to %s', r.nspname, r.relname, t.attname, a.privilege_type,
                  case a.grantee when 0 then 'PUBLIC' else pg_catalog.pg_get_userbyid(a.grantee)::text end)
    from core_relation as r
    join pg_catalog.pg_attribute as t on t.attrelid = r.oid and t.attnum > 0 and not t.attisdropped
    cross join lateral pg_catalog.aclexplode(t.attacl) as a
    where a.grantee = 0 or pg_catalog.pg_get_userbyid(a.grantee) in
          ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
    $$,
    array[
        -- A signed-in user reads its own row, devices and pairings (row-level security: users_select_own,
        -- devices_select_own, partners_select_own); nothing in them is secret (b, d).
        'public.users SELECT to authenticated',
        'public.devices SELECT to authenticated',
        'public.partners SELECT to authenticated',
        -- ... and changes three settings of its own row (users_update_own). Not timezone (it meters the quota day:
        -- public.set_timezone), credits, premium, metadata or anything else.
        'public.users.onboarding_completed UPDATE to authenticated',
        'public.users.language UPDATE to authenticated',
        'public.users.notification_enabled UPDATE to authenticated',
        -- Storage (16_storage.sql): every object operation runs as the caller on storage.objects and the bucket routes
        -- on storage.buckets, so the app's own policies decide (none by default: the request roles reach nothing but
        -- what an app's policies open, and a restrictive tenant policy keeps each to its own app). The per-user usage
        -- and the sweep's keys (guestpass.storage_usage, storage_sweep) are reached only through the server's
        -- functions and the objects trigger.
        'storage.buckets SELECT to anon', 'storage.buckets INSERT to anon', 'storage.buckets UPDATE to anon',
        'storage.buckets DELETE to anon', 'storage.buckets SELECT to authenticated', 'storage.buckets INSERT to authenticated',
        'storage.buckets UPDATE to authenticated', 'storage.buckets DELETE to authenticated',
        'storage.buckets SELECT to service_role', 'storage.buckets INSERT to service_role', 'storage.buckets UPDATE to service_role',
        'storage.buckets DELETE to service_role',
        'storage.objects SELECT to anon', 'storage.objects INSERT to anon', 'storage.objects UPDATE to anon',
        'storage.objects DELETE to anon', 'storage.objects SELECT to authenticated', 'storage.objects INSERT to authenticated',
        'storage.objects UPDATE to authenticated', 'storage.objects DELETE to authenticated',
        'storage.objects SELECT to service_role', 'storage.objects INSERT to service_role', 'storage.objects UPDATE to service_role',
        'storage.objects DELETE to service_role'
        -- Nothing else: no INSERT, UPDATE or DELETE on any GuestPass table (the ledger, quotas, sessions, tokens,
        -- devices and their secrets change only through SECURITY DEFINER functions), nothing for anon or
        -- service_role, nothing on guestpass, guestpass_server, auth or guestpass_migrations, no sequence.
    ],
    'the request roles hold exactly the allowlisted privileges on GuestPass''s own tables, views, sequences and columns'
);

select set_eq(
    $$
    select format('%s %s to %s', n.nspname, a.privilege_type,
                  case a.grantee when 0 then 'PUBLIC' else pg_catalog.pg_get_userbyid(a.grantee)::text end)
    from pg_catalog.pg_namespace as n
    cross join lateral pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) as a
    where n.nspname in ('auth', 'guestpass', 'guestpass_server', 'guestpass_migrations', 'public', 'storage')
      and (a.grantee = 0 or pg_catalog.pg_get_userbyid(a.grantee) in
           ('anon', 'authenticated', 'service_role', 'guestpass_authenticator'))
    $$,
    array[
        -- The claim helpers, for policies.
        'auth USAGE to anon', 'auth USAGE to authenticated', 'auth USAGE to service_role',
        -- The server's functions, called as the request role (each granted to its callers only).
        'guestpass_server USAGE to anon', 'guestpass_server USAGE to authenticated',
        -- service_role calls one function there: guestpass_server.refuse_table_result (the table API's refusals)
        'guestpass_server USAGE to service_role',
        -- The login role calls the Realtime functions there itself, outside request transactions (poll, sync, prune,
        -- broadcast, presence: 13_realtime.sql); EXECUTE on nothing else, and no privilege on their tables (a).
        'guestpass_server USAGE to guestpass_authenticator',
        -- The exposed schema (PUBLIC's USAGE is PostgreSQL 15's default; CREATE is revoked, 0001).
        'public USAGE to PUBLIC', 'public USAGE to anon', 'public USAGE to authenticated',
        'public USAGE to service_role',
        -- Storage's tables and helpers (storage.foldername, filename, extension), for the request roles.
        'storage USAGE to anon', 'storage USAGE to authenticated', 'storage USAGE to service_role'
        -- Nothing on guestpass or guestpass_migrations, no CREATE anywhere.
    ],
    'the request roles hold exactly the allowlisted schema privileges'
);

-- (b) Column names: a table of an exposed schema holds nothing secret. Every table and view of public is checked
-- (the core ones and an app's own); extensions' objects (pgTAP's views) are not the app's.

select is(
    array(
        select c.relname || '.' || a.attname
        from pg_catalog.pg_class as c
        join pg_catalog.pg_attribute as a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where c.relnamespace = 'public'::regnamespace
          and c.relkind in ('r', 'p', 'v', 'm', 'f')
          and not pg_temp.extension_member('pg_catalog.pg_class', c.oid)
          and (a.attname like '%secret%' or a.attname like '%hash%' or a.attname like '%token%'
               or a.attname like '%sealed%')
        order by 1
    ),
    -- Allowlist: none.
    '{}'::text[],
    'no column of a table or view in public is named like a secret (secret, hash, token, sealed)'
);

select hasnt_column('public', 'devices', 'secret_hash', 'public.devices has no secret_hash (guestpass.device_secrets)');

-- (c) Functions PUBLIC may execute (by their ACL, or the default ACL when they have none), outside extensions.

select is(
    array(
        select f.fn::text
        from pg_temp.own_functions() as f (fn)
        where pg_temp.public_may_execute(f.fn)
        order by 1
    ),
    -- Allowlist: none. Trigger functions included (EXECUTE on them is checked when a trigger is created, not when
    -- it fires); the policy helpers auth.has_role, is_partner and partner_ids are granted to their roles (0044).
    '{}'::text[],
    'no function of auth, guestpass, guestpass_server or public is executable by PUBLIC'
);

-- (d) As the table API would query: authenticated A of app X on device A1, select * from public.devices.

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1',
    p_session => '00000000-0000-4000-8000-0000000005a1'
);
select results_eq(
    'select id from public.devices order by id',
    array['00000000-0000-4000-8000-0000000000a1'::uuid, '00000000-0000-4000-8000-0000000000a2'::uuid],
    'select * from public.devices as A answers exactly A''s devices'
);
select is(
    (select array_agg(k.key order by k.key)
     from public.devices as d
     cross join lateral jsonb_object_keys(to_jsonb(d)) as k (key)
     where d.id = '00000000-0000-4000-8000-0000000000a1'),
    array['app_id', 'app_version', 'build_number', 'created_at', 'id', 'is_simulator', 'last_seen_at', 'model',
          'os_version', 'revoked_at', 'user_id'],
    'a device row (select=*) has exactly its public columns'
);
select is_empty(
    $$select 1 from public.devices as d
      where to_jsonb(d)::text ~ '[0-9a-f]{64}'
         or to_jsonb(d)::text like '%' || encode(sha256(convert_to('secret a1', 'UTF8')), 'hex') || '%'$$,
    'no device row A reads holds a hash'
);
select throws_ok(
    'select * from guestpass.device_secrets', '42501', null, 'A cannot read guestpass.device_secrets'
);
reset role;

select from pg_temp.as_anon();
select throws_ok('select * from public.devices', '42501', null, 'anon cannot read public.devices');
reset role;

select from pg_temp.as_service_role();
select throws_ok('select * from public.devices', '42501', null, 'service_role cannot read public.devices');
reset role;

select is(
    pg_temp.schema_users('guestpass'),
    '{}'::text[],
    'guestpass.device_secrets sits in a schema no request role may use'
);

-- (e) Per-role statement timeouts: stored as the roles' own cluster-wide settings (the server applies them per
-- request). Their values may be the operator's (0044 keeps an existing one); anon and authenticated have one,
-- service_role none.

select is(
    array(
        select r.rolname::text
        from pg_catalog.pg_db_role_setting as s
        join pg_catalog.pg_roles as r on r.oid = s.setrole
        cross join lateral unnest(s.setconfig) as c (setting)
        where s.setdatabase = 0
          and r.rolname in ('anon', 'authenticated', 'service_role')
          and c.setting like 'statement\_timeout=%' and c.setting <> 'statement_timeout=0'
        order by 1
    ),
    array['anon', 'authenticated'],
    'anon and authenticated have a statement_timeout of their own, service_role none'
);

select * from finish();
rollback;
