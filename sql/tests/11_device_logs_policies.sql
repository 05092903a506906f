-- device_logs policies (example app): the exact grants and policy set of public.device_logs, then the CRUD x role x
-- device matrix: anon gets 42501, each device (A1 and A2 of user A, B1 of user B, C1 of user C in app Y) reads and
-- changes only its own log lines, the backends of apps X and Y only read their own app's lines; denied writes leave
-- the lines unchanged. Fixtures: app X with users A (devices A1, A2) and B (device B1), app Y with user C (device
-- C1); log lines 101, 102 (A1), 103 (A2), 104 (B1), 105 (C1). Needs sql/examples applied.
begin;
select plan(48);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/catalog.sql

-- Structure.

select is(
    pg_temp.row_security('public.device_logs'), 'forced', 'public.device_logs has row-level security enabled and forced'
);
select is(
    pg_temp.policy_commands('public.device_logs'),
    array[
        'device_logs_delete_own delete to authenticated', 'device_logs_insert_own insert to authenticated',
        'device_logs_select_app select to service_role', 'device_logs_select_own select to authenticated',
        'device_logs_update_own update to authenticated'
    ],
    'public.device_logs has one policy per command for authenticated, and one for service_role to select'
);

select is(
    pg_temp.table_grants('public.device_logs'),
    array[
        'authenticated DELETE', 'authenticated INSERT', 'authenticated SELECT', 'authenticated UPDATE (level, message)',
        'service_role SELECT'
    ],
    'the grants on public.device_logs: authenticated selects, inserts and deletes, and updates only level and '
    'message; service_role only selects; anon nothing'
);

select has_index(
    'public', 'device_logs', 'device_logs_device_id_created_at_idx', array['device_id', 'created_at'],
    'device logs are indexed by device (device_id, created_at)'
);

-- Fixtures, as the superuser.

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();

insert into public.device_logs (id, app_id, user_id, device_id, message, created_at)
overriding system value
values
    (101, '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
     '00000000-0000-4000-8000-0000000000a1', 'a1 first', '2024-01-01'),
    (102, '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
     '00000000-0000-4000-8000-0000000000a1', 'a1 second', '2024-01-02'),
    (103, '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
     '00000000-0000-4000-8000-0000000000a2', 'a2 only', '2024-01-03'),
    (104, '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000b',
     '00000000-0000-4000-8000-0000000000b1', 'b1 only', '2024-01-04'),
    (105, '00000000-0000-4000-8000-0000000000f2', '00000000-0000-4000-8000-00000000000c',
     '00000000-0000-4000-8000-0000000000c1', 'c1 only', '2024-01-05');

-- anon (publishable key of app X): the grant wall refuses every command.
-- (`select from …` discards the result row so it does not clutter the TAP output.)

select * from pg_temp.anon_refused('public.device_logs', 'device logs', $$(message) values ('x')$$, $$level = 'error'$$);

