-- reading functions (example app): every RPC function of sql/examples is SECURITY INVOKER with a pinned search_path,
-- executable by exactly the roles it serves, STABLE when it only reads; called as user A it adds, lists, counts,
-- summarises and deletes only A's readings, refuses get_user_readings for anyone else (42501), and device logs stay
-- per device; fail_with raises the error shapes the RPC endpoint maps; echo_bigint and echo_numeric return their
-- argument digit for digit. Fixtures: app X with users A (devices A1, A2) and B (device B1), app Y with user C;
-- readings RA1, RA2 (A), RB1 (B), RC1 (C). Needs sql/examples applied.
begin;
select plan(59);

\ir lib/fixtures.sql
\ir lib/readings.sql
\ir lib/roles.sql
\ir lib/errors.sql
\ir lib/catalog.sql

-- Structure.

select is(
    array(
        select p.oid::regprocedure::text
        from pg_catalog.pg_proc as p
        where p.oid in (
            'public.add_reading(text, jsonb)'::regprocedure, 'public.list_readings(text)'::regprocedure,
            'public.count_readings()'::regprocedure, 'public.delete_reading(uuid)'::regprocedure,
            'public.get_user_readings(uuid)'::regprocedure, 'public.readings_summary()'::regprocedure,
            'public.add_device_log(text, text)'::regprocedure, 'public.list_device_logs()'::regprocedure,
            'public.fail_with(text)'::regprocedure, 'public.echo_bigint(bigint)'::regprocedure,
            'public.echo_numeric(numeric)'::regprocedure
        )
          and (p.prosecdef or not exists (
              select 1 from unnest(p.proconfig) as setting where setting = 'search_path=""'
          ))
        order by 1
    ),
    '{}'::text[],
    'every example function is SECURITY INVOKER and pins an empty search_path'
);

-- Who may execute what. guestpass_authenticator (NOINHERIT) shows what PUBLIC holds: no example function is
-- executable by PUBLIC.
select is(
    pg_temp.executors_unlike($${
        "public.add_device_log(text,text)": "authenticated",
        "public.add_reading(text,jsonb)": "authenticated",
        "public.count_readings()": "authenticated",
        "public.delete_reading(uuid)": "authenticated",
        "public.echo_bigint(bigint)": "authenticated,service_role",
        "public.echo_numeric(numeric)": "authenticated,service_role",
        "public.fail_with(text)": "anon,authenticated",
        "public.get_user_readings(uuid)": "authenticated",
        "public.list_device_logs()": "authenticated",
        "public.list_readings(text)": "authenticated,service_role",
        "public.readings_summary()": "authenticated"
    }$$),
    '{}'::text[],
    'each example function is executable by exactly the request roles it serves'
);

-- Volatility decides whether the RPC endpoint runs a function read-only; the result type decides its JSON shape.
select results_eq(
    $$select p.proname::text collate "default", p.provolatile::text, pg_catalog.pg_get_function_result(p.oid)
      from pg_catalog.pg_proc as p
      join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
      where n.nspname = 'public'
        and p.proname in ('add_reading', 'list_readings', 'count_readings', 'delete_reading', 'get_user_readings',
                          'readings_summary', 'add_device_log', 'list_device_logs', 'fail_with', 'echo_bigint',
                          'echo_numeric')
      order by 1$$,
    $$values ('add_device_log', 'v', 'bigint'),
             ('add_reading', 'v', 'readings'),
             ('count_readings', 's', 'integer'),
             ('delete_reading', 'v', 'void'),
             ('echo_bigint', 'i', 'bigint'),
             ('echo_numeric', 'i', 'numeric'),
             ('fail_with', 'v', 'void'),
             ('get_user_readings', 's', 'SETOF readings'),
             ('list_device_logs', 's',
              'TABLE(id bigint, level text, message text, created_at timestamp with time zone)'),
             ('list_readings', 's', 'SETOF readings'),
             ('readings_summary', 's', 'jsonb')$$,
    'each example function exists once, with the agreed volatility and result type'
);

-- Fixtures, as the superuser (user C has no device here).

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc(array['a1', 'a2', 'b1']);
select from pg_temp.make_readings_abc();

-- The login role without a role switch executes nothing.
-- (`select from …` discards the result row so it does not clutter the TAP output.)

select from pg_temp.set_claims(
    'authenticated', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
    '00000000-0000-4000-8000-0000000000a1'
);
set local role guestpass_authenticator;
select throws_ok(
    'select public.list_readings()', '42501', null, 'login role without a switch cannot call list_readings'
);
select throws_ok(
    'select public.fail_with(''plain'')', '42501', null, 'login role without a switch cannot call fail_with'
);
reset role;

