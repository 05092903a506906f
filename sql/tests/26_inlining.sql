-- The helpers on every request's path stay inlinable (0020): EXPLAIN (VERBOSE) of a call shows the helper's
-- expression, not a call of the helper. A SET clause, SECURITY DEFINER, a FROM clause or a wrong volatility added to
-- one of them makes PostgreSQL call (and plan) it on every use, and this file fail. Also: the entry points whose
-- bodies are not inlinable by nature are plpgsql, so their plans are kept per connection.
begin;
select plan(35);

\ir lib/plans.sql

select doesnt_match(pg_temp.plan_of('select auth.uid()'), '(auth|guestpass)\.[a-z_]+\(', 'auth.uid() is inlined: no function call in its plan');
select doesnt_match(pg_temp.plan_of('select auth.app_id()'), '(auth|guestpass)\.[a-z_]+\(', 'auth.app_id() is inlined');
select doesnt_match(pg_temp.plan_of('select auth.device_id()'), '(auth|guestpass)\.[a-z_]+\(', 'auth.device_id() is inlined');
select doesnt_match(pg_temp.plan_of('select auth.role()'), '(auth|guestpass)\.[a-z_]+\(', 'auth.role() is inlined');
select doesnt_match(pg_temp.plan_of('select auth.jwt()'), '(auth|guestpass)\.[a-z_]+\(', 'auth.jwt() is inlined');
select doesnt_match(pg_temp.plan_of($$select auth.claim_uuid('x')$$), '(auth|guestpass)\.[a-z_]+\(', 'auth.claim_uuid() is inlined');
select doesnt_match(
    pg_temp.plan_of($$select 1 where '00000000-0000-4000-8000-00000000000a' in (select p from auth.partner_ids() as p)$$),
    '(auth|guestpass)\.[a-z_]+\(', 'auth.partner_ids() is inlined where a policy uses it (0035)'
);
select doesnt_match(pg_temp.plan_of($$select auth.has_role('client')$$), '(auth|guestpass)\.[a-z_]+\(', 'auth.has_role() is inlined (0032)');
select doesnt_match(pg_temp.plan_of('select guestpass.clock()'), '(auth|guestpass)\.[a-z_]+\(', 'guestpass.clock() is inlined');
select doesnt_match(
    pg_temp.plan_of($$select guestpass.quota_resets_at('Europe/Paris', now())$$), '(auth|guestpass)\.[a-z_]+\(',
    'guestpass.quota_resets_at() is inlined'
);
select doesnt_match(pg_temp.plan_of('select guestpass.iso_utc(now())'), '(auth|guestpass)\.[a-z_]+\(', 'guestpass.iso_utc() is inlined');
select doesnt_match(
    pg_temp.plan_of('select guestpass.quota_json(3, 1, 10, false, now())'), '(auth|guestpass)\.[a-z_]+\(',
    'guestpass.quota_json() is inlined, iso_utc with it'
);
select doesnt_match(
    pg_temp.plan_of('select guestpass.caller_id(null)'), 'guestpass\.caller_id\(',
    'guestpass.caller_id() is inlined (0028): consume_quota makes no call for the claim checks'
);
select doesnt_match(
    pg_temp.plan_of($$select * from guestpass.quota_day('00000000-0000-4000-8000-000000000001', 'Europe/Paris', now())$$),
    '(auth|guestpass)\.[a-z_]+\(|Function Scan', 'guestpass.quota_day() is inlined (0026): a scan of daily_usage, no call'
);
select doesnt_match(
    pg_temp.plan_of($$select q.* from public.users as u cross join lateral guestpass.quota_day(u.id, u.timezone, now()) as q$$),
    '(auth|guestpass)\.[a-z_]+\(|Function Scan', 'guestpass.quota_day() is inlined as quota_state joins it (lateral, per user)'
);

-- The argument checks of sign-up, refresh and the rate limits (0042): inlined, they call their refuser only on the
-- refusing branch, and a refusal is never folded into the plan (planning an invalid constant raises nothing).
select doesnt_match(
    pg_temp.plan_of('select guestpass.require_app()'), 'guestpass\.require_app\(|auth\.',
    'guestpass.require_app() is inlined (0042)'
);
select doesnt_match(
    pg_temp.plan_of($$select guestpass.require_hex_sha256(x, 'the x') from (values (md5('a'))) as v (x)$$),
    'guestpass\.require_hex_sha256\(', 'guestpass.require_hex_sha256() is inlined (0042)'
);
select doesnt_match(
    pg_temp.plan_of($$select guestpass.check_rate_limit_arguments(b, c, r) from (values ('b', 1, 1.0::float8)) as v (b, c, r)$$),
    'guestpass\.check_rate_limit_arguments\(', 'guestpass.check_rate_limit_arguments() is inlined (0042)'
);
create temporary table client_addresses (a text);
select doesnt_match(
    pg_temp.plan_of('select guestpass.client_address_key(a) from client_addresses'), 'guestpass\.client_address_key\(',
    'guestpass.client_address_key() is inlined (0042)'
);
select matches(
    pg_temp.plan_of('select guestpass.client_address_key(a) from client_addresses'),
    'CASE WHEN .* ELSE guestpass\.client_address_key_parsed\(',
    'a blank address or a dotted quad makes no call; any other text goes to client_address_key_parsed'
);
select lives_ok(
    $$select pg_temp.plan_of($q$select guestpass.require_hex_sha256('not hex', 'the x')$q$)$$,
    'planning a check of an invalid constant raises nothing (the refusal is not folded into the plan)'
);
select throws_ok(
    $$select guestpass.require_hex_sha256('not hex', 'the x')$$, '22023', 'the x must be a lowercase hex SHA-256',
    'running it does'
);
-- caller_id reads the claims once (a test and a cast: two current_setting calls) for a caller who names no user.
select is(
    (select count(*)::int from regexp_matches(pg_temp.plan_of('select guestpass.caller_id(null)'), 'current_setting', 'g')),
    2,
    'guestpass.caller_id(null) reads auth.uid() once (0042)'
);

