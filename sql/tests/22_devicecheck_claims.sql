-- DeviceCheck welcome grant bookkeeping: the app's DeviceCheck settings for the server, devicecheck_begin's answers
-- (started, in_progress, token_reused, already_claimed, repair after 30 s) and devicecheck_finish (granted gives the
-- welcome credits once, also when finished twice; refused sets initial_grant_claimed without credits; failed ends the
-- claim so a retry starts a new one; only the caller's own claims), with every token sent to Apple recorded and
-- refused when presented again, by anyone, even after its user is gone. Time moves with guestpass.clock_override.
-- Fixtures: app X (welcome 10, DeviceCheck configured) with users U1..U5; app Y (welcome 0) with user Y1.
begin;
select plan(59);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/catalog.sql
\ir lib/devicecheck.sql

-- Structure.

select has_table('guestpass', 'devicecheck_claims', 'guestpass.devicecheck_claims exists');
select has_table('guestpass', 'devicecheck_tokens', 'guestpass.devicecheck_tokens exists');
select col_is_pk('guestpass', 'devicecheck_tokens', 'token_hash', 'a token hash is recorded once');
select col_is_unique('guestpass', 'devicecheck_claims', array['token_hash'], 'a token starts at most one claim');
select ok(
    (select i.indisunique and pg_catalog.pg_get_expr(i.indpred, i.indrelid) = '(state = ''pending''::text)'
     from pg_catalog.pg_index as i
     where i.indexrelid = 'guestpass.devicecheck_claims_one_pending_key'::regclass),
    'at most one pending claim per user (partial unique index)'
);
select is(
    pg_temp.fk_on_delete(array['guestpass.devicecheck_claims', 'guestpass.devicecheck_tokens']::regclass[]),
    array[
        'devicecheck_claims_user_id_fkey on delete cascade',
        'devicecheck_tokens_app_id_fkey on delete cascade',
        'devicecheck_tokens_claim_id_fkey on delete set null',
        'devicecheck_tokens_user_id_fkey on delete set null'
    ],
    'claims go with their user; recorded tokens outlive their claim and user and go only with their app'
);
select is(
    pg_temp.executors_unlike($${
        "guestpass_server.app_devicecheck_settings()": "authenticated",
        "guestpass_server.devicecheck_begin(text)": "authenticated",
        "guestpass_server.devicecheck_finish(uuid,text)": "authenticated"
    }$$),
    '{}'::text[],
    'the DeviceCheck entry points are executable by authenticated only'
);
select is(
    array(
        select pg_temp.proc_traits(p.oid)
        from pg_catalog.pg_proc as p
        where p.pronamespace = 'guestpass_server'::regnamespace
          and p.proname in ('app_devicecheck_settings', 'devicecheck_begin', 'devicecheck_finish')
        order by 1
    ),
    array[
        'app_devicecheck_settings s t {"search_path=\"\""}',
        'devicecheck_begin v t {"search_path=\"\""}',
        'devicecheck_finish v t {"search_path=\"\""}'
    ],
    'the DeviceCheck entry points are SECURITY DEFINER with an empty search_path; only the settings read is STABLE'
);

-- Fixtures, as the superuser.

select from pg_temp.make_apps_xy();
update guestpass.apps
set devicecheck_team_id = 'TEAM123456', devicecheck_key_id = 'KEY1234567', devicecheck_key_path = '/etc/guestpass/x.p8',
    devicecheck_environment = 'development', devicecheck_base_url = 'http://127.0.0.1:9999'
where id = '00000000-0000-4000-8000-0000000000f1';
update guestpass.apps set welcome_grant_credits = 0 where id = '00000000-0000-4000-8000-0000000000f2';
select from pg_temp.make_users(
    '00000000-0000-4000-8000-0000000000f1',
    array['00000000-0000-4000-8000-0000000000d1', '00000000-0000-4000-8000-0000000000d2',
          '00000000-0000-4000-8000-0000000000d3', '00000000-0000-4000-8000-0000000000d4',
          '00000000-0000-4000-8000-0000000000d5']::uuid[]
);
select from pg_temp.make_user('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000f2');

select throws_ok(
    $$update guestpass.apps set devicecheck_environment = 'staging' where name = 'App Y'$$, '23514', null,
    'the DeviceCheck environment is development or production'
);
select throws_ok(
    $$update guestpass.apps set welcome_grant_credits = -1 where name = 'App Y'$$, '23514', null,
    'the welcome grant is not negative'
);

-- The settings, as the server reads them.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d1');
select results_eq(
    'select * from guestpass_server.app_devicecheck_settings()',
    $$values ('TEAM123456', 'KEY1234567', '/etc/guestpass/x.p8', 'development', 'http://127.0.0.1:9999', 10)$$,
    'app_devicecheck_settings() returns the caller''s app settings and welcome grant'
);
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000f2');
select results_eq(
    'select * from guestpass_server.app_devicecheck_settings()',
    $$values (null::text, null::text, null::text, null::text, null::text, 0)$$,
    'app Y''s caller sees app Y''s (unconfigured) settings only'
);
reset role;

-- U1: started, in_progress, token_reused, granted once, already_claimed.

set local guestpass.clock_override = '2025-03-10 12:00:00+00';
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d1');
select from pg_temp.begin_claim('c1', 't1');
select results_eq(
    'select status, pending_claim_id from guestpass_server.devicecheck_begin(pg_temp.h(''t2''))',
    $$values ('in_progress'::text, pg_temp.claim('c1'))$$,
    'U1: a second begin while the first claim is pending is in_progress, naming the pending claim'
);
select results_eq(
    'select status, claim_id, pending_claim_id from guestpass_server.devicecheck_begin(pg_temp.h(''t1''))',
    $$values ('token_reused'::text, null::uuid, null::uuid)$$,
    'U1: presenting the same token again is token_reused'
);
select throws_ok(
    'select * from guestpass_server.devicecheck_begin(''ABC'')', '22023', null, 'a token hash that is not hex is 22023'
);
select throws_ok(
    'select * from pg_temp.finish_claim(''c1'', ''maybe'')',
    '22023', null, 'an unknown outcome is 22023'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c1'', ''granted'')',
    $$values (true, 10, 10)$$,
    'U1: finish granted gives the welcome grant: 10 credits'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c1'', ''granted'')',
    $$values (true, 10, 10)$$,
    'U1: finishing again answers the same and grants nothing more'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c1'', ''refused'')',
    $$values (true, 10, 10)$$,
    'U1: a later different outcome does not change a finished claim'
);
select results_eq(
    'select status, claim_id from guestpass_server.devicecheck_begin(pg_temp.h(''t3''))',
    $$values ('already_claimed'::text, null::uuid)$$,
    'U1: a begin after the grant is already_claimed'
);
select is(public.get_quota() ->> 'credits_remaining', '10', 'U1 sees 10 credits');
reset role;

