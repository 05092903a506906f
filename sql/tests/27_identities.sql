-- identities: guestpass_server.sign_in_with_identity creates an account on a first Apple sign-in and finds it after;
-- links an Apple id to a signed-in guest (same user, rows kept, not anonymous, old session and its refresh tokens
-- ended, device kept); refuses an Apple id linked to another user, and a dead session, changing nothing; identities are
-- per app, unreadable by request roles, and go with their user. Fixtures: apps X and Y.
begin;
select plan(28);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/sign_up.sql

-- An Apple sign-in as the server makes it (guestpass_server.sign_in_with_identity, as the current role): Apple id
-- p_subject, linked to the caller's session when p_link, from p_client_ip, opening session p_session with the refresh
-- token named p_token (its hex SHA-256 is passed); the email Apple shared, if any, is not a private relay address.
create function pg_temp.apple_sign_in(
    p_subject text, p_link boolean, p_client_ip text, p_session uuid, p_token text, p_email text default null
)
returns table (status text, user_id uuid, device_id uuid, is_anonymous boolean, email text, identities jsonb)
language sql
as $$
    select s.status, s.user_id, s.device_id, s.is_anonymous, s.email, s.identities
    from guestpass_server.sign_in_with_identity(
        'apple', p_subject, p_email, false, p_link, 'ua', p_client_ip, p_session,
        encode(sha256(convert_to(p_token, 'UTF8')), 'hex')
    ) as s
$$;

select from pg_temp.make_apps_xy();

-- A guest of app X with a device, a session and a reading.
select from pg_temp.as_anon();
select user_id as g_user, device_id as g_device
from pg_temp.sign_up('device g', '203.0.113.7', '00000000-0000-4000-8000-0000000006a1', '6a1/0') \gset
reset role;
select from pg_temp.as_user(:'g_user', p_device => :'g_device', p_session => '00000000-0000-4000-8000-0000000006a1');
select from public.add_reading('palm');
reset role;

-- 1. First sign-in with an Apple id creates an account; the second finds it.

select from pg_temp.as_anon();
select status as first_status, user_id as a_user, is_anonymous as a_anonymous, email as a_email, identities as a_identities
from pg_temp.apple_sign_in('apple-a', false, '203.0.113.9', '00000000-0000-4000-8000-0000000006b1', '6b1/0', 'a@example.com') \gset
select status as again_status, user_id as again_user
from pg_temp.apple_sign_in('apple-a', false, '203.0.113.9', '00000000-0000-4000-8000-0000000006b2', '6b2/0') \gset
reset role;

select is(:'first_status'::text, 'created', 'a first Apple sign-in creates an account');
select is(:'a_anonymous'::text, 'f', 'which is not anonymous');
select is(:'a_email'::text, 'a@example.com', 'with the email Apple shared');
select is((:'a_identities'::jsonb) -> 0 ->> 'provider', 'apple', 'its identities list Apple');
select is((:'a_identities'::jsonb) -> 0 ->> 'id', 'apple-a', 'with Apple''s user id');
select is(:'again_status'::text, 'signed_in', 'the next sign-in with it signs in');
select is(:'again_user'::text, :'a_user'::text, 'to the same user');
select is(
    (select email from public.users where id = :'a_user'), 'a@example.com', 'a sign-in without an email keeps the one stored'
);

-- 2. The guest links an Apple id: same user, rows kept, its session ended, the new one on its device.

select from pg_temp.as_user(:'g_user', p_device => :'g_device', p_session => '00000000-0000-4000-8000-0000000006a1');
select status as link_status, user_id as link_user, device_id as link_device, is_anonymous as link_anonymous
from pg_temp.apple_sign_in('apple-g', true, '203.0.113.7', '00000000-0000-4000-8000-0000000006a2', '6a2/0') \gset
reset role;

select is(:'link_status'::text, 'linked', 'a guest links an Apple id');
select is(:'link_user'::text, :'g_user'::text, 'and stays the same user');
select is(:'link_anonymous'::text, 'f', 'no longer anonymous');
select is(:'link_device'::text, :'g_device'::text, 'the new session keeps the guest''s device');
select is((select count(*)::int from public.readings where user_id = :'g_user'), 1, 'its reading is still its own');
select isnt(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000006a1'), null,
    'the guest''s old session is ended'
);
select is(
    (select count(*)::int from guestpass.refresh_tokens
     where session_id = '00000000-0000-4000-8000-0000000006a1' and revoked_at is null),
    0,
    'with its refresh tokens'
);
select is(
    (select app_metadata -> 'providers' from public.users where id = :'g_user'), '["apple"]'::jsonb,
    'app_metadata lists the provider'
);

-- 3. Refusals change nothing.

select from pg_temp.as_anon();
select user_id as h_user
from pg_temp.sign_up('device h', '203.0.113.8', '00000000-0000-4000-8000-0000000006c1', '6c1/0') \gset
reset role;
select from pg_temp.as_user(:'h_user', p_session => '00000000-0000-4000-8000-0000000006c1');
select status as taken_status
from pg_temp.apple_sign_in('apple-g', true, '203.0.113.8', '00000000-0000-4000-8000-0000000006c2', '6c2/0') \gset
reset role;
select is(:'taken_status'::text, 'identity_already_exists', 'an Apple id linked to another user is refused');
select is((select is_anonymous from public.users where id = :'h_user'), true, 'the second guest stays a guest');
select is(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000006c1'), null,
    'and keeps its session'
);
select is(
    (select count(*)::int from guestpass.sessions where id = '00000000-0000-4000-8000-0000000006c2'), 0,
    'no session was opened'
);

select from pg_temp.as_user(:'g_user', p_session => '00000000-0000-4000-8000-0000000006a1');
select status as dead_status
from pg_temp.apple_sign_in('apple-z', true, '203.0.113.7', '00000000-0000-4000-8000-0000000006a3', '6a3/0') \gset
reset role;
select is(:'dead_status'::text, 'session_not_found', 'linking from an ended session is refused');
select is((select count(*)::int from guestpass.identities where subject = 'apple-z'), 0, 'and links nothing');

-- 4. Per app; private to the server; gone with the user; arguments checked.

select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select status as y_status, user_id as y_user
from pg_temp.apple_sign_in('apple-a', false, '203.0.113.9', '00000000-0000-4000-8000-0000000006d1', '6d1/0') \gset
reset role;
select is(:'y_status'::text, 'created', 'the same Apple id in another app is another account');
select isnt(:'y_user'::text, :'a_user'::text, 'a different user');

select from pg_temp.as_user(:'a_user', p_session => '00000000-0000-4000-8000-0000000006b1');
select throws_ok($$select * from guestpass.identities$$, '42501', null, 'authenticated cannot read identities');
reset role;
select from pg_temp.as_anon();
select throws_ok(
    $$select * from guestpass_server.sign_in_with_identity('google', 'x', null, false, false, null, null,
      gen_random_uuid(), encode(sha256('x'), 'hex'))$$,
    '22023', 'the provider must be apple', 'only the apple provider'
);
select throws_ok(
    $$select * from guestpass_server.sign_in_with_identity('apple', '', null, false, false, null, null,
      gen_random_uuid(), encode(sha256('x'), 'hex'))$$,
    '22023', 'the subject must be 1 to 255 characters', 'an empty subject is refused'
);
reset role;

delete from public.users where id = :'a_user';
select is((select count(*)::int from guestpass.identities where subject = 'apple-a' and app_id = '00000000-0000-4000-8000-0000000000f1'), 0,
    'deleting the user deletes its identities');

select * from finish();
rollback;