-- A policy's (select auth.uid()) is the claim read, nothing more: the plan names current_setting, not auth.
select matches(
    pg_temp.plan_of('select auth.uid()'), 'current_setting', 'the inlined auth.uid() reads request.jwt.claims'
);

-- Inlined, they answer as before.
select set_config(
    'request.jwt.claims',
    '{"sub":"00000000-0000-4000-8000-0000000000a1","role":"authenticated","app_id":"00000000-0000-4000-8000-0000000000f1","device_id":"nope"}',
    true
);
select is(auth.uid(), '00000000-0000-4000-8000-0000000000a1'::uuid, 'auth.uid() reads sub');
select is(auth.device_id(), null, 'a device_id that is not a uuid is null, not an error');
select set_config('request.jwt.claims', '["00000000-0000-4000-8000-0000000000a1"]', true);
select is(auth.uid(), null, 'claims that are not an object give no user');
select is(auth.jwt(), null, 'claims that are not an object give no claims');

-- The entry points of the quota path keep their plans (plpgsql) and are the one SECURITY DEFINER boundary of a call:
-- the internals they call run as their caller, without a SET clause of their own (0021, 0023).
select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_language as l on l.oid = p.prolang
        where p.oid in ('public.get_quota(uuid)'::regprocedure, 'public.consume_quota(uuid, text)'::regprocedure)
          and not (l.lanname = 'plpgsql' and p.prosecdef)
    ),
    '{}'::text[],
    'get_quota and consume_quota are SECURITY DEFINER plpgsql'
);
select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_language as l on l.oid = p.prolang
        where p.oid in ('guestpass.quota_state(uuid, timestamptz)'::regprocedure,
                        'guestpass.consume_at(uuid, text, timestamptz, uuid)'::regprocedure,
                        'guestpass.require_caller(uuid)'::regprocedure)
          and not (l.lanname = 'plpgsql' and not p.prosecdef and p.proconfig is null)
    ),
    '{}'::text[],
    'quota_state, consume_at and require_caller are plpgsql running as their caller, with no SET clause'
);

-- GET /auth/v1/user (issue 34): PostgreSQL parses and plans a SQL function's body on every call unless it is inlined,
-- and neither a SECURITY DEFINER entry point nor a scalar function with EXISTS or a FROM clause inlines. The profile's
-- entry points and the internals they call are plpgsql, so each plan is made once per connection; the internals run as
-- their caller, without a SET clause of their own (each SET is a save and restore of the setting per call).
select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_language as l on l.oid = p.prolang
        where p.oid in ('guestpass_server.current_user_profile()'::regprocedure,
                        'guestpass_server.user_email_state()'::regprocedure)
          and not (l.lanname = 'plpgsql' and p.prosecdef)
    ),
    '{}'::text[],
    'current_user_profile and user_email_state() are SECURITY DEFINER plpgsql'
);
select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        join pg_catalog.pg_language as l on l.oid = p.prolang
        where p.oid in ('guestpass.session_is_live(uuid)'::regprocedure,
                        'guestpass.user_identities(uuid)'::regprocedure,
                        'guestpass.user_email_state(uuid)'::regprocedure)
          and not (l.lanname = 'plpgsql' and not p.prosecdef and p.proconfig is null)
    ),
    '{}'::text[],
    'session_is_live, user_identities and user_email_state(uuid) are plpgsql running as their caller, with no SET clause'
);

-- The sign-up write path (0024): a new user with no credits and UTC calls no trigger function.
select is(
    array(
        select t.tgname::text from pg_catalog.pg_trigger as t
        where t.tgrelid = 'public.users'::regclass and not t.tgisinternal and t.tgtype & 4 <> 0 and t.tgqual is null
        order by 1
    ),
    '{}'::text[],
    'every INSERT trigger on public.users has a WHEN clause'
);

-- The account-setup flag (0038): an update of an account calls its trigger function only when the name (user_metadata),
-- app_metadata or anonymity changes. The function is swapped, in this transaction, for one that counts its calls.
create temporary table setup_calls (n integer);
create or replace function guestpass.mark_account_setup() returns trigger language plpgsql as $$
begin
    insert into setup_calls values (1);
    return new;
end
$$;
insert into guestpass.apps (id, name) values ('00000000-0000-4000-8000-0000000009f1', 'setup trigger');
insert into public.users (id, app_id, is_anonymous) values
    ('00000000-0000-4000-8000-0000000009a1', '00000000-0000-4000-8000-0000000009f1', false);
delete from setup_calls;
select guestpass.apply_credit_change('00000000-0000-4000-8000-0000000009a1', 2, 'test', null);
update public.users set timezone = 'Europe/Paris', is_premium = true where id = '00000000-0000-4000-8000-0000000009a1';
select is((select count(*)::int from setup_calls), 0, 'credits, premium and time zone of an account call no setup trigger function');
update public.users set user_metadata = '{"full_name": "Ann"}' where id = '00000000-0000-4000-8000-0000000009a1';
select is((select count(*)::int from setup_calls), 1, 'a change of its name does');

select * from finish();
rollback;