-- User A on device A1.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1',
    p_session => '00000000-0000-4000-8000-0000000005a1'
);
select results_eq(
    'select id from public.device_logs order by id',
    array[101::bigint, 102::bigint],
    'A1 selects exactly its own log lines'
);
select is_empty(
    'select id from public.device_logs where device_id = ''00000000-0000-4000-8000-0000000000a2''',
    'A1 cannot select the log lines of A2, the same user''s other device'
);
select is_empty(
    'select id from public.device_logs where id in (104, 105)',
    'A1 cannot select B1''s or C1''s log lines'
);
select results_eq(
    'insert into public.device_logs (message) values (''a1 new'') returning device_id, user_id, app_id, level',
    $$values ('00000000-0000-4000-8000-0000000000a1'::uuid, '00000000-0000-4000-8000-00000000000a'::uuid,
              '00000000-0000-4000-8000-0000000000f1'::uuid, 'info')$$,
    'A1 inserts a log line; device_id, user_id and app_id default to the claims, level to info'
);
select throws_ok(
    'insert into public.device_logs (device_id, message) values (''00000000-0000-4000-8000-0000000000a2'', ''x'')',
    '42501', null, 'A1 cannot insert a log line as A2 (WITH CHECK)'
);
select throws_ok(
    'insert into public.device_logs (device_id, user_id, message) values ('
    '''00000000-0000-4000-8000-0000000000b1'', ''00000000-0000-4000-8000-00000000000b'', ''x'')',
    '42501', null, 'A1 cannot insert a log line as B1 (WITH CHECK)'
);
select throws_ok(
    'insert into public.device_logs (level, message) values (''fatal'', ''x'')', '23514', null,
    'a log line''s level must be known'
);
select throws_ok(
    'insert into public.device_logs (message) values (repeat(''x'', 2001))', '23514', null,
    'a log line''s message is at most 2000 characters'
);
select results_eq(
    'update public.device_logs set level = ''error'' where id = 101 returning id',
    array[101::bigint],
    'A1 updates its own log line'
);
select is_empty(
    'update public.device_logs set message = ''hijacked'' where id = 103 returning id',
    'A1 updating A2''s log line changes nothing'
);
select is_empty(
    'update public.device_logs set message = ''hijacked'' where id in (104, 105) returning id',
    'A1 updating B1''s or C1''s log line changes nothing'
);
select throws_ok(
    'update public.device_logs set device_id = ''00000000-0000-4000-8000-0000000000a2'' where id = 101',
    '42501', null, 'A1 cannot move its log line to A2 (no update grant on device_id)'
);
select is_empty(
    'delete from public.device_logs where id = 103 returning id',
    'A1 deleting A2''s log line deletes nothing'
);
select is_empty(
    'delete from public.device_logs where id in (104, 105) returning id',
    'A1 deleting B1''s or C1''s log line deletes nothing'
);
select results_eq(
    'delete from public.device_logs where id = 102 returning id',
    array[102::bigint],
    'A1 deletes its own log line'
);
select throws_ok('truncate public.device_logs', '42501', null, 'A1 cannot truncate device logs');

-- User A on device A2.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a2');
select results_eq(
    'select message from public.device_logs',
    array['a2 only'],
    'A2 selects exactly its own log line, none of A1''s'
);
select is_empty(
    'update public.device_logs set message = ''hijacked'' '
    'where device_id = ''00000000-0000-4000-8000-0000000000a1'' returning id',
    'A2 updating A1''s log lines changes nothing'
);
select is_empty(
    'delete from public.device_logs where device_id = ''00000000-0000-4000-8000-0000000000a1'' returning id',
    'A2 deleting A1''s log lines deletes nothing'
);
select throws_ok(
    'insert into public.device_logs (device_id, message) values (''00000000-0000-4000-8000-0000000000a1'', ''x'')',
    '42501', null, 'A2 cannot insert a log line as A1 (WITH CHECK)'
);

-- User A with no device in its claims (a token from a sign-up without a device).

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select is_empty('select id from public.device_logs', 'A without a device claim selects no log line');
select throws_ok(
    'insert into public.device_logs (message) values (''x'')', '42501', null,
    'A without a device claim cannot insert a log line'
);
select throws_ok(
    'insert into public.device_logs (device_id, message) values (''00000000-0000-4000-8000-0000000000a1'', ''x'')',
    '42501', null, 'A without a device claim cannot insert a log line naming A1'
);

-- A's user id with B1's device id (a pairing the server never issues): both must match, so nothing of B1's.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000b1');
select is_empty('select id from public.device_logs', 'A''s sub with B1''s device claim selects nothing');
select is_empty(
    'delete from public.device_logs returning id', 'A''s sub with B1''s device claim deletes nothing'
);
reset role;

-- As the superuser: A's attempts left A2's, B1's and C1's lines unchanged.

select results_eq(
    'select id, device_id, level, message from public.device_logs where id in (103, 104, 105) order by id',
    $$values (103::bigint, '00000000-0000-4000-8000-0000000000a2'::uuid, 'info', 'a2 only'),
             (104::bigint, '00000000-0000-4000-8000-0000000000b1'::uuid, 'info', 'b1 only'),
             (105::bigint, '00000000-0000-4000-8000-0000000000c1'::uuid, 'info', 'c1 only')$$,
    'after A''s attempts A2''s, B1''s and C1''s log lines are unchanged'
);

-- User B on device B1.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b', p_device => '00000000-0000-4000-8000-0000000000b1');
select results_eq('select message from public.device_logs', array['b1 only'], 'B1 selects exactly its own log line');
select is_empty(
    'update public.device_logs set message = ''hijacked'' '
    'where user_id = ''00000000-0000-4000-8000-00000000000a'' returning id',
    'B1 updating A''s log lines changes nothing'
);
select is_empty(
    'delete from public.device_logs where user_id = ''00000000-0000-4000-8000-00000000000a'' returning id',
    'B1 deleting A''s log lines deletes nothing'
);
reset role;

-- User C of app Y on device C1.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2',
    p_device => '00000000-0000-4000-8000-0000000000c1'
);
select results_eq('select message from public.device_logs', array['c1 only'], 'C1 selects exactly its own log line');
select is_empty(
    'update public.device_logs set message = ''hijacked'' where app_id = ''00000000-0000-4000-8000-0000000000f1'' '
    'returning id',
    'C1 updating app X''s log lines changes nothing'
);
reset role;

-- The backend of app X (service_role): reads app X's lines, writes nothing.

select from pg_temp.as_service_role();
select results_eq(
    'select message from public.device_logs order by message',
    array['a1 first', 'a1 new', 'a2 only', 'b1 only'],
    'service role X selects every log line of app X'
);
select is_empty(
    'select id from public.device_logs where app_id = ''00000000-0000-4000-8000-0000000000f2'' or id = 105',
    'service role X selects none of app Y''s log lines'
);
select throws_ok(
    'insert into public.device_logs (user_id, device_id, message) values ('
    '''00000000-0000-4000-8000-00000000000a'', ''00000000-0000-4000-8000-0000000000a1'', ''x'')',
    '42501', null, 'service role X cannot insert log lines'
);
select throws_ok(
    'update public.device_logs set message = ''x''', '42501', null, 'service role X cannot update log lines'
);
select throws_ok('delete from public.device_logs', '42501', null, 'service role X cannot delete log lines');
reset role;

-- The backend of app Y.

select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select results_eq(
    'select message from public.device_logs', array['c1 only'], 'service role Y selects exactly app Y''s log line'
);

-- service_role without an app claim: nothing.

select from pg_temp.as_service_role(null);
select is_empty('select id from public.device_logs', 'service role without an app claim selects nothing');
reset role;

-- As the superuser: the end state holds exactly the allowed changes.

select results_eq(
    'select device_id, level, message from public.device_logs order by device_id, message',
    $$values ('00000000-0000-4000-8000-0000000000a1'::uuid, 'error', 'a1 first'),
             ('00000000-0000-4000-8000-0000000000a1'::uuid, 'info', 'a1 new'),
             ('00000000-0000-4000-8000-0000000000a2'::uuid, 'info', 'a2 only'),
             ('00000000-0000-4000-8000-0000000000b1'::uuid, 'info', 'b1 only'),
             ('00000000-0000-4000-8000-0000000000c1'::uuid, 'info', 'c1 only')$$,
    'the device logs hold exactly the allowed changes'
);

delete from public.devices where id = '00000000-0000-4000-8000-0000000000a2';
select is_empty('select id from public.device_logs where id = 103', 'deleting a device deletes its log lines');

select * from finish();
rollback;
