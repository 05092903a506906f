-- one clock: guestpass.clock() is the only time a function body reads, so the refresh-token reuse window, sign-out,
-- the rate-limit refill and prune, and the last_seen_at / last_sign_in_at stamps all move with
-- guestpass.clock_override (no sleeping, no aging rows); and the shared argument checks (require_app,
-- require_user_and_app, require_hex_sha256) raise what their callers raised before. Token hashes are
-- sha256('<session>/<counter>'), as in 07_sessions. Fixtures: app X; guests signed up here.
begin;
select plan(66);

\ir lib/catalog.sql
\ir lib/roles.sql
\ir lib/errors.sql

insert into guestpass.apps (id, name) values ('00000000-0000-4000-8000-0000000000f1', 'App X');

-- Runs a statement: 'ok', or '<sqlstate> <detail>' of its error.
create function pg_temp.outcome(p_sql text)
returns text
language plpgsql
as $$
declare
    v_state text;
    v_detail text;
begin
    execute p_sql;
    return 'ok';
exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_detail = pg_exception_detail;
    return v_state || ' ' || coalesce(v_detail, '');
end
$$;

-- Structure: no function body reads the time but guestpass.clock() (and the updated_at trigger, which runs as the
-- caller, who may not execute guestpass.clock(); see 0019). Extension members (pgTAP) are not ours.

create temporary table clock_readers on commit drop as
select p.oid::regprocedure::text as fn
from pg_catalog.pg_proc as p
where p.oid in (select pg_temp.own_functions())
  and concat_ws(' ', p.prosrc, pg_catalog.pg_get_function_sqlbody(p.oid), pg_catalog.pg_get_expr(p.proargdefaults, 0))
      ~* '\mnow\s*\(\s*\)|''now''|\mclock_timestamp\M|\mcurrent_(timestamp|time|date)\M|\mstatement_timestamp\M|\mtransaction_timestamp\M|\mlocaltimestamp\M|\mtimeofday\M';

select cmp_ok(
    (select count(*)::int
     from pg_catalog.pg_proc as p
     where p.pronamespace in ('auth'::regnamespace, 'guestpass'::regnamespace, 'guestpass_server'::regnamespace)),
    '>=', 40,
    'the clock check sees the functions of auth, guestpass and guestpass_server'
);
select is(
    array(select fn from clock_readers where fn not in ('guestpass.clock()', 'guestpass.set_updated_at()') order by 1),
    '{}'::text[],
    'no function in auth, guestpass, guestpass_server or public reads now(), clock_timestamp(), current_timestamp, '
    || 'statement_timestamp(), transaction_timestamp() or localtimestamp, but guestpass.clock()'
);
select is(
    array(select fn from clock_readers order by 1),
    array['guestpass.clock()', 'guestpass.set_updated_at()'],
    'the check does see the two that read now(): guestpass.clock() itself and the updated_at trigger'
);

select is(
    array(
        select format('%s %s %s %s %s', p.oid::regprocedure, l.lanname, p.provolatile, p.prosecdef, p.proconfig)
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_language as l on l.oid = p.prolang
        where p.oid in ('guestpass.require_app()'::regprocedure, 'guestpass.require_user_and_app()'::regprocedure,
                        'guestpass.require_hex_sha256(text, text)'::regprocedure)
        order by 1
    ),
    array[
        'guestpass.require_app() sql v f ',
        'guestpass.require_hex_sha256(text,text) sql v f ',
        'guestpass.require_user_and_app() plpgsql s f {"search_path=\"\""}'
    ],
    'the check helpers are plain (invoker) functions: require_app and require_hex_sha256 inlinable SQL (VOLATILE, no '
    || 'SET clause, 0042), require_user_and_app plpgsql with an empty search_path'
);
select is(
    array(
        select f.fn || ' to ' || r.rolname
        from unnest(array['guestpass.require_app()', 'guestpass.require_user_and_app()',
                          'guestpass.require_hex_sha256(text, text)']) as f (fn)
        cross join pg_catalog.pg_roles as r
        where r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and pg_catalog.has_function_privilege(r.oid, f.fn::regprocedure, 'EXECUTE')
        order by 1
    ),
    '{}'::text[],
    'no request role may call the check helpers'
);
select is(
    array(
        select f.fn
        from unnest(array['guestpass.require_app()', 'guestpass.require_user_and_app()',
                          'guestpass.require_hex_sha256(text, text)']) as f (fn)
        where pg_catalog.obj_description(f.fn::regprocedure, 'pg_proc') is null
        order by 1
    ),
    '{}'::text[],
    'every check helper has a comment'
);

