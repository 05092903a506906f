-- the operator console (17_console.sql): role guestpass_console executes the functions of schema guestpass_console and
-- nothing else; every function resolves the operator from a live session and refuses other apps' users and apps;
-- every action writes an audit row nobody can change; sessions end when idle, old or signed out; failed sign-ins are
-- limited (5 an email, 20 an address, in 15 minutes). Sessions and failures are aged, not slept on. Fixtures: apps X,
-- Y; users A, B (X), C (Y); devices a1 (A), c1 (C); operators ox (app X, sessions 'sx', then 'sx2'), oall (all apps,
-- TOTP, sessions 'sall', 'spending', then 'sall2').
begin;
select plan(84);

\ir lib/fixtures.sql

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc(array['a1', 'c1']);
insert into guestpass.sessions (id, app_id, user_id, device_id) values
    ('00000000-0000-4000-8000-0000000005a1', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
     '00000000-0000-4000-8000-0000000000a1');
select guestpass.create_operator('ox@example.com', 'hash-x', null, false, false, array['00000000-0000-4000-8000-0000000000f1'::uuid])
    as ox \gset
select guestpass.create_operator('oall@example.com', 'hash-all', '\x0102'::bytea, true, true, null) as oall \gset
insert into guestpass.operator_sessions (operator_id, token_hash, second_factor_done) values
    (:'ox', 'sx', true), (:'oall', 'sall', true), (:'oall', 'spending', false);

update public.users set email = 'Alice@Example.com', is_anonymous = false where id = '00000000-0000-4000-8000-00000000000a';
insert into guestpass.share_codes (user_id, app_id, code) values
    ('00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000f1', 'ABC234');
insert into guestpass.identities (app_id, user_id, provider, subject) values
    ('00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a', 'apple', '001234.abcdef');

-- The role: what it is and what it may do.
select ok((select rolcanlogin and not rolsuper and not rolinherit and not rolbypassrls and not rolcreaterole and not rolcreatedb
           from pg_roles where rolname = 'guestpass_console'), 'guestpass_console logs in, inherits nothing, bypasses nothing');
select is((select count(*)::int from pg_auth_members as m join pg_roles as r on r.oid in (m.member, m.roleid)
           where r.rolname = 'guestpass_console'), 0, 'it is no member of a role and no role is a member of it');
