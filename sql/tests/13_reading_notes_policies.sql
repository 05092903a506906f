-- reading_notes policies (example app): the grants, foreign keys and policy set of public.reading_notes, then the
-- CRUD x role x tenant matrix: anon gets 42501; users A and B of app X and user C of app Y read and change only their
-- own notes and attach a note only to one of their own readings; the backend of app X (service_role) only app X's
-- notes, each on a reading of the note's user; deleting a reading deletes its notes. Fixtures: app X with users A
-- (devices A1, A2) and B (device B1), app Y with user C (device C1); readings RA1, RA2 (A), RB1 (B), RC1 (C)
-- (lib/readings.sql); notes NA1 …0000000a00a1 on RA1 (A), NB1 …0000000b00b1 on RB1 (B), NC1 …0000000c00c1 on RC1 (C).
-- Needs sql/examples applied.
begin;
select plan(48);

\ir lib/fixtures.sql
\ir lib/readings.sql
\ir lib/roles.sql
\ir lib/catalog.sql

-- Structure.

select is(
    pg_temp.row_security('public.reading_notes'), 'forced',
    'public.reading_notes has row-level security enabled and forced'
);
select is(
    pg_temp.policy_commands('public.reading_notes'),
    array[
        'reading_notes_delete_app delete to service_role', 'reading_notes_delete_own delete to authenticated',
        'reading_notes_insert_app insert to service_role', 'reading_notes_insert_own insert to authenticated',
        'reading_notes_select_app select to service_role', 'reading_notes_select_own select to authenticated',
        'reading_notes_update_app update to service_role', 'reading_notes_update_own update to authenticated'
    ],
    'public.reading_notes has one policy per command for authenticated and for service_role'
);

select is(
    pg_temp.table_grants('public.reading_notes'),
    array[
        'authenticated DELETE', 'authenticated INSERT', 'authenticated SELECT', 'authenticated UPDATE (body)',
        'service_role DELETE', 'service_role INSERT', 'service_role SELECT', 'service_role UPDATE'
    ],
    'the grants on public.reading_notes: authenticated selects, inserts and deletes, and updates only the body; '
    'service_role selects, inserts, updates and deletes, never truncates; anon nothing'
);

select is(
    pg_temp.fk_on_delete(array['public.reading_notes'::regclass]),
    array['reading_notes_reading_id_fkey on delete cascade', 'reading_notes_user_id_fkey on delete cascade'],
    'a note goes with its reading and with its user'
);
select fk_ok('public', 'reading_notes', 'reading_id', 'public', 'readings', 'id');
select has_index('public', 'reading_notes', 'reading_notes_reading_id_idx', array['reading_id'], 'notes are indexed by reading');

-- Fixtures, as the superuser.

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();
select from pg_temp.make_readings_abc();
-- Each note in its reading's app, by its reading's user.
insert into public.reading_notes (id, reading_id, app_id, user_id, body, created_at)
select n.id, r.id, r.app_id, r.user_id, n.body, n.created_at
from (values
    ('00000000-0000-4000-8000-0000000a00a1'::uuid, '00000000-0000-4000-8000-0000000a0001'::uuid, 'note a1', '2024-02-01'::timestamptz),
    ('00000000-0000-4000-8000-0000000b00b1', '00000000-0000-4000-8000-0000000b0001', 'note b1', '2024-02-02'),
    ('00000000-0000-4000-8000-0000000c00c1', '00000000-0000-4000-8000-0000000c0001', 'note c1', '2024-02-03')
) as n (id, reading_id, body, created_at)
join public.readings as r on r.id = n.reading_id;

-- anon: the grant wall refuses every command.

select * from pg_temp.anon_refused(
    'public.reading_notes', 'notes', $$(reading_id, body) values ('00000000-0000-4000-8000-0000000a0001', 'x')$$,
    $$body = 'x'$$
);