-- The check helpers (internal: called here as the owner). Under each set of request claims (JSON), the error a
-- helper raises: {sqlstate, message}.
create function pg_temp.error_under(p_claims text, p_sql text)
returns text[]
language plpgsql
as $$
begin
    perform set_config('request.jwt.claims', p_claims, true);
    return (pg_temp.error_fields(p_sql))[1:2];
end
$$;

select is(pg_temp.error_under(c.claims, c.call), array['42501', c.message], c.description)
from (values
    ('{"role":"anon"}', 'select guestpass.require_app()', 'no app in the request claims',
     'require_app raises 42501 without an app claim'),
    ('{"role":"anon"}', 'select guestpass.require_user_and_app()', 'no user or app in the request claims',
     'require_user_and_app raises 42501 without claims'),
    ('{"role":"anon","app_id":"not a uuid"}', 'select guestpass.require_app()', 'no app in the request claims',
     'require_app raises 42501 for an app claim that is not a uuid'),
    ('{"role":"anon","app_id":"00000000-0000-4000-8000-0000000000f1"}', 'select guestpass.require_user_and_app()',
     'no user or app in the request claims', 'require_user_and_app raises 42501 with an app but no user'),
    ('{"role":"authenticated","sub":"00000000-0000-4000-8000-0000000000d9"}', 'select guestpass.require_user_and_app()',
     'no user or app in the request claims', 'require_user_and_app raises 42501 with a user but no app')
) as c (claims, call, message, description);

select from pg_temp.set_claims('anon', '00000000-0000-4000-8000-0000000000f1');
select is(guestpass.require_app(), '00000000-0000-4000-8000-0000000000f1'::uuid, 'require_app answers the app claim');
select from pg_temp.set_claims(
    'authenticated', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-0000000000d9'
);
select is(
    (select row(c.user_id, c.app_id)::text from guestpass.require_user_and_app() as c),
    row('00000000-0000-4000-8000-0000000000d9'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid)::text,
    'require_user_and_app answers the user and app claims'
);

select throws_ok(
    format('select guestpass.require_hex_sha256(%L, ''the x hash'')', h.hash),
    '22023', 'the x hash must be a lowercase hex SHA-256', 'require_hex_sha256 refuses ' || h.what
)
from (values
    (upper(encode(sha256('x'), 'hex')), 'upper-case hex'),
    (left(encode(sha256('x'), 'hex'), 63), '63 digits'),
    (encode(sha256('x'), 'hex') || '0', '65 digits'),
    (null, 'null'),
    (repeat('g', 64), 'a non-hex letter')
) as h (hash, what);
select lives_ok(
    $$select guestpass.require_hex_sha256(encode(sha256('x'), 'hex'), 'the x hash')$$,
    'require_hex_sha256 accepts a lowercase hex SHA-256'
);

-- Their callers raise what they raised before (claims: user D9, no app).

select from pg_temp.set_claims('authenticated', null, '00000000-0000-4000-8000-0000000000d9');
select throws_ok(
    $$select guestpass.ensure_guest_device('00000000-0000-4000-8000-0000000000f1', 'ABC', null)$$,
    '22023', 'the device secret hash must be a lowercase hex SHA-256', 'ensure_guest_device: its hash message'
);
select throws_ok(
    $$select guestpass.require_app_user('00000000-0000-4000-8000-0000000000d9')$$,
    '42501', 'no app in the request claims', 'require_app_user: its no-app message'
);
set local role authenticated;
select throws_ok(
    $$select guestpass_server.sign_out('local')$$, '42501', 'no user or app in the request claims',
    'sign_out without an app claim: its message'
);
select throws_ok(
    $$select guestpass_server.devicecheck_take_lease('00000000-0000-4000-8000-0000000000e1', 10)$$,
    '42501', 'no user or app in the request claims', 'devicecheck_take_lease without an app claim: its message'
);
select throws_ok(
    $$select guestpass_server.devicecheck_finish('00000000-0000-4000-8000-0000000000e1', 'granted')$$,
    '42501', 'no user or app in the request claims', 'devicecheck_finish without an app claim: its message'
);
select from pg_temp.set_claims(
    'authenticated', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-0000000000d9'
);
select throws_ok(
    $$select guestpass_server.devicecheck_begin('A' || left(encode(sha256('t'), 'hex'), 63))$$,
    '22023', 'the token hash must be a lowercase hex SHA-256', 'devicecheck_begin: its hash message'
);
reset role;
set local role anon;
select from pg_temp.set_claims('anon', null);
select throws_ok(
    $$select public.create_guest_user('00000000-0000-4000-8000-0000000000e1')$$,
    '42501', 'no app in the request claims', 'create_guest_user without an app claim: its message'
);
select from pg_temp.set_claims('anon', '00000000-0000-4000-8000-0000000000f1');
select throws_ok(
    $$select guestpass_server.sign_up_guest(null, null, null, '203.0.113.9', null, null, null, null, null,
      gen_random_uuid(), upper(encode(sha256('s/0'), 'hex')))$$,
    '22023', 'the refresh token hash must be a lowercase hex SHA-256', 'sign_up_guest: its refresh hash message'
);
select throws_ok(
    $$select guestpass_server.refresh_session(gen_random_uuid(), 0, encode(sha256('s/0'), 'hex'), null, 10)$$,
    '22023', 'the next refresh token hash must be a lowercase hex SHA-256', 'refresh_session: its next hash message'
);
reset role;