select ok(not pg_has_role('guestpass_authenticator', 'guestpass_console', 'MEMBER'), 'the API''s login role cannot become it');
select is(
    (select count(*)::int from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
     where c.relkind in ('r', 'v', 'm', 'S', 'p', 'f') and n.nspname not in ('pg_catalog', 'information_schema')
       and n.nspname not like 'pg_temp%'
       and not exists (select 1 from pg_depend as d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'e')
       and (has_table_privilege('guestpass_console', c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
            or (c.relkind = 'S' and has_sequence_privilege('guestpass_console', c.oid, 'USAGE, SELECT, UPDATE')))),
    0, 'it holds no privilege on any table, view or sequence (but pgTAP''s own)');
select is(
    (select array_agg(distinct n.nspname order by n.nspname) from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
     where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_temp%'
       and p.prorettype <> 'trigger'::regtype and has_function_privilege('guestpass_console', p.oid, 'EXECUTE')
       and not exists (select 1 from pg_depend as d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')),
    array['guestpass_console']::name[], 'the functions it may call are those of schema guestpass_console (but pgTAP''s)');
select is(
    (select count(*)::int from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
     where n.nspname = 'guestpass_console' and not p.prosecdef), 0, 'each of them runs as its owner (SECURITY DEFINER)');
select ok(not has_function_privilege('guestpass_authenticator', 'guestpass_console.apps(text)', 'EXECUTE'),
    'the API''s login role cannot execute them');

-- Scope.
set local role guestpass_console;
select is((select jsonb_agg(a ->> 'name') from jsonb_array_elements(guestpass_console.apps('sx')) as a), '["App X"]',
    'an operator of app X sees app X only');
select is((select jsonb_array_length(guestpass_console.apps('sall'))), 2, 'an operator of all apps sees both');
select throws_ok($$select guestpass_console.user_page('sx', '00000000-0000-4000-8000-00000000000c')$$, '42501', NULL,
    'an operator of app X is refused a user of app Y');
select throws_ok($$select guestpass_console.change_credits('sx', '00000000-0000-4000-8000-00000000000c', 5, 'x')$$, '42501', NULL,
    'and credits for them');
select throws_ok($$select guestpass_console.revoke_device('sx', '00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000c1')$$,
    '42501', NULL, 'and their device');
select throws_ok($$select guestpass_console.set_app_quota('sx', '00000000-0000-4000-8000-0000000000f2', 1, 1)$$, '42501', NULL,
    'and app Y''s quota');
select throws_ok($$select guestpass_console.app('sx', '00000000-0000-4000-8000-0000000000f2')$$, '42501', NULL, 'and app Y''s page');
select is(guestpass_console.find_users('sx', 'user_id', '00000000-0000-4000-8000-00000000000c'), '[]'::jsonb,
    'a search does not find app Y''s user');
select is(guestpass_console.find_users('sx', 'device_id', '00000000-0000-4000-8000-0000000000c1'), '[]'::jsonb,
    'nor app Y''s device');
select is((guestpass_console.find_users('sx', 'device_id', '00000000-0000-4000-8000-0000000000a1') -> 0 ->> 'user_id'),
    '00000000-0000-4000-8000-00000000000a', 'it finds app X''s user by device id');
select is(guestpass_console.find_users('sx', 'device_id', 'not-a-uuid'), '[]'::jsonb, 'a malformed id finds nobody');
select is((guestpass_console.find_users('sx', 'email', 'alice@example.COM') -> 0 ->> 'user_id'),
    '00000000-0000-4000-8000-00000000000a', 'an email is found whatever its case');
select is((guestpass_console.find_users('sx', 'share_code', 'abc234') -> 0 ->> 'user_id'),
    '00000000-0000-4000-8000-00000000000a', 'a share code is found');
select is((guestpass_console.find_users('sx', 'apple_subject', '001234.abcdef') -> 0 ->> 'user_id'),
    '00000000-0000-4000-8000-00000000000a', 'an Apple subject is found');
select throws_ok($$select guestpass_console.find_users('sx', 'password', 'x')$$, '22023', NULL, 'an unknown kind is refused');
select throws_ok($$select guestpass_console.user_page('sx', '00000000-0000-4000-8000-0000000000ff')$$, 'P0002', NULL,
    'an unknown user is not found');

-- Actions and their audit rows.
select is(guestpass_console.change_credits('sx', '00000000-0000-4000-8000-00000000000a', 5, 'ticket 7'), 5, 'credits granted');
select throws_ok($$select guestpass_console.change_credits('sx', '00000000-0000-4000-8000-00000000000a', -6, 'too many')$$,
    '22023', NULL, 'taking more than the balance is refused');
select is(guestpass_console.change_credits('sx', '00000000-0000-4000-8000-00000000000a', -2, 'refund'), 3, 'credits taken');
select lives_ok($$select guestpass_console.revoke_device('sx', '00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000a1')$$,
    'a device revoked');
select is(guestpass_console.user_page('sx', '00000000-0000-4000-8000-00000000000a') #>> '{user,credits_balance}', '3',
    'the page shows the balance');
reset role;
select is((select array_agg(action || ':' || coalesce(detail ->> 'reason', detail ->> 'device_id') order by id)
           from guestpass.operator_audit where operator_email = 'ox@example.com'),
    array['credits:ticket 7', 'credits:refund', 'device_revoked:00000000-0000-4000-8000-0000000000a1'],
    'each action wrote its audit row, the refused one none');
select is((select before || after from guestpass.operator_audit where detail ->> 'reason' = 'ticket 7'),
    '{"credits_balance": 5}'::jsonb || '{}'::jsonb, 'with the balance after');
select ok((select revoked_at is not null from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a1'),
    'the revoked device''s session ended');
select throws_ok($$update guestpass.operator_audit set action = 'x'$$, '42501', NULL, 'the audit cannot be changed, even by the owner');
select throws_ok($$delete from guestpass.operator_audit$$, '42501', NULL, 'nor deleted');

-- Deletion: the user's own path, scoped and audited.
set local role guestpass_console;
select throws_ok($$select guestpass_console.delete_user('sx', '00000000-0000-4000-8000-00000000000c', '{public}')$$, '42501', NULL,
    'an operator of app X cannot delete app Y''s user');
select is(guestpass_console.delete_user('sx', '00000000-0000-4000-8000-00000000000b', '{public}') ->> 'app_id',
    '00000000-0000-4000-8000-0000000000f1', 'it deletes app X''s user B');
reset role;
select is((select (select count(*) from public.users where id = '00000000-0000-4000-8000-00000000000b')::text || ' '
                  || (select action from guestpass.operator_audit where user_id = '00000000-0000-4000-8000-00000000000b')),
    '0 account_deleted', 'B is gone, and the audit says who deleted it');

-- Sessions: pending second factor, idle, old, signed out.
set local role guestpass_console;
select throws_ok($$select guestpass_console.apps('spending')$$, 'GPC01', NULL, 'a session waiting for its code reads nothing');
reset role;
update guestpass.operator_sessions set last_seen_at = now() - interval '31 minutes' where token_hash = 'sx';
update guestpass.operator_sessions set created_at = now() - interval '13 hours' where token_hash = 'sall';
set local role guestpass_console;
select throws_ok($$select guestpass_console.apps('sx')$$, 'GPC01', NULL, 'a session idle for 31 minutes has ended');
select throws_ok($$select guestpass_console.apps('sall')$$, 'GPC01', NULL, 'a session begun 13 hours ago has ended');

-- A code is good once: the step it was accepted for, and earlier ones, are refused afterwards.
reset role;
insert into guestpass.operator_sessions (operator_id, token_hash) values (:'oall', 's2'), (:'oall', 's3');
set local role guestpass_console;
select ok(guestpass_console.second_factor_done('s2', 1000), 'a code of step 1000 completes a session');
select ok(not guestpass_console.second_factor_done('s3', 1000), 'the same step does not complete another');
select ok(guestpass_console.second_factor_done('s3', 1001), 'the next step does');

-- Failed sign-ins: 5 for one email and the lookup refuses.
select guestpass_console.sign_in_failed('ox@example.com', '10.0.0.1') from generate_series(1, 5);
select is(guestpass_console.sign_in_lookup('ox@example.com', '10.0.0.2'), '{"limited": true}'::jsonb,
    'after 5 failures the email is limited, from any address');

-- Every further failure within 15 minutes counts; 20 from one address limit it for any email; older ones do not count.
select guestpass_console.sign_in_failed('other' || n || '@example.com', '10.0.0.1') from generate_series(1, 14) as n;
select is(guestpass_console.sign_in_lookup('oall@example.com', '10.0.0.1') ->> 'limited', 'false', '19 failures of an address: not yet');
select guestpass_console.sign_in_failed('other@example.com', '10.0.0.1');
select is(guestpass_console.sign_in_lookup('oall@example.com', '10.0.0.1'), '{"limited": true}'::jsonb,
    'after 20 failures from one address it is limited, for every email');
select is(guestpass_console.sign_in_lookup('OAll@Example.com', '10.0.0.9') - 'operator_id',
    '{"limited": false, "password_hash": "hash-all", "totp_secret": "AQI=", "totp_required": true}'::jsonb,
    'from another address the lookup gives the hash, the secret (base64) and whether a code is required, whatever the case');
select is(guestpass_console.sign_in_lookup('nobody@example.com', '10.0.0.9'), '{"limited": false}'::jsonb,
    'an unknown email: no operator, not limited');
reset role;
update guestpass.operator_sign_in_failures set failed_at = now() - interval '16 minutes';
set local role guestpass_console;
select is(guestpass_console.sign_in_lookup('ox@example.com', '10.0.0.1') ->> 'operator_id', :'ox',
    'failures older than 15 minutes no longer count');

-- Sign-in: a session, complete at once without a second factor, else after it; both audited as sign_in.
select lives_ok(format($$select guestpass_console.sign_in_succeeded(%L, 'sx2', true)$$, :'ox'),
    'a password-only operator''s session is complete at once');
select throws_ok(format($$select guestpass_console.sign_in_succeeded(%L, 'sall2', true)$$, :'oall'), '22023', NULL,
    'an operator with a TOTP secret cannot skip the code');
select guestpass_console.sign_in_succeeded(:'oall', 'sall2', false);
select is(guestpass_console.session('sall2') - 'operator_id',
    '{"email": "oall@example.com", "all_apps": true, "second_factor_done": false}'::jsonb,
    'the session waiting for its code is known to session()');
select throws_ok($$select guestpass_console.find_users('sall2', 'email', 'x@example.com')$$, 'GPC01', NULL, 'but reads nothing');
select guestpass_console.second_factor_done('sall2', 5000);
select is(jsonb_array_length(guestpass_console.apps('sall2')), 2, 'once its code is right, it reads');
select throws_ok($$select guestpass_console.apps('no-such-session')$$, 'GPC01', NULL, 'an unknown session is not signed in');
reset role;
select is((select array_agg(operator_email || ':' || action || ':' || coalesce(detail ->> 'second_factor', '-') order by id)
           from guestpass.operator_audit where action = 'sign_in'),
    array['oall@example.com:sign_in:totp', 'oall@example.com:sign_in:totp', 'ox@example.com:sign_in:-',
          'oall@example.com:sign_in:totp'],
    'each complete sign-in wrote one audit row (the two codes of the replay checks above, then these), the refused none');

-- Sessions slide: a use moves last_seen_at to now; a disabled operator's session is over.
update guestpass.operator_sessions set last_seen_at = now() - interval '20 minutes' where token_hash = 'sx2';
set local role guestpass_console;
select ok(jsonb_array_length(guestpass_console.apps('sx2')) = 1, 'a session used 20 minutes ago still reads');
reset role;
select ok((select last_seen_at = now() from guestpass.operator_sessions where token_hash = 'sx2'), 'and its last use is now');
update guestpass.operators set disabled_at = now() where email = 'oall@example.com';
set local role guestpass_console;
select throws_ok($$select guestpass_console.apps('sall2')$$, 'GPC01', NULL, 'a disabled operator''s session has ended');
select throws_ok($$select guestpass_console.session('sall2')$$, 'GPC01', NULL, 'session() says so too');
select is(guestpass_console.sign_in_lookup('oall@example.com', '10.0.0.9'), '{"limited": false}'::jsonb,
    'and a disabled operator cannot sign in');
reset role;

-- Scope for the remaining functions: operator ox (app X, session sx2) and app Y's user C, its session and key.
update public.users set email = 'carol@example.com', is_anonymous = false where id = '00000000-0000-4000-8000-00000000000c';
insert into guestpass.share_codes (user_id, app_id, code) values
    ('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2', 'CCC234');
insert into guestpass.identities (app_id, user_id, provider, subject) values
    ('00000000-0000-4000-8000-0000000000f2', '00000000-0000-4000-8000-00000000000c', 'apple', '009999.cccccc');
insert into guestpass.sessions (id, app_id, user_id) values
    ('00000000-0000-4000-8000-0000000005c1', '00000000-0000-4000-8000-0000000000f2', '00000000-0000-4000-8000-00000000000c'),
    ('00000000-0000-4000-8000-0000000005a2', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a');
insert into guestpass.refresh_tokens (session_id, counter, token_hash) values ('00000000-0000-4000-8000-0000000005a2', 0, repeat('a2', 32));
insert into guestpass.api_keys (id, app_id, kind, key_hash, key_prefix) values
    ('00000000-0000-4000-8000-0000000007f2', '00000000-0000-4000-8000-0000000000f2', 'secret', repeat('ab', 32), 'gp_sk_yyyyyy');
set local role guestpass_console;
select throws_ok($$select guestpass_console.set_premium('sx2', '00000000-0000-4000-8000-00000000000c', true)$$, '42501', NULL,
    'an operator of app X cannot make app Y''s user premium');
select throws_ok(
    $$select guestpass_console.end_session('sx2', '00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000005c1')$$,
    '42501', NULL, 'nor end their session');
select throws_ok($$select guestpass_console.add_key('sx2', '00000000-0000-4000-8000-0000000000f2', 'secret', repeat('cd', 32), 'gp_sk_zzzz')$$,
    '42501', NULL, 'nor add a key to app Y');
select throws_ok(
    $$select guestpass_console.revoke_key('sx2', '00000000-0000-4000-8000-0000000000f2', '00000000-0000-4000-8000-0000000007f2')$$,
    '42501', NULL, 'nor revoke app Y''s key');
select throws_ok($$select guestpass_console.audit('sx2', '00000000-0000-4000-8000-0000000000f2', null)$$, '42501', NULL,
    'nor read app Y''s audit');
select is(guestpass_console.find_users('sx2', 'email', 'carol@example.com') || guestpass_console.find_users('sx2', 'share_code', 'CCC234')
          || guestpass_console.find_users('sx2', 'apple_subject', '009999.cccccc'), '[]'::jsonb,
    'nor find app Y''s user by email, share code or Apple subject');
select throws_ok($$select guestpass_console.app('sx2', '00000000-0000-4000-8000-0000000000ff')$$, 'P0002', NULL, 'an unknown app is not found');

-- The remaining actions, each with its audit row.
select lives_ok($$select guestpass_console.set_app_quota('sx2', '00000000-0000-4000-8000-0000000000f1', 5, 4)$$, 'a quota set');
select throws_ok($$select guestpass_console.set_app_quota('sx2', '00000000-0000-4000-8000-0000000000f1', -1, 4)$$, '22023', NULL,
    'a negative quota is refused');
select guestpass_console.add_key('sx2', '00000000-0000-4000-8000-0000000000f1', 'secret', repeat('ef', 32), 'gp_sk_xxxxxx') as new_key \gset
select throws_ok($$select guestpass_console.add_key('sx2', '00000000-0000-4000-8000-0000000000f1', 'admin', repeat('ef', 32), 'x')$$,
    '22023', NULL, 'a key of another kind is refused');
select is((select k - 'created_at' from jsonb_array_elements(guestpass_console.app('sx2', '00000000-0000-4000-8000-0000000000f1') -> 'keys') as k),
    jsonb_build_object('id', :'new_key', 'kind', 'secret', 'prefix', 'gp_sk_xxxxxx', 'revoked_at', null),
    'the app page lists the key by id, kind and prefix, never its hash');
select is(guestpass_console.app('sx2', '00000000-0000-4000-8000-0000000000f1') -> 'settings' -> 'daily_free_allowance', '5',
    'and the new quota');
select lives_ok(format($$select guestpass_console.revoke_key('sx2', '00000000-0000-4000-8000-0000000000f1', %L)$$, :'new_key'),
    'the key revoked');
select throws_ok(format($$select guestpass_console.revoke_key('sx2', '00000000-0000-4000-8000-0000000000f1', %L)$$, :'new_key'),
    'P0002', NULL, 'a revoked key is not revoked twice');
select lives_ok($$select guestpass_console.set_premium('sx2', '00000000-0000-4000-8000-00000000000a', true)$$, 'premium given');
select lives_ok(
    $$select guestpass_console.end_session('sx2', '00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000005a2')$$,
    'a session ended');
select throws_ok($$select guestpass_console.change_credits('sx2', '00000000-0000-4000-8000-00000000000a', 5, ' ')$$, '22023', NULL,
    'a credit change without a reason is refused');
select throws_ok($$select guestpass_console.change_credits('sx2', '00000000-0000-4000-8000-00000000000a', 0, 'nothing')$$, '22023', NULL,
    'and one of zero');
reset role;
select is((select array_agg(action order by id) from guestpass.operator_audit where operator_email = 'ox@example.com' and id >
              (select max(id) from guestpass.operator_audit where action = 'sign_in')),
    array['app_quota', 'key_created', 'key_revoked', 'premium', 'session_ended'], 'one audit row per action, none for the refused');
select is((select before || after from guestpass.operator_audit where action = 'premium'),
    '{"is_premium": false}'::jsonb || '{"is_premium": true}'::jsonb, 'premium''s row holds the value before and after');
select is((select jsonb_build_array(before, after) from guestpass.operator_audit where action = 'app_quota'),
    '[{"daily_free_allowance": 3, "welcome_grant_credits": 10}, {"daily_free_allowance": 5, "welcome_grant_credits": 4}]'::jsonb,
    'the quota''s row too');
select is((select (select revoked_at is not null from guestpass.sessions where id = '00000000-0000-4000-8000-0000000005a2')::text
                  || (select revoked_at is not null from guestpass.refresh_tokens where token_hash = repeat('a2', 32))::text),
    'truetrue', 'the ended session and its refresh token are revoked');
set local role guestpass_console;
select is((select jsonb_agg(r ->> 'action') from jsonb_array_elements(guestpass_console.audit('sx2', null, null)) as r),
    '["session_ended", "premium", "key_revoked", "key_created", "app_quota", "sign_in", "account_deleted", "device_revoked", "credits", "credits"]'::jsonb,
    'the operator''s audit: its apps'' rows and its own sign-ins, newest first, never another operator''s sign-in');
select is((select jsonb_agg(r ->> 'action') from jsonb_array_elements(guestpass_console.audit('sx2', '00000000-0000-4000-8000-0000000000f1',
              (select (guestpass_console.audit('sx2', null, null) -> 1 ->> 'id')::bigint))) as r),
    '["key_revoked", "key_created", "app_quota", "account_deleted", "device_revoked", "credits", "credits"]'::jsonb,
    'of one app, older than a given row');

select * from finish();
rollback;