-- User A of app X, on device A1.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1',
    p_session => '00000000-0000-4000-8000-0000000005a1'
);
select results_eq(
    'select id from public.reading_notes',
    array['00000000-0000-4000-8000-0000000a00a1'::uuid],
    'A selects exactly its own note'
);
select is_empty(
    'select id from public.reading_notes where id in (''00000000-0000-4000-8000-0000000b00b1'','
    ' ''00000000-0000-4000-8000-0000000c00c1'')',
    'A cannot select B''s note (same app) or C''s (app Y) by id'
);
select results_eq(
    'select r.id, n.body from public.readings as r join public.reading_notes as n on n.reading_id = r.id',
    $$values ('00000000-0000-4000-8000-0000000a0001'::uuid, 'note a1')$$,
    'A joins its readings to their notes (what an embedding reads) and sees only its own'
);
select results_eq(
    'insert into public.reading_notes (reading_id, body) values (''00000000-0000-4000-8000-0000000a0002'', ''second'') '
    'returning user_id, app_id',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid)$$,
    'A adds a note to its own reading; user_id and app_id default to A and app X'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, body) values (''00000000-0000-4000-8000-0000000b0001'', ''mine now'')',
    '42501', null, 'A cannot attach a note to B''s reading (same app) (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, body) values (''00000000-0000-4000-8000-0000000c0001'', ''mine now'')',
    '42501', null, 'A cannot attach a note to C''s reading (app Y) (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, user_id, body) values (''00000000-0000-4000-8000-0000000b0001'','
    ' ''00000000-0000-4000-8000-00000000000b'', ''as B'')',
    '42501', null, 'A cannot add a note as B, even on B''s reading (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, app_id, body) values (''00000000-0000-4000-8000-0000000a0001'','
    ' ''00000000-0000-4000-8000-0000000000f2'', ''elsewhere'')',
    '42501', null, 'A cannot add a note in app Y (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, body) values (gen_random_uuid(), ''nowhere'')',
    '42501', null, 'A cannot add a note to a reading that does not exist (WITH CHECK, before the foreign key)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, body) values (''00000000-0000-4000-8000-0000000a0001'','
    ' repeat(''x'', 1001))',
    '23514', null, 'a note''s body is at most 1000 characters'
);
select results_eq(
    'update public.reading_notes set body = ''edited'' where id = ''00000000-0000-4000-8000-0000000a00a1'' '
    'returning body',
    array['edited'],
    'A edits its own note'
);
select is_empty(
    'update public.reading_notes set body = ''hijacked'' where id = ''00000000-0000-4000-8000-0000000b00b1'' '
    'returning id',
    'A editing B''s note changes nothing'
);
select throws_ok(
    'update public.reading_notes set reading_id = ''00000000-0000-4000-8000-0000000b0001'' '
    'where id = ''00000000-0000-4000-8000-0000000a00a1''',
    '42501', null, 'A cannot move its note to B''s reading (no update grant on reading_id)'
);
select throws_ok(
    'update public.reading_notes set user_id = ''00000000-0000-4000-8000-00000000000b'' '
    'where id = ''00000000-0000-4000-8000-0000000a00a1''',
    '42501', null, 'A cannot give its note to B (no update grant on user_id)'
);
select is_empty(
    'delete from public.reading_notes where id in (''00000000-0000-4000-8000-0000000b00b1'','
    ' ''00000000-0000-4000-8000-0000000c00c1'') returning id',
    'A deleting B''s and C''s notes deletes nothing'
);
select throws_ok('truncate public.reading_notes', '42501', null, 'A cannot truncate notes');
reset role;

-- User B of app X.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b', p_device => '00000000-0000-4000-8000-0000000000b1');
select results_eq(
    'select id from public.reading_notes',
    array['00000000-0000-4000-8000-0000000b00b1'::uuid],
    'B selects exactly its own note'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, body) values (''00000000-0000-4000-8000-0000000a0001'', ''on A'')',
    '42501', null, 'B cannot attach a note to A''s reading'
);
select is_empty(
    'delete from public.reading_notes where id = ''00000000-0000-4000-8000-0000000a00a1'' returning id',
    'B deleting A''s note deletes nothing'
);
select results_eq(
    'delete from public.reading_notes where id = ''00000000-0000-4000-8000-0000000b00b1'' returning id',
    array['00000000-0000-4000-8000-0000000b00b1'::uuid],
    'B deletes its own note'
);
reset role;

-- User C of app Y.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2',
    p_device => '00000000-0000-4000-8000-0000000000c1'
);
select results_eq(
    'select id from public.reading_notes',
    array['00000000-0000-4000-8000-0000000c00c1'::uuid],
    'C selects exactly its own note'
);
reset role;