-- Sign-up stamps the clock. Guest R (device r) signs up twice at 12:00: sessions 0c1 and 0c2.

set local guestpass.clock_override = '2025-03-10 12:00:00+00';
set local role anon;
select user_id as r_user, device_id as r_device, last_sign_in_at as r_signed_in
from guestpass_server.sign_up_guest(
    encode(sha256('device r'), 'hex'), null, null, '203.0.113.7', null, null, null, null, null,
    '00000000-0000-4000-8000-0000000000c1', encode(sha256('c1/0'), 'hex')
) \gset
select
from guestpass_server.sign_up_guest(
    encode(sha256('device r'), 'hex'), '{"app_version":"2.0"}', null, '203.0.113.7', null, null, null, null, null,
    '00000000-0000-4000-8000-0000000000c2', encode(sha256('c2/0'), 'hex')
);
reset role;
select is(:'r_signed_in'::timestamptz, '2025-03-10 12:00:00+00'::timestamptz, 'last_sign_in_at is guestpass.clock()');
select is(
    (select last_seen_at from public.devices where id = :'r_device'), '2025-03-10 12:00:00+00'::timestamptz,
    'a device found again by sign-up gets last_seen_at = guestpass.clock()'
);

-- Presents refresh token p_counter of session p_name (…00000000<p_name>) and asks for the next, with a 30 s reuse
-- window: refresh_session's status and active counter.
create function pg_temp.refresh(p_name text, p_counter integer)
returns table (status text, active_counter integer)
language sql
as $$
    select r.status, r.active_counter
    from guestpass_server.refresh_session(
        ('00000000-0000-4000-8000-0000000000' || p_name)::uuid, p_counter,
        encode(sha256(convert_to(p_name || '/' || p_counter, 'UTF8')), 'hex'),
        encode(sha256(convert_to(p_name || '/' || (p_counter + 1), 'UTF8')), 'hex'), 30
    ) as r
$$;

-- The reuse window follows the clock. Session 0c1: rotate 0 -> 1 at 12:00:00 and 1 -> 2 at 12:00:10; token 0 was
-- revoked at 12:00:00, so with a 30 s window it is reused until 12:00:30 inclusive.

