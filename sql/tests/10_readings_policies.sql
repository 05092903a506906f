-- readings policies (example app): the exact grants and policy set of public.readings, then the CRUD x role x tenant
-- matrix: anon gets 42501, users A and B of app X and user C of app Y read and change only their own rows, the backend
-- of app X (service_role) only app X's rows and never app Y's; denied writes leave the rows unchanged. Fixtures: app X
-- with users A (devices A1, A2) and B (device B1), app Y with user C (device C1); readings RA1, RA2 (A), RB1 (B),
-- RC1 (C). Needs sql/examples applied.
begin;
select plan(62);

\ir lib/fixtures.sql
\ir lib/readings.sql
\ir lib/roles.sql
\ir lib/catalog.sql

-- Structure.

select is(pg_temp.row_security('public.readings'), 'forced', 'public.readings has row-level security enabled and forced');
select is(
    pg_temp.policy_commands('public.readings'),
    array[
        'readings_delete_app delete to service_role', 'readings_delete_own delete to authenticated',
        'readings_insert_app insert to service_role', 'readings_insert_own insert to authenticated',
        'readings_select_app select to service_role', 'readings_select_own select to authenticated',
        'readings_update_app update to service_role', 'readings_update_own update to authenticated'
    ],
    'public.readings has one policy per command for authenticated and for service_role'
);

select is(
    pg_temp.table_grants('public.readings'),
    array[
        'authenticated DELETE', 'authenticated INSERT', 'authenticated SELECT', 'authenticated UPDATE (content, kind)',
        'service_role DELETE', 'service_role INSERT', 'service_role SELECT', 'service_role UPDATE'
    ],
    'the grants on public.readings: authenticated selects, inserts and deletes, and updates only kind and content; '
    'service_role selects, inserts, updates and deletes, never truncates; anon nothing'
);

select has_index(
    'public', 'readings', 'readings_user_id_created_at_idx', array['user_id', 'created_at'],
    'readings are indexed by owner (user_id, created_at)'
);
select has_index('public', 'readings', 'readings_app_id_idx', array['app_id'], 'readings are indexed by app_id');

-- Fixtures, as the superuser.

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();
select from pg_temp.make_readings_abc();

-- anon (publishable key of app X): the grant wall refuses every command.
-- (`select from …` discards the result row so it does not clutter the TAP output.)

select * from pg_temp.anon_refused('public.readings', 'readings', $$(kind) values ('face')$$, $$kind = 'palm'$$);

-- User A of app X, on device A1.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1',
    p_session => '00000000-0000-4000-8000-0000000005a1'
);
select results_eq(
    'select id from public.readings order by created_at',
    array['00000000-0000-4000-8000-0000000a0001'::uuid, '00000000-0000-4000-8000-0000000a0002'::uuid],
    'A selects exactly its own readings'
);
select is_empty(
    'select id from public.readings where id = ''00000000-0000-4000-8000-0000000b0001''',
    'A cannot select B''s reading (same app) by id'
);
select is_empty(
    'select id from public.readings where id = ''00000000-0000-4000-8000-0000000c0001''',
    'A cannot select C''s reading (app Y) by id'
);
select results_eq(
    'insert into public.readings (kind, content) values (''coffee'', ''{"n": 5}'') returning user_id, app_id',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid)$$,
    'A inserts a reading; user_id and app_id default to A and app X'
);
select throws_ok(
    'insert into public.readings (user_id, kind) values (''00000000-0000-4000-8000-00000000000b'', ''face'')',
    '42501', null, 'A cannot insert a reading as B (WITH CHECK)'
);
select throws_ok(
    'insert into public.readings (app_id, kind) values (''00000000-0000-4000-8000-0000000000f2'', ''face'')',
    '42501', null, 'A cannot insert a reading into app Y (WITH CHECK)'
);
select throws_ok(
    'insert into public.readings (user_id, app_id, kind) values (''00000000-0000-4000-8000-00000000000c'','
    ' ''00000000-0000-4000-8000-0000000000f2'', ''face'')',
    '42501', null, 'A cannot insert a reading as C of app Y (WITH CHECK)'
);
select throws_ok(
    'insert into public.readings (id, kind) values (''00000000-0000-4000-8000-0000000b0001'', ''palm'') '
    'on conflict (id) do update set content = ''{"hijacked": true}''',
    '42501', null, 'A cannot upsert over B''s reading (INSERT … ON CONFLICT DO UPDATE)'
);
select throws_ok(
    'insert into public.readings (kind) values (''tarot'')', '23514', null, 'a reading''s kind must be known'
);
select throws_ok(
    'insert into public.readings (kind, content) values (''face'', ''[1]'')', '23514', null,
    'a reading''s content must be a JSON object'
);
select results_eq(
    'update public.readings set content = ''{"n": 10}'' '
    'where id = ''00000000-0000-4000-8000-0000000a0001'' returning id',
    array['00000000-0000-4000-8000-0000000a0001'::uuid],
    'A updates its own reading'
);
select is_empty(
    'update public.readings set content = ''{"hijacked": true}'' '
    'where id = ''00000000-0000-4000-8000-0000000b0001'' returning id',
    'A updating B''s reading (same app) changes nothing'
);
select is_empty(
    'update public.readings set content = ''{"hijacked": true}'' '
    'where id = ''00000000-0000-4000-8000-0000000c0001'' returning id',
    'A updating C''s reading (app Y) changes nothing'
);
select throws_ok(
    'update public.readings set user_id = ''00000000-0000-4000-8000-00000000000b'' '
    'where id = ''00000000-0000-4000-8000-0000000a0001''',
    '42501', null, 'A cannot give its reading to B (no update grant on user_id)'
);
select throws_ok(
    'update public.readings set app_id = ''00000000-0000-4000-8000-0000000000f2'' '
    'where id = ''00000000-0000-4000-8000-0000000a0001''',
    '42501', null, 'A cannot move its reading to app Y (no update grant on app_id)'
);
select is_empty(
    'delete from public.readings where id = ''00000000-0000-4000-8000-0000000b0001'' returning id',
    'A deleting B''s reading (same app) deletes nothing'
);
select is_empty(
    'delete from public.readings where id = ''00000000-0000-4000-8000-0000000c0001'' returning id',
    'A deleting C''s reading (app Y) deletes nothing'
);
select results_eq(
    'delete from public.readings where id = ''00000000-0000-4000-8000-0000000a0002'' returning id',
    array['00000000-0000-4000-8000-0000000a0002'::uuid],
    'A deletes its own reading'
);
select throws_ok('truncate public.readings', '42501', null, 'A cannot truncate readings');

