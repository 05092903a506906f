-- tags and reading_tags policies (example app, the many-to-many), and the example's computed field and relationship:
-- the grants, keys and policy sets, then the CRUD x role x tenant matrix: anon gets 42501; users A and B of app X and
-- user C of app Y read and change only their own tags and links, and link only their own reading to their own tag; the
-- backend of app X (service_role) only app X's, each link between a reading and a tag of the link's user; deleting a
-- reading, a tag or a user deletes its links. Fixtures: lib/readings.sql's readings RA1, RA2 (A), RB1 (B), RC1 (C);
-- tags TA …0000000a00f1 (A, "love"), TB …0000000b00f1 (B, "love"), TC …0000000c00f1 (C, "love"); links RA1–TA, RB1–TB,
-- RC1–TC.
-- Needs sql/examples applied.
begin;
select plan(44);

\ir lib/fixtures.sql
\ir lib/readings.sql
\ir lib/roles.sql
\ir lib/catalog.sql

-- Structure.

select is(pg_temp.row_security('public.tags'), 'forced', 'public.tags has row-level security enabled and forced');
select is(
    pg_temp.row_security('public.reading_tags'), 'forced', 'public.reading_tags has row-level security enabled and forced'
);
select is(
    pg_temp.policy_commands('public.tags'),
    array['tags_all_app all to service_role', 'tags_all_own all to authenticated'],
    'public.tags has one policy for every command per role: its owner columns decide reads and writes alike'
);
select is(
    pg_temp.policy_commands('public.reading_tags'),
    array[
        'reading_tags_delete_app delete to service_role', 'reading_tags_delete_own delete to authenticated',
        'reading_tags_insert_app insert to service_role', 'reading_tags_insert_own insert to authenticated',
        'reading_tags_select_app select to service_role', 'reading_tags_select_own select to authenticated'
    ],
    'public.reading_tags has select, insert and delete policies for authenticated and for service_role, no update'
);
select is(
    pg_temp.table_grants('public.tags'),
    array[
        'authenticated DELETE', 'authenticated INSERT', 'authenticated SELECT', 'authenticated UPDATE (name)',
        'service_role DELETE', 'service_role INSERT', 'service_role SELECT', 'service_role UPDATE'
    ],
    'the grants on public.tags: authenticated renames only; service_role never truncates; anon nothing'
);
select is(
    pg_temp.table_grants('public.reading_tags'),
    array[
        'authenticated DELETE', 'authenticated INSERT', 'authenticated SELECT',
        'service_role DELETE', 'service_role INSERT', 'service_role SELECT'
    ],
    'the grants on public.reading_tags: a link is added or removed, never updated; anon nothing'
);
select is(
    pg_temp.fk_on_delete(array['public.tags'::regclass, 'public.reading_tags'::regclass]),
    array[
        'reading_tags_reading_id_fkey on delete cascade', 'reading_tags_tag_id_fkey on delete cascade',
        'reading_tags_user_id_fkey on delete cascade', 'tags_user_id_fkey on delete cascade'
    ],
    'a link goes with its reading, its tag and its user; a tag with its user'
);
select col_is_pk('public', 'reading_tags', array['reading_id', 'tag_id'], 'both foreign keys lie in the junction''s primary key');
select is(
    pg_temp.executors('public.tag_count(public.readings)'), 'authenticated,service_role',
    'the computed field tag_count(readings) is executable by authenticated and service_role only (not PUBLIC, not anon)'
);
select ok(
    (select not p.prosecdef and p.proconfig = array['search_path=""'] from pg_catalog.pg_proc as p
     where p.oid = 'public.tag_count(public.readings)'::regprocedure),
    'tag_count is SECURITY INVOKER (it counts what the caller may see) and pins an empty search_path'
);
select is(
    (select pg_temp.executors(p.oid) || ' ' || (not p.prosecdef)::text || ' ' || p.prorows::text
     from pg_catalog.pg_proc as p where p.oid = 'public.latest_reading(public.users)'::regprocedure),
    'authenticated,service_role true 1',
    'the computed relationship latest_reading(users) is INVOKER, ROWS 1 (to-one), for authenticated and service_role only'
);