-- User A on device A1.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select results_eq(
    'select id from public.list_readings()',
    array['00000000-0000-4000-8000-0000000a0002'::uuid, '00000000-0000-4000-8000-0000000a0001'::uuid],
    'A: list_readings() returns exactly A''s readings, newest first'
);
select results_eq(
    'select id from public.list_readings(''face'')',
    array['00000000-0000-4000-8000-0000000a0001'::uuid],
    'A: list_readings(''face'') returns only A''s face readings'
);
select is_empty('select id from public.list_readings(''coffee'')', 'A: list_readings(''coffee'') misses B''s coffee');
select is(public.count_readings(), 2, 'A: count_readings() counts only A''s readings');
select is(
    public.readings_summary(),
    '{"total": 2, "by_kind": {"face": 1, "palm": 1}}'::jsonb,
    'A: readings_summary() summarises only A''s readings'
);
select results_eq(
    'select id from public.get_user_readings(''00000000-0000-4000-8000-00000000000a'')',
    array['00000000-0000-4000-8000-0000000a0002'::uuid, '00000000-0000-4000-8000-0000000a0001'::uuid],
    'A: get_user_readings(A) returns A''s readings'
);
select throws_ok(
    'select * from public.get_user_readings(''00000000-0000-4000-8000-00000000000b'')',
    '42501', 'p_user_id must be the caller', 'A: get_user_readings(B) is refused with 42501'
);
select throws_ok(
    'select * from public.get_user_readings(''00000000-0000-4000-8000-00000000000c'')',
    '42501', null, 'A: get_user_readings(C of app Y) is refused with 42501'
);
select throws_ok(
    'select * from public.get_user_readings(null)', '42501', null, 'A: get_user_readings(null) is refused with 42501'
);
select results_eq(
    'select kind, content, user_id, app_id from public.add_reading(''coffee'', ''{"cup": "espresso"}'')',
    $$values ('coffee', '{"cup": "espresso"}'::jsonb, '00000000-0000-4000-8000-00000000000a'::uuid,
              '00000000-0000-4000-8000-0000000000f1'::uuid)$$,
    'A: add_reading returns the new reading, owned by A in app X'
);
select results_eq(
    'select kind, content from public.add_reading(''face'')',
    $$values ('face', '{}'::jsonb)$$,
    'A: add_reading without content stores {}'
);
select results_eq(
    'select content from public.add_reading(''palm'', null)',
    $$values ('{}'::jsonb)$$,
    'A: add_reading with a null content stores {}'
);
select throws_ok('select public.add_reading(''tarot'')', '23514', null, 'A: add_reading of an unknown kind is 23514');
select throws_ok(
    'select public.add_reading(''face'', ''[1]'')', '23514', null, 'A: add_reading with non-object content is 23514'
);
select throws_ok('select public.add_reading(null)', '23502', null, 'A: add_reading without a kind is 23502');
select is(public.count_readings(), 5, 'A: count_readings() counts the added readings');
select is(
    public.readings_summary(),
    '{"total": 5, "by_kind": {"face": 2, "palm": 2, "coffee": 1}}'::jsonb,
    'A: readings_summary() counts by kind'
);
select lives_ok(
    'select public.delete_reading(''00000000-0000-4000-8000-0000000b0001'')',
    'A: delete_reading of B''s reading raises nothing'
);
select lives_ok(
    'select public.delete_reading(''00000000-0000-4000-8000-0000000c0001'')',
    'A: delete_reading of C''s reading (app Y) raises nothing'
);
select lives_ok(
    'select public.delete_reading(''00000000-0000-4000-8000-0000000a0002'')',
    'A: delete_reading of its own reading'
);
select is(public.count_readings(), 4, 'A: delete_reading removed exactly A''s reading');

-- Device logs on A1.
select cmp_ok(public.add_device_log('hello a1'), '>', 0::bigint, 'A1: add_device_log returns the new id');
select cmp_ok(public.add_device_log('careful a1', 'warning'), '>', 0::bigint, 'A1: add_device_log with a level');
select results_eq(
    'select level, message from public.list_device_logs()',
    $$values ('warning', 'careful a1'), ('info', 'hello a1')$$,
    'A1: list_device_logs() returns A1''s lines, newest first'
);
select throws_ok(
    'select public.add_device_log(''x'', ''fatal'')', '23514', null, 'A1: add_device_log with an unknown level is 23514'
);
select throws_ok(
    'select public.add_device_log(repeat(''x'', 2001))', '23514', null,
    'A1: add_device_log with a message over 2000 characters is 23514'
);

-- User A on device A2: A1's lines are not seen.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a2');
select is_empty('select * from public.list_device_logs()', 'A2: list_device_logs() misses A1''s lines');
select cmp_ok(public.add_device_log('hello a2'), '>', 0::bigint, 'A2: add_device_log');
select results_eq(
    'select message from public.list_device_logs()', array['hello a2'], 'A2: list_device_logs() returns A2''s line'
);

