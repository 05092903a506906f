-- sessions: refresh-token rotation with GoTrue's rules (rotate the active token, hand back the active token for its
-- parent or within the reuse window, revoke the family otherwise), sessions kept per app, the caller's profile,
-- sign-out by scope, and API-key lookup. Token hashes are sha256('<session>/<counter>'), standing in for the server's
-- HMAC-derived tokens. Fixtures: apps X and Y; in X, guest G (device D, sessions 5a1…5a5) and guest H (device H,
-- sessions 5b1, 5b2).
begin;
select plan(59);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/sign_up.sql

-- guestpass_server.refresh_session with its tokens named rather than hashed: pg_temp.refresh(session, counter, token,
-- next token [, reuse window, default 10 s]) passes the hex SHA-256 of each name, as the current role.
create function pg_temp.refresh(
    p_session uuid, p_counter integer, p_token text, p_next_token text, p_window double precision default 10
)
returns table (status text, user_id uuid, device_id uuid, session_id uuid, active_counter integer, is_anonymous boolean)
language sql
as $$
    select r.status, r.user_id, r.device_id, r.session_id, r.active_counter, r.is_anonymous
    from guestpass_server.refresh_session(
        p_session, p_counter, encode(sha256(convert_to(p_token, 'UTF8')), 'hex'),
        encode(sha256(convert_to(p_next_token, 'UTF8')), 'hex'), p_window
    ) as r
$$;

select from pg_temp.make_apps_xy();
insert into guestpass.api_keys (app_id, kind, key_hash, key_prefix, revoked_at) values
    ('00000000-0000-4000-8000-0000000000f1', 'publishable', encode(sha256('gp_pub_x'), 'hex'), 'gp_pub_', null),
    ('00000000-0000-4000-8000-0000000000f1', 'secret', encode(sha256('gp_sec_x'), 'hex'), 'gp_sec_', null),
    ('00000000-0000-4000-8000-0000000000f1', 'publishable', encode(sha256('gp_pub_old'), 'hex'), 'gp_pub_', now());

-- Sign-ups as anon in app X. (`select from …` discards the result row; `\gset` keeps the result.)

select from pg_temp.as_anon();

select user_id as g_user, device_id as g_device
from pg_temp.sign_up('device d', '203.0.113.7', '00000000-0000-4000-8000-0000000005a1', '5a1/0') \gset
select
from (values ('00000000-0000-4000-8000-0000000005a2'::uuid), ('00000000-0000-4000-8000-0000000005a3'),
             ('00000000-0000-4000-8000-0000000005a4'), ('00000000-0000-4000-8000-0000000005a5')) as s (session_id)
cross join lateral pg_temp.sign_up('device d', '203.0.113.7', s.session_id, s.session_id::text || '/0');
select user_id as h_user
from pg_temp.sign_up('device h', '203.0.113.8', '00000000-0000-4000-8000-0000000005b1', '5b1/0') \gset

-- Rotation of session 5a1.

select results_eq(
    $$select status, user_id, device_id, session_id, active_counter, is_anonymous
      from pg_temp.refresh('00000000-0000-4000-8000-0000000005a1', 0, '5a1/0', '5a1/1')$$,
    $$values ('rotated', '$$ || :'g_user' || $$'::uuid, '$$ || :'g_device' || $$'::uuid,
              '00000000-0000-4000-8000-0000000005a1'::uuid, 1, true)$$,
    'the active token rotates: counter 1 is issued, with the user, device and session'
);
select results_eq(
    $$select status, active_counter from pg_temp.refresh('00000000-0000-4000-8000-0000000005a1', 1, '5a1/1', '5a1/2')$$,
    $$values ('rotated', 2)$$,
    'the new token rotates in turn: counter 2'
);
select results_eq(
    $$select status, active_counter from pg_temp.refresh('00000000-0000-4000-8000-0000000005a1', 0, '5a1/0', '5a1/1')$$,
    $$values ('reused', 2)$$,
    'an older token revoked within the reuse window gets the active counter back'
);
reset role;

