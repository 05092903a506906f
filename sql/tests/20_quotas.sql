-- quotas: who may call get_quota/consume_quota, the consume order (free allowance, credits, then PT429 with the
-- seconds to the reset and resets_at), premium unmetered, idempotent request ids, p_user_id of someone else (42501),
-- the reset at each user's own midnight (Pacific/Kiritimati UTC+14, Pacific/Pago_Pago UTC-11, moved with
-- guestpass.clock_override), time zone validation on write, the server-only columns, and the metered add_reading of
-- sql/examples (3 readings, the 4th is PT429 and not stored). Fixtures: app X (allowance 3) with users A, B, K
-- (Kiritimati), P (Pago Pago), M (premium), R (readings); app Y with user C. Needs sql/examples applied.
begin;
select plan(82);

\ir lib/fixtures.sql
\ir lib/at.sql
\ir lib/errors.sql
\ir lib/catalog.sql

-- Structure.

select is(
    pg_temp.executors_unlike($${
        "guestpass.apply_credit_change(uuid,integer,text,text)": "",
        "guestpass.clock()": "",
        "guestpass.consume_at(uuid,text,timestamptz,uuid)": "",
        "guestpass.grant_credits_admin(uuid,integer,text)": "",
        "guestpass.quota_state(uuid,timestamptz)": "",
        "guestpass.require_caller(uuid)": "",
        "public.consume_quota(uuid,text)": "authenticated,service_role",
        "public.get_quota(uuid)": "authenticated,service_role",
        "public.grant_credits(uuid,integer,text,text)": "service_role",
        "public.set_premium(uuid,boolean)": "service_role"
    }$$),
    '{}'::text[],
    'the quota RPCs are executable by exactly the roles they serve, the internals by none'
);

select is(
    array(
        select pg_temp.proc_traits(f.fn)
        from unnest(array[
            'public.get_quota(uuid)', 'public.consume_quota(uuid,text)', 'public.grant_credits(uuid,integer,text,text)',
            'public.set_premium(uuid,boolean)'
        ]::regprocedure[]) as f (fn)
        order by 1
    ),
    array[
        'consume_quota v t {"search_path=\"\""}',
        'get_quota s t {"search_path=\"\""}',
        'grant_credits v t {"search_path=\"\""}',
        'set_premium v t {"search_path=\"\""}'
    ],
    'get_quota is STABLE (read-only over RPC), the writers VOLATILE; all SECURITY DEFINER with an empty search_path'
);

select is(
    array(
        select a.attname || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull
               || ' ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid)
        from pg_catalog.pg_attribute as a
        join pg_catalog.pg_attrdef as d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where a.attrelid = 'public.users'::regclass
          and a.attname in ('credits_balance', 'is_premium', 'initial_grant_claimed')
        order by 1
    ),
    array['credits_balance integer true 0', 'initial_grant_claimed boolean true false', 'is_premium boolean true false'],
    'users has credits_balance, is_premium and initial_grant_claimed, not null, default 0 / false'
);

select col_is_pk('guestpass', 'daily_usage', array['user_id', 'day'], 'daily usage is keyed by (user_id, day)');
select col_is_pk(
    'guestpass', 'consumptions', array['user_id', 'request_id'], 'consumptions are keyed by (user_id, request_id)'
);

-- Fixtures, as the superuser.

-- A, B and C (UTC, no devices); K (a4) and P (a5) in the zones furthest apart; M (a6) and R (a7) in UTC.
select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc('{}');
select from pg_temp.make_user(
    '00000000-0000-4000-8000-0000000000a4', '00000000-0000-4000-8000-0000000000f1', 'Pacific/Kiritimati'
);
select from pg_temp.make_user(
    '00000000-0000-4000-8000-0000000000a5', '00000000-0000-4000-8000-0000000000f1', 'Pacific/Pago_Pago'
);
select from pg_temp.make_users(
    '00000000-0000-4000-8000-0000000000f1',
    array['00000000-0000-4000-8000-0000000000a6', '00000000-0000-4000-8000-0000000000a7']::uuid[]
);

-- The clock.

select is(guestpass.clock(), now(), 'guestpass.clock() is now() without an override');
set local guestpass.clock_override = '2025-03-10 12:00:00+00';
select is(guestpass.clock(), '2025-03-10 12:00:00+00'::timestamptz, 'guestpass.clock_override moves the clock');

