-- guest sign-up: create_guest_user and guestpass_server.sign_up_guest map one app + device secret to one guest, keep
-- apps apart, store only the agreed hash, record device facts, open a session with refresh token 0, and refuse bad
-- input and the wrong callers. Fixtures: apps X and Y. Device D1 = 6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e, whose
-- stored hash (lowercase hex SHA-256 of the lowercase uuid text, as the server computes it) is 1bbcc993…2a64.
begin;
select plan(48);

\ir lib/fixtures.sql
\ir lib/roles.sql

select from pg_temp.make_apps_xy();

-- create_guest_user as anon in app X.
-- (`select from …` discards the result row; `\gset` keeps a result in a psql variable.)

select from pg_temp.as_anon();

select public.create_guest_user('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e') as a_user \gset
select isnt(:'a_user'::uuid, null, 'create_guest_user returns a user id');
select is(
    public.create_guest_user('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'), :'a_user'::uuid,
    'the same device id again gives the same user'
);
select is(
    public.create_guest_user('6F1ED002-AB5D-4C94-A4D9-1C3B4A3A0B7E'), :'a_user'::uuid,
    'any spelling of the same uuid gives the same user'
);
select throws_ok(
    'select public.create_guest_user(null)', '22023', 'p_device_id is required', 'a null device id is refused'
);
select throws_ok(
    'select guestpass.ensure_guest_device(''00000000-0000-4000-8000-0000000000f1'', repeat(''0'', 64), null)',
    '42501', null, 'anon cannot call the internal ensure_guest_device'
);
select throws_ok('select * from guestpass.sessions', '42501', null, 'anon cannot read sessions');

select from pg_temp.as_anon(null);
select throws_ok(
    'select public.create_guest_user(''6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'')',
    '42501', 'no app in the request claims', 'without an app claim create_guest_user is refused'
);

-- The same device id in app Y is another guest.

select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select public.create_guest_user('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e') as y_user \gset
select isnt(:'y_user'::uuid, :'a_user'::uuid, 'the same device id in another app gives another user');
reset role;

-- authenticated and service_role may call it too, always in their claims' app.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select is(
    public.create_guest_user('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'), :'a_user'::uuid,
    'as authenticated: the device''s guest in the claims'' app'
);
reset role;
select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select is(
    public.create_guest_user('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'), :'y_user'::uuid,
    'as service_role: the device''s guest in the claims'' app'
);
reset role;

set local role guestpass_authenticator;
select throws_ok(
    'select public.create_guest_user(''6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'')',
    '42501', null, 'the login role without a switch cannot call create_guest_user'
);
reset role;

-- What was stored.

select is(
    (select count(*)::int from public.users), 2, 'one user per app for the device'
);
select results_eq(
    'select d.app_id, d.user_id, s.secret_hash from public.devices as d '
    'join guestpass.device_secrets as s on s.device_id = d.id and s.app_id = d.app_id order by d.app_id',
    $$values ('00000000-0000-4000-8000-0000000000f1'::uuid, '$$ || :'a_user' || $$'::uuid,
              '1bbcc9935707766e90aeff52f7a5a17f66e0c16ce63deee3fa5f82530bac2a64'),
             ('00000000-0000-4000-8000-0000000000f2'::uuid, '$$ || :'y_user' || $$'::uuid,
              '1bbcc9935707766e90aeff52f7a5a17f66e0c16ce63deee3fa5f82530bac2a64')$$,
    'one device row per app, its secret stored (guestpass.device_secrets) as the lowercase hex SHA-256 of the '
    'lowercase uuid text'
);
select results_eq(
    $$select is_anonymous, user_metadata, email from public.users where id = '$$ || :'a_user' || $$'$$,
    $$values (true, '{}'::jsonb, null::text)$$,
    'the new user is an anonymous guest with empty metadata and no email'
);

-- sign_up_guest as anon in app X: a new device with facts and metadata.

select from pg_temp.as_anon();