-- Fixtures, as the superuser.

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();
select from pg_temp.make_readings_abc();
insert into public.tags (id, app_id, user_id, name)
select t.id, r.app_id, r.user_id, 'love'
from (values
    ('00000000-0000-4000-8000-0000000a00f1'::uuid, '00000000-0000-4000-8000-0000000a0001'::uuid),
    ('00000000-0000-4000-8000-0000000b00f1', '00000000-0000-4000-8000-0000000b0001'),
    ('00000000-0000-4000-8000-0000000c00f1', '00000000-0000-4000-8000-0000000c0001')
) as t (id, reading_id)
join public.readings as r on r.id = t.reading_id;
insert into public.reading_tags (reading_id, tag_id, app_id, user_id)
select r.id, t.id, r.app_id, r.user_id
from public.readings as r join public.tags as t on t.user_id = r.user_id
where r.id in ('00000000-0000-4000-8000-0000000a0001', '00000000-0000-4000-8000-0000000b0001', '00000000-0000-4000-8000-0000000c0001');

-- anon: the grant wall refuses every command.

select * from pg_temp.anon_refused('public.tags', 'tags', $$(name) values ('x')$$, $$name = 'x'$$);

-- User A of app X.

select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a', p_device => '00000000-0000-4000-8000-0000000000a1');
select is(
    (select public.tag_count(r) from public.readings as r where r.id = '00000000-0000-4000-8000-0000000a0001'), 1,
    'tag_count, the computed field, counts A''s one link on RA1'
);
select results_eq(
    'select t.name, l.reading_id from public.tags as t join public.reading_tags as l on l.tag_id = t.id',
    $$values ('love', '00000000-0000-4000-8000-0000000a0001'::uuid)$$,
    'A joins its tags to its links (what a many-to-many embedding reads) and sees only its own'
);
select results_eq(
    'insert into public.reading_tags (reading_id, tag_id) values (''00000000-0000-4000-8000-0000000a0002'','
    ' ''00000000-0000-4000-8000-0000000a00f1'') returning user_id, app_id',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid, '00000000-0000-4000-8000-0000000000f1'::uuid)$$,
    'A tags its own reading RA2 with its own tag; user_id and app_id default to A and app X'
);
select throws_ok(
    'insert into public.reading_tags (reading_id, tag_id) values (''00000000-0000-4000-8000-0000000a0002'','
    ' ''00000000-0000-4000-8000-0000000b00f1'')',
    '42501', null, 'A cannot put B''s tag on its reading (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_tags (reading_id, tag_id) values (''00000000-0000-4000-8000-0000000b0001'','
    ' ''00000000-0000-4000-8000-0000000a00f1'')',
    '42501', null, 'A cannot put its tag on B''s reading (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_tags (reading_id, tag_id, user_id) values (''00000000-0000-4000-8000-0000000b0001'','
    ' ''00000000-0000-4000-8000-0000000b00f1'', ''00000000-0000-4000-8000-00000000000b'')',
    '42501', null, 'A cannot link B''s reading and tag as B (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_tags (reading_id, tag_id) values (''00000000-0000-4000-8000-0000000c0001'','
    ' ''00000000-0000-4000-8000-0000000c00f1'')',
    '42501', null, 'A cannot link C''s rows of app Y (WITH CHECK)'
);
select throws_ok(
    'insert into public.tags (name, user_id) values (''mine'', ''00000000-0000-4000-8000-00000000000b'')',
    '42501', null, 'A cannot add a tag as B (WITH CHECK)'
);
select throws_ok(
    'insert into public.tags (name) values (''love'')', '23505', null, 'a user''s tag names are unique'
);
select throws_ok('insert into public.tags (name) values ('''')', '23514', null, 'a tag has a name');
select throws_ok(
    'update public.reading_tags set tag_id = ''00000000-0000-4000-8000-0000000b00f1''',
    '42501', null, 'A cannot change a link (no update grant)'
);
select throws_ok(
    'update public.tags set user_id = ''00000000-0000-4000-8000-00000000000b''',
    '42501', null, 'A cannot give its tag to B (no update grant on user_id)'
);
select is_empty(
    'update public.tags set name = ''hijacked'' where id = ''00000000-0000-4000-8000-0000000b00f1'' returning id',
    'A renaming B''s tag changes nothing'
);
select is_empty(
    'delete from public.reading_tags where tag_id in (''00000000-0000-4000-8000-0000000b00f1'','
    ' ''00000000-0000-4000-8000-0000000c00f1'') returning tag_id',
    'A removing B''s and C''s links removes nothing'
);
select throws_ok('truncate public.reading_tags', '42501', null, 'A cannot truncate links');
reset role;

