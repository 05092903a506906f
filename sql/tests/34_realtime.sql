-- realtime: the supabase_realtime publication, capture triggers on exactly the published tables
-- (guestpass_server.realtime_sync), what the capture trigger writes (guestpass.realtime_changes), the snapshot cursor
-- of guestpass_server.realtime_poll, the prune, broadcast and presence, and who may touch any of it.
-- The cursor's promises need other transactions that commit, abort or stay open while this one polls, so part 1 runs
-- them on two more sessions through dblink (PostgreSQL's contrib, created in this transaction and rolled back with
-- it; nothing in the product uses it): they create, publish and finally drop their own table public.rt_probe, the
-- only thing they commit besides its change-log rows and two presence rows. Part 1 comes first, before this
-- transaction takes realtime_sync's advisory lock or changes the publication (the other sessions need both).
-- Everything else runs in this transaction, rolled back at the end. Fixtures: app X, user A (lib/fixtures.sql).
begin;
select plan(126);

\ir lib/fixtures.sql
\ir lib/roles.sql
\ir lib/catalog.sql
\ir lib/plans.sql

create extension if not exists dblink;

-- ---------------------------------------------------------------- part 1: the cursor across sessions (dblink)

-- The other sessions reach this database as this superuser, over TCP when this session came that way (pg_prove -h),
-- else through the first unix socket directory.
select
from unnest(array['rt_a', 'rt_b']) as c (name)
cross join lateral dblink_connect(c.name, format(
    'dbname=%s user=%s port=%s host=%s', current_database(), current_user, current_setting('port'),
    coalesce(host(inet_server_addr()), split_part(current_setting('unix_socket_directories'), ',', 1))
));

create temporary table rt_backend as
select c.name, t.pid
from unnest(array['rt_a', 'rt_b']) as c (name)
cross join lateral dblink(c.name, 'select pg_backend_pid()') as t (pid int);

select from dblink_exec('rt_a', 'drop table if exists public.rt_probe');
select from dblink_exec('rt_a', 'create table public.rt_probe (id int primary key, app_id uuid, v text)');
select from dblink_exec('rt_a', 'alter table public.rt_probe enable row level security, force row level security');
select from dblink_exec('rt_a', 'alter publication supabase_realtime add table public.rt_probe');
select ok(
    exists (select 1 from dblink('rt_a', 'select schema_name, table_name from guestpass_server.realtime_sync()')
                          as t (schema_name text, table_name text)
            where t.schema_name = 'public' and t.table_name = 'rt_probe'),
    'another session publishes public.rt_probe and realtime_sync captures it'
);

-- The poll chain: each poll passes the snapshot the previous one returned; every row it returned is kept in rt_polls.
-- pg_temp.rt_next() polls once and answers the rt_probe changes it got, as 'KIND:id' in seq order ('' for none).
create temporary table rt_polls (
    n int not null, snapshot text, seq bigint, kind text, table_name text, topic text, record text, old_record text,
    commit_timestamp text
);
create function pg_temp.rt_next()
returns text
language plpgsql
as $$
declare
    v_n int;
    v_previous text;
begin
    select p.n, p.snapshot into v_n, v_previous from rt_polls as p order by p.n desc limit 1;
    insert into rt_polls
    select coalesce(v_n, 0) + 1, p.snapshot, p.seq, p.kind, p.table_name, p.topic, p.record, p.old_record,
           p.commit_timestamp
    from guestpass_server.realtime_poll(v_previous::pg_snapshot) as p;
    return coalesce((
        select string_agg(p.kind || ':' || (coalesce(p.record, p.old_record)::jsonb ->> 'id'), ' ' order by p.seq)
        from rt_polls as p
        where p.n = coalesce(v_n, 0) + 1 and p.table_name = 'rt_probe'
    ), '');
end
$$;

-- Waits (up to 5 s) until the backend p_pid waits for a lock.
create function pg_temp.rt_blocked(p_pid int)
returns boolean
language plpgsql
as $$
begin
    for i in 1 .. 500 loop
        if cardinality(pg_blocking_pids(p_pid)) > 0 then
            return true;
        end if;
        perform pg_sleep(0.01);
    end loop;
    return false;
end
$$;

select is(pg_temp.rt_next(), '', 'the first poll (previous snapshot null) returns no change');
select is(
    (select count(*)::int from rt_polls where n = 1 and seq is null and snapshot is not null and kind is null),
    1, 'only one row, carrying the snapshot'
);

-- A long transaction (rt_a) writes first; a short one (rt_b) writes and commits after it.
select from dblink_exec('rt_a', 'begin');
select from dblink_exec('rt_a', 'insert into public.rt_probe (id, v) values (1, ''long'')');
select from dblink_exec('rt_b', 'insert into public.rt_probe (id, v) values (2, ''short'')');
select is(pg_temp.rt_next(), 'INSERT:2', 'a poll returns the committed row, not the open transaction''s earlier one');
select is(pg_temp.rt_next(), '', 'the next poll returns nothing new');
select from dblink_exec('rt_a', 'commit');
select is(pg_temp.rt_next(), 'INSERT:1', 'the long transaction''s row comes in the first poll after its commit');
select ok(
    (select seq from rt_polls where kind = 'INSERT' and record::jsonb ->> 'id' = '1')
    < (select seq from rt_polls where kind = 'INSERT' and record::jsonb ->> 'id' = '2'),
    'though its seq is lower than the row delivered before it'
);
select is(pg_temp.rt_next(), '', 'and it does not come again');

-- Aborted work never appears: a rolled-back transaction, and a rolled-back savepoint inside a committed one.
select from dblink_exec('rt_a', 'begin');
select from dblink_exec('rt_a', 'insert into public.rt_probe (id, v) values (3, ''aborted'')');
select from dblink_exec('rt_a', 'rollback');
select from dblink_exec('rt_a', 'begin');
select from dblink_exec('rt_a', 'insert into public.rt_probe (id, v) values (4, ''kept'')');
select from dblink_exec('rt_a', 'savepoint s');
select from dblink_exec('rt_a', 'insert into public.rt_probe (id, v) values (5, ''rolled back'')');
select from dblink_exec('rt_a', 'rollback to savepoint s');
select from dblink_exec('rt_a', 'commit');
select is(pg_temp.rt_next(), 'INSERT:4', 'an aborted transaction''s row and a rolled-back savepoint''s never appear');