-- A credits for later: 2, by the CLI's function.
select is(
    guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000a', 2, null), 2,
    'grant_credits_admin gives A 2 credits'
);

-- User A: 3 free, then 2 credits, then PT429.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');

select is(
    public.get_quota(),
    '{"quota_remaining": 3, "daily_limit": 3, "credits_remaining": 2, "is_premium": false,
      "resets_at": "2025-03-11T00:00:00Z"}'::jsonb,
    'A: get_quota() before any use: 3 free, 2 credits, resets at the next UTC midnight'
);
select is(
    public.get_quota('00000000-0000-4000-8000-00000000000a'), public.get_quota(),
    'A: get_quota(A) is get_quota()'
);
select is(
    public.consume_quota(),
    '{"quota_remaining": 2, "daily_limit": 3, "credits_remaining": 2, "is_premium": false,
      "resets_at": "2025-03-11T00:00:00Z", "charged": "free"}'::jsonb,
    'A: consume 1 is free'
);
select is(public.consume_quota('00000000-0000-4000-8000-00000000000a') ->> 'charged', 'free', 'A: consume 2 is free');
select is(
    public.consume_quota() - 'resets_at',
    '{"quota_remaining": 0, "daily_limit": 3, "credits_remaining": 2, "is_premium": false, "charged": "free"}'::jsonb,
    'A: consume 3 is free and uses up the allowance'
);
select is(
    public.consume_quota() - 'resets_at',
    '{"quota_remaining": 0, "daily_limit": 3, "credits_remaining": 1, "is_premium": false, "charged": "credit"}'::jsonb,
    'A: consume 4 takes a credit'
);
select is(
    public.consume_quota() - 'resets_at',
    '{"quota_remaining": 0, "daily_limit": 3, "credits_remaining": 0, "is_premium": false, "charged": "credit"}'::jsonb,
    'A: consume 5 takes the last credit'
);
select is(
    pg_temp.error_fields('select public.consume_quota()'),
    array['PT429', 'quota exceeded', '43200', 'resets_at=2025-03-11T00:00:00Z'],
    'A: consume 6 raises PT429 ''quota exceeded'', detail = seconds to the reset, hint = resets_at'
);
select is(
    public.get_quota(),
    '{"quota_remaining": 0, "daily_limit": 3, "credits_remaining": 0, "is_premium": false,
      "resets_at": "2025-03-11T00:00:00Z"}'::jsonb,
    'A: the refused consume charged nothing'
);
reset role;

select results_eq(
    $$select day, free_used, premium_used, credit_used from guestpass.daily_usage
      where user_id = '00000000-0000-4000-8000-00000000000a'$$,
    $$values ('2025-03-10'::date, 3, 0, 2)$$,
    'A: daily usage counts 3 free and 2 credit consumes'
);
select results_eq(
    $$select change, reason, balance_after, idempotency_key from guestpass.credit_ledger
      where user_id = '00000000-0000-4000-8000-00000000000a' order by id$$,
    $$values (2, 'admin', 2, null::text), (-1, 'consume', 1, null), (-1, 'consume', 0, null)$$,
    'A: the ledger holds the grant and one row per credit consume'
);

-- Just before midnight: the wait rounds up and is at least 1 second; at midnight the allowance is back.
set local guestpass.clock_override = '2025-03-10 23:59:59.9+00';
set local role authenticated;
select is(
    (pg_temp.error_fields('select public.consume_quota()'))[3], '1',
    'A: 0.1 s before the reset the detail is 1 (rounded up, never 0)'
);
reset role;
set local guestpass.clock_override = '2025-03-11 00:00:00+00';
set local role authenticated;
select is(
    public.consume_quota() - 'resets_at',
    '{"quota_remaining": 2, "daily_limit": 3, "credits_remaining": 0, "is_premium": false, "charged": "free"}'::jsonb,
    'A: at UTC midnight the free allowance is back'
);
select is(public.get_quota() ->> 'resets_at', '2025-03-12T00:00:00Z', 'A: the next reset is a day later');

-- Idempotent request ids.

