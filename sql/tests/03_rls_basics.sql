-- behaviour basics: the login role and anon reach no table, a signed-in user sees and changes only its own user
-- row and devices, and no client writes devices. Fixtures: app X with users A (devices A1, A2) and B (device B1),
-- app Y with user C (device C1).
begin;
select plan(33);

\ir lib/fixtures.sql
\ir lib/roles.sql

-- Users updated long ago, so that the trigger's update of A's updated_at shows.
select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc(p_updated_at => '2000-01-01');

-- The login role without a role switch: no access, even with A's valid claims (device A1) set.
-- (`select from …` discards the result row so it does not clutter the TAP output.)

select from pg_temp.set_claims(
    'authenticated', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
    '00000000-0000-4000-8000-0000000000a1'
);
set local role guestpass_authenticator;
select throws_ok('select * from public.users', '42501', null, 'login role without a switch: users is denied');
select throws_ok('select * from public.devices', '42501', null, 'login role without a switch: devices is denied');
select throws_ok('select * from guestpass.apps', '42501', null, 'login role without a switch: guestpass is denied');
select throws_ok('select auth.uid()', '42501', null, 'login role without a switch: auth helpers are denied');
reset role;

-- anon, even holding a user's claims: no table access.

set local role anon;
select throws_ok('select * from public.users', '42501', null, 'anon cannot read users');
select throws_ok('select * from public.devices', '42501', null, 'anon cannot read devices');
select throws_ok(
    'update public.users set timezone = ''Europe/Paris''', '42501', null, 'anon cannot update users'
);
reset role;

-- service_role has no table grants; the server works through functions.

set local role service_role;
select throws_ok('select * from public.users', '42501', null, 'service_role cannot read users directly');
select throws_ok('select * from public.devices', '42501', null, 'service_role cannot read devices directly');
reset role;

-- authenticated as user A of app X, on device A1.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select results_eq(
    'select id from public.users',
    array['00000000-0000-4000-8000-00000000000a'::uuid],
    'A sees only its own users row'
);
select results_eq(
    'select id from public.devices order by id',
    array['00000000-0000-4000-8000-0000000000a1'::uuid, '00000000-0000-4000-8000-0000000000a2'::uuid],
    'A sees only its own devices'
);
select is_empty(
    'select id from public.users where id = ''00000000-0000-4000-8000-00000000000b''',
    'A cannot read B''s row by id'
);
select is_empty(
    'update public.users set language = ''fr'' '
    'where id = ''00000000-0000-4000-8000-00000000000b'' returning id',
    'A updating B''s row (same app) changes nothing'
);
select is_empty(
    'update public.users set language = ''fr'' '
    'where id = ''00000000-0000-4000-8000-00000000000c'' returning id',
    'A updating C''s row (other app) changes nothing'
);
select results_eq(
    'update public.users set onboarding_completed = true, language = ''fr'', notification_enabled = true '
    'where id = ''00000000-0000-4000-8000-00000000000a'' returning language',
    array['fr'],
    'A updates the allowed columns of its own row'
);
select throws_ok(
    'update public.users set timezone = ''Pacific/Kiritimati'' where id = ''00000000-0000-4000-8000-00000000000a''',
    '42501', null, 'A cannot update its timezone directly (it meters the quota day: public.set_timezone)'
);
select throws_ok(
    'update public.users set is_anonymous = false where id = ''00000000-0000-4000-8000-00000000000a''',
    '42501', null, 'A cannot update is_anonymous'
);
select throws_ok(
    'update public.users set app_metadata = ''{"premium":true}'' where id = ''00000000-0000-4000-8000-00000000000a''',
    '42501', null, 'A cannot update app_metadata'
);
select throws_ok(
    'update public.users set app_id = ''00000000-0000-4000-8000-0000000000f2'' '
    'where id = ''00000000-0000-4000-8000-00000000000a''',
    '42501', null, 'A cannot move its row to another app'
);
select throws_ok(
    'insert into public.users (app_id) values (''00000000-0000-4000-8000-0000000000f1'')',
    '42501', null, 'A cannot insert users'
);
select throws_ok(
    'delete from public.users where id = ''00000000-0000-4000-8000-00000000000a''',
    '42501', null, 'A cannot delete users'
);
select throws_ok(
    'insert into public.devices (app_id, user_id) values (''00000000-0000-4000-8000-0000000000f1'','
    ' ''00000000-0000-4000-8000-00000000000a'')',
    '42501', null, 'A cannot insert devices'
);
select throws_ok(
    'update public.devices set model = ''iPhone'' where id = ''00000000-0000-4000-8000-0000000000a1''',
    '42501', null, 'A cannot update devices'
);
select throws_ok(
    'delete from public.devices where id = ''00000000-0000-4000-8000-0000000000a1''',
    '42501', null, 'A cannot delete devices'
);
select throws_ok('select * from guestpass.api_keys', '42501', null, 'A cannot read guestpass.api_keys');

-- A's user id with another app's claim sees nothing.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000f2');
select is_empty('select id from public.users', 'A''s sub under app Y''s claim sees no users');
select is_empty('select id from public.devices', 'A''s sub under app Y''s claim sees no devices');

-- No claims at all sees nothing.

select from set_config('request.jwt.claims', '', true);
select is_empty('select id from public.users', 'authenticated without claims sees no users');
select is_empty('select id from public.devices', 'authenticated without claims sees no devices');

-- User C of app Y sees only its own.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2');
select results_eq(
    'select id from public.users', array['00000000-0000-4000-8000-00000000000c'::uuid], 'C sees only its own users row'
);
select results_eq(
    'select id from public.devices', array['00000000-0000-4000-8000-0000000000c1'::uuid], 'C sees only its own device'
);
reset role;

-- Back as the owner: only A's row changed, and its updated_at moved.

select results_eq(
    'select id, language from public.users order by id',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, 'fr'),
             ('00000000-0000-4000-8000-00000000000b'::uuid, null),
             ('00000000-0000-4000-8000-00000000000c'::uuid, null)$$,
    'only A''s row was changed'
);
select is(
    (select updated_at from public.users where id = '00000000-0000-4000-8000-00000000000a'),
    now(),
    'the trigger set A''s updated_at'
);

select * from finish();
rollback;