select * from guestpass_server.sign_up_guest(
    encode(sha256('device d2'), 'hex'),
    '{"model":"iPhone15,2","os_version":"18.0","app_version":"1.4","build_number":"42","is_simulator":true}',
    '{"theme":"dark"}',
    '203.0.113.7', null, null, null, null, 'GuestPassTests/1.0',
    '00000000-0000-4000-8000-0000000005a1', encode(sha256('s1/0'), 'hex')
) \gset s1_
select is(:'s1_created'::boolean, true, 'sign_up_guest with a new device creates a user');
select is(:'s1_session_id'::uuid, '00000000-0000-4000-8000-0000000005a1'::uuid, 'it returns the server''s session id');
select isnt(:'s1_device_id'::uuid, null, 'it returns the public device id');
select is(:'s1_is_anonymous'::boolean, true, 'the new user is anonymous');
select is(:'s1_user_metadata'::jsonb, '{"theme":"dark"}'::jsonb, 'the user metadata is the sign-up data');
select is(:'s1_last_sign_in_at'::timestamptz, now(), 'last_sign_in_at is now');

-- The same device signs up again: same user, metadata kept, only the given facts change.

select * from guestpass_server.sign_up_guest(
    encode(sha256('device d2'), 'hex'), '{"os_version":"18.1","model":null}', '{"theme":"light"}',
    '203.0.113.7', null, null, null, null, null,
    '00000000-0000-4000-8000-0000000005a2', encode(sha256('s2/0'), 'hex')
) \gset s2_
select is(:'s2_user_id'::uuid, :'s1_user_id'::uuid, 'the same device signs up as the same user');
select is(:'s2_device_id'::uuid, :'s1_device_id'::uuid, 'with the same device row');
select is(:'s2_created'::boolean, false, 'created is false for a known device');
select is(:'s2_user_metadata'::jsonb, '{"theme":"dark"}'::jsonb, 'a known user''s metadata is not overwritten');

-- The device create_guest_user made (D1) is found through its hash: both paths agree on it.

select * from guestpass_server.sign_up_guest(
    '1bbcc9935707766e90aeff52f7a5a17f66e0c16ce63deee3fa5f82530bac2a64', null, null,
    '203.0.113.7', null, null, null, null, null,
    '00000000-0000-4000-8000-0000000005a3', encode(sha256('s3/0'), 'hex')
) \gset s3_
select is(:'s3_user_id'::uuid, :'a_user'::uuid, 'sign_up_guest with D1''s hash finds create_guest_user''s guest');

-- No device: always a new user, no device.

select * from guestpass_server.sign_up_guest(
    null, '{"model":"ignored"}', null, '203.0.113.7', null, null, null, null, null,
    '00000000-0000-4000-8000-0000000005a4', encode(sha256('s4/0'), 'hex')
) \gset s4_
select is(:'s4_created'::boolean, true, 'sign-up without a device creates a user');
-- \gset leaves a variable unset for a null column; :{?name} tells whether it is set.
select is(:{?s4_device_id}, false, 'with no device (device_id is null)');

-- Bad input: a clear 22023, nothing written.

select throws_ok(
    $$select guestpass_server.sign_up_guest(encode(sha256('device d9'), 'hex'), '{"is_simulator":"yes"}', null,
      '203.0.113.7', null, null, null, null, null, gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '22023', 'device.is_simulator must be a boolean', 'a non-boolean is_simulator is refused'
);
select throws_ok(
    $$select guestpass_server.sign_up_guest(encode(sha256('device d9'), 'hex'), '{"build_number":42}', null,
      '203.0.113.7', null, null, null, null, null, gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '22023', 'device.build_number must be a string', 'a numeric build_number is refused'
);
select throws_ok(
    $$select guestpass_server.sign_up_guest(upper(encode(sha256('device d9'), 'hex')), null, null,
      '203.0.113.7', null, null, null, null, null, gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '22023', 'the device secret hash must be a lowercase hex SHA-256',
    'a device hash that is not lowercase hex is refused'
);
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, '["x"]', '203.0.113.7', null, null, null, null, null,
      gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '22023', 'user metadata must be a JSON object', 'metadata that is not an object is refused'
);
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '203.0.113.7', null, null, null, null, null,
      gen_random_uuid(), 'not a hash')$$,
    '22023', 'the refresh token hash must be a lowercase hex SHA-256', 'a bad refresh token hash is refused'
);
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, null, 5, 1, null, null, null,
      gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '22023', 'a client IP is required for the per-IP limit', 'a per-IP limit without a client IP is refused'
);

-- Wrong app or role.