select results_eq(
    $$select change, reason, idempotency_key from guestpass.credit_ledger
      where user_id = '00000000-0000-4000-8000-0000000000d1'$$,
    $$select 10, 'welcome_grant'::text, 'welcome:' || id from claim_ids where name = 'c1'$$,
    'U1: one ledger row, welcome_grant, keyed welcome:<claim id>'
);
select results_eq(
    $$select c.state, c.reason, c.token_hash, u.initial_grant_claimed
      from guestpass.devicecheck_claims as c join public.users as u on u.id = c.user_id
      where c.user_id = '00000000-0000-4000-8000-0000000000d1'$$,
    $$values ('granted'::text, 'bit0_unset'::text, pg_temp.h('t1'), true)$$,
    'U1: the claim is granted, with t1''s hash, and initial_grant_claimed is set'
);
select results_eq(
    $$select token_hash, user_id, claim_id from guestpass.devicecheck_tokens order by seen_at, token_hash$$,
    $$values (pg_temp.h('t1'), '00000000-0000-4000-8000-0000000000d1'::uuid, pg_temp.claim('c1'))$$,
    'only t1 was recorded: tokens answered in_progress, token_reused or already_claimed never went to Apple'
);

-- Another user presenting U1's token.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d5');
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t1''))',
    $$values ('token_reused'::text)$$,
    'U5: a token another user presented is token_reused'
);
select throws_ok(
    'select * from pg_temp.finish_claim(''c1'', ''granted'')',
    '42501', null, 'U5 cannot finish U1''s claim'
);
select throws_ok(
    'select * from guestpass_server.devicecheck_finish(''00000000-0000-4000-8000-00000000dead'', ''granted'')',
    '42501', null, 'an unknown claim is 42501'
);
reset role;