select is(
    public.consume_quota(null, 'req-1') - 'resets_at',
    '{"quota_remaining": 1, "daily_limit": 3, "credits_remaining": 0, "is_premium": false, "charged": "free"}'::jsonb,
    'A: consume with request id req-1 is charged'
);
select is(
    public.consume_quota(null, 'req-1') - 'resets_at',
    '{"quota_remaining": 1, "daily_limit": 3, "credits_remaining": 0, "is_premium": false, "charged": "free"}'::jsonb,
    'A: the retry of req-1 returns the first answer'
);
select is(public.get_quota() ->> 'quota_remaining', '1', 'A: the retry of req-1 charged nothing');
select is(public.consume_quota(null, 'req-2') ->> 'quota_remaining', '0', 'A: req-2 takes the last free use');
select is(
    (pg_temp.error_fields('select public.consume_quota(null, ''req-3'')'))[1], 'PT429',
    'A: req-3 finds nothing left'
);
select is(
    public.consume_quota(null, 'req-1') ->> 'charged', 'free',
    'A: a retry of req-1 still returns its first answer when the quota is exhausted'
);
select throws_ok(
    'select public.consume_quota(null, '''')', '22023', null, 'A: an empty request id is 22023'
);
select throws_ok(
    format('select public.consume_quota(null, %L)', repeat('x', 256)), '22023', null,
    'A: a request id longer than 255 characters is 22023'
);
reset role;
select is(
    (select count(*)::integer from guestpass.consumptions where user_id = '00000000-0000-4000-8000-00000000000a'),
    2, 'A: one stored answer per charged request id (req-1, req-2)'
);
select is(
    (select free_used from guestpass.daily_usage
     where user_id = '00000000-0000-4000-8000-00000000000a' and day = '2025-03-11'),
    3, 'A: three free uses on 2025-03-11 despite the retries'
);

-- An idempotent credit consume writes one ledger row, keyed consume:<request id>.
select is(
    guestpass.grant_credits_admin('00000000-0000-4000-8000-00000000000a', 1, 'admin'), 1, 'A gets 1 more credit'
);
set local role authenticated;
select is(public.consume_quota(null, 'req-4') ->> 'charged', 'credit', 'A: req-4 takes a credit');
select is(public.consume_quota(null, 'req-4') ->> 'credits_remaining', '0', 'A: the retry of req-4 is the same');
reset role;
select results_eq(
    $$select change, idempotency_key from guestpass.credit_ledger
      where user_id = '00000000-0000-4000-8000-00000000000a' and idempotency_key is not null$$,
    $$values (-1, 'consume:req-4')$$,
    'A: req-4 and its retry wrote one ledger row, keyed consume:req-4'
);

-- Someone else's id.

set local role authenticated;
select throws_ok(
    'select public.consume_quota(''00000000-0000-4000-8000-00000000000b'')', '42501', 'p_user_id must be the caller',
    'A: consume_quota(B) is 42501'
);
select throws_ok(
    'select public.get_quota(''00000000-0000-4000-8000-00000000000b'')', '42501', 'p_user_id must be the caller',
    'A: get_quota(B) is 42501'
);
select throws_ok(
    'select public.get_quota(''00000000-0000-4000-8000-00000000000c'')', '42501', null,
    'A: get_quota(C of app Y) is 42501'
);
select set_config('request.jwt.claims', '{"role":"authenticated","app_id":"00000000-0000-4000-8000-0000000000f1"}', true);
select throws_ok(
    'select public.consume_quota()', '42501', 'no user in the request claims', 'claims without sub: consume_quota is 42501'
);
select throws_ok(
    'select public.get_quota()', '42501', 'no user in the request claims', 'claims without sub: get_quota is 42501'
);
reset role;
select is(
    (select count(*)::integer from guestpass.daily_usage where user_id = '00000000-0000-4000-8000-00000000000b'),
    0, 'B was never charged'
);

-- A user of app Y with a token of app X: not found in the claims' app.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f1');
select throws_ok('select public.consume_quota()', '42501', 'unknown user', 'C with app X''s app_id is 42501');
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000c9', '00000000-0000-4000-8000-0000000000f1');
select throws_ok('select public.consume_quota()', '42501', 'unknown user', 'a user that does not exist is 42501');
reset role;
select is(
    (select count(*)::integer from guestpass.daily_usage where user_id = '00000000-0000-4000-8000-00000000000c'),
    0, 'C was not charged in either app'
);

-- Other roles.

select from pg_temp.as_anon();
select throws_ok('select public.consume_quota()', '42501', null, 'anon cannot call consume_quota');
select throws_ok('select public.get_quota()', '42501', null, 'anon cannot call get_quota');
reset role;
select from pg_temp.as_service_role();
select throws_ok(
    'select public.consume_quota()', '22023', 'p_user_id is required with the secret key',
    'service_role must name the user it consumes for (33_backend_quota)'
);

-- Premium: the app's backend makes M premium; M is unmetered but counted.

select is(
    public.set_premium('00000000-0000-4000-8000-0000000000a6', true) ->> 'is_premium', 'true',
    'service role X makes M premium'
);
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a6');
select is(
    array(select public.consume_quota() ->> 'charged' from generate_series(1, 6)),
    array['premium', 'premium', 'premium', 'premium', 'premium', 'premium'],
    'M: six consumes in a row are all premium'
);
select is(
    public.get_quota() - 'resets_at',
    '{"quota_remaining": 3, "daily_limit": 3, "credits_remaining": 0, "is_premium": true}'::jsonb,
    'M: premium consumes leave the free allowance and the credits alone'
);
reset role;
select results_eq(
    $$select free_used, premium_used, credit_used from guestpass.daily_usage
      where user_id = '00000000-0000-4000-8000-0000000000a6'$$,
    $$values (0, 6, 0)$$,
    'M: the premium consumes are counted'
);

-- Day boundaries: K in Pacific/Kiritimati (UTC+14, midnight of 2025-03-11 = 2025-03-10 10:00 UTC) and P in
-- Pacific/Pago_Pago (UTC-11, midnight of 2025-03-10 = 2025-03-10 11:00 UTC). Each uses its 3 free uses first.

-- Three consumes as p_user (each must succeed), then answers the SQLSTATE of a fourth (its JSON if it succeeds).
create function pg_temp.use_up(p_user uuid)
returns text
language plpgsql
as $$
begin
    perform pg_temp.as_user(p_user);
    perform public.consume_quota() from generate_series(1, 3);
    reset role;
    return pg_temp.at(p_user, null, 'select public.consume_quota()::text');
end
$$;

-- The error of p_user's next consume: {sqlstate, message, detail, hint} (lib/errors.sql).
create function pg_temp.refusal(p_user uuid)
returns text[]
language plpgsql
as $$
declare
    v text[];
begin
    perform pg_temp.as_user(p_user);
    v := pg_temp.error_fields('select public.consume_quota()');
    reset role;
    return v;
end
$$;

create function pg_temp.free_left(p_user uuid)
returns integer
language sql
as $$ select pg_temp.at(p_user, null, 'select public.get_quota() ->> ''quota_remaining''')::integer $$;