-- One row, two writers: rt_b's update waits for rt_a's row lock; the capture rows follow the commit order.
select from dblink_exec('rt_a', 'begin');
select from dblink_exec('rt_a', 'update public.rt_probe set v = ''first'' where id = 4');
select from dblink_send_query('rt_b', 'update public.rt_probe set v = ''second'' where id = 4');
select ok(pg_temp.rt_blocked((select pid from rt_backend where name = 'rt_b')), 'a second writer of the row waits for the first');
select from dblink_exec('rt_a', 'commit');
select is((select status from dblink_get_result('rt_b') as t (status text)), 'UPDATE 1', 'and updates it once the first commits');
select from dblink_get_result('rt_b') as t (status text);
select is(pg_temp.rt_next(), 'UPDATE:4 UPDATE:4', 'both updates come in one poll');
select is(
    (select array_agg(record::jsonb ->> 'v' order by seq) || array_agg(old_record::jsonb ->> 'v' order by seq)
     from rt_polls where kind = 'UPDATE' and table_name = 'rt_probe'),
    array['first', 'second', 'kept', 'first'],
    'in commit order: the second update''s old row is the first update''s new row'
);
select from dblink_exec('rt_b', 'delete from public.rt_probe where id = 2');
select is(pg_temp.rt_next(), 'DELETE:2', 'a delete comes with its old row');

-- The statement triggers (INSERT, DELETE) behind a waiting writer: rt_b's delete waits for rt_a's update of the row,
-- rt_b's insert of a key waits for rt_a's transaction that inserts and deletes that key; each is logged after the
-- changes it waited for.
select from dblink_exec('rt_a', 'begin');
select from dblink_exec('rt_a', 'update public.rt_probe set v = ''third'' where id = 4');
select from dblink_send_query('rt_b', 'delete from public.rt_probe where id = 4');
select ok(pg_temp.rt_blocked((select pid from rt_backend where name = 'rt_b')), 'a delete of a row being updated waits');
select from dblink_exec('rt_a', 'commit');
select is((select status from dblink_get_result('rt_b') as t (status text)), 'DELETE 1', 'and deletes it once the update commits');
select from dblink_get_result('rt_b') as t (status text);
select from dblink_exec('rt_a', 'begin');
select from dblink_exec('rt_a', 'insert into public.rt_probe (id, v) values (6, ''new'')');
select from dblink_send_query('rt_b', 'insert into public.rt_probe (id, v) values (6, ''again'') on conflict (id) do nothing');
select ok(pg_temp.rt_blocked((select pid from rt_backend where name = 'rt_b')), 'an insert of a key being inserted waits');
select from dblink_exec('rt_a', 'delete from public.rt_probe where id = 6');
select from dblink_exec('rt_a', 'commit');
select is((select status from dblink_get_result('rt_b') as t (status text)), 'INSERT 0 1', 'and inserts it once the first writer''s delete commits');
select from dblink_get_result('rt_b') as t (status text);
select is(pg_temp.rt_next(), 'UPDATE:4 DELETE:4 INSERT:6 DELETE:6 INSERT:6', 'all in one poll, each after the change it waited for');
select is(
    (select array_agg(coalesce(record, old_record)::jsonb ->> 'v' order by seq)
     from rt_polls where n = (select max(n) from rt_polls) and table_name = 'rt_probe'),
    array['third', 'third', 'new', 'new', 'again'],
    'the delete carries the updated row, the second insert its own'
);

-- A multi-row INSERT and a multi-row DELETE: each row once, in the order the statement wrote it, with its app_id, all
-- in the same poll.
select from dblink_exec('rt_b', $$insert into public.rt_probe (id, app_id, v) values
    (12, '00000000-0000-4000-8000-0000000000f1', 'a'), (10, null, 'b'), (11, '00000000-0000-4000-8000-0000000000f2', 'c')$$);
select is(pg_temp.rt_next(), 'INSERT:12 INSERT:10 INSERT:11', 'a three-row insert comes in one poll, in the statement''s order');
select is(
    (select array_agg(format('%s %s', c.record ->> 'id', coalesce(c.app_id::text, 'null')) order by p.seq)
     from rt_polls as p join guestpass.realtime_changes as c on c.seq = p.seq
     where p.n = (select max(n) from rt_polls) and p.table_name = 'rt_probe'),
    array['12 00000000-0000-4000-8000-0000000000f1', '10 null', '11 00000000-0000-4000-8000-0000000000f2'],
    'each row with its app_id'
);
create temporary table rt_deleted as
select t.id::text, t.ord
from rows from (dblink('rt_b', 'delete from public.rt_probe where id >= 10 returning id') as (id int))
     with ordinality as t (id, ord);
select is(
    pg_temp.rt_next(),
    (select string_agg('DELETE:' || id, ' ' order by ord) from rt_deleted),
    'a three-row delete comes in one poll, in the order it deleted the rows (as RETURNING answers them)'
);
select is(
    (select array_agg(format('%s %s %s', c.old_record ->> 'v', coalesce(c.app_id::text, 'null'), c.record is null) order by p.seq)
     from rt_polls as p join guestpass.realtime_changes as c on c.seq = p.seq
     where p.n = (select max(n) from rt_polls) and p.table_name = 'rt_probe'),
    (select array_agg(format('%s %s t', x.v, coalesce(x.a, 'null')) order by d.ord)
     from rt_deleted as d
     join (values ('12', 'a', '00000000-0000-4000-8000-0000000000f1'), ('10', 'b', null),
                  ('11', 'c', '00000000-0000-4000-8000-0000000000f2')) as x (id, v, a) on x.id = d.id),
    'each with its whole old row and app_id'
);