select results_eq(
    $$select counter, revoked_at is not null from guestpass.refresh_tokens
      where session_id = '00000000-0000-4000-8000-0000000005a1' order by counter$$,
    $$values (0, true), (1, true), (2, false)$$,
    'rotation revoked tokens 0 and 1; token 2 is the active one; reuse issued nothing'
);
select is(
    (select refreshed_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a1'),
    now(),
    'rotation set the session''s refreshed_at'
);

-- Move time: tokens 0 and 1 were revoked an hour ago, the device was last seen a day ago.

update guestpass.refresh_tokens set revoked_at = now() - interval '1 hour'
where session_id = '00000000-0000-4000-8000-0000000005a1' and counter < 2;
update public.devices set last_seen_at = now() - interval '1 day' where id = :'g_device';

set local role anon;
select results_eq(
    $$select status, active_counter from pg_temp.refresh('00000000-0000-4000-8000-0000000005a1', 1, '5a1/1', '5a1/2', 0)$$,
    $$values ('reused', 2)$$,
    'the parent of the active token gets the active counter back at any age, even with no window'
);
reset role;
select is(
    (select last_seen_at from public.devices where id = :'g_device'), now(),
    'a refresh touches the device''s last_seen_at'
);
select is(
    (select count(*)::int from guestpass.refresh_tokens where session_id = '00000000-0000-4000-8000-0000000005a1'),
    3,
    'reuse of the parent rotated nothing'
);

-- Token 0 replayed outside the window: the family is revoked, and that is committed (returned, not raised).

set local role anon;
select results_eq(
    $$select status, user_id, session_id, active_counter
      from pg_temp.refresh('00000000-0000-4000-8000-0000000005a1', 0, '5a1/0', '5a1/1')$$,
    $$values ('refresh_token_already_used', null::uuid, null::uuid, null::integer)$$,
    'an older token outside the reuse window: refresh_token_already_used, nothing about the user'
);
reset role;
select isnt(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a1'),
    null,
    'the session is revoked'
);
select is(
    (select count(*)::int from guestpass.refresh_tokens
     where session_id = '00000000-0000-4000-8000-0000000005a1' and revoked_at is null),
    0,
    'every token of the family is revoked'
);
set local role anon;
select results_eq(
    $$select status from pg_temp.refresh('00000000-0000-4000-8000-0000000005a1', 2, '5a1/2', '5a1/3')$$,
    array['session_not_found'],
    'then the formerly active token fails too: session_not_found'
);

-- Unknown or mismatched tokens.

select is((select r.status from pg_temp.refresh(c.session, c.counter, c.token, c.next_token) as r), c.status, c.what)
from (values
    ('00000000-0000-4000-8000-0000000005a2'::uuid, 0, 'never issued', '5a2/1', 'refresh_token_not_found',
     'an unknown token hash: refresh_token_not_found'),
    ('00000000-0000-4000-8000-0000000005a2', 1, '00000000-0000-4000-8000-0000000005a2/0', '5a2/1',
     'refresh_token_not_found', 'a known hash with the wrong counter: refresh_token_not_found'),
    ('00000000-0000-4000-8000-0000000005a3', 0, '00000000-0000-4000-8000-0000000005a2/0', '5a3/1',
     'refresh_token_not_found', 'a known hash presented for another session: refresh_token_not_found'),
    ('00000000-0000-4000-8000-000000000999', 0, '5a1/0', 'x', 'session_not_found', 'an unknown session: session_not_found')
) as c (session, counter, token, next_token, status, what);

-- Another app's claims: the session does not exist for them, and nothing changes.

select from pg_temp.as_anon('00000000-0000-4000-8000-0000000000f2');
select results_eq(
    $$select status, user_id from pg_temp.refresh('00000000-0000-4000-8000-0000000005a2', 0, '00000000-0000-4000-8000-0000000005a2/0', '5a2/1')$$,
    $$values ('session_not_found', null::uuid)$$,
    'a session of app X refreshed with app Y''s claims: session_not_found'
);
select from pg_temp.as_anon();
select results_eq(
    $$select status, active_counter from pg_temp.refresh('00000000-0000-4000-8000-0000000005a2', 0, '00000000-0000-4000-8000-0000000005a2/0', '5a2/1', 0)$$,
    $$values ('rotated', 1)$$,
    'the same token still rotates with app X''s claims'
);

-- Refused calls.

select throws_ok(
    $$select guestpass_server.refresh_session('00000000-0000-4000-8000-0000000005a2', 1,
          encode(sha256('5a2/1'), 'hex'), 'not a hash', 10)$$,
    '22023', 'the next refresh token hash must be a lowercase hex SHA-256', 'a bad next hash is refused'
);
select throws_ok(
    $$select pg_temp.refresh('00000000-0000-4000-8000-0000000005a2', 1, '5a2/1', '5a2/2', -1)$$,
    '22023', 'the reuse window must be a non-negative number of seconds', 'a negative reuse window is refused'
);
select from pg_temp.as_anon(null);
select throws_ok(
    $$select pg_temp.refresh('00000000-0000-4000-8000-0000000005a2', 1, '5a2/1', '5a2/2')$$,
    '42501', 'no app in the request claims', 'refresh without an app claim is refused'
);
reset role;
set local role authenticated;
select throws_ok(
    $$select pg_temp.refresh('00000000-0000-4000-8000-0000000005a2', 1, '5a2/1', '5a2/2')$$,
    '42501', null, 'authenticated cannot call refresh_session'
);
reset role;

-- The caller's profile, as G in session 5a3.

select from pg_temp.as_user(:'g_user', p_device => :'g_device', p_session => '00000000-0000-4000-8000-0000000005a3');
select results_eq(
    'select user_id, email, is_anonymous, user_metadata, app_metadata, session_active '
    'from guestpass_server.current_user_profile()',
    $$values ('$$ || :'g_user' || $$'::uuid, null::text, true, '{}'::jsonb, '{}'::jsonb, true)$$,
    'current_user_profile: the caller''s row, session active'
);

-- Sign-out by scope. G's live sessions: 5a2, 5a3 (current), 5a4, 5a5.

select is(guestpass_server.sign_out('others'), 3, 'sign-out others revokes the three other sessions');
select is(guestpass_server.sign_out('others'), 0, 'again: nothing left to revoke');
select is(
    (select session_active from guestpass_server.current_user_profile()), true, 'the current session stays active'
);
select throws_ok($$select guestpass_server.sign_out('all')$$, '22023', 'scope must be local, global or others',
                 'an unknown scope is refused');
select throws_ok('select guestpass_server.sign_out(null)', '22023', 'scope must be local, global or others',
                 'a null scope is refused');
select throws_ok(format('select guestpass.session_is_live(%L)', :'g_user'), '42501', null,
                 'authenticated cannot call guestpass.session_is_live (0040) directly');
-- The one live-session check (0040), as its SECURITY DEFINER callers run it: the claims stay, the role is the owner's.
reset role;
select is(guestpass.session_is_live(:'g_user'), true, 'session_is_live: the claims'' session 5a3 is a live session of G');
select is(
    guestpass.session_is_live('00000000-0000-4000-8000-00000000000b'), false,
    'session_is_live: the claims'' session is not a session of another user'
);
select from set_config('request.jwt.claims', '{"session_id":"00000000-0000-4000-8000-0000000005a2"}', true);
select is(guestpass.session_is_live(:'g_user'), false, 'session_is_live: a signed-out session (5a2) is not live');
select from set_config('request.jwt.claims', '{}', true);
select is(guestpass.session_is_live(:'g_user'), false, 'session_is_live: no session claim, no live session');
select from pg_temp.as_user(:'g_user', p_device => :'g_device', p_session => '00000000-0000-4000-8000-0000000005a3');
select is(guestpass_server.sign_out('local'), 1, 'sign-out local revokes the current session');
select is(
    (select session_active from guestpass_server.current_user_profile()), false, 'the session is no longer active'
);
select is(guestpass_server.sign_out('local'), 0, 'local again: nothing to revoke');
select throws_ok($$select * from guestpass_server.delete_account('{}')$$, '42501', 'the session has ended',
                 'a signed-out session cannot delete its account (its access token still verifies until it expires)');
select throws_ok('select guestpass_server.resolve_api_key(''x'')', '42501', null,
                 'authenticated cannot call resolve_api_key');
reset role;
select is((select count(*)::int from public.users where id = :'g_user'), 1, 'and the account is still there');

select results_eq(
    $$select id::text, revoked_at is not null from guestpass.sessions where user_id = '$$ || :'g_user' || $$'
      order by id$$,
    $$values ('00000000-0000-4000-8000-0000000005a1', true), ('00000000-0000-4000-8000-0000000005a2', true),
             ('00000000-0000-4000-8000-0000000005a3', true), ('00000000-0000-4000-8000-0000000005a4', true),
             ('00000000-0000-4000-8000-0000000005a5', true)$$,
    'all of G''s sessions are revoked now'
);
select is(
    (select count(*)::int from guestpass.refresh_tokens as t
     join guestpass.sessions as s on s.id = t.session_id
     where s.user_id = :'g_user' and t.revoked_at is null),
    0,
    'and so are all their refresh tokens'
);
select is(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005b1'),
    null,
    'another user''s session is untouched'
);

select from pg_temp.as_anon();
select results_eq(
    $$select status from pg_temp.refresh('00000000-0000-4000-8000-0000000005a3', 0, '00000000-0000-4000-8000-0000000005a3/0', '5a3/1')$$,
    array['session_not_found'],
    'a signed-out session''s refresh token no longer works'
);

-- Global sign-out, as H after a second sign-in from its device.

select from pg_temp.sign_up('device h', '203.0.113.8', '00000000-0000-4000-8000-0000000005b2', '5b2/0');
reset role;
select from pg_temp.as_user(:'h_user', p_session => '00000000-0000-4000-8000-0000000005b1');
select is(guestpass_server.sign_out('global'), 2, 'sign-out global revokes every session of the user');

-- H's sub with app Y's claims: no profile, nothing to sign out.

select from pg_temp.as_user(
    :'h_user', '00000000-0000-4000-8000-0000000000f2', p_session => '00000000-0000-4000-8000-0000000005b1'
);
select is_empty('select * from guestpass_server.current_user_profile()', 'no profile under another app''s claim');
select is(guestpass_server.sign_out('global'), 0, 'no session to sign out under another app''s claim');
select from set_config('request.jwt.claims', '{"role":"authenticated"}', true);
select is_empty('select * from guestpass_server.current_user_profile()', 'no profile without a sub claim');
select throws_ok(
    $$select guestpass_server.sign_out('global')$$, '42501', 'no user or app in the request claims',
    'sign-out without a sub claim is refused'
);
reset role;

set local role anon;
select throws_ok($$select guestpass_server.sign_out('global')$$, '42501', null, 'anon cannot call sign_out');
select throws_ok(
    'select * from guestpass_server.current_user_profile()', '42501', null, 'anon cannot call current_user_profile'
);

-- API keys, as the server asks before it knows the app: anon with empty claims.

select from set_config('request.jwt.claims', '{}', true);
select results_eq(
    $$select app_id, kind from guestpass_server.resolve_api_key(encode(sha256('gp_pub_x'), 'hex'))$$,
    $$values ('00000000-0000-4000-8000-0000000000f1'::uuid, 'publishable')$$,
    'a publishable key resolves to its app'
);
select results_eq(
    $$select app_id, kind from guestpass_server.resolve_api_key(encode(sha256('gp_sec_x'), 'hex'))$$,
    $$values ('00000000-0000-4000-8000-0000000000f1'::uuid, 'secret')$$,
    'a secret key resolves to its app'
);
select is_empty(
    $$select * from guestpass_server.resolve_api_key(encode(sha256('gp_pub_old'), 'hex'))$$,
    'a revoked key resolves to nothing'
);
select is_empty(
    $$select * from guestpass_server.resolve_api_key(encode(sha256('gp_unknown'), 'hex'))$$,
    'an unknown key resolves to nothing'
);
select is_empty('select * from guestpass_server.resolve_api_key(null)', 'a null hash resolves to nothing');
select throws_ok('select * from guestpass.api_keys', '42501', null, 'anon still cannot read the keys themselves');
reset role;

set local role service_role;
select throws_ok(
    $$select guestpass_server.resolve_api_key('x')$$, '42501', null, 'service_role cannot call the server functions'
);
reset role;

-- Realtime's session check (13_realtime.sql): of the sessions asked about, the live ones; a revoked one and one that
-- never existed are not.
update guestpass.sessions set revoked_at = null where id = '00000000-0000-4000-8000-0000000005b1';
update guestpass.sessions set revoked_at = now() where id = '00000000-0000-4000-8000-0000000005a4';
set local role guestpass_authenticator;
select results_eq(
    $$select session_id from guestpass_server.realtime_live_sessions(array[
        '00000000-0000-4000-8000-0000000005b1', '00000000-0000-4000-8000-0000000005a4',
        '00000000-0000-4000-8000-00000000ffff']::uuid[]) order by 1$$,
    $$values ('00000000-0000-4000-8000-0000000005b1'::uuid)$$,
    'realtime_live_sessions keeps the live session and drops the revoked and the unknown one'
);
reset role;
set local role authenticated;
select throws_ok(
    $$select * from guestpass_server.realtime_live_sessions(array[]::uuid[])$$, '42501', null,
    'a request role cannot call the realtime session check'
);
reset role;

select * from finish();
rollback;