-- User A without a device claim: no device log.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select throws_ok(
    'select public.add_device_log(''x'')', '42501', null, 'A without a device claim: add_device_log is 42501'
);
select is_empty('select * from public.list_device_logs()', 'A without a device claim: list_device_logs() is empty');
select throws_ok(
    'select public.fail_with(''plain'')', 'P0001', 'plain failure', 'authenticated may call fail_with'
);
select is(
    public.echo_bigint('9007199254740993')::text, '9007199254740993', 'echo_bigint returns 2^53 + 1 unchanged'
);
select is(
    public.echo_numeric('0.1000000000000000055511151231257827')::text, '0.1000000000000000055511151231257827',
    'echo_numeric returns all 34 digits unchanged'
);
reset role;

-- User B on device B1.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b', p_device => '00000000-0000-4000-8000-0000000000b1');
select results_eq(
    'select id from public.list_readings()',
    array['00000000-0000-4000-8000-0000000b0001'::uuid],
    'B: list_readings() returns exactly B''s reading, still there after A''s delete_reading'
);
select is(public.count_readings(), 1, 'B: count_readings() counts only B''s reading');
select throws_ok(
    'select * from public.get_user_readings(''00000000-0000-4000-8000-00000000000a'')',
    '42501', null, 'B: get_user_readings(A) is refused with 42501'
);
select lives_ok(
    'select public.delete_reading(''00000000-0000-4000-8000-0000000a0001'')',
    'B: delete_reading of A''s reading raises nothing'
);
select is_empty('select * from public.list_device_logs()', 'B1: list_device_logs() misses A''s devices'' lines');
reset role;

-- As the superuser: A's and B's attempts left the others' readings in place and unchanged.

select results_eq(
    'select id, user_id, kind, content from public.readings '
    'where id in (''00000000-0000-4000-8000-0000000a0001'', ''00000000-0000-4000-8000-0000000b0001'','
    ' ''00000000-0000-4000-8000-0000000c0001'') order by id',
    $$values ('00000000-0000-4000-8000-0000000a0001'::uuid, '00000000-0000-4000-8000-00000000000a'::uuid,
              'face', '{"n": 1}'::jsonb),
             ('00000000-0000-4000-8000-0000000b0001'::uuid, '00000000-0000-4000-8000-00000000000b'::uuid,
              'coffee', '{"n": 3}'::jsonb),
             ('00000000-0000-4000-8000-0000000c0001'::uuid, '00000000-0000-4000-8000-00000000000c'::uuid,
              'face', '{"n": 4}'::jsonb)$$,
    'readings deleted through someone else''s delete_reading are still there, unchanged'
);

-- anon (publishable key of app X): only fail_with.

select from pg_temp.as_anon();
select throws_ok('select public.add_reading(''face'')', '42501', null, 'anon cannot call add_reading');
select throws_ok('select * from public.list_readings()', '42501', null, 'anon cannot call list_readings');
select throws_ok('select public.count_readings()', '42501', null, 'anon cannot call count_readings');
select throws_ok(
    'select public.delete_reading(''00000000-0000-4000-8000-0000000a0001'')', '42501', null,
    'anon cannot call delete_reading'
);
select throws_ok('select public.readings_summary()', '42501', null, 'anon cannot call readings_summary');
select throws_ok('select public.add_device_log(''x'')', '42501', null, 'anon cannot call add_device_log');
select is(
    pg_temp.error_fields('select public.fail_with(''custom'')'),
    array['PT402', 'custom failure', 'd', 'h'],
    'fail_with(''custom'') raises PT402 with detail and hint'
);
select is(
    pg_temp.error_fields('select public.fail_with(''plain'')'),
    array['P0001', 'plain failure', '', ''],
    'fail_with(''plain'') raises P0001 without detail or hint'
);
select throws_ok(
    'select public.fail_with(''unique'')', '23505', 'unique failure', 'fail_with(''unique'') raises 23505'
);
select throws_ok('select public.fail_with(''other'')', '22023', null, 'fail_with of an unknown kind raises 22023');
reset role;

-- The backend of app X: list_readings shows app X's readings; nothing else is granted.

select from pg_temp.as_service_role();
select results_eq(
    'select user_id, count(*)::integer from public.list_readings() group by user_id order by user_id',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, 4), ('00000000-0000-4000-8000-00000000000b'::uuid, 1)$$,
    'service role X: list_readings() returns every reading of app X and none of app Y'
);
select throws_ok('select public.add_reading(''face'')', '42501', null, 'service role cannot call add_reading');
select throws_ok('select public.fail_with(''plain'')', '42501', null, 'service role cannot call fail_with');
reset role;

-- The backend of app Y.

select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select results_eq(
    'select id from public.list_readings()',
    array['00000000-0000-4000-8000-0000000c0001'::uuid],
    'service role Y: list_readings() returns exactly app Y''s reading'
);
reset role;

select * from finish();
rollback;