select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000ff');
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '203.0.113.7', null, null, null, null, null,
      gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '42501', 'unknown app', 'an app claim of no app is refused'
);
select from set_config('request.jwt.claims', '{}', true);
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '203.0.113.7', null, null, null, null, null,
      gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '42501', 'no app in the request claims', 'no app claim is refused'
);
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '203.0.113.7', null, null, null, null, null,
      gen_random_uuid(), encode(sha256('s9/0'), 'hex'))$$,
    '42501', null, 'authenticated cannot call sign_up_guest'
);
reset role;

-- The same device hash in app Y is another guest.

select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select * from guestpass_server.sign_up_guest(
    encode(sha256('device d2'), 'hex'), null, null, '203.0.113.7', null, null, null, null, null,
    '00000000-0000-4000-8000-0000000005b1', encode(sha256('y1/0'), 'hex')
) \gset y1_
select isnt(:'y1_user_id'::uuid, :'s1_user_id'::uuid, 'the same device hash in another app is another user');
reset role;

-- What sign-up stored.

select results_eq(
    $$select model, os_version, app_version, build_number, is_simulator
      from public.devices where id = '$$ || :'s1_device_id' || $$'$$,
    $$values ('iPhone15,2', '18.1', '1.4', '42', true)$$,
    'device facts are recorded, later sign-ups change only the keys they give (JSON null = not given)'
);
select is(
    (select count(*)::int from public.devices where app_id = '00000000-0000-4000-8000-0000000000f1'),
    2,
    'app X has two devices: D1 and D2 (nothing from the refused calls)'
);
select is(
    (select count(*)::int from public.users where app_id = '00000000-0000-4000-8000-0000000000f1'),
    3,
    'app X has three users: D1''s, D2''s and the deviceless one'
);
select results_eq(
    $$select app_id, user_id, device_id, user_agent, ip, revoked_at, refreshed_at
      from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a1'$$,
    $$values ('00000000-0000-4000-8000-0000000000f1'::uuid, '$$ || :'s1_user_id' || $$'::uuid,
              '$$ || :'s1_device_id' || $$'::uuid, 'GuestPassTests/1.0', '203.0.113.7',
              null::timestamptz, null::timestamptz)$$,
    'sign-up opened a live session for the user and device'
);
select results_eq(
    $$select counter, token_hash, revoked_at from guestpass.refresh_tokens
      where session_id = '00000000-0000-4000-8000-0000000005a1'$$,
    $$values (0, encode(sha256('s1/0'), 'hex'), null::timestamptz)$$,
    'with one active refresh token, counter 0'
);
select is(
    (select device_id from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a4'),
    null,
    'a deviceless sign-up''s session has no device'
);
select is(
    (select count(*)::int from guestpass.sessions), 5, 'one session per successful sign-up, none from refused ones'
);

-- A revoked device is refused by both paths, and creates no new guest (its secret signs in no more).

update public.devices set revoked_at = now() where id = (
    select device_id from guestpass.device_secrets
    where secret_hash = encode(sha256(convert_to('6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e', 'UTF8')), 'hex')
      and app_id = '00000000-0000-4000-8000-0000000000f1'
);
select from pg_temp.as_anon();
select throws_ok(
    'select public.create_guest_user(''6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'')', 'PT401', 'device revoked',
    'create_guest_user refuses a revoked device, as sign-up does'
);
select from pg_temp.as_service_role();
select throws_ok(
    'select public.create_guest_user(''6f1ed002-ab5d-4c94-a4d9-1c3b4a3a0b7e'')', 'PT401', 'device revoked',
    'an app''s backend gets no user for a revoked device either'
);
reset role;

-- Deleting a device detaches its sessions; deleting a user deletes them with their tokens.

delete from public.devices where id = :'s1_device_id';
select is(
    (select device_id from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a1'),
    null,
    'deleting a device leaves its sessions without a device'
);
delete from public.users where id = :'s1_user_id';
select is(
    (select count(*)::int from guestpass.sessions where id in ('00000000-0000-4000-8000-0000000005a1',
                                                                '00000000-0000-4000-8000-0000000005a2'))
    + (select count(*)::int from guestpass.refresh_tokens where session_id in ('00000000-0000-4000-8000-0000000005a1',
                                                                             '00000000-0000-4000-8000-0000000005a2')),
    0,
    'deleting a user deletes its sessions and refresh tokens'
);

select * from finish();
rollback;