-- A's user id under app Y's claim (a token the server never issues): nothing.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-0000000000f2');
select is_empty('select id from public.reading_notes', 'A''s sub under app Y''s claim selects nothing');
select throws_ok(
    'insert into public.reading_notes (reading_id, body) values (''00000000-0000-4000-8000-0000000a0001'', ''x'')',
    '42501', null, 'A''s sub under app Y''s claim cannot attach a note to A''s reading of app X'
);
reset role;

-- The backend of app X (service_role).

select from pg_temp.as_service_role();
select results_eq(
    'select user_id, body from public.reading_notes order by created_at',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, 'edited'),
             ('00000000-0000-4000-8000-00000000000a'::uuid, 'second')$$,
    'service role X selects every note of app X (B deleted its own)'
);
select is_empty(
    'select id from public.reading_notes where app_id = ''00000000-0000-4000-8000-0000000000f2''',
    'service role X selects none of app Y''s notes'
);
select results_eq(
    'insert into public.reading_notes (reading_id, user_id, body) values (''00000000-0000-4000-8000-0000000b0001'','
    ' ''00000000-0000-4000-8000-00000000000b'', ''from the backend'') returning app_id',
    array['00000000-0000-4000-8000-0000000000f1'::uuid],
    'service role X adds a note for B on B''s reading; app_id defaults to app X'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, user_id, body) values (''00000000-0000-4000-8000-0000000a0001'','
    ' ''00000000-0000-4000-8000-00000000000b'', ''B on A'')',
    '42501', null, 'service role X cannot attach B''s note to A''s reading (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, user_id, app_id, body) values ('
    '''00000000-0000-4000-8000-0000000c0001'', ''00000000-0000-4000-8000-00000000000c'','
    ' ''00000000-0000-4000-8000-0000000000f2'', ''into Y'')',
    '42501', null, 'service role X cannot add a note in app Y (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_notes (reading_id, user_id, body) values (''00000000-0000-4000-8000-0000000c0001'','
    ' ''00000000-0000-4000-8000-00000000000a'', ''A on C'')',
    '42501', null, 'service role X cannot attach a note to app Y''s reading (WITH CHECK)'
);
select throws_ok(
    'update public.reading_notes set reading_id = ''00000000-0000-4000-8000-0000000b0001'' '
    'where id = ''00000000-0000-4000-8000-0000000a00a1''',
    '42501', null, 'service role X cannot move A''s note to B''s reading (WITH CHECK)'
);
select is_empty(
    'update public.reading_notes set body = ''hijacked'' where id = ''00000000-0000-4000-8000-0000000c00c1'' '
    'returning id',
    'service role X updating app Y''s note changes nothing'
);
select is_empty(
    'delete from public.reading_notes where id = ''00000000-0000-4000-8000-0000000c00c1'' returning id',
    'service role X deleting app Y''s note deletes nothing'
);
select throws_ok('truncate public.reading_notes', '42501', null, 'service role X cannot truncate notes');
reset role;

-- service_role without an app claim: nothing.

select from pg_temp.as_service_role(null);
select is_empty('select id from public.reading_notes', 'service role without an app claim selects nothing');
reset role;

-- As the superuser: the end state, and the cascades.

select results_eq(
    'select user_id, reading_id, body from public.reading_notes order by created_at, body',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000a0001'::uuid, 'edited'),
             ('00000000-0000-4000-8000-00000000000c'::uuid, '00000000-0000-4000-8000-0000000c0001'::uuid, 'note c1'),
             ('00000000-0000-4000-8000-00000000000b'::uuid, '00000000-0000-4000-8000-0000000b0001'::uuid,
              'from the backend'),
             ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000a0002'::uuid, 'second')$$,
    'the notes hold exactly the allowed changes'
);

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select results_eq(
    'delete from public.readings where id = ''00000000-0000-4000-8000-0000000a0001'' returning id',
    array['00000000-0000-4000-8000-0000000a0001'::uuid],
    'A deletes its reading RA1'
);
reset role;
select is_empty(
    'select id from public.reading_notes where reading_id = ''00000000-0000-4000-8000-0000000a0001''',
    'deleting a reading deletes its notes'
);

delete from public.users where id = '00000000-0000-4000-8000-00000000000c';
select is_empty(
    'select id from public.reading_notes where user_id = ''00000000-0000-4000-8000-00000000000c''',
    'deleting a user deletes its notes'
);

select * from finish();
rollback;