-- U2: refused (bit0 already set by another install).

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d2');
select from pg_temp.begin_claim('c2', 't4');
select results_eq(
    'select * from pg_temp.finish_claim(''c2'', ''refused'')',
    $$values (false, 0, 0)$$,
    'U2: finish refused grants nothing'
);
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t5''))',
    $$values ('already_claimed'::text)$$,
    'U2: after a refusal, begin is already_claimed (the bit is mirrored)'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c2'', ''granted'')',
    $$values (false, 0, 0)$$,
    'U2: a refused claim cannot be turned into a grant'
);
reset role;
select results_eq(
    $$select u.initial_grant_claimed, u.credits_balance, c.state, c.reason,
             (select count(*)::integer from guestpass.credit_ledger as l where l.user_id = u.id)
      from public.users as u join guestpass.devicecheck_claims as c on c.user_id = u.id
      where u.id = '00000000-0000-4000-8000-0000000000d2'$$,
    $$values (true, 0, 'refused'::text, 'bit0_already_set'::text, 0)$$,
    'U2: initial_grant_claimed set, no credits, no ledger row, claim refused'
);

-- U3: failed (Apple unreachable): the claim ends, its token stays seen, a new token starts a new claim.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d3');
select from pg_temp.begin_claim('c3', 't6');
select results_eq(
    'select * from pg_temp.finish_claim(''c3'', ''failed'')',
    $$values (false, 0, 0)$$,
    'U3: finish failed grants nothing'
);
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t6''))',
    $$values ('token_reused'::text)$$,
    'U3: the failed claim''s token stays seen'
);
select from pg_temp.begin_claim('c3b', 't7');
select ok(
    pg_temp.claim('c3b') is not null and pg_temp.claim('c3b') <> pg_temp.claim('c3'),
    'U3: a retry with a new token starts a new claim at once (no in_progress, no repair)'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c3b'', ''granted'')',
    $$values (true, 10, 10)$$,
    'U3: the retry is granted'
);
reset role;
select results_eq(
    $$select c.state, c.reason from guestpass.devicecheck_claims as c
      where c.user_id = '00000000-0000-4000-8000-0000000000d3' order by c.created_at, c.state$$,
    $$values ('failed'::text, 'apple_unreachable'::text), ('granted', 'bit0_unset')$$,
    'U3: the failed claim is no longer pending (kept for audit), the retry is granted'
);
select is(
    (select initial_grant_claimed from public.users where id = '00000000-0000-4000-8000-0000000000d3'), true,
    'U3: initial_grant_claimed set by the grant, not by the failure'
);

-- U4: a crash leaves a pending claim; within 30 s begin is in_progress, after it a new token repairs it.

set local guestpass.clock_override = '2025-03-10 13:00:00+00';
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d4');
select from pg_temp.begin_claim('c4', 't8');
reset role;
set local guestpass.clock_override = '2025-03-10 13:00:29+00';
set local role authenticated;
select results_eq(
    'select status, pending_claim_id from guestpass_server.devicecheck_begin(pg_temp.h(''t9''))',
    $$values ('in_progress'::text, pg_temp.claim('c4'))$$,
    'U4: 29 s after the start, still in_progress'
);
reset role;
set local guestpass.clock_override = '2025-03-10 13:00:31+00';
set local role authenticated;
select results_eq(
    'select status, claim_id, pending_claim_id from guestpass_server.devicecheck_begin(pg_temp.h(''t10''))',
    $$values ('repair'::text, pg_temp.claim('c4'), pg_temp.claim('c4'))$$,
    'U4: 31 s after the start, a new token gets repair with the pending claim'
);
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t11''))',
    $$values ('in_progress'::text)$$,
    'U4: the repair took the claim over: another begin right after is in_progress'
);
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t10''))',
    $$values ('token_reused'::text)$$,
    'U4: the repair''s token is recorded as seen'
);
reset role;
set local guestpass.clock_override = '2025-03-10 13:01:02+00';
set local role authenticated;
select results_eq(
    'select status, claim_id from guestpass_server.devicecheck_begin(pg_temp.h(''t12''))',
    $$values ('repair'::text, pg_temp.claim('c4'))$$,
    'U4: 31 s after the takeover, another repair may take it over'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c4'', ''granted'')',
    $$values (true, 10, 10)$$,
    'U4: the repair finishes the pending claim: granted once'
);
select results_eq(
    'select * from pg_temp.finish_claim(''c4'', ''granted'')',
    $$values (true, 10, 10)$$,
    'U4: a second repair''s finish grants nothing more'
);
reset role;
select results_eq(
    $$select token_hash from guestpass.devicecheck_tokens
      where claim_id = pg_temp.claim('c4') order by seen_at$$,
    $$values (pg_temp.h('t8')), (pg_temp.h('t10')), (pg_temp.h('t12'))$$,
    'U4: the start token and both repair tokens are recorded against the claim'
);
select is(
    (select count(*)::integer from guestpass.credit_ledger where user_id = '00000000-0000-4000-8000-0000000000d4'),
    1, 'U4: one ledger row'
);

