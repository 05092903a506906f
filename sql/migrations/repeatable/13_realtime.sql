-- realtime: change capture for postgres_changes, broadcast and presence across server replicas
-- Repeatable (re-applied whenever this file changes, after every versioned file): create or replace only. The tables
-- (guestpass.realtime_changes, realtime_horizons, realtime_presence) and the publication are in 0010_realtime.sql.
--
-- Capture (option C of the Realtime study, ../shared/reference/realtime.md 6.2): no logical decoding. A table is
-- captured when it is in the publication supabase_realtime (the Supabase way of opting in); realtime_sync() puts AFTER
-- triggers on exactly those tables, for exactly the events the publication publishes (insert, update, delete; never
-- truncate, which Supabase does not send either), and removes them from tables that left the publication: on an
-- ordinary table a statement trigger with a transition table for INSERT and one for DELETE, and a row trigger for
-- UPDATE; on a partitioned table, a partition or a table with inheritance, the row trigger for every event (see "The
-- capture" below). They append one row per changed row to guestpass.realtime_changes in the writer's own
-- transaction: it commits and aborts with the change. The writer pays for it (one to_jsonb per row image and the
-- insert into an unlogged table: bench/realtime.sh measures the write cost).
--
-- The snapshot cursor. Every server replica polls independently (no leader, no LISTEN, works through PgBouncer in
-- transaction mode) with realtime_poll(previous snapshot), one statement that returns its own snapshot S and the rows
-- whose transaction is visible in S but was not in the previous snapshot P:
--     xid >= pg_snapshot_xmin(P) and not pg_visible_in_snapshot(xid, P), and the row visible to S.
-- Why exactly once: a committed transaction X is invisible in every snapshot taken before its commit became visible
-- and visible in every snapshot taken after, so along one replica's chain of snapshots S0, S1, S2 … X switches from
-- invisible to visible exactly once, and its rows come in exactly that poll (the xmin bound only skips transactions
-- that had ended before P: visible in P when committed). An aborted transaction's rows are never visible; a long
-- transaction's rows come in the first poll after its commit, while the rows of transactions that committed before it
-- came in earlier polls (a `seq > last` cursor would skip rows of transactions that commit out of seq order). The
-- snapshot returned and the rows are read by the same statement, hence with the same snapshot. A replica starts with
-- realtime_poll(null), which returns only the snapshot: it delivers what commits after it started.
-- Order: within a poll, rows come in seq order (the order they were written). For one row, seq order is commit order:
-- a second writer of the same row (UPDATE, DELETE, or an INSERT on the same key) waits for the first writer's row
-- lock until the first commits; AFTER triggers, row and statement, fire at the end of the writer's statement, after
-- its row writes; so the second writer's capture row is written after the first committed, takes a larger seq (the
-- sequence caches nothing), and the first's row came in the same poll or an earlier one. Within one statement the
-- rows of one event come in the order it wrote them; a statement with several events (INSERT … ON CONFLICT DO UPDATE,
-- MERGE) logs its updated rows (row trigger) before its inserted and deleted ones (statement triggers, at its end),
-- which changes no row's order: a statement writes each row at most once. Rows of unrelated transactions that commit
-- in one poll interval come in write order, not commit order.
-- Limits: the log holds what has not been pruned; a replica that does not poll for longer than the prune retention may
-- miss rows. A poll returns every new row at once (no paging): poll often (100 ms busy, 500 ms idle). Everything is
-- on the primary (the log is unlogged): never poll the read replica. commit_timestamp is the time the row was written
-- (a long transaction's rows carry their write time). A published table needs a primary key (replica identity) for
-- UPDATE and DELETE, as on Supabase (0010). The capture runs as the table's writer's transaction, so a write to a
-- published table fails only when PostgreSQL itself cannot store the change (disk full, out of memory); a row image
-- that jsonb cannot hold (over 255 MB as JSON) is captured with a null record or old_record instead of failing.
--
-- Calling it. The server calls every guestpass_server.realtime_* function as its login role guestpass_authenticator,
-- outside request transactions (no role switch; each call its own transaction): EXECUTE is granted to that role only,
-- never to anon, authenticated or service_role, and the tables stay closed to all of them. `guestpass migrate up` runs
-- realtime_sync() after every run that applied anything (MigrationRunner), so an app's migration that adds a table to
-- the publication is captured when migrate returns; the servers also run it at start and every 60 s (Supabase
-- re-reads the publication every 60 s), which catches a publication changed by hand. Prune with realtime_prune every
-- minute or so; run realtime_presence_renew and realtime_presence_expire every 10 s or so (leases of 30 s).

-- The capture. SECURITY DEFINER: the writer (a request role) has no privilege on guestpass; search_path is empty and
-- every name qualified. Cheap by construction, and it never raises because of the row: no exception block on the
-- common path (a subtransaction per row would cost and would overflow the subtransaction cache of multi-row
-- statements); app_id is read through the JSON image and cast only when it is a canonical uuid
-- (guestpass.realtime_app_id: a text app_id holding anything else gives null). Only a row image over 256 KiB as
-- stored (rare) is converted under an exception block (guestpass.realtime_image), so that an image jsonb cannot hold
-- (program_limit_exceeded past 255 MB) leaves that image null instead of failing the write; the server answers such a
-- change with Realtime's "Error 413". The stored size may be compressed: lz4 shrinks at most about 255 times and the
-- JSON of a value is at most about twice its text (bytea as hex), so an image under 256 KiB stored is under 130 MB of
-- JSON.
-- Which triggers (guestpass.realtime_capture_triggers decides, realtime_sync installs). An ordinary table gets one
-- trigger per published event:
--     guestpass_realtime_capture_insert  AFTER INSERT REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
--     guestpass_realtime_capture_delete  AFTER DELETE REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
--     guestpass_realtime_capture         AFTER UPDATE FOR EACH ROW
-- A statement trigger (realtime_capture_statement) logs every row of its statement with one INSERT … SELECT from the
-- transition table, in the order the statement wrote them. UPDATE keeps the row trigger (realtime_capture), which has
-- the old and the new row together: a statement trigger would have to pair the rows of two transition tables by
-- their order, which PostgreSQL does not promise. A partitioned table, a partition and a table with inheritance
-- parents or children get the row trigger alone, for every published event: a statement trigger fires only on the
-- table a statement names, so a partition's would miss the rows written through its parent, and a parent's
-- transition table holds its children's rows in the parent's columns. A table that joins such a tree after the sync
-- (ATTACH PARTITION, INHERIT, a new child) gets the row trigger at the next sync (at most 60 s; migrate runs one after
-- every run); until then the rows written to it through its parent are not captured, and a new parent's DELETE
-- statement trigger logs the child rows deleted through it as its own.
-- Row or statement triggers, measured on this VM (2 cores shared with other work), these triggers against the row
-- trigger for every event that came before them. The capture's share of the backend's time (captured − uncaptured; as
-- the table owner, no RLS, statements in a loop, the fastest of 6 runs, a table like bench/realtime.sh's), row →
-- statement: a one-row INSERT 9.6 → 10.4 µs, UPDATE 12.5 → 12.8 µs (the row trigger both times), INSERT + UPDATE +
-- DELETE 34.0 → 37.2 µs; a ten-row INSERT 87.7 → 54.1 µs, a ten-row DELETE 103.6 → 72.0 µs; a DELETE that matches
-- nothing 0 → 4.4 µs (a statement trigger fires anyway, as on an INSERT … ON CONFLICT that only updates); a 100,000-row
-- INSERT 8.4 → 4.6 µs a row (2.7 uncaptured), a 100,000-row DELETE 8.4 → 4.5 µs a row (0.2 uncaptured).
-- bench/realtime.sh, captured / uncaptured tps of the same run, each run (request frame, 8 clients, 4 rounds of 5 s,
-- the VM's load 3 to 8 from other work), row → statement. Durable (fsync on): insert+update+delete 0.82 0.82 0.83 0.81
-- 0.83 0.83 → 0.87 0.82 0.79 0.78 0.79; one-row insert 0.76 0.86 0.90 0.76 0.92 0.85 → 0.79 0.89 0.88 0.89 0.87;
-- ten-row insert 0.79 0.78 0.81 0.75 0.76 0.78 → 0.75 0.82 0.80 0.84 0.78; ten-row insert then ten-row delete 0.68 0.72
-- 0.73 0.72 0.71 0.68 → 0.84 0.85 0.76 0.75 0.76. fsync off: 0.81 0.80 0.74 → 0.79 0.75 0.73; 0.85 0.85 0.76 → 0.85
-- 0.85 0.83; 0.69 0.72 0.71 → 0.80 0.77 0.81; 0.69 0.69 0.67 → 0.68 0.72 0.71. A multi-row statement's rows cost about
-- 40 % less (one INSERT … SELECT for all of them instead of one SPI INSERT, executor start included, per row); a
-- one-row INSERT or DELETE about 1 to 2 µs more (the transition table, a larger plan), below the noise of a request:
-- statement triggers for INSERT and DELETE. What a row image still costs: one to_jsonb (2 µs) and the log row (heap and
-- two index entries, nextval).

-- app_id: the image's app_id when it is a canonical uuid; anything else (a text app_id holding something else, no such
-- column, no image) gives null, never an error. One expression, inlined into the capture's INSERT (no SET clause).
create or replace function guestpass.realtime_app_id(p_image jsonb)
    returns uuid
    language sql immutable parallel safe as $$
    select case when p_image ->> 'app_id' ~ '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$'
                then (p_image ->> 'app_id')::uuid
           end
$$;

comment on function guestpass.realtime_app_id(jsonb) is
    'GuestPass internal (the capture triggers): p_image''s app_id as a uuid when it is a canonical uuid (any case), '
    'else null; never raises. Inlinable: one expression, no SET clause.';

-- A large row's image: to_jsonb under an exception block (a subtransaction), null when jsonb cannot hold it. The
-- capture calls it only for a row over 256 KiB as stored.
create or replace function guestpass.realtime_image(p_row anyelement)
    returns jsonb
    language plpgsql stable set search_path = '' as $$
begin
    return pg_catalog.to_jsonb(p_row);
exception when others then
    return null;
end
$$;

comment on function guestpass.realtime_image(anyelement) is
    'GuestPass internal (the capture triggers, for rows over 256 KiB as stored): to_jsonb(p_row), or null when it '
    'fails (an image over 255 MB as JSON).';

-- The row trigger: UPDATE on an ordinary table, every published event on a table in a partition or inheritance tree.
-- NEW and OLD are null where the operation has none (PostgreSQL 11+).
create or replace function guestpass.realtime_capture()
    returns trigger
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_record jsonb;
    v_old jsonb;
begin
    if pg_catalog.pg_column_size(NEW) > 262144 or pg_catalog.pg_column_size(OLD) > 262144 then
        -- Rare: a large row. jsonb holds at most 255 MB; an image it cannot hold stays null.
        v_record := guestpass.realtime_image(NEW);
        v_old := guestpass.realtime_image(OLD);
    else
        v_record := pg_catalog.to_jsonb(NEW);
        v_old := pg_catalog.to_jsonb(OLD);
    end if;
    insert into guestpass.realtime_changes (kind, schema_name, table_name, app_id, record, old_record)
    values (
        TG_OP::guestpass.realtime_kind, TG_TABLE_SCHEMA, TG_TABLE_NAME,
        guestpass.realtime_app_id(coalesce(v_record, v_old)), v_record, v_old
    );
    return null;
end
$$;

comment on function guestpass.realtime_capture() is
    'GuestPass internal: the row trigger guestpass_realtime_capture (AFTER … FOR EACH ROW) that '
    'guestpass_server.realtime_sync() puts on each table of the supabase_realtime publication, for UPDATE (and for '
    'every published event on a partitioned table, a partition or a table with inheritance parents or children): one '
    'row in guestpass.realtime_changes per changed row (kind = TG_OP, schema and table, record = the new row and '
    'old_record = the full old row as JSON, app_id = the row''s app_id when it is a uuid, else null). Never refuses '
    'a write because of the row: a row image jsonb cannot hold (over 255 MB) is captured as null.';

-- The statement triggers: all the rows of one INSERT (new_rows) or one DELETE (old_rows) in one INSERT … SELECT, in
-- the transition table's order (the order the statement wrote them; the sequence numbers them as they are inserted).
-- The images are built in a subquery kept apart (offset 0), so each row is converted once. A transition table's large
-- values are whole (an inserted row's as written, a deleted row's fetched and decompressed), so the 256 KiB test sees
-- about the row's full size: stricter than the row trigger's, which may see its compressed size. A statement that
-- writes no row (a DELETE that matches nothing, an INSERT … ON CONFLICT that only updates) still fires it, and logs
-- nothing.
create or replace function guestpass.realtime_capture_statement()
    returns trigger
    language plpgsql volatile security definer set search_path = '' as $$
begin
    if TG_OP = 'INSERT' then
        insert into guestpass.realtime_changes (kind, schema_name, table_name, app_id, record)
        select 'INSERT', TG_TABLE_SCHEMA, TG_TABLE_NAME, guestpass.realtime_app_id(i.image), i.image
        from (
            select case when pg_catalog.pg_column_size(r) > 262144 then guestpass.realtime_image(r)
                        else pg_catalog.to_jsonb(r)
                   end as image
            from new_rows as r
            offset 0
        ) as i;
    else
        insert into guestpass.realtime_changes (kind, schema_name, table_name, app_id, old_record)
        select 'DELETE', TG_TABLE_SCHEMA, TG_TABLE_NAME, guestpass.realtime_app_id(i.image), i.image
        from (
            select case when pg_catalog.pg_column_size(r) > 262144 then guestpass.realtime_image(r)
                        else pg_catalog.to_jsonb(r)
                   end as image
            from old_rows as r
            offset 0
        ) as i;
    end if;
    return null;
end
$$;

comment on function guestpass.realtime_capture_statement() is
    'GuestPass internal: the statement triggers guestpass_realtime_capture_insert (AFTER INSERT REFERENCING NEW TABLE '
    'AS new_rows) and guestpass_realtime_capture_delete (AFTER DELETE REFERENCING OLD TABLE AS old_rows, FOR EACH '
    'STATEMENT) that guestpass_server.realtime_sync() puts on each ordinary table of the supabase_realtime '
    'publication: one row in guestpass.realtime_changes per inserted or deleted row, in the statement''s order '
    '(record = the new row, or old_record = the full old row, as JSON; app_id = the row''s app_id when it is a uuid, '
    'else null). Never refuses a write because of a row: an image jsonb cannot hold (over 255 MB) is captured as null.';

-- What realtime_sync compares, one row per table and capture trigger: every trigger a published table should carry
-- (wanted: the table is in supabase_realtime, outside GuestPass's own schemas, and the publication publishes at least
-- one of insert, update, delete) or carries (present: one of the three names; clones on partitions are not counted:
-- they follow their root), whether it is current (present as wanted: its events, row or statement, transition table
-- and function, not disabled), and the statement that creates it as wanted.
create or replace function guestpass.realtime_capture_triggers()
    returns table (table_oid oid, trigger_name name, wanted boolean, current boolean, definition text)
    language sql stable as $$
    with publication as (
        select p.pubinsert, p.pubupdate, p.pubdelete,
               pg_catalog.concat_ws(' or ', case when p.pubinsert then 'insert' end,
                                    case when p.pubupdate then 'update' end, case when p.pubdelete then 'delete' end)
                   as events
        from pg_catalog.pg_publication as p
        where p.pubname = 'supabase_realtime' and (p.pubinsert or p.pubupdate or p.pubdelete)
    ),
    published as (
        -- by_statement: an ordinary table in no partition or inheritance tree.
        select c.oid,
               c.relkind = 'r' and not c.relispartition
               and not exists (select from pg_catalog.pg_inherits as i where c.oid in (i.inhrelid, i.inhparent))
                   as by_statement
        from pg_catalog.pg_publication_tables as pt
        join pg_catalog.pg_namespace as n on n.nspname = pt.schemaname
        join pg_catalog.pg_class as c on c.relnamespace = n.oid and c.relname = pt.tablename
        where pt.pubname = 'supabase_realtime'
          and pt.schemaname not in ('guestpass', 'guestpass_server', 'guestpass_migrations', 'auth')
    ),
    wanted as (
        -- tgtype: ROW (1) | INSERT (4) | DELETE (8) | UPDATE (16); AFTER is 0.
        select p.oid, w.name, w.tgtype, w.events, w.old_table, w.new_table, w.function
        from published as p
        cross join publication as u
        cross join lateral (values
            ('guestpass_realtime_capture_insert'::name, 4, 'insert', null::name, 'new_rows'::name,
             'guestpass.realtime_capture_statement()'::pg_catalog.regprocedure, p.by_statement and u.pubinsert),
            ('guestpass_realtime_capture_delete'::name, 8, 'delete', 'old_rows'::name, null::name,
             'guestpass.realtime_capture_statement()'::pg_catalog.regprocedure, p.by_statement and u.pubdelete),
            ('guestpass_realtime_capture'::name, 1 | 16, 'update', null::name, null::name,
             'guestpass.realtime_capture()'::pg_catalog.regprocedure, p.by_statement and u.pubupdate),
            ('guestpass_realtime_capture'::name,
             1 | (case when u.pubinsert then 4 else 0 end) | (case when u.pubdelete then 8 else 0 end)
               | (case when u.pubupdate then 16 else 0 end),
             u.events, null::name, null::name,
             'guestpass.realtime_capture()'::pg_catalog.regprocedure, not p.by_statement)
        ) as w (name, tgtype, events, old_table, new_table, function, wanted)
        where w.wanted
    ),
    present as (
        select t.tgrelid as oid, t.tgname as name, t.tgtype, t.tgoldtable, t.tgnewtable, t.tgfoid, t.tgenabled
        from pg_catalog.pg_trigger as t
        where t.tgname in ('guestpass_realtime_capture', 'guestpass_realtime_capture_insert',
                           'guestpass_realtime_capture_delete')
          and t.tgparentid = 0
    )
    select coalesce(w.oid, p.oid), coalesce(w.name, p.name), w.oid is not null,
           coalesce(p.tgtype = w.tgtype and p.tgfoid = w.function and p.tgenabled <> 'D'
                    and p.tgoldtable is not distinct from w.old_table and p.tgnewtable is not distinct from w.new_table,
                    false),
           case when w.oid is not null then pg_catalog.format(
               'create or replace trigger %I after %s on %s%s for each %s execute function %s',
               w.name, w.events, w.oid::pg_catalog.regclass,
               case when w.new_table is not null then pg_catalog.format(' referencing new table as %I', w.new_table)
                    when w.old_table is not null then pg_catalog.format(' referencing old table as %I', w.old_table)
                    else ''
               end,
               case when w.tgtype & 1 = 1 then 'row' else 'statement' end, w.function
           ) end
    from wanted as w
    full join present as p on p.oid = w.oid and p.name = w.name
$$;

comment on function guestpass.realtime_capture_triggers() is
    'GuestPass internal (realtime_sync): one row per table and capture trigger (guestpass_realtime_capture, '
    '_insert, _delete) that a table published in supabase_realtime should carry (wanted; GuestPass''s own schemas '
    'never) or carries (present); current when present as wanted (events, row or statement, transition table, '
    'function, enabled); definition: the create or replace trigger statement of a wanted one.';

-- Which tables are captured. Idempotent; changes nothing (and takes no table lock) when the triggers already match the
-- publication. Runs serialised (an advisory transaction lock, waited for up to 30 s: migrate and every server replica
-- call it), reads the catalog after taking the lock, and changes each table in its own subtransaction with a lock
-- timeout of 2 s (a trigger change locks out the table's writers while it waits): a table that cannot be locked in
-- time (a long transaction holds it) or changed is skipped with a WARNING, left out of the result, and tried again on
-- the next call; the other tables are still synchronised. A table's triggers change together (its subtransaction),
-- so a writer sees either the old set or the new one. The lock timeouts are set with set_config and the caller's
-- own is put back before returning (a SET clause would make it the one function of guestpass_server with more than an
-- empty search_path, 05_guest_identity). The triggers' events are the publication's (publish = 'insert, update,
-- delete' by default; `alter publication … set (publish = …)` narrows them). Tables of GuestPass's own schemas are
-- never captured (a FOR ALL TABLES publication includes them). A partitioned table published with
-- publish_via_partition_root gets the row trigger on its root (cloned onto every partition, which report their own
-- names); otherwise the publication lists the partitions themselves, and each gets the row trigger.
create or replace function guestpass_server.realtime_sync()
    returns table (schema_name text, table_name text)
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_lock_timeout text := pg_catalog.current_setting('lock_timeout');
    v_table record;
    v_statement text;
begin
    -- "Realtime" in ASCII: one sync at a time, then a fresh look at the catalog.
    perform pg_catalog.set_config('lock_timeout', '30s', true);
    perform pg_catalog.pg_advisory_xact_lock(5937258802195295589);
    perform pg_catalog.set_config('lock_timeout', '2s', true);

    for v_table in
        -- Each table whose triggers differ from the wanted ones: create (or replace) the wanted ones that are not
        -- current, drop the unwanted ones.
        select t.table_oid::pg_catalog.regclass as name, pg_catalog.bool_or(t.wanted) as wanted,
               pg_catalog.array_agg(
                   case when t.wanted then t.definition
                        else pg_catalog.format('drop trigger if exists %I on %s', t.trigger_name,
                                               t.table_oid::pg_catalog.regclass)
                   end
                   order by t.trigger_name
               ) filter (where not t.current) as statements
        from guestpass.realtime_capture_triggers() as t
        group by t.table_oid
        having not pg_catalog.bool_and(t.current)
    loop
        begin
            foreach v_statement in array v_table.statements loop
                execute v_statement;
            end loop;
        exception when others then
            raise warning 'realtime: could not % capture on %: %',
                case when v_table.wanted then 'install' else 'remove' end, v_table.name, sqlerrm
                using errcode = '01000';
        end;
    end loop;
    perform pg_catalog.set_config('lock_timeout', v_lock_timeout, true);

    return query
        select n.nspname::text, c.relname::text
        from guestpass.realtime_capture_triggers() as t
        join pg_catalog.pg_class as c on c.oid = t.table_oid
        join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
        group by n.nspname, c.relname
        having pg_catalog.bool_or(t.wanted) and pg_catalog.bool_and(t.current)
        order by 1, 2;
end
$$;

comment on function guestpass_server.realtime_sync() is
    'GuestPass server (as guestpass_authenticator; migrate runs it too): puts the capture triggers on every table of '
    'the supabase_realtime publication, for the events it publishes (guestpass_realtime_capture_insert and _delete, '
    'statement triggers with transition tables, and the row trigger guestpass_realtime_capture for UPDATE; the row '
    'trigger alone, for every event, on partitioned tables, partitions and tables with inheritance), and removes them '
    'from tables no longer published. Idempotent, serialised (waits up to 30 s for another sync), no table lock when '
    'nothing changes; a table it cannot lock within 2 s is skipped with a WARNING. Returns the captured tables '
    '(schema_name, table_name), in order: subscribe only to these.';

-- The poll: one statement (a SQL function reads with its caller's snapshot), so the snapshot it returns is the one
-- its rows were read with. Always at least one row: with no new change (or p_previous null, the first poll), one row
-- carrying only the snapshot, its other columns null; otherwise one row per change, in seq order, each carrying the
-- same snapshot. Pass that snapshot as p_previous to the next poll. Call it in a transaction of its own that has
-- written nothing (autocommit, as the login role): a transaction's own uncommitted rows are visible to it and would
-- come in every poll it makes.
create or replace function guestpass_server.realtime_poll(p_previous pg_snapshot)
    returns table (
        snapshot text, seq bigint, kind text, schema_name text, table_name text, app_id uuid, topic text, event text,
        record text, old_record text, origin uuid, commit_timestamp text
    )
    language sql stable security definer set search_path = '' as $$
    select s.snapshot::text, c.seq, c.kind::text, c.schema_name, c.table_name, c.app_id, c.topic, c.event,
           c.record::text, c.old_record::text, c.origin,
           pg_catalog.to_char(pg_catalog.timezone('UTC', c.at), 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    from (select pg_catalog.pg_current_snapshot() as snapshot) as s
    left join guestpass.realtime_changes as c
        on p_previous is not null
       and c.xid >= pg_catalog.pg_snapshot_xmin(p_previous)
       and not pg_catalog.pg_visible_in_snapshot(c.xid, p_previous)
    order by c.seq
$$;

comment on function guestpass_server.realtime_poll(pg_snapshot) is
    'GuestPass server (as guestpass_authenticator, on the primary): the changes committed since the snapshot '
    'p_previous, in seq order, each row carrying the new snapshot (pass it as the next p_previous); with none, or with '
    'p_previous null (a replica''s first poll), one row with only the snapshot (seq null). Every committed '
    'transaction''s rows come in exactly one poll of a chain, an aborted one''s never. record and old_record are JSON '
    'text; commit_timestamp is the time the row was written, UTC, e.g. 2025-01-31T10:00:00.123Z.';

-- The prune. A row may go once every poller has had it: its transaction must have ended at least p_retention ago,
-- not merely have started then (a long transaction's rows are old when it commits) — being below the current
-- snapshot's xmin is not enough, since pollers may not have polled since the commit. Each call records the xmin of
-- its snapshot (guestpass.realtime_horizons) and deletes the rows older than p_retention whose transaction is below
-- the newest xmin recorded at least p_retention ago: those ended before that mark, so every replica that polled in
-- the last p_retention has delivered them. The first call deletes nothing (no mark is old enough); call it every
-- minute or so with a retention well above the longest gap between two polls of a replica (e.g. 5 minutes). Time is
-- guestpass.clock() (tests move it).
create or replace function guestpass_server.realtime_prune(p_retention interval)
    returns bigint
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_now timestamptz := guestpass.clock();
    v_mark timestamptz;
    v_horizon xid8;
    v_count bigint;
begin
    if p_retention is null or p_retention < interval '0' then
        raise exception using errcode = '22023', message = 'the retention must be a positive interval';
    end if;
    insert into guestpass.realtime_horizons (taken_at, horizon)
    values (v_now, pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()))
    on conflict on constraint realtime_horizons_pkey do nothing;

    select h.taken_at, h.horizon into v_mark, v_horizon
    from guestpass.realtime_horizons as h
    where h.taken_at <= v_now - p_retention
    order by h.taken_at desc
    limit 1;
    if v_mark is null then
        return 0;
    end if;
    delete from guestpass.realtime_horizons as h where h.taken_at < v_mark;

    delete from guestpass.realtime_changes as c
    where c.xid < v_horizon and c.at < v_now - p_retention;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

comment on function guestpass_server.realtime_prune(interval) is
    'GuestPass server (as guestpass_authenticator): deletes the change-log rows older than p_retention whose '
    'transaction had ended at least p_retention ago (below the snapshot xmin recorded by a prune call that long ago), '
    'so no replica that polls more often than p_retention misses one; returns how many. Records its own xmin for '
    'later calls: the first call deletes nothing. 22023 for a null or negative retention.';

-- Broadcast across replicas: the sending replica delivers to its own sockets at once and writes the message here;
-- every replica's poll delivers it to its sockets of that app and topic, and the sender skips rows whose origin is
-- itself. The payload is stored as given (the server has parsed it strictly; a binary broadcast's payload needs a JSON
-- form chosen by the server).
create or replace function guestpass_server.realtime_broadcast(
    p_app uuid, p_topic text, p_event text, p_payload jsonb, p_origin uuid
)
    returns void
    language sql volatile security definer set search_path = '' as $$
    insert into guestpass.realtime_changes (kind, app_id, topic, event, record, origin)
    values ('BROADCAST', p_app, p_topic, p_event, p_payload, p_origin)
$$;

comment on function guestpass_server.realtime_broadcast(uuid, text, text, jsonb, uuid) is
    'GuestPass server (as guestpass_authenticator): logs a broadcast of p_event with p_payload on p_topic of app '
    'p_app, sent by server replica p_origin, for every replica''s poll to deliver (the sender skips its own). p_app, '
    'p_topic and p_event must not be null.';

-- Presence. The table guestpass.realtime_presence is the state; every change to it logs a PRESENCE row whose record
-- is Phoenix's presence_diff payload, {"joins": {key: {"metas": [meta…]}}, "leaves": {…}}, each meta carrying its
-- phx_ref, with the topic and app, so every replica's poll pushes the diff to its sockets on that topic. A meta
-- tracked again under the same phx_ref with another payload is logged as a join only: the clients (realtime-js,
-- realtime-py, supabase-swift) replace a meta of the same ref on a join, and apply leaves after joins, so a leave of
-- that ref in the same diff would remove the new meta. A client that joins reads realtime_presence_state and then
-- applies diffs from the polls; a diff it already saw in the state is harmless (same ref joined again, or a leave of
-- a ref it does not hold). phx_ref is the server's: unique for each (app, topic, key), e.g. a UUID.

-- A meta with its phx_ref, as Phoenix sends it. A payload that is not a JSON object (Realtime tracks objects) is
-- replaced by the ref alone.
create or replace function guestpass.realtime_presence_meta(p_meta jsonb, p_ref text)
    returns jsonb
    language sql immutable as $$
    select case when pg_catalog.jsonb_typeof(p_meta) = 'object'
                then p_meta || pg_catalog.jsonb_build_object('phx_ref', p_ref)
                else pg_catalog.jsonb_build_object('phx_ref', p_ref)
           end
$$;

comment on function guestpass.realtime_presence_meta(jsonb, text) is
    'GuestPass internal: a presence meta as sent to clients: p_meta (a JSON object) with "phx_ref": p_ref; a meta that '
    'is not an object becomes {"phx_ref": p_ref}. Inlinable: one expression, no SET clause.';

-- Track: replica p_replica holds, for its socket, the meta p_meta of key p_key on p_topic of app p_app, under p_ref,
-- leased for p_lease. A new (app, topic, key, ref), or a new payload for one, logs a join; the same payload again only
-- renews the lease and logs nothing (as Supabase: the same payload twice is a no-op). Returns whether a join was logged.
create or replace function guestpass_server.realtime_presence_track(
    p_app uuid, p_topic text, p_key text, p_replica uuid, p_ref text, p_meta jsonb,
    p_lease interval default interval '30 seconds'
)
    returns boolean
    language plpgsql volatile security definer set search_path = '' as $$
declare
    v_until timestamptz := guestpass.clock() + coalesce(p_lease, interval '30 seconds');
begin
    update guestpass.realtime_presence as p
    set replica = p_replica, lease_until = v_until
    where p.app_id = p_app and p.topic = p_topic and p.presence_key = p_key and p.phx_ref = p_ref
      and p.meta = coalesce(p_meta, '{}');
    if found then
        return false;
    end if;
    insert into guestpass.realtime_presence as p (app_id, topic, presence_key, phx_ref, replica, meta, lease_until)
    values (p_app, p_topic, p_key, p_ref, p_replica, coalesce(p_meta, '{}'), v_until)
    on conflict on constraint realtime_presence_pkey do update
        set replica = excluded.replica, meta = excluded.meta, lease_until = excluded.lease_until;
    insert into guestpass.realtime_changes (kind, app_id, topic, record, origin)
    values (
        'PRESENCE', p_app, p_topic,
        pg_catalog.jsonb_build_object(
            'joins', pg_catalog.jsonb_build_object(p_key, pg_catalog.jsonb_build_object(
                'metas', pg_catalog.jsonb_build_array(guestpass.realtime_presence_meta(coalesce(p_meta, '{}'), p_ref))
            )),
            'leaves', '{}'::jsonb
        ),
        p_replica
    );
    return true;
end
$$;

comment on function guestpass_server.realtime_presence_track(uuid, text, text, uuid, text, jsonb, interval) is
    'GuestPass server (as guestpass_authenticator): replica p_replica tracks meta p_meta (a JSON object) of key p_key '
    'on topic p_topic of app p_app under phx_ref p_ref, leased for p_lease (default 30 s; renew with '
    'realtime_presence_renew). Logs a PRESENCE join {"joins":{key:{"metas":[meta + phx_ref]}},"leaves":{}} with '
    'origin p_replica and returns true, unless that ref already holds that payload (then only the lease is renewed: '
    'false).';

-- Untrack: the replica's own meta only (another replica's ref is left alone). Returns whether it was tracked.
create or replace function guestpass_server.realtime_presence_untrack(
    p_app uuid, p_topic text, p_key text, p_replica uuid, p_ref text
)
    returns boolean
    language sql volatile security definer set search_path = '' as $$
    with gone as (
        delete from guestpass.realtime_presence as p
        where p.app_id = p_app and p.topic = p_topic and p.presence_key = p_key and p.phx_ref = p_ref
          and p.replica = p_replica
        returning p.meta, p.phx_ref
    ),
    logged as (
        insert into guestpass.realtime_changes (kind, app_id, topic, record, origin)
        select 'PRESENCE', p_app, p_topic,
               pg_catalog.jsonb_build_object(
                   'joins', '{}'::jsonb,
                   'leaves', pg_catalog.jsonb_build_object(p_key, pg_catalog.jsonb_build_object(
                       'metas', pg_catalog.jsonb_build_array(guestpass.realtime_presence_meta(g.meta, g.phx_ref))
                   ))
               ),
               p_replica
        from gone as g
        returning 1
    )
    select exists (select 1 from logged)
$$;

comment on function guestpass_server.realtime_presence_untrack(uuid, text, text, uuid, text) is
    'GuestPass server (as guestpass_authenticator): replica p_replica stops tracking the meta of ref p_ref (key p_key, '
    'topic p_topic, app p_app); logs a PRESENCE leave {"joins":{},"leaves":{key:{"metas":[meta + phx_ref]}}} with '
    'origin p_replica and returns true, or returns false when the replica held no such meta.';

-- A topic's state, for presence_state after a join: every tracked meta (leases past due included: they are present
-- until realtime_presence_expire logs their leave), by key, oldest first. Build {key: {"metas": [meta…]}} from it.
create or replace function guestpass_server.realtime_presence_state(p_app uuid, p_topic text)
    returns table (presence_key text, phx_ref text, meta text)
    language sql stable security definer set search_path = '' as $$
    select p.presence_key, p.phx_ref, guestpass.realtime_presence_meta(p.meta, p.phx_ref)::text
    from guestpass.realtime_presence as p
    where p.app_id = p_app and p.topic = p_topic
    order by p.presence_key, p.tracked_at, p.phx_ref
$$;

comment on function guestpass_server.realtime_presence_state(uuid, text) is
    'GuestPass server (as guestpass_authenticator): every meta tracked on topic p_topic of app p_app, by presence '
    'key and then oldest first: (presence_key, phx_ref, meta) with meta the JSON text of the meta with its phx_ref.';

-- Renew every lease of a replica in one statement. Returns how many it renewed: fewer than the replica holds means
-- some expired (the replica stalled past its lease and another replica logged their leaves) or were lost in a crash
-- of the database (the table is unlogged): track those again.
create or replace function guestpass_server.realtime_presence_renew(p_replica uuid, p_lease interval)
    returns integer
    language sql volatile security definer set search_path = '' as $$
    with renewed as (
        update guestpass.realtime_presence as p
        set lease_until = guestpass.clock() + p_lease
        where p.replica = p_replica
        returning 1
    )
    select count(*)::integer from renewed
$$;

comment on function guestpass_server.realtime_presence_renew(uuid, interval) is
    'GuestPass server (as guestpass_authenticator): extends every lease of replica p_replica to now + p_lease and '
    'returns how many; fewer than the replica tracks means the others expired or were lost: track them again.';

-- Expire: delete every lease past due (its replica died or stalled) and log, per app and topic, one PRESENCE diff
-- with their leaves. Several replicas may run it at once: DELETE … RETURNING hands each row to exactly one of them
-- (the others wait for its row lock, then find the row gone, or renewed and no longer past due), so each leave is
-- logged once. Origin null: every replica delivers it, the caller included. Returns the metas removed.
create or replace function guestpass_server.realtime_presence_expire()
    returns table (app_id uuid, topic text, presence_key text, phx_ref text, replica uuid)
    language sql volatile security definer set search_path = '' as $$
    with gone as (
        delete from guestpass.realtime_presence as p
        where p.lease_until < guestpass.clock()
        returning p.app_id, p.topic, p.presence_key, p.phx_ref, p.replica, p.meta, p.tracked_at
    ),
    by_key as (
        select g.app_id, g.topic, g.presence_key,
               pg_catalog.jsonb_agg(guestpass.realtime_presence_meta(g.meta, g.phx_ref) order by g.tracked_at, g.phx_ref)
                   as metas
        from gone as g
        group by g.app_id, g.topic, g.presence_key
    ),
    logged as (
        insert into guestpass.realtime_changes (kind, app_id, topic, record)
        select 'PRESENCE', k.app_id, k.topic,
               pg_catalog.jsonb_build_object(
                   'joins', '{}'::jsonb,
                   'leaves', pg_catalog.jsonb_object_agg(k.presence_key, pg_catalog.jsonb_build_object('metas', k.metas))
               )
        from by_key as k
        group by k.app_id, k.topic
        returning 1
    )
    select g.app_id, g.topic, g.presence_key, g.phx_ref, g.replica
    from gone as g
    order by g.app_id, g.topic, g.presence_key, g.phx_ref
$$;

comment on function guestpass_server.realtime_presence_expire() is
    'GuestPass server (as guestpass_authenticator): deletes every presence lease past due and logs one PRESENCE '
    'leave diff per app and topic (origin null); returns the removed metas (app_id, topic, presence_key, phx_ref, '
    'replica). Safe on several replicas at once: each lease is removed, and its leave logged, by exactly one call.';

-- Session liveness for the server's periodic check of signed-in subscribers: a channel whose session was signed out,
-- ended by a device revocation (revoke_device sets the sessions' revoked_at) or deleted with its user is closed.
create or replace function guestpass_server.realtime_live_sessions(p_sessions uuid[])
    returns table (session_id uuid)
    language sql stable security definer set search_path = '' as $$
    select s.id
    from guestpass.sessions as s
    where s.id = any (p_sessions) and s.revoked_at is null
$$;

comment on function guestpass_server.realtime_live_sessions(uuid[]) is
    'GuestPass server (as guestpass_authenticator): of the sessions p_sessions, the ones still live (not revoked, '
    'not deleted with their user). Realtime closes the channels of the others.';

-- Row-level security, on and forced for the tables of this area (0010_realtime.sql): a role, the tables' owner
-- included, sees only the rows a policy gives it; a table with no policy for a role shows it none.
alter table guestpass.realtime_changes enable row level security, force row level security;
alter table guestpass.realtime_horizons enable row level security, force row level security;
alter table guestpass.realtime_presence enable row level security, force row level security;

-- Grants: no function of this file is PUBLIC's; the roles below are the only callers of each.
revoke all on function guestpass.realtime_app_id(jsonb), guestpass.realtime_image(anyelement),
    guestpass.realtime_capture(), guestpass.realtime_capture_statement(), guestpass.realtime_capture_triggers(),
    guestpass_server.realtime_sync(), guestpass_server.realtime_poll(pg_snapshot),
    guestpass_server.realtime_prune(interval), guestpass_server.realtime_broadcast(uuid, text, text, jsonb, uuid),
    guestpass.realtime_presence_meta(jsonb, text),
    guestpass_server.realtime_presence_track(uuid, text, text, uuid, text, jsonb, interval),
    guestpass_server.realtime_presence_untrack(uuid, text, text, uuid, text),
    guestpass_server.realtime_presence_state(uuid, text), guestpass_server.realtime_presence_renew(uuid, interval),
    guestpass_server.realtime_presence_expire(), guestpass_server.realtime_live_sessions(uuid[]) from public;
grant execute on function guestpass_server.realtime_sync(), guestpass_server.realtime_poll(pg_snapshot),
    guestpass_server.realtime_prune(interval), guestpass_server.realtime_broadcast(uuid, text, text, jsonb, uuid),
    guestpass_server.realtime_presence_track(uuid, text, text, uuid, text, jsonb, interval),
    guestpass_server.realtime_presence_untrack(uuid, text, text, uuid, text),
    guestpass_server.realtime_presence_state(uuid, text), guestpass_server.realtime_presence_renew(uuid, interval),
    guestpass_server.realtime_presence_expire(), guestpass_server.realtime_live_sessions(uuid[])
    to guestpass_authenticator;