-- Presence leases expired on several replicas at once: each lease is removed, and its leave logged, exactly once.
select from dblink_exec('rt_a', 'delete from guestpass.realtime_presence where topic = ''rt:room''');
select is(
    (select array_agg(t.joined order by t.joined)
     from unnest(array['k1', 'k2']) as k (key)
     cross join lateral dblink('rt_a', format(
         'select guestpass_server.realtime_presence_track(%L, %L, %L, %L, %L, %L, %L)',
         '00000000-0000-4000-8000-0000000000f1', 'rt:room', k.key, '00000000-0000-4000-8000-00000000e001',
         'ref-' || k.key, '{"n": 1}', '-1 seconds')) as t (joined boolean)),
    array[true, true],
    'another session tracks two metas whose leases are already past'
);
select from dblink_exec('rt_a', 'begin');
select is(
    (select n from dblink('rt_a', 'select count(*) from guestpass_server.realtime_presence_expire()') as t (n bigint)),
    2::bigint, 'one replica''s expiry takes both'
);
select from dblink_send_query('rt_b', 'select count(*) from guestpass_server.realtime_presence_expire()');
select ok(pg_temp.rt_blocked((select pid from rt_backend where name = 'rt_b')), 'a second replica''s expiry waits for it');
select from dblink_exec('rt_a', 'commit');
select is((select n from dblink_get_result('rt_b') as t (n bigint)), 0::bigint, 'and then finds nothing to expire');
select from dblink_get_result('rt_b') as t (n bigint);
select is(pg_temp.rt_next(), '', 'the next poll has no table change');
select is(
    array(select record::jsonb from rt_polls where kind = 'PRESENCE' and topic = 'rt:room' order by seq),
    array[
        '{"joins": {"k1": {"metas": [{"n": 1, "phx_ref": "ref-k1"}]}}, "leaves": {}}',
        '{"joins": {"k2": {"metas": [{"n": 1, "phx_ref": "ref-k2"}]}}, "leaves": {}}',
        '{"joins": {}, "leaves": {"k1": {"metas": [{"n": 1, "phx_ref": "ref-k1"}]}, "k2": {"metas": [{"n": 1, "phx_ref": "ref-k2"}]}}}'
    ]::jsonb[],
    'the polls carried the two joins and one leave diff of both metas, each once'
);