-- A's user id under app Y's claim (a token the server never issues): sees nothing, and the composite foreign key
-- refuses a reading for a user that is not in the claimed app.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000f2');
select is_empty('select id from public.readings', 'A''s sub under app Y''s claim selects nothing');
select is_empty(
    'update public.readings set content = ''{}'' returning id', 'A''s sub under app Y''s claim updates nothing'
);
select throws_ok(
    'insert into public.readings (kind) values (''face'')', '23503', null,
    'A''s sub under app Y''s claim cannot insert (A is not a user of app Y)'
);

-- authenticated without claims: nothing.

select from set_config('request.jwt.claims', '', true);
select is_empty('select id from public.readings', 'authenticated without claims selects nothing');
select throws_ok(
    'insert into public.readings (kind) values (''face'')', '42501', null,
    'authenticated without claims cannot insert'
);
select is_empty('delete from public.readings returning id', 'authenticated without claims deletes nothing');
reset role;

-- As the superuser: A's attempts left B's and C's readings unchanged.

select results_eq(
    'select id, user_id, app_id, kind, content from public.readings '
    'where user_id <> ''00000000-0000-4000-8000-00000000000a'' order by id',
    $$values ('00000000-0000-4000-8000-0000000b0001'::uuid, '00000000-0000-4000-8000-00000000000b'::uuid,
              '00000000-0000-4000-8000-0000000000f1'::uuid, 'coffee', '{"n": 3}'::jsonb),
             ('00000000-0000-4000-8000-0000000c0001'::uuid, '00000000-0000-4000-8000-00000000000c'::uuid,
              '00000000-0000-4000-8000-0000000000f2'::uuid, 'face', '{"n": 4}'::jsonb)$$,
    'after A''s attempts B''s and C''s readings are unchanged'
);
select results_eq(
    'select kind, content from public.readings '
    'where user_id = ''00000000-0000-4000-8000-00000000000a'' order by created_at',
    $$values ('face', '{"n": 10}'::jsonb), ('coffee', '{"n": 5}'::jsonb)$$,
    'A''s own changes took effect'
);

-- User B of app X, on device B1.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b', p_device => '00000000-0000-4000-8000-0000000000b1');
select results_eq(
    'select id from public.readings',
    array['00000000-0000-4000-8000-0000000b0001'::uuid],
    'B selects exactly its own reading'
);
select is_empty(
    'update public.readings set kind = ''palm'' where id = ''00000000-0000-4000-8000-0000000a0001'' returning id',
    'B updating A''s reading changes nothing'
);
select is_empty(
    'delete from public.readings where id = ''00000000-0000-4000-8000-0000000a0001'' returning id',
    'B deleting A''s reading deletes nothing'
);
select throws_ok(
    'insert into public.readings (user_id, kind) values (''00000000-0000-4000-8000-00000000000a'', ''face'')',
    '42501', null, 'B cannot insert a reading as A'
);
select results_eq(
    'update public.readings set kind = ''palm'' where id = ''00000000-0000-4000-8000-0000000b0001'' returning kind',
    array['palm'],
    'B updates its own reading'
);
reset role;

-- User C of app Y.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2',
    p_device => '00000000-0000-4000-8000-0000000000c1'
);
select results_eq(
    'select id from public.readings',
    array['00000000-0000-4000-8000-0000000c0001'::uuid],
    'C selects exactly its own reading'
);
select is_empty(
    'update public.readings set content = ''{}'' where user_id <> ''00000000-0000-4000-8000-00000000000c'' '
    'returning id',
    'C updating app X''s readings changes nothing'
);
reset role;