set local role anon;
select is(
    (select status || ' ' || active_counter from pg_temp.refresh('c1', 0)),
    'rotated 1', 'c1: token 0 rotates at 12:00:00'
);
set local guestpass.clock_override = '2025-03-10 12:00:10+00';
select is(
    (select status || ' ' || active_counter from pg_temp.refresh('c1', 1)),
    'rotated 2', 'c1: token 1 rotates at 12:00:10'
);
reset role;
select results_eq(
    $$select counter, revoked_at from guestpass.refresh_tokens
      where session_id = '00000000-0000-4000-8000-0000000000c1' order by counter$$,
    $$values (0, '2025-03-10 12:00:00+00'::timestamptz), (1, '2025-03-10 12:00:10+00'), (2, null)$$,
    'rotation stamps revoked_at with guestpass.clock()'
);
select is(
    (select refreshed_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000000c1'),
    '2025-03-10 12:00:10+00'::timestamptz,
    'rotation stamps the session''s refreshed_at with guestpass.clock()'
);
select is(
    (select last_seen_at from public.devices where id = :'r_device'), '2025-03-10 12:00:10+00'::timestamptz,
    'a refresh stamps the device''s last_seen_at with guestpass.clock()'
);

set local guestpass.clock_override = '2025-03-10 12:00:30+00';
set local role anon;
select is(
    (select status || ' ' || active_counter from pg_temp.refresh('c1', 0)),
    'reused 2', 'c1: token 0 replayed at 12:00:30, the window''s last instant: reused, the active counter back'
);
reset role;
select results_eq(
    $$select count(*)::int, count(revoked_at)::int from guestpass.refresh_tokens
      where session_id = '00000000-0000-4000-8000-0000000000c1'$$,
    $$values (3, 2)$$,
    'c1: the reuse issued and revoked nothing'
);
select is(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000000c1'), null,
    'c1: the session stays signed in'
);

-- Session 0c2, the same steps, but token 0 replayed at 12:00:30.5, past the window: the family is revoked, at that
-- time. (With the real clock the replay would be judged against now(), not against 12:00:30.5.)

set local guestpass.clock_override = '2025-03-10 12:00:00+00';
set local role anon;
select is(
    (select status || ' ' || active_counter from pg_temp.refresh('c2', 0)),
    'rotated 1', 'c2: token 0 rotates at 12:00:00'
);
set local guestpass.clock_override = '2025-03-10 12:00:10+00';
select is(
    (select status || ' ' || active_counter from pg_temp.refresh('c2', 1)),
    'rotated 2', 'c2: token 1 rotates at 12:00:10'
);
set local guestpass.clock_override = '2025-03-10 12:00:30.5+00';
select is(
    (select status from pg_temp.refresh('c2', 0)),
    'refresh_token_already_used', 'c2: token 0 replayed at 12:00:30.5, past the window: refresh_token_already_used'
);
reset role;
select is(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000000c2'),
    '2025-03-10 12:00:30.5+00'::timestamptz,
    'c2: the session is revoked at guestpass.clock()'
);
select results_eq(
    $$select counter, revoked_at from guestpass.refresh_tokens
      where session_id = '00000000-0000-4000-8000-0000000000c2' order by counter$$,
    $$values (0, '2025-03-10 12:00:00+00'::timestamptz), (1, '2025-03-10 12:00:10+00'),
             (2, '2025-03-10 12:00:30.5+00')$$,
    'c2: the active token is revoked at guestpass.clock(); the older ones keep their times'
);
set local role anon;
select is(
    (select status from pg_temp.refresh('c2', 2)),
    'session_not_found', 'c2: then the formerly active token fails too'
);
reset role;

-- Sign-out stamps the clock: R signs out of session 0c1 at 12:05.

set local guestpass.clock_override = '2025-03-10 12:05:00+00';
select from pg_temp.set_claims('authenticated', '00000000-0000-4000-8000-0000000000f1', :'r_user',
                                p_session => '00000000-0000-4000-8000-0000000000c1');
set local role authenticated;
select is(guestpass_server.sign_out('local'), 1, 'R signs out of session c1');
reset role;
select is(
    (select revoked_at from guestpass.sessions where id = '00000000-0000-4000-8000-0000000000c1'),
    '2025-03-10 12:05:00+00'::timestamptz,
    'sign-out revokes the session at guestpass.clock()'
);
select is(
    (select revoked_at from guestpass.refresh_tokens
     where session_id = '00000000-0000-4000-8000-0000000000c1' and counter = 2),
    '2025-03-10 12:05:00+00'::timestamptz,
    'and its active refresh token'
);

-- A rate-limit bucket refills as the clock moves forward, and not as it moves back (internal functions, as the
-- owner): capacity 1, one token a minute, from 13:00.

set local guestpass.clock_override = '2025-03-10 13:00:00+00';
select is(guestpass.take_rate_limit('test:clock', 1, 1.0 / 60), 0::double precision, '13:00:00: the token is taken');
select is(
    guestpass.take_rate_limit('test:clock', 1, 1.0 / 60), 60::double precision,
    '13:00:00 again: empty, a token in exactly 60 s (no time passes within the transaction''s clock)'
);
set local guestpass.clock_override = '2025-03-10 13:00:30+00';
select is(guestpass.peek_rate_limit('test:clock', 1, 1.0 / 60), 30::double precision, '13:00:30: peek says 30 s');
select is(guestpass.take_rate_limit('test:clock', 1, 1.0 / 60), 30::double precision, '13:00:30: take says 30 s');
set local guestpass.clock_override = '2025-03-10 13:01:00+00';
select is(guestpass.take_rate_limit('test:clock', 1, 1.0 / 60), 0::double precision, '13:01:00: refilled, taken');
set local guestpass.clock_override = '2025-03-10 13:00:30+00';
select is(
    guestpass.take_rate_limit('test:clock', 1, 1.0 / 60), 60::double precision,
    'back to 13:00:30: nothing refills (60 s to wait, as at 13:01:00)'
);
select is(
    (select updated_at from guestpass.rate_limits where bucket = 'test:clock'), '2025-03-10 13:01:00+00'::timestamptz,
    'and the bucket''s time did not move back'
);
set local guestpass.clock_override = '2025-03-10 13:01:30+00';
select is(
    guestpass.take_rate_limit('test:clock', 1, 1.0 / 60), 30::double precision,
    '13:01:30: half a token since 13:01:00, the visit back in time gave nothing'
);

-- The same through sign-up's per-IP limit (capacity 1, one a minute).

set local guestpass.clock_override = '2025-03-10 14:00:00+00';
set local role anon;
select from pg_temp.set_claims('anon', '00000000-0000-4000-8000-0000000000f1');
select is(
    pg_temp.outcome($$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.50', 1, 1.0 / 60, null, null,
      null, gen_random_uuid(), encode(sha256('ip 1'), 'hex'))$$),
    'ok', 'sign-up at 14:00:00 from an IP'
);
select is(
    pg_temp.outcome($$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.50', 1, 1.0 / 60, null, null,
      null, gen_random_uuid(), encode(sha256('ip 2'), 'hex'))$$),
    'PT429 60', 'again at 14:00:00: refused, 60 s to wait'
);
set local guestpass.clock_override = '2025-03-10 14:00:30+00';
select is(
    pg_temp.outcome($$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.50', 1, 1.0 / 60, null, null,
      null, gen_random_uuid(), encode(sha256('ip 3'), 'hex'))$$),
    'PT429 30', 'at 14:00:30: 30 s to wait'
);
set local guestpass.clock_override = '2025-03-10 14:01:00+00';
select is(
    pg_temp.outcome($$select guestpass_server.sign_up_guest(null, null, null, '192.0.2.50', 1, 1.0 / 60, null, null,
      null, gen_random_uuid(), encode(sha256('ip 4'), 'hex'))$$),
    'ok', 'at 14:01:00: accepted'
);
reset role;