-- The chain as a whole.
select is(
    array(select n from rt_polls group by n having count(distinct snapshot) <> 1 or count(*) filter (where snapshot is null) > 0),
    '{}'::int[],
    'every row of a poll carries the same snapshot'
);
select is(
    array(select n from rt_polls group by n having count(*) filter (where seq is null) > 0 and count(*) > 1),
    '{}'::int[],
    'a poll answers either its changes or one row with only the snapshot, never both'
);
select is(
    (select count(*) - count(distinct seq) from rt_polls where seq is not null),
    0::bigint,
    'no row came in two polls'
);
select set_eq(
    'select seq from rt_polls where table_name = ''rt_probe''',
    'select seq from guestpass.realtime_changes where table_name = ''rt_probe'' and schema_name = ''public''
       and seq >= (select min(seq) from rt_polls where table_name = ''rt_probe'')',
    'every committed change of rt_probe came in a poll'
);
select ok(
    (select bool_and(p.commit_timestamp ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$'
                     and p.commit_timestamp = to_char(c.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
     from rt_polls as p join guestpass.realtime_changes as c on c.seq = p.seq),
    'commit_timestamp is the row''s write time in UTC to the millisecond, e.g. 2025-01-31T10:00:00.123Z'
);

-- A table the sync cannot lock within 2 s (rt_b holds a writer's lock on it in an open transaction) is skipped, with a
-- WARNING, and the next sync finishes the job.
create function pg_temp.rt_probe_trigger()
returns boolean
language sql
as $$
    select exists (select 1 from pg_trigger as t join pg_class as c on c.oid = t.tgrelid
                   where c.relname = 'rt_probe' and t.tgname like 'guestpass\_realtime\_capture%')
$$;
select from dblink_exec('rt_b', 'begin');
select from dblink_exec('rt_b', 'lock table public.rt_probe in row exclusive mode');
select from dblink_exec('rt_a', 'alter publication supabase_realtime drop table public.rt_probe');
select is(
    (select array_agg(t.schema_name || '.' || t.table_name)
     from dblink('rt_a', 'select schema_name, table_name from guestpass_server.realtime_sync()')
          as t (schema_name text, table_name text)),
    array['public.device_logs', 'public.reading_notes', 'public.readings'],
    'a sync that cannot lock an unpublished table within 2 s still syncs the others'
);
select ok(pg_temp.rt_probe_trigger(), 'and leaves that table''s trigger for later');
select from dblink_exec('rt_b', 'rollback');
select from dblink('rt_a', 'select count(*) from guestpass_server.realtime_sync()') as t (n bigint);
select ok(not pg_temp.rt_probe_trigger(), 'the next sync removes it');

select from dblink_exec('rt_a', 'drop table public.rt_probe');
select from rt_backend as b cross join lateral dblink_disconnect(b.name);

-- ---------------------------------------------------------------- part 2: which tables are captured

-- The tables in the publication, and those with a capture trigger (not its clones on partitions), as schema.table; a
-- table's capture triggers, as pg_get_triggerdef writes them, by name.
create function pg_temp.rt_published()
returns text[]
language sql
as $$
    select array(select format('%s.%s', schemaname, tablename) from pg_publication_tables
                 where pubname = 'supabase_realtime' order by 1)
$$;
create function pg_temp.rt_triggered()
returns text[]
language sql
as $$
    select array(select format('%s.%s', n.nspname, c.relname)
                 from pg_trigger as t
                 join pg_class as c on c.oid = t.tgrelid
                 join pg_namespace as n on n.oid = c.relnamespace
                 where t.tgname like 'guestpass\_realtime\_capture%' and t.tgparentid = 0
                 group by n.nspname, c.relname order by 1)
$$;
create function pg_temp.rt_triggers(p_table regclass)
returns text[]
language sql
as $$
    select array(select pg_get_triggerdef(t.oid) || case when t.tgenabled = 'D' then ' (disabled)' else '' end
                 from pg_trigger as t
                 where t.tgrelid = p_table and t.tgname like 'guestpass\_realtime\_capture%' order by t.tgname)
$$;
-- The capture triggers an ordinary table (public.rt_local) gets for the events given (insert, update, delete), as
-- pg_get_triggerdef prints them, in name order (as rt_triggers answers): a statement trigger with a transition table
-- for INSERT and for DELETE, the row trigger for UPDATE.
create function pg_temp.rt_local_capture(variadic p_events text[])
returns text[]
language sql
as $$
    select array(
        select d.def
        from (values
            ('update', 'CREATE TRIGGER guestpass_realtime_capture AFTER UPDATE ON public.rt_local FOR EACH ROW '
                       || 'EXECUTE FUNCTION guestpass.realtime_capture()'),
            ('delete', 'CREATE TRIGGER guestpass_realtime_capture_delete AFTER DELETE ON public.rt_local REFERENCING '
                       || 'OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION guestpass.realtime_capture_statement()'),
            ('insert', 'CREATE TRIGGER guestpass_realtime_capture_insert AFTER INSERT ON public.rt_local REFERENCING '
                       || 'NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION guestpass.realtime_capture_statement()')
        ) as d (event, def)
        where d.event = any (p_events)
        order by d.def
    )
$$;
create function pg_temp.rt_synced()
returns text[]
language sql
as $$ select array(select schema_name || '.' || table_name from guestpass_server.realtime_sync()) $$;

select ok(
    (select pubinsert and pubupdate and pubdelete from pg_publication where pubname = 'supabase_realtime'),
    'the publication supabase_realtime exists and publishes inserts, updates and deletes'
);
select is(
    array(select c.relname::text || ' ' || c.relpersistence::text from pg_class as c
          where c.relnamespace = 'guestpass'::regnamespace and c.relname like 'realtime\_%' and c.relkind = 'r' order by 1),
    array['realtime_changes u', 'realtime_horizons u', 'realtime_presence u'],
    'the change log, the prune''s horizons and presence are unlogged tables'
);
select is(
    pg_temp.rt_synced(), array['public.device_logs', 'public.reading_notes', 'public.readings'],
    'realtime_sync captures the example app''s three published tables (sql/examples/0007)'
);
select is(pg_temp.rt_triggered(), pg_temp.rt_published(), 'the capture trigger is on exactly the published tables');

-- A table added to the publication is captured after the next sync, and no longer once it has left.
create table public.rt_local (id int primary key, app_id text, body text);
create table public.rt_noapp (id int primary key, body text);
alter table public.rt_local enable row level security, force row level security;
alter table public.rt_noapp enable row level security, force row level security;
alter publication supabase_realtime add table public.rt_local, public.rt_noapp;
select ok(not ('public.rt_local' = any (pg_temp.rt_triggered())), 'a table just published has no trigger before a sync');
select is(
    pg_temp.rt_synced(),
    array['public.device_logs', 'public.reading_notes', 'public.readings', 'public.rt_local', 'public.rt_noapp'],
    'after realtime_sync it is captured'
);
select is(pg_temp.rt_triggered(), pg_temp.rt_published(), 'the trigger is again on exactly the published tables');
select is(
    pg_temp.rt_triggers('public.rt_local'), pg_temp.rt_local_capture('insert', 'update', 'delete'),
    'an ordinary table gets statement triggers with a transition table for INSERT and for DELETE, a row trigger for UPDATE'
);
create temporary table rt_trigger_rows as
select t.tgrelid, t.tgname, t.ctid::text as tuple from pg_trigger as t where t.tgname like 'guestpass\_realtime\_capture%';
select is(
    pg_temp.rt_synced(),
    array['public.device_logs', 'public.reading_notes', 'public.readings', 'public.rt_local', 'public.rt_noapp'],
    'a second sync answers the same'
);
select set_eq(
    'select t.tgrelid, t.tgname, t.ctid::text as tuple from pg_trigger as t where t.tgname like ''guestpass\_realtime\_capture%''',
    'select tgrelid, tgname, tuple from rt_trigger_rows',
    'and changes no trigger'
);

-- A table published for only some events gets the triggers of those only.
alter publication supabase_realtime set (publish = 'insert');
select from pg_temp.rt_synced();
select is(
    pg_temp.rt_triggers('public.rt_local'), pg_temp.rt_local_capture('insert'),
    'the triggers follow the publication''s publish setting: insert only'
);
alter publication supabase_realtime set (publish = 'update, delete');
select from pg_temp.rt_synced();
select is(pg_temp.rt_triggers('public.rt_local'), pg_temp.rt_local_capture('update', 'delete'), 'update and delete only');
alter publication supabase_realtime set (publish = 'insert, update, delete, truncate');
select ok('public.rt_local' = any (pg_temp.rt_synced()), 'and all three again');
alter table public.rt_local disable trigger guestpass_realtime_capture_insert;
select ok('public.rt_local' = any (pg_temp.rt_synced()), 'a sync captures a table whose trigger was disabled again');
select is(
    array(select t.tgname || ' ' || t.tgenabled::text || ' ' || t.tgtype from pg_trigger as t
          where t.tgrelid = 'public.rt_local'::regclass and t.tgname like 'guestpass\_realtime\_capture%' order by 1),
    array['guestpass_realtime_capture O 17', 'guestpass_realtime_capture_delete O 8', 'guestpass_realtime_capture_insert O 4'],
    'every trigger enabled, for insert, update and delete'
);

alter publication supabase_realtime drop table public.rt_noapp;
select is(
    pg_temp.rt_synced(),
    array['public.device_logs', 'public.reading_notes', 'public.readings', 'public.rt_local'],
    'a table that left the publication is no longer captured'
);
select is(pg_temp.rt_triggered(), pg_temp.rt_published(), 'its triggers are gone');
select is(pg_temp.rt_triggers('public.rt_noapp'), '{}'::text[], 'all three');

-- A FOR ALL TABLES publication captures every table, never GuestPass's own.
set local client_min_messages = error; -- not "wal_level is insufficient to publish logical changes": we decode nothing
drop publication supabase_realtime;
create publication supabase_realtime for all tables;
select from pg_temp.rt_synced();
select is(
    array(select x from unnest(pg_temp.rt_triggered()) as x
          where split_part(x, '.', 1) in ('guestpass', 'guestpass_server', 'guestpass_migrations', 'auth')),
    '{}'::text[],
    'a FOR ALL TABLES publication never puts the trigger on a GuestPass table'
);
select ok('public.users' = any (pg_temp.rt_triggered()), 'but on every other table');
drop publication supabase_realtime;
create publication supabase_realtime;
reset client_min_messages;
alter publication supabase_realtime add table public.readings, public.device_logs, public.reading_notes, public.rt_local,
    public.rt_noapp;
select is(
    pg_temp.rt_synced(),
    array['public.device_logs', 'public.reading_notes', 'public.readings', 'public.rt_local', 'public.rt_noapp'],
    'back to the example tables and the two local ones'
);
select is(pg_temp.rt_triggered(), pg_temp.rt_published(), 'the other tables lost the trigger');

-- ---------------------------------------------------------------- part 3: what the trigger writes

select from pg_temp.make_apps_xy();
select from pg_temp.make_users_abc();
create temporary table rt_start as select coalesce(max(seq), 0) as seq from guestpass.realtime_changes;
-- The change-log rows written since rt_start, then since the last call (rt_last).
create temporary table rt_last as select seq from rt_start;
create function pg_temp.rt_new()
returns setof guestpass.realtime_changes
language plpgsql
as $$
declare
    v_from bigint := (select seq from rt_last);
begin
    update rt_last set seq = coalesce((select max(c.seq) from guestpass.realtime_changes as c), seq);
    return query select * from guestpass.realtime_changes as c where c.seq > v_from order by c.seq;
end
$$;

insert into public.readings (id, app_id, user_id, kind, content)
values ('00000000-0000-4000-8000-00000000a001', '00000000-0000-4000-8000-0000000000f1',
        '00000000-0000-4000-8000-00000000000a', 'face', '{"n": 1}');
create temporary table rt_rows as select * from pg_temp.rt_new();
select is(
    (select array_agg(format('%s %s.%s %s', kind, schema_name, table_name, app_id)) from rt_rows),
    array['INSERT public.readings 00000000-0000-4000-8000-0000000000f1'],
    'an INSERT is captured once, with its kind, schema, table and the row''s app_id'
);
select is(
    (select record from rt_rows),
    (select to_jsonb(r) from public.readings as r where r.id = '00000000-0000-4000-8000-00000000a001'),
    'record is the whole new row'
);
select ok(
    (select old_record is null and topic is null and event is null and origin is null and xid = pg_current_xact_id() from rt_rows),
    'no old_record, topic, event or origin; xid is the writer''s transaction'
);

update public.readings set kind = 'palm' where id = '00000000-0000-4000-8000-00000000a001';
drop table rt_rows;
create temporary table rt_rows as select * from pg_temp.rt_new();
select is(
    (select array_agg(format('%s %s', kind, app_id)) from rt_rows),
    array['UPDATE 00000000-0000-4000-8000-0000000000f1'],
    'an UPDATE is captured'
);
select ok(
    (select record = (select to_jsonb(r) from public.readings as r where r.id = '00000000-0000-4000-8000-00000000a001')
            and old_record = record || '{"kind": "face"}'
     from rt_rows),
    'with the new row and the whole old row'
);

delete from public.readings where id = '00000000-0000-4000-8000-00000000a001';
drop table rt_rows;
create temporary table rt_rows as select * from pg_temp.rt_new();
select is(
    (select array_agg(format('%s %s %s', kind, app_id, record is null)) from rt_rows),
    array['DELETE 00000000-0000-4000-8000-0000000000f1 t'],
    'a DELETE is captured, with no record'
);
select is(
    (select array_agg(k order by k) from rt_rows cross join lateral jsonb_object_keys(old_record) as k),
    array['app_id', 'content', 'created_at', 'id', 'kind', 'user_id'],
    'and the whole old row, every column, without REPLICA IDENTITY FULL'
);

-- The request role writes; the SECURITY DEFINER trigger captures what it cannot read itself.
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select lives_ok(
    $$insert into public.readings (id, kind) values ('00000000-0000-4000-8000-00000000a002', 'coffee')$$,
    'authenticated inserts into a published table'
);
select throws_ok('select * from guestpass.realtime_changes', '42501', null, 'though it cannot read the change log');
reset role;
select is(
    (select array_agg(format('%s %s %s', kind, app_id, record ->> 'user_id')) from pg_temp.rt_new()),
    array['INSERT 00000000-0000-4000-8000-0000000000f1 00000000-0000-4000-8000-00000000000a'],
    'its row is captured with its app and user'
);
-- Multi-row statements of the request role: one INSERT of two rows, one DELETE of its three (the order it deleted them
-- in, as RETURNING answers them, into rt_deleted_ids).
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
insert into public.readings (id, kind) values
    ('00000000-0000-4000-8000-00000000a004', 'face'), ('00000000-0000-4000-8000-00000000a003', 'palm');
with gone as (delete from public.readings returning id) select string_agg(id::text, ' ') as rt_deleted_ids from gone \gset
reset role;
drop table rt_rows;
create temporary table rt_rows as select * from pg_temp.rt_new();
select is(
    (select array_agg(format('%s %s %s', kind, coalesce(record, old_record) ->> 'id', app_id) order by seq)
     from rt_rows where kind = 'INSERT'),
    array['INSERT 00000000-0000-4000-8000-00000000a004 00000000-0000-4000-8000-0000000000f1',
          'INSERT 00000000-0000-4000-8000-00000000a003 00000000-0000-4000-8000-0000000000f1'],
    'its two-row insert is captured once per row, in the statement''s order, with the app'
);
select is(
    (select string_agg(old_record ->> 'id', ' ' order by seq) from rt_rows where kind = 'DELETE'),
    :'rt_deleted_ids',
    'its three-row delete once per row, in the order it deleted them'
);
select ok(
    (select count(*) = 3 and bool_and(app_id = '00000000-0000-4000-8000-0000000000f1' and record is null
                                      and old_record ->> 'user_id' = '00000000-0000-4000-8000-00000000000a')
     from rt_rows where kind = 'DELETE'),
    'each with its app and whole old row'
);
select ok(
    (select max(seq) - min(seq) = 4 from rt_rows), 'five consecutive seqs: nothing else was logged in between'
);

-- app_id: the row's app_id when it is a uuid; anything else, or no such column, gives null and never an error.
select lives_ok(
    $$insert into public.rt_local (id, app_id) values
        (1, 'not a uuid'), (2, '00000000-0000-4000-8000-0000000000F2'), (3, null), (4, '{"a": 1}'),
        (5, '00000000-0000-4000-8000-0000000000f2 ')$$,
    'a table whose text app_id holds no uuid is written, in one statement of five rows'
);
drop table rt_rows;
create temporary table rt_rows as select * from pg_temp.rt_new();
select is(
    (select array_agg(format('%s %s', record ->> 'id', coalesce(app_id::text, 'null')) order by seq) from rt_rows),
    array['1 null', '2 00000000-0000-4000-8000-0000000000f2', '3 null', '4 null', '5 null'],
    'captured as five rows in statement order, app_id only where it is a uuid'
);
select ok(
    (select max(seq) - min(seq) = 4 and bool_and(kind = 'INSERT' and table_name = 'rt_local') from rt_rows),
    'with consecutive seqs'
);
insert into public.rt_noapp (id, body) values (1, 'x');
select is(
    (select array_agg(format('%s %s', table_name, coalesce(app_id::text, 'null'))) from pg_temp.rt_new()),
    array['rt_noapp null'],
    'a table without app_id is captured with a null app_id'
);

-- A row over 256 KiB (here 640,000 characters of hex, about as large stored) is converted by guestpass.realtime_image
-- under its exception block, by either trigger; the others are not; each image is whole.
set local track_functions = 'pl';
insert into public.rt_noapp (id, body)
values (3, (select string_agg(md5(g::text), '') from generate_series(1, 20000) as g)), (4, 'small');
update public.rt_noapp set body = body || 'x' where id = 3;
delete from public.rt_noapp where id in (3, 4);
select is(
    (select array_agg(format('%s %s %s %s', kind, coalesce(record, old_record) ->> 'id',
                             length(record ->> 'body'), length(old_record ->> 'body'))
                      order by kind, coalesce(record, old_record) ->> 'id')
     from pg_temp.rt_new()),
    array['INSERT 3 640000 ', 'INSERT 4 5 ', 'UPDATE 3 640001 640000', 'DELETE 3  640001', 'DELETE 4  5'],
    'a large row is captured whole at its insert, update and delete, beside a small one of the same statement'
);
select is(
    (select calls from pg_stat_xact_user_functions where funcid = 'guestpass.realtime_image(anyelement)'::regprocedure),
    4::bigint,
    'through guestpass.realtime_image: at its insert, its update (new and old row) and its delete, never the small row'
);
reset track_functions;

-- A rolled-back savepoint takes its capture rows with it.
savepoint before_write;
insert into public.rt_local (id) values (10);
rollback to savepoint before_write;
select is((select count(*)::int from pg_temp.rt_new()), 0, 'a rolled-back write leaves no capture row');

-- An unpublished table is not captured.
alter publication supabase_realtime drop table public.rt_noapp;
select from pg_temp.rt_synced();
insert into public.rt_noapp (id, body) values (2, 'y');
select is((select count(*)::int from pg_temp.rt_new()), 0, 'a table that left the publication is no longer captured');

-- A partition, a partitioned table, a table with inheritance parents or children: the row trigger alone, for every
-- event (a statement trigger fires only on the table a statement names). Published without
-- publish_via_partition_root, a partitioned table is captured on its partitions; rt_parent brings its child rt_kid.
create table public.rt_part (id int primary key, app_id uuid, v text) partition by range (id);
create table public.rt_part_1 partition of public.rt_part for values from (0) to (100);
create table public.rt_parent (id int primary key, app_id uuid, v text);
create table public.rt_kid (extra int, primary key (id)) inherits (public.rt_parent);
create table public.rt_lone (id int primary key, app_id uuid, v text);
alter publication supabase_realtime add table public.rt_part, public.rt_parent, public.rt_lone;
select is(
    array(select x from unnest(pg_temp.rt_synced()) as x where x like 'public.rt\_%' order by 1),
    array['public.rt_kid', 'public.rt_local', 'public.rt_lone', 'public.rt_parent', 'public.rt_part_1'],
    'a published partitioned table is captured on its partition, an inheritance parent with its child'
);
select is(
    array(select unnest(pg_temp.rt_triggers(t))
          from unnest(array['public.rt_part', 'public.rt_part_1', 'public.rt_parent', 'public.rt_kid']::regclass[]) as t),
    array[
        'CREATE TRIGGER guestpass_realtime_capture AFTER INSERT OR DELETE OR UPDATE ON public.rt_part_1 FOR EACH ROW '
        || 'EXECUTE FUNCTION guestpass.realtime_capture()',
        'CREATE TRIGGER guestpass_realtime_capture AFTER INSERT OR DELETE OR UPDATE ON public.rt_parent FOR EACH ROW '
        || 'EXECUTE FUNCTION guestpass.realtime_capture()',
        'CREATE TRIGGER guestpass_realtime_capture AFTER INSERT OR DELETE OR UPDATE ON public.rt_kid FOR EACH ROW '
        || 'EXECUTE FUNCTION guestpass.realtime_capture()'
    ],
    'each with the row trigger alone, for every event'
);
insert into public.rt_part (id, app_id, v) values (2, '00000000-0000-4000-8000-0000000000f1', 'a'), (1, null, 'b');
insert into public.rt_kid (id, v, extra) values (5, 'k', 7);
delete from public.rt_parent where id = 5;
select is(
    (select array_agg(format('%s %s %s %s', kind, table_name, coalesce(record, old_record), coalesce(app_id::text, 'null'))
                      order by seq)
     from pg_temp.rt_new()),
    array['INSERT rt_part_1 {"v": "a", "id": 2, "app_id": "00000000-0000-4000-8000-0000000000f1"} 00000000-0000-4000-8000-0000000000f1',
          'INSERT rt_part_1 {"v": "b", "id": 1, "app_id": null} null',
          'INSERT rt_kid {"v": "k", "id": 5, "extra": 7, "app_id": null} null',
          'DELETE rt_kid {"v": "k", "id": 5, "extra": 7, "app_id": null} null'],
    'rows written through the partitioned table or the parent are captured once each, whole, as their own table''s'
);
-- A captured ordinary table that becomes a partition gets the row trigger at the next sync.
alter table public.rt_part attach partition public.rt_lone for values from (100) to (200);
select ok('public.rt_lone' = any (pg_temp.rt_synced()), 'a published table attached as a partition is still captured');
select is(
    pg_temp.rt_triggers('public.rt_lone'),
    array['CREATE TRIGGER guestpass_realtime_capture AFTER INSERT OR DELETE OR UPDATE ON public.rt_lone FOR EACH ROW '
          || 'EXECUTE FUNCTION guestpass.realtime_capture()'],
    'by the row trigger alone, from the next sync'
);
insert into public.rt_part (id, v) values (150, 'routed'), (3, 'not routed there');
select is(
    (select array_agg(format('%s %s %s', kind, table_name, record ->> 'id') order by seq) from pg_temp.rt_new()),
    array['INSERT rt_lone 150', 'INSERT rt_part_1 3'],
    'so the rows routed to it through the root are captured'
);

-- ---------------------------------------------------------------- part 4: the poll within one transaction

select is(
    (select array_agg(format('%s %s %s', p.snapshot = pg_current_snapshot()::text, p.seq is null, p.kind is null))
     from guestpass_server.realtime_poll(null) as p),
    array['t t t'],
    'poll(null) answers one row: the snapshot it read with (the statement''s), and nothing else'
);
-- This transaction's own rows (xid X) against snapshots written by hand: X running (X >= xmax, or in xip) and X
-- finished (X < xmin).
create temporary table rt_x as select pg_current_xact_id() as x;
select is(
    (select count(*)::int from guestpass_server.realtime_poll(format('%s:%s:', (select x from rt_x), (select x from rt_x))::pg_snapshot)
     where table_name = 'rt_local'),
    5,
    'poll(P) returns the rows of a transaction that had not started in P (and that this statement sees)'
);
select is(
    (select count(*)::int from guestpass_server.realtime_poll(format('%s:%s:%s', (select x from rt_x),
                                                                     (select x from rt_x)::text::bigint + 1,
                                                                     (select x from rt_x))::pg_snapshot)
     where table_name = 'rt_local'),
    5,
    'and of a transaction in progress in P'
);
select is(
    (select count(*)::int
     from guestpass_server.realtime_poll(format('%s:%s:', (select x from rt_x)::text::bigint + 1,
                                                (select x from rt_x)::text::bigint + 1)::pg_snapshot)
     where table_name = 'rt_local'),
    0,
    'but not of a transaction already visible in P (below its xmin)'
);

-- ---------------------------------------------------------------- part 5: the prune

-- Rows written by hand: an old row of a long-finished transaction (xid 3), a recent one, and an old one of this
-- transaction, still running.
insert into guestpass.realtime_changes (xid, kind, schema_name, table_name, at) values
    ('3', 'INSERT', 'public', 'rt_old', now() - interval '2 hours'),
    ('3', 'INSERT', 'public', 'rt_recent', now()),
    (pg_current_xact_id(), 'INSERT', 'public', 'rt_running', now() - interval '2 hours');
delete from guestpass.realtime_horizons;
select is(guestpass_server.realtime_prune('1 hour'), 0::bigint, 'the first prune deletes nothing: no horizon is old enough');
select is(
    (select array_agg(format('%s %s', taken_at = now(), horizon = pg_snapshot_xmin(pg_current_snapshot()))) from guestpass.realtime_horizons),
    array['t t'], 'and records its snapshot''s xmin'
);
-- A horizon recorded 90 minutes ago (this transaction's xmin: it was running then too), and an older one.
insert into guestpass.realtime_horizons (taken_at, horizon) values
    (now() - interval '90 minutes', pg_snapshot_xmin(pg_current_snapshot())), (now() - interval '3 hours', '3');
create temporary table rt_prunable as
select count(*) as n from guestpass.realtime_changes
where at < now() - interval '1 hour' and xid < pg_snapshot_xmin(pg_current_snapshot());
select is(guestpass_server.realtime_prune('1 hour'), (select n from rt_prunable), 'realtime_prune returns how many rows it deleted');
select is(
    array(select table_name from guestpass.realtime_changes where table_name in ('rt_old', 'rt_recent', 'rt_running') order by 1),
    array['rt_recent', 'rt_running'],
    'it deletes an old row of a finished transaction, never a recent one or one of a transaction still running'
);
select is(
    (select array_agg(taken_at order by taken_at) from guestpass.realtime_horizons),
    array[now() - interval '90 minutes', now()],
    'and forgets the horizons older than the one it used'
);
select throws_ok($$select guestpass_server.realtime_prune('-1 minute')$$, '22023', null, 'a negative retention is refused');
select from pg_temp.rt_new();

-- ---------------------------------------------------------------- part 6: broadcast and presence

select from guestpass_server.realtime_broadcast(
    '00000000-0000-4000-8000-0000000000f1', 'room:1', 'cursor', '{"x": 1, "y": [2]}', '00000000-0000-4000-8000-00000000e001'
);
select is(
    (select array_agg(format('%s %s %s %s %s %s %s', kind, app_id, topic, event, record, origin, schema_name is null and table_name is null))
     from pg_temp.rt_new()),
    array['BROADCAST 00000000-0000-4000-8000-0000000000f1 room:1 cursor {"x": 1, "y": [2]} 00000000-0000-4000-8000-00000000e001 t'],
    'a broadcast is one BROADCAST row with its app, topic, event, payload and origin'
);

-- Replica R1 (…e001) tracks u1 (two refs); replica R2 (…e002) tracks u2.
select is(
    array[
        guestpass_server.realtime_presence_track('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u1',
            '00000000-0000-4000-8000-00000000e001', 'ref-a', '{"status": "online"}'),
        guestpass_server.realtime_presence_track('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u1',
            '00000000-0000-4000-8000-00000000e001', 'ref-b', '{"status": "away"}'),
        guestpass_server.realtime_presence_track('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u2',
            '00000000-0000-4000-8000-00000000e002', 'ref-c', '{"status": "online"}')
    ],
    array[true, true, true],
    'three tracks log three joins'
);
drop table rt_rows;
create temporary table rt_rows as select * from pg_temp.rt_new();
select is(
    (select array_agg(format('%s %s %s %s', kind, app_id, topic, origin) order by seq) from rt_rows),
    array['PRESENCE 00000000-0000-4000-8000-0000000000f1 room:1 00000000-0000-4000-8000-00000000e001',
          'PRESENCE 00000000-0000-4000-8000-0000000000f1 room:1 00000000-0000-4000-8000-00000000e001',
          'PRESENCE 00000000-0000-4000-8000-0000000000f1 room:1 00000000-0000-4000-8000-00000000e002'],
    'as PRESENCE rows of the app and topic, from the tracking replica'
);
select is(
    (select record from rt_rows order by seq limit 1),
    '{"joins": {"u1": {"metas": [{"status": "online", "phx_ref": "ref-a"}]}}, "leaves": {}}'::jsonb,
    'each a presence_diff whose metas carry their phx_ref'
);
select is(
    guestpass_server.realtime_presence_track('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u1',
        '00000000-0000-4000-8000-00000000e001', 'ref-a', '{"status": "online"}', '1 hour'),
    false, 'the same payload tracked again logs nothing'
);
select ok(
    (select count(*) = 0 from pg_temp.rt_new())
    and (select lease_until = now() + interval '1 hour' from guestpass.realtime_presence where phx_ref = 'ref-a'),
    'and only renews its lease'
);
select is(
    guestpass_server.realtime_presence_track('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u1',
        '00000000-0000-4000-8000-00000000e001', 'ref-a', '{"status": "busy"}'),
    true, 'a new payload under the same ref is logged'
);
select is(
    (select array_agg(record) from pg_temp.rt_new()),
    array['{"joins": {"u1": {"metas": [{"status": "busy", "phx_ref": "ref-a"}]}}, "leaves": {}}'::jsonb],
    'as a join only (clients replace a meta of the same ref)'
);
select results_eq(
    $$select presence_key, phx_ref, meta::jsonb
      from guestpass_server.realtime_presence_state('00000000-0000-4000-8000-0000000000f1', 'room:1')$$,
    $$values ('u1', 'ref-a', '{"status": "busy", "phx_ref": "ref-a"}'::jsonb),
             ('u1', 'ref-b', '{"status": "away", "phx_ref": "ref-b"}'::jsonb),
             ('u2', 'ref-c', '{"status": "online", "phx_ref": "ref-c"}'::jsonb)$$,
    'realtime_presence_state lists the topic''s metas by key, oldest first, with their phx_ref'
);
select is_empty(
    $$select 1 from guestpass_server.realtime_presence_state('00000000-0000-4000-8000-0000000000f2', 'room:1')$$,
    'another app''s topic of the same name is another topic'
);
select is(
    guestpass_server.realtime_presence_untrack('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u1',
        '00000000-0000-4000-8000-00000000e002', 'ref-b'),
    false, 'a replica cannot untrack another replica''s meta'
);
select is(
    guestpass_server.realtime_presence_untrack('00000000-0000-4000-8000-0000000000f1', 'room:1', 'u1',
        '00000000-0000-4000-8000-00000000e001', 'ref-b'),
    true, 'its own, it can'
);
select is(
    (select array_agg(format('%s %s', record, origin)) from pg_temp.rt_new()),
    array['{"joins": {}, "leaves": {"u1": {"metas": [{"status": "away", "phx_ref": "ref-b"}]}}} 00000000-0000-4000-8000-00000000e001'],
    'which logs one leave of that meta, from that replica'
);
select is(
    guestpass_server.realtime_presence_renew('00000000-0000-4000-8000-00000000e002', '10 minutes'), 1,
    'a replica renews all its leases in one call, and learns how many it holds'
);
select is(
    array(select format('%s %s', phx_ref, lease_until - now()) from guestpass.realtime_presence where topic = 'room:1' order by phx_ref),
    array['ref-a 00:00:30', 'ref-c 00:10:00'],
    'only its own'
);
-- Two minutes on: R1's lease (30 s) is past, R2's (10 minutes) is not.
set local guestpass.clock_override = '2100-01-01';
select is(
    array(select format('%s %s %s %s %s', app_id, topic, presence_key, phx_ref, replica) from guestpass_server.realtime_presence_expire()),
    array['00000000-0000-4000-8000-0000000000f1 room:1 u1 ref-a 00000000-0000-4000-8000-00000000e001',
          '00000000-0000-4000-8000-0000000000f1 room:1 u2 ref-c 00000000-0000-4000-8000-00000000e002'],
    'realtime_presence_expire removes every lease past due and returns it'
);
select is(
    (select array_agg(format('%s %s %s', topic, record, origin is null)) from pg_temp.rt_new()),
    array['room:1 {"joins": {}, "leaves": {"u1": {"metas": [{"status": "busy", "phx_ref": "ref-a"}]}, "u2": {"metas": [{"status": "online", "phx_ref": "ref-c"}]}}} t'],
    'and logs one leave diff per topic, with no origin (every replica delivers it)'
);
select is(
    (select count(*)::int from guestpass_server.realtime_presence_expire()), 0, 'a second expiry finds nothing'
);
reset guestpass.clock_override;

-- ---------------------------------------------------------------- part 7: who may touch it

select is(
    array(
        select p.oid::regprocedure::text || ' ' || pg_temp.executors(p.oid)
        from pg_proc as p
        where p.proname like 'realtime\_%'
          and p.pronamespace in ('guestpass'::regnamespace, 'guestpass_server'::regnamespace)
        order by 1
    ),
    array[
        'guestpass.realtime_app_id(jsonb) ',
        'guestpass.realtime_capture() ',
        'guestpass.realtime_capture_statement() ',
        'guestpass.realtime_capture_triggers() ',
        'guestpass.realtime_image(anyelement) ',
        'guestpass.realtime_presence_meta(jsonb,text) ',
        'guestpass_server.realtime_broadcast(uuid,text,text,jsonb,uuid) guestpass_authenticator',
        'guestpass_server.realtime_live_sessions(uuid[]) guestpass_authenticator',
        'guestpass_server.realtime_poll(pg_snapshot) guestpass_authenticator',
        'guestpass_server.realtime_presence_expire() guestpass_authenticator',
        'guestpass_server.realtime_presence_renew(uuid,interval) guestpass_authenticator',
        'guestpass_server.realtime_presence_state(uuid,text) guestpass_authenticator',
        'guestpass_server.realtime_presence_track(uuid,text,text,uuid,text,jsonb,interval) guestpass_authenticator',
        'guestpass_server.realtime_presence_untrack(uuid,text,text,uuid,text) guestpass_authenticator',
        'guestpass_server.realtime_prune(interval) guestpass_authenticator',
        'guestpass_server.realtime_sync() guestpass_authenticator'
    ],
    'the server''s realtime functions are executable by the login role only, the internals by no request role'
);
select is(
    array(
        select c.relname || ' ' || r.rolname
        from pg_class as c
        cross join pg_roles as r
        where c.relnamespace = 'guestpass'::regnamespace and c.relname like 'realtime\_%' and c.relkind in ('r', 'S')
          and r.rolname in ('anon', 'authenticated', 'service_role', 'guestpass_authenticator')
          and has_table_privilege(r.oid, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
    ),
    '{}'::text[],
    'no request role holds a privilege on the realtime tables'
);

-- The capture's app_id rule is one expression, inlined into its INSERT (no call per row).
select doesnt_match(
    pg_temp.plan_of('select guestpass.realtime_app_id(c.record) from guestpass.realtime_changes as c'),
    'realtime_app_id', 'guestpass.realtime_app_id is inlined: its plan has no call of it'
);

select from pg_temp.as_anon();
select throws_ok('select * from guestpass.realtime_changes', '42501', null, 'anon cannot read the change log');
select throws_ok('select * from guestpass_server.realtime_poll(null)', '42501', null, 'anon cannot poll');
reset role;
select from pg_temp.as_user('00000000-0000-4000-8000-00000000000a');
select throws_ok('select * from guestpass.realtime_presence', '42501', null, 'authenticated cannot read presence');
select throws_ok(
    $$select guestpass_server.realtime_broadcast('00000000-0000-4000-8000-0000000000f1', 't', 'e', '{}', null)$$,
    '42501', null, 'authenticated cannot broadcast through the server''s function'
);
reset role;
select from pg_temp.as_service_role();
select throws_ok('select * from guestpass_server.realtime_sync()', '42501', null, 'service_role cannot sync');
reset role;
set local role guestpass_authenticator;
select is((select count(*)::int from guestpass_server.realtime_poll(null)), 1, 'the login role polls, without a role switch');
select throws_ok('select * from guestpass.realtime_changes', '42501', null, 'but cannot read the change log itself');
reset role;

select * from finish();
rollback;
