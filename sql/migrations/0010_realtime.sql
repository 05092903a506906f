-- realtime: the supabase_realtime publication, the change log every server replica polls, presence leases
-- Versioned: applied once, never edited after a release. The design (capture by trigger, the snapshot cursor, pruning,
-- presence across replicas) and the functions live in repeatable/13_realtime.sql.
--
-- Nothing here uses logical decoding: no replication slot, no wal_level = logical, no REPLICATION role. The
-- publication is only the Supabase way of saying which tables a subscriber may listen to; the capture trigger
-- (guestpass.realtime_capture, installed by guestpass_server.realtime_sync on exactly the published tables) writes each
-- change into guestpass.realtime_changes, and every server replica polls that table with a snapshot cursor.

-- The publication apps opt tables into, as on Supabase: `alter publication supabase_realtime add table public.t;`.
-- Created empty and publishing insert, update, delete and truncate (PostgreSQL's default, Supabase's too). A
-- publication without a replication slot costs nothing on any write, with one exception PostgreSQL enforces whatever
-- wal_level is: UPDATE and DELETE on a published table need a replica identity (its primary key, the default), or they
-- fail with 55000 "cannot update table … because it does not have a replica identity and publishes updates". Realtime
-- needs a primary key anyway (Supabase answers "Error 400: no primary key"). Publications are per database; created
-- only when missing, so a database that already has Supabase's keeps it as it is.
do $$
begin
    if not exists (select 1 from pg_catalog.pg_publication where pubname = 'supabase_realtime') then
        create publication supabase_realtime;
    end if;
end
$$;

comment on publication supabase_realtime is
    'GuestPass: the tables Realtime captures (alter publication supabase_realtime add table …; then '
    'guestpass_server.realtime_sync(), which migrate and the servers run). No replication slot ever reads it.';