-- Prune follows the clock: buckets test:clock (last taken at 13:01:00) and signup:ip:192.0.2.50 (14:01:00), a day on.

set local guestpass.clock_override = '2025-03-11 13:01:00+00';
select is(
    (select removed from guestpass.prune_batch('rate_limits', 100, false, array['public'])), 0,
    'the next day at 13:01:00 no bucket has been idle more than a day'
);
set local guestpass.clock_override = '2025-03-11 13:01:01+00';
select is(
    (select removed from guestpass.prune_batch('rate_limits', 100, false, array['public'])), 1,
    'at 13:01:01 test:clock has: pruned'
);
select is(
    array(select bucket from guestpass.rate_limits order by 1), array['signup:ip:192.0.2.50'],
    'the other bucket stays'
);

-- A token taken with the clock set back does not set the bucket's time back (the update keeps the later
-- updated_at), so returning to the present refills nothing twice: capacity 2, one token a minute.

set local guestpass.clock_override = '2025-03-10 15:00:00+00';
select is(guestpass.take_rate_limit('test:back', 2, 1.0 / 60), 0::double precision, '15:00: token 1 of 2 taken');
set local guestpass.clock_override = '2025-03-10 14:59:00+00';
select is(guestpass.take_rate_limit('test:back', 2, 1.0 / 60), 0::double precision, 'back at 14:59: token 2 taken');
select is(
    (select updated_at from guestpass.rate_limits where bucket = 'test:back'), '2025-03-10 15:00:00+00'::timestamptz,
    'the bucket''s time stays at 15:00'
);
set local guestpass.clock_override = '2025-03-10 15:00:00+00';
select is(
    guestpass.take_rate_limit('test:back', 2, 1.0 / 60), 60::double precision,
    'at 15:00 again the bucket is empty: the minute back in time refilled nothing'
);

select * from finish();
rollback;