-- User C of app Y.

select from pg_temp.as_user(
    '00000000-0000-4000-8000-00000000000c', '00000000-0000-4000-8000-0000000000f2',
    p_device => '00000000-0000-4000-8000-0000000000c1'
);
select results_eq(
    'select tag_id from public.reading_tags', array['00000000-0000-4000-8000-0000000c00f1'::uuid],
    'C selects exactly its own link'
);
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000b', p_device => '00000000-0000-4000-8000-0000000000b1');
select is(
    public.tag_count(row(
        '00000000-0000-4000-8000-0000000a0001', '00000000-0000-4000-8000-0000000000f1', '00000000-0000-4000-8000-00000000000a',
        'face', '{}', now())::public.readings),
    0, 'tag_count counts only links the caller may see: B, handed A''s reading row, counts none of A''s links'
);
reset role;

-- The backend of app X (service_role).

select from pg_temp.as_service_role();
select results_eq(
    'select user_id from public.reading_tags order by user_id',
    $$values ('00000000-0000-4000-8000-00000000000a'::uuid), ('00000000-0000-4000-8000-00000000000a'::uuid),
             ('00000000-0000-4000-8000-00000000000b'::uuid)$$,
    'service role X selects every link of app X and none of app Y'
);
select throws_ok(
    'insert into public.reading_tags (reading_id, tag_id, user_id) values (''00000000-0000-4000-8000-0000000a0002'','
    ' ''00000000-0000-4000-8000-0000000b00f1'', ''00000000-0000-4000-8000-00000000000b'')',
    '42501', null, 'service role X cannot put B''s tag on A''s reading (WITH CHECK)'
);
select throws_ok(
    'insert into public.reading_tags (reading_id, tag_id, user_id, app_id) values ('
    '''00000000-0000-4000-8000-0000000c0001'', ''00000000-0000-4000-8000-0000000c00f1'','
    ' ''00000000-0000-4000-8000-00000000000c'', ''00000000-0000-4000-8000-0000000000f2'')',
    '42501', null, 'service role X cannot link in app Y (WITH CHECK)'
);
select lives_ok(
    'insert into public.tags (user_id, name) values (''00000000-0000-4000-8000-00000000000b'', ''work'')',
    'service role X adds a tag for B'
);
select throws_ok(
    'insert into public.tags (user_id, app_id, name) values (''00000000-0000-4000-8000-00000000000c'','
    ' ''00000000-0000-4000-8000-0000000000f2'', ''work'')',
    '42501', null, 'service role X cannot add a tag in app Y (WITH CHECK)'
);
select is_empty(
    'update public.tags set name = ''hijacked'' where id = ''00000000-0000-4000-8000-0000000c00f1'' returning id',
    'service role X renaming app Y''s tag changes nothing'
);
select is_empty(
    'delete from public.reading_tags where tag_id = ''00000000-0000-4000-8000-0000000c00f1'' returning tag_id',
    'service role X removing app Y''s link removes nothing'
);
select throws_ok('truncate public.tags', '42501', null, 'service role X cannot truncate tags');
reset role;

-- service_role without an app claim: nothing.

select from pg_temp.as_service_role(null);
select is_empty('select tag_id from public.reading_tags', 'service role without an app claim selects nothing');
reset role;

-- As the superuser: the cascades.

delete from public.readings where id = '00000000-0000-4000-8000-0000000a0002';
select is_empty(
    'select 1 from public.reading_tags where reading_id = ''00000000-0000-4000-8000-0000000a0002''',
    'deleting a reading deletes its links'
);
delete from public.tags where id = '00000000-0000-4000-8000-0000000a00f1';
select is_empty(
    'select 1 from public.reading_tags where tag_id = ''00000000-0000-4000-8000-0000000a00f1''',
    'deleting a tag deletes its links'
);
delete from public.users where id = '00000000-0000-4000-8000-00000000000c';
select is_empty(
    'select 1 from public.tags where user_id = ''00000000-0000-4000-8000-00000000000c'' union all '
    'select 1 from public.reading_tags where user_id = ''00000000-0000-4000-8000-00000000000c''',
    'deleting a user deletes its tags and links'
);

select * from finish();
rollback;