set local guestpass.clock_override = '2025-03-10 09:59:59+00';
select is(pg_temp.use_up('00000000-0000-4000-8000-0000000000a4'), 'PT429', 'K (23:59:59 local) uses up its day');
reset role;
select is(pg_temp.use_up('00000000-0000-4000-8000-0000000000a5'), 'PT429', 'P (22:59:59 local) uses up its day');
reset role;
select is(
    pg_temp.refusal('00000000-0000-4000-8000-0000000000a4'),
    array['PT429', 'quota exceeded', '1', 'resets_at=2025-03-10T10:00:00Z'],
    'K: one second before its midnight the wait is 1 s, until 10:00 UTC'
);
select is(
    pg_temp.refusal('00000000-0000-4000-8000-0000000000a5'),
    array['PT429', 'quota exceeded', '3601', 'resets_at=2025-03-10T11:00:00Z'],
    'P: its reset is an hour later, at 11:00 UTC'
);

set local guestpass.clock_override = '2025-03-10 10:00:01+00';
select is(pg_temp.free_left('00000000-0000-4000-8000-0000000000a4'), 3, 'K: just after its midnight, 3 free again');
reset role;
select is(pg_temp.free_left('00000000-0000-4000-8000-0000000000a5'), 0, 'P: at the same instant, still 0');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a4');
select is(public.consume_quota() ->> 'charged', 'free', 'K: consumes from its new day');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a5');
select throws_ok('select public.consume_quota()', 'PT429', 'quota exceeded', 'P: is still refused');
reset role;