-- The change log. UNLOGGED: no WAL for the extra row of every captured write, and the protocol has no replay, so losing
-- the log in a crash (PostgreSQL empties unlogged tables then) loses only what had not yet been polled, like a
-- restart of Supabase's temporary slot. It exists only on the primary (a standby cannot read an unlogged table): polls
-- never go to the read replica. Rows are written by the capture trigger (INSERT, UPDATE, DELETE of a published table,
-- in the writer's transaction) and by the server (BROADCAST, PRESENCE), read by guestpass_server.realtime_poll and
-- deleted by guestpass_server.realtime_prune.
--
-- seq orders rows as they were inserted (the identity's sequence is unlogged too, and caches nothing: a per-backend
-- cache would hand out numbers out of insertion order across backends). xid is the writing transaction's top-level
-- id, the poll's cursor. at is the insert's clock time, sent as commit_timestamp (PostgreSQL keeps no commit time
-- without track_commit_timestamp; a long transaction's rows carry the time they were written, not committed).
-- No CHECK constraint: PostgreSQL prepares a table's check expressions again at every executor start, which for the
-- capture trigger's one-row INSERT is every captured row (measured: 3 µs a row for `kind in (…)`, 8 µs for a CASE on
-- the row's shape, against 10 µs for the whole capture without them). kind is an enum instead, checked by its input
-- function; the shape is kept by the only writers, the capture trigger and the guestpass_server functions of
-- repeatable/13_realtime.sql: a table change has schema_name and table_name and no topic or event; a BROADCAST has
-- app_id, topic and event; a PRESENCE diff app_id and topic, no event.
create type guestpass.realtime_kind as enum ('INSERT', 'UPDATE', 'DELETE', 'BROADCAST', 'PRESENCE');

comment on type guestpass.realtime_kind is
    'GuestPass: what a row of guestpass.realtime_changes is: a table change (INSERT, UPDATE, DELETE, as TG_OP), a '
    'BROADCAST or a PRESENCE diff.';

create unlogged table guestpass.realtime_changes (
    seq bigint generated always as identity,
    xid xid8 not null default pg_current_xact_id(),
    kind guestpass.realtime_kind not null,
    schema_name text,
    table_name text,
    app_id uuid,
    topic text,
    event text,
    record jsonb,
    old_record jsonb,
    origin uuid,
    at timestamptz not null default clock_timestamp(),
    constraint realtime_changes_pkey primary key (seq)
);

comment on table guestpass.realtime_changes is
    'GuestPass: Realtime''s change log (unlogged, primary only). One row per captured INSERT, UPDATE or DELETE of a '
    'table in the supabase_realtime publication (record = the new row, old_record = the full old row, app_id = the '
    'row''s app_id when it is a uuid), per BROADCAST (record = the payload) and per PRESENCE diff (record = '
    '{"joins":…,"leaves":…}). Polled by guestpass_server.realtime_poll by transaction id, pruned by realtime_prune.';
comment on column guestpass.realtime_changes.xid is
    'GuestPass: the writing transaction''s top-level id (pg_current_xact_id()): the poll''s cursor.';
comment on column guestpass.realtime_changes.origin is
    'GuestPass: the server replica that wrote a BROADCAST or PRESENCE row (tracking and untracking), so that it can '
    'skip what it has already delivered to its own sockets; null for table changes and expired presences.';
comment on column guestpass.realtime_changes.at is
    'GuestPass: when the row was written (clock time), sent to subscribers as commit_timestamp.';

-- The poll reads xid >= the previous snapshot's xmin; the prune deletes xid < a horizon.
create index realtime_changes_xid_idx on guestpass.realtime_changes (xid);

-- The prune's horizons: each guestpass_server.realtime_prune call records the xmin of its snapshot, and deletes only
-- rows of transactions older than the xmin recorded at least the retention ago (so committed at least the retention
-- ago, whenever they started: a long transaction's rows are not pruned the moment it commits). Unlogged with the log.
create unlogged table guestpass.realtime_horizons (
    taken_at timestamptz not null,
    horizon xid8 not null,
    constraint realtime_horizons_pkey primary key (taken_at)
);

comment on table guestpass.realtime_horizons is
    'GuestPass: the snapshot xmin seen by each recent guestpass_server.realtime_prune call (taken_at, and horizon: its xmin). A '
    'transaction below an xmin taken at T had ended by T; the prune deletes log rows below the newest xmin taken at '
    'least the retention ago, and forgets older marks.';

-- Presence across server replicas. One row per tracked meta: the (app, topic, key) of Phoenix presence, the meta's
-- phx_ref (unique per track, made by the tracking replica), the replica that holds the socket, and its lease. Each
-- replica renews its own leases in one statement; an expired lease (its replica died or stalled) is deleted by
-- whichever replica runs the expiry first, with DELETE … RETURNING, so its leave is logged once. The table is the
-- presence state: a topic's state is its rows, and every insert, change and delete of a row logs a PRESENCE diff in
-- the same transaction. Unlogged (renewals write no WAL); after a crash the rows are gone and each replica's next
-- renewal reports fewer rows than it holds, so it tracks them again.
create unlogged table guestpass.realtime_presence (
    app_id uuid not null,
    topic text not null,
    presence_key text not null,
    phx_ref text not null,
    replica uuid not null,
    meta jsonb not null,
    tracked_at timestamptz not null default clock_timestamp(),
    lease_until timestamptz not null,
    constraint realtime_presence_pkey primary key (app_id, topic, presence_key, phx_ref)
);

comment on table guestpass.realtime_presence is
    'GuestPass: Realtime presence across server replicas: one tracked meta per row (app, topic, presence key, '
    'phx_ref), held by a replica until lease_until. Changed only through guestpass_server.realtime_presence_*, which '
    'log each join and leave as a PRESENCE row of guestpass.realtime_changes.';

-- Renewal by replica. lease_until has no index, so a renewal is a HOT update; the expiry scans the table (one row
-- per present client).
create index realtime_presence_replica_idx on guestpass.realtime_presence (replica);