-- App Y grants 0 credits: granted, no ledger row.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000e1', '00000000-0000-4000-8000-0000000000f2');
select from pg_temp.begin_claim('e1', 'y1');
select results_eq(
    'select * from pg_temp.finish_claim(''e1'', ''granted'')',
    $$values (true, 0, 0)$$,
    'Y1: a welcome grant of 0 credits is granted with nothing to add'
);
reset role;
select is(
    (select count(*)::integer from guestpass.credit_ledger where user_id = '00000000-0000-4000-8000-0000000000e1'),
    0, 'Y1: no ledger row for a zero grant'
);

-- Claims of another user and other roles.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d1', '00000000-0000-4000-8000-0000000000f2');
select throws_ok(
    'select * from guestpass_server.devicecheck_begin(pg_temp.h(''t20''))', '42501', null,
    'U1 with app Y''s app_id is not a user there: 42501'
);
reset role;
select from pg_temp.as_anon();
select throws_ok(
    'select * from guestpass_server.devicecheck_begin(pg_temp.h(''t21''))', '42501', null,
    'anon cannot call devicecheck_begin'
);
reset role;
select from pg_temp.as_service_role();
select throws_ok(
    'select * from guestpass_server.devicecheck_begin(pg_temp.h(''t22''))', '42501', null,
    'service_role cannot call devicecheck_begin'
);
reset role;

-- Only the server changes initial_grant_claimed; tables stay closed.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d5');
select throws_ok(
    'update public.users set initial_grant_claimed = true where id = ''00000000-0000-4000-8000-0000000000d5''',
    '42501', null, 'U5 cannot set initial_grant_claimed itself'
);
select throws_ok(
    'select * from guestpass.devicecheck_claims', '42501', null, 'U5 cannot read the claims table'
);
select throws_ok(
    'select * from guestpass_server.devicecheck_finish(null, ''granted'')', '42501', null,
    'U5 finishing no claim is 42501'
);
reset role;

-- At most one pending claim per user, even written directly.

select throws_ok(
    $$insert into guestpass.devicecheck_claims (app_id, user_id, token_hash)
      select '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-0000000000d5', pg_temp.h(v)
      from unnest(array['p1', 'p2']) as v$$,
    '23505', null, 'a second pending claim of one user is 23505'
);

-- Replay refusal survives the user.

delete from public.users where id = '00000000-0000-4000-8000-0000000000d2';
select results_eq(
    $$select user_id, claim_id from guestpass.devicecheck_tokens where token_hash = pg_temp.h('t4')$$,
    $$values (null::uuid, null::uuid)$$,
    'deleting U2 deletes its claim but keeps its token, detached'
);
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000d5');
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t4''))',
    $$values ('token_reused'::text)$$,
    'U5: a deleted user''s token is still refused'
);
select results_eq(
    'select status from guestpass_server.devicecheck_begin(pg_temp.h(''t30''))',
    $$values ('started'::text)$$,
    'U5: a fresh token starts a claim'
);
reset role;

-- The grant bookkeeping kept the ledger invariant.

select is(
    array(
        select u.id::text
        from public.users as u
        where u.credits_balance
              <> coalesce((select sum(l.change) from guestpass.credit_ledger as l where l.user_id = u.id), 0)
    ),
    '{}'::text[],
    'every balance equals the sum of its ledger after the welcome grants'
);

select * from finish();
rollback;