set local guestpass.clock_override = '2025-03-10 10:59:59+00';
select is(pg_temp.free_left('00000000-0000-4000-8000-0000000000a5'), 0, 'P: one second before its midnight, 0');
reset role;
set local guestpass.clock_override = '2025-03-10 11:00:01+00';
select is(pg_temp.free_left('00000000-0000-4000-8000-0000000000a5'), 3, 'P: just after its midnight, 3 free again');
reset role;
select is(
    pg_temp.free_left('00000000-0000-4000-8000-0000000000a4'), 2,
    'K: P''s midnight does not reset K (2 left of its day)'
);
reset role;
select results_eq(
    $$select user_id, day, free_used from guestpass.daily_usage
      where user_id in ('00000000-0000-4000-8000-0000000000a4', '00000000-0000-4000-8000-0000000000a5')
      order by user_id, day$$,
    $$values ('00000000-0000-4000-8000-0000000000a4'::uuid, '2025-03-10'::date, 3),
             ('00000000-0000-4000-8000-0000000000a4'::uuid, '2025-03-11'::date, 1),
             ('00000000-0000-4000-8000-0000000000a5'::uuid, '2025-03-09'::date, 3)$$,
    'usage is recorded on each user''s local date'
);

-- Time zone validation on write.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b');
select is(
    public.set_timezone('Europe/Paris') ->> 'daily_limit', '3', 'B may set an IANA time zone (set_timezone answers the quota)'
);
select is(
    (select timezone from public.users where id = '00000000-0000-4000-8000-00000000000b'), 'Europe/Paris',
    'B: the time zone is stored'
);
select throws_ok(
    'update public.users set timezone = ''Europe/Paris'' where id = ''00000000-0000-4000-8000-00000000000b''',
    '42501', null, 'B cannot update the timezone column directly'
);
select throws_ok(
    'select public.set_timezone(''Mars/Olympus_Mons'')', '22023', 'unknown time zone', 'B: an unknown time zone is 22023'
);
select throws_ok(
    'select public.set_timezone(''europe/paris'')', '22023', 'unknown time zone', 'B: a wrongly cased name is 22023'
);
select throws_ok(
    'select public.set_timezone(''+05:00'')', '22023', 'unknown time zone', 'B: a POSIX offset is 22023'
);
select throws_ok(
    'select public.set_timezone(''posix/Europe/Paris'')', '22023', 'unknown time zone', 'B: the posix/ copies are 22023'
);
select is(public.get_quota() ->> 'resets_at', '2025-03-10T23:00:00Z', 'B: resets at midnight in Paris (UTC+1)');

-- The server-only columns.

select throws_ok(
    'update public.users set credits_balance = 100 where id = ''00000000-0000-4000-8000-00000000000b''',
    '42501', null, 'B cannot set its credits_balance'
);
select throws_ok(
    'update public.users set is_premium = true where id = ''00000000-0000-4000-8000-00000000000b''',
    '42501', null, 'B cannot make itself premium'
);
select throws_ok(
    'update public.users set initial_grant_claimed = false where id = ''00000000-0000-4000-8000-00000000000b''',
    '42501', null, 'B cannot change initial_grant_claimed'
);
reset role;
select throws_ok(
    $$insert into public.users (app_id, timezone) values ('00000000-0000-4000-8000-0000000000f1', 'Not/AZone')$$,
    '22023', 'unknown time zone', 'inserting a user with an unknown time zone is 22023, even for the owner'
);

-- The metered example: add_reading charges one unit in the same transaction.

select from pg_temp.as_user('00000000-0000-4000-8000-0000000000a7');
select throws_ok('select public.add_reading(''tarot'')', '23514', null, 'R: an invalid reading is refused');
select is(public.get_quota() ->> 'quota_remaining', '3', 'R: and charges nothing');
select lives_ok(
    'select public.add_reading(''face''); select public.add_reading(''palm''); select public.add_reading(''coffee'')',
    'R: three readings are accepted'
);
select is(
    (pg_temp.error_fields('select public.add_reading(''face'', ''{"n": 4}'')'))[1:2],
    array['PT429', 'quota exceeded'],
    'R: the fourth reading raises PT429'
);
select is(public.count_readings(), 3, 'R: no fourth reading was stored');
reset role;
select results_eq(
    $$select free_used, credit_used from guestpass.daily_usage where user_id = '00000000-0000-4000-8000-0000000000a7'$$,
    $$values (3, 0)$$,
    'R: exactly three units were charged'
);

select * from finish();
rollback;
