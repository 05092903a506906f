-- auth helpers: auth.jwt(), uid(), role(), device_id() and app_id() read only the transaction-local
-- request.jwt.claims JSON; absent or malformed claim values give null; the legacy per-claim settings are ignored.
-- Decision on claims that are not JSON at all: every helper raises 22P02 (fails closed, reveals nothing), because
-- PostgreSQL 15 offers no non-raising JSON check to a `language sql` function. See 0002_create_auth_helpers.sql.
begin;
select plan(39);

\ir lib/catalog.sql

-- The helpers themselves: plain stable SQL, executable by the request roles.

select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_language as l on l.oid = p.prolang
        where p.pronamespace = 'auth'::regnamespace and (p.prosecdef or p.provolatile <> 's' or l.lanname <> 'sql')
        order by 1
    ),
    '{}'::text[],
    'every auth function is a stable SQL function running with the caller''s rights'
);

-- Who may call them: every request role, but the partner helpers read public.partners, which only authenticated may
-- read: granted to it alone (0044). guestpass_authenticator (NOINHERIT) would show a grant to PUBLIC.
select is(
    array(
        select p.oid::regprocedure::text || ': ' || pg_temp.executors(p.oid)
        from pg_catalog.pg_proc as p
        where p.pronamespace = 'auth'::regnamespace
          and pg_temp.executors(p.oid) <> case when p.proname in ('is_partner', 'partner_ids') then 'authenticated'
                                               else 'anon,authenticated,service_role' end
        order by 1
    ),
    '{}'::text[],
    'anon, authenticated and service_role may call every auth helper, the partner helpers authenticated only'
);
select is(
    pg_temp.schema_users('auth'), array['anon', 'authenticated', 'service_role'], 'the request roles may use schema auth'
);

select has_function('auth', 'jwt', '{}'::name[], 'auth.jwt() exists');
select function_returns('auth', 'uid', '{}'::name[], 'uuid', 'auth.uid() returns uuid');
select function_returns('auth', 'role', '{}'::name[], 'text', 'auth.role() returns text');
select function_returns('auth', 'device_id', '{}'::name[], 'uuid', 'auth.device_id() returns uuid');
select function_returns('auth', 'app_id', '{}'::name[], 'uuid', 'auth.app_id() returns uuid');

set local role authenticated;

-- No claims: the setting has never been set in this session.

select is(auth.jwt(), null::jsonb, 'no claims: auth.jwt() is null');
select is(auth.uid(), null::uuid, 'no claims: auth.uid() is null');
select is(auth.role(), null::text, 'no claims: auth.role() is null');
select is(auth.device_id(), null::uuid, 'no claims: auth.device_id() is null');
select is(auth.app_id(), null::uuid, 'no claims: auth.app_id() is null');

-- Empty claims: what a finished transaction leaves behind on a pooled connection.
-- (`select from set_config(…)` discards the result row so it does not clutter the TAP output.)

select from set_config('request.jwt.claims', '', true);
select is(auth.jwt(), null::jsonb, 'empty claims: auth.jwt() is null');
select is(auth.uid(), null::uuid, 'empty claims: auth.uid() is null');

-- Verified claims as the server sets them.

select from set_config(
    'request.jwt.claims',
    '{"sub":"11111111-1111-4111-8111-111111111111","role":"authenticated",'
    '"device_id":"22222222-2222-4222-8222-222222222222","app_id":"33333333-3333-4333-8333-333333333333",'
    '"is_anonymous":true}',
    true
);
select is(auth.uid(), '11111111-1111-4111-8111-111111111111'::uuid, 'auth.uid() is the sub claim');
select is(auth.role(), 'authenticated', 'auth.role() is the role claim');
select is(auth.device_id(), '22222222-2222-4222-8222-222222222222'::uuid, 'auth.device_id() is the device_id claim');
select is(auth.app_id(), '33333333-3333-4333-8333-333333333333'::uuid, 'auth.app_id() is the app_id claim');
select is(auth.jwt() ->> 'is_anonymous', 'true', 'auth.jwt() carries every claim');

-- Legacy per-claim settings change nothing.

set local request.jwt.claim.sub = '99999999-9999-4999-8999-999999999999';
set local request.jwt.claim.role = 'service_role';
set local request.jwt.claim = '{"sub":"99999999-9999-4999-8999-999999999999","role":"service_role"}';
select is(
    auth.uid(), '11111111-1111-4111-8111-111111111111'::uuid, 'legacy request.jwt.claim.sub does not change auth.uid()'
);
select is(auth.role(), 'authenticated', 'legacy request.jwt.claim.role does not change auth.role()');
select is(
    auth.jwt() ->> 'sub', '11111111-1111-4111-8111-111111111111', 'legacy request.jwt.claim does not change auth.jwt()'
);

select from set_config('request.jwt.claims', '', true);
select is(auth.uid(), null::uuid, 'legacy request.jwt.claim.sub alone gives no auth.uid()');
select is(auth.jwt(), null::jsonb, 'legacy request.jwt.claim alone gives no auth.jwt()');

-- Garbage claim values give null and never raise.

select from set_config(
    'request.jwt.claims',
    '{"sub":"not-a-uuid","role":"authenticated","device_id":42,"app_id":{"id":"33333333-3333-4333-8333-333333333333"}}',
    true
);
select lives_ok('select auth.uid(), auth.device_id(), auth.app_id()', 'garbage claim values do not raise');
select is(auth.uid(), null::uuid, 'a sub that is not a uuid gives a null auth.uid()');
select is(auth.device_id(), null::uuid, 'a numeric device_id gives a null auth.device_id()');
select is(auth.app_id(), null::uuid, 'an object app_id gives a null auth.app_id()');

select from set_config('request.jwt.claims', '{"sub":""}', true);
select is(auth.uid(), null::uuid, 'an empty sub gives a null auth.uid()');

select from set_config('request.jwt.claims', '{"sub":"{11111111-1111-4111-8111-111111111111}"}', true);
select is(auth.uid(), null::uuid, 'a non-canonical uuid spelling gives a null auth.uid()');

-- JSON that is not an object: no claims at all.

select from set_config('request.jwt.claims', '["11111111-1111-4111-8111-111111111111"]', true);
select is(auth.jwt(), null::jsonb, 'claims that are a JSON array give a null auth.jwt()');
select is(auth.uid(), null::uuid, 'claims that are a JSON array give a null auth.uid()');
select from set_config('request.jwt.claims', '"11111111-1111-4111-8111-111111111111"', true);
select is(auth.jwt(), null::jsonb, 'claims that are a JSON string give a null auth.jwt()');

-- Claims that are not JSON: fail closed with 22P02 (documented decision, see the header).

select from set_config('request.jwt.claims', 'not json', true);
select throws_ok('select auth.jwt()', '22P02', null, 'non-JSON claims make auth.jwt() raise 22P02');
select throws_ok('select auth.uid()', '22P02', null, 'non-JSON claims make auth.uid() raise 22P02, revealing nothing');

-- The same helpers as anon, with the claims a publishable key yields.

reset role;
set local role anon;
select from set_config('request.jwt.claims', '{"role":"anon","app_id":"33333333-3333-4333-8333-333333333333"}', true);
select is(auth.role(), 'anon', 'as anon: auth.role() is anon');
select is(auth.uid(), null::uuid, 'as anon: auth.uid() is null');
select is(auth.app_id(), '33333333-3333-4333-8333-333333333333'::uuid, 'as anon: auth.app_id() is the app_id claim');

reset role;

select * from finish();
rollback;