-- The backend of app X (service_role, secret key of app X).

select from pg_temp.as_service_role();
select results_eq(
    'select user_id, kind from public.readings order by created_at',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, 'face'),
             ('00000000-0000-4000-8000-00000000000b'::uuid, 'palm'),
             ('00000000-0000-4000-8000-00000000000a'::uuid, 'coffee')$$,
    'service role X selects every reading of app X'
);
select is_empty(
    'select id from public.readings where app_id = ''00000000-0000-4000-8000-0000000000f2'' '
    'or id = ''00000000-0000-4000-8000-0000000c0001''',
    'service role X selects none of app Y''s readings'
);
select results_eq(
    'insert into public.readings (user_id, kind) values (''00000000-0000-4000-8000-00000000000b'', ''face'') '
    'returning user_id, app_id',
    $$values ('00000000-0000-4000-8000-00000000000b'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid)$$,
    'service role X inserts a reading for B; app_id defaults to app X'
);
select throws_ok(
    'insert into public.readings (user_id, app_id, kind) values (''00000000-0000-4000-8000-00000000000c'','
    ' ''00000000-0000-4000-8000-0000000000f2'', ''face'')',
    '42501', null, 'service role X cannot insert a reading into app Y (WITH CHECK)'
);
select throws_ok(
    'insert into public.readings (user_id, kind) values (''00000000-0000-4000-8000-00000000000c'', ''face'')',
    '23503', null, 'service role X cannot insert a reading for C, a user of app Y (foreign key)'
);
select results_eq(
    'update public.readings set content = ''{"n": 30}'' '
    'where id = ''00000000-0000-4000-8000-0000000b0001'' returning id',
    array['00000000-0000-4000-8000-0000000b0001'::uuid],
    'service role X updates a reading of app X'
);
select is_empty(
    'update public.readings set content = ''{"hijacked": true}'' '
    'where id = ''00000000-0000-4000-8000-0000000c0001'' returning id',
    'service role X updating app Y''s reading changes nothing'
);
select throws_ok(
    'update public.readings set app_id = ''00000000-0000-4000-8000-0000000000f2'' '
    'where id = ''00000000-0000-4000-8000-0000000b0001''',
    '42501', null, 'service role X cannot move a reading to app Y (WITH CHECK)'
);
select is_empty(
    'delete from public.readings where id = ''00000000-0000-4000-8000-0000000c0001'' returning id',
    'service role X deleting app Y''s reading deletes nothing'
);
select results_eq(
    'delete from public.readings where user_id = ''00000000-0000-4000-8000-00000000000b'' and kind = ''face'' '
    'returning kind',
    array['face'],
    'service role X deletes a reading of app X'
);
select throws_ok('truncate public.readings', '42501', null, 'service role X cannot truncate readings');
reset role;

-- The backend of app Y.

select from pg_temp.as_service_role('00000000-0000-4000-8000-0000000000f2');
select results_eq(
    'select id from public.readings',
    array['00000000-0000-4000-8000-0000000c0001'::uuid],
    'service role Y selects exactly app Y''s reading'
);
select is_empty(
    'update public.readings set content = ''{"hijacked": true}'' '
    'where app_id = ''00000000-0000-4000-8000-0000000000f1'' returning id',
    'service role Y updating app X''s readings changes nothing'
);
select is_empty(
    'delete from public.readings where app_id = ''00000000-0000-4000-8000-0000000000f1'' returning id',
    'service role Y deleting app X''s readings deletes nothing'
);
select throws_ok(
    'insert into public.readings (user_id, app_id, kind) values (''00000000-0000-4000-8000-00000000000a'','
    ' ''00000000-0000-4000-8000-0000000000f1'', ''face'')',
    '42501', null, 'service role Y cannot insert a reading into app X'
);

-- service_role without an app claim: nothing.

select from pg_temp.as_service_role(null);
select is_empty('select id from public.readings', 'service role without an app claim selects nothing');
select is_empty(
    'update public.readings set content = ''{}'' returning id', 'service role without an app claim updates nothing'
);
reset role;

-- As the superuser: the end state holds exactly the allowed changes.

select results_eq(
    'select user_id, app_id, kind, content from public.readings order by user_id, created_at',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid,
              'face', '{"n": 10}'::jsonb),
             ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid,
              'coffee', '{"n": 5}'::jsonb),
             ('00000000-0000-4000-8000-00000000000b'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid,
              'palm', '{"n": 30}'::jsonb),
             ('00000000-0000-4000-8000-00000000000c'::uuid, '00000000-0000-4000-8000-0000000000f2'::uuid,
              'face', '{"n": 4}'::jsonb)$$,
    'the readings hold exactly the allowed changes'
);

delete from public.users where id = '00000000-0000-4000-8000-00000000000c';
select is_empty(
    'select id from public.readings where user_id = ''00000000-0000-4000-8000-00000000000c''',
    'deleting a user deletes its readings'
);

select * from finish();
rollback;
