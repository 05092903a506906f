#!/usr/bin/env bash
# Realtime benchmarks.
#
#   ./bench/realtime.sh
#
# (1) Capture write cost: what the capture trigger (guestpass.realtime_capture, sql/migrations/repeatable/13_realtime.sql)
#     costs the writers of a table in the supabase_realtime publication. Two identical tables, public.bench_captured
#     (published, so realtime_sync puts the trigger on it) and public.bench_uncaptured (not published), both
#     `like public.readings including all` (sql/examples: uuid key, app_id and user_id defaulting to the verified
#     claims, kind, content jsonb, created_at, its checks and indexes; no foreign key), row-level security enabled and
#     forced, one policy for authenticated's own rows. pgbench writes them in
#     the request frame the server uses for a table write: one transaction, `BEGIN; set_config('role', 'authenticated',
#     true), set_config('request.jwt.claims', …, true); <statements>; COMMIT`, as the login role. Three cases, the same
#     SQL on both tables:
#       iud      insert one row (RETURNING id), update it, delete it: three captured rows per transaction
#       insert1  insert one row
#       insert10 insert ten rows in one statement
#       delete10 insert ten rows in one statement, then delete those ten in one statement: 20 captured rows per
#                transaction (the delete's share is delete10's cost less insert10's)
#     Each case runs BENCH_ROUNDS rounds of BENCH_DURATION / BENCH_ROUNDS seconds per table, alternating which table
#     goes first, so both see the same machine; tps = transactions / seconds summed over the rounds. Printed: the tps
#     of each table and the ratio captured / uncaptured (target ≥ 0.70; a ratio below it is reported, not an error).
#     BENCH_REALTIME_FRAME=bare runs the same statements as the table owner without the request frame (no role, no
#     claims, no row-level security: the trigger's cost against the least work a write can do).
# (2) Fan-out: 1,000 subscribers on this machine, changes/s delivered and the delay from the writer's INSERT to the
#     client (target: p99 ≤ 250 ms at 100 changes/s). Set-up in bench/realtime_fanout.sh, measurement in
#     bench/realtime_fanout.py (their headers say what and how). Two scenarios: per-user (1,000 guests, each subscribed
#     to its own readings with user_id=eq.<id>; pgbench inserts 100 readings/s of random guests: each change reaches
#     one socket) and shared (1,000 sockets of one guest, no filter; 10 readings/s: each change reaches every socket,
#     10,000 deliveries/s); each beside pgbench writing the same INSERT at the same rate into an unpublished copy of
#     public.readings, and for per-user a burst as fast as pgbench goes. Raw numbers under /tmp.
#
# Sets up everything itself and tears it down at exit (bench/lib.sh): a throwaway cluster in .pg/bench-realtime
# (durable: fsync and synchronous_commit on, as production runs; BENCH_DURABLE=0 for the test clusters' settings), a
# database, the core migrations and an app (`guestpass dev up`), then sql/examples (`guestpass migrate up --dir`).
#
# Environment: BENCH_DURATION (seconds per case and table, default 10), BENCH_ROUNDS (default 2), BENCH_CONNECTIONS
# (default 8), BENCH_THREADS (pgbench jobs, default 2), BENCH_REALTIME_FRAME (request | bare, default request),
# BENCH_SKIP_BUILD=1, BENCH_BIN=PATH (the capture half only migrates; the fan-out serves Realtime with it),
# BENCH_KEEP_CLUSTER=1, BENCH_DURABLE, BENCH_PG_CONF (bench/lib.sh); the fan-out's BENCH_RT_* and BENCH_PYTHON
# (bench/realtime_fanout.sh). Exit status 1 when a measurement is invalid (failed pgbench transactions, or a captured
# table whose change-log rows do not match the rows written, or an uncaptured one with any; a change the fan-out lost,
# duplicated or misdelivered, or a subscriber's socket closed by the server).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
TARGET=0.70 # captured / uncaptured tps
ROUNDS="${BENCH_ROUNDS:-2}"
if ! [[ "$ROUNDS" =~ ^[0-9]+$ ]] || [ "$ROUNDS" -lt 1 ] || [ "$ROUNDS" -gt "$DURATION" ]; then
  gp_die "BENCH_ROUNDS must be in 1...BENCH_DURATION"
fi
ROUND_SECONDS=$((DURATION / ROUNDS))
FRAME="${BENCH_REALTIME_FRAME:-request}"
[[ "$FRAME" =~ ^(request|bare)$ ]] || gp_die "BENCH_REALTIME_FRAME must be request or bare"

CASES=(iud insert1 insert10 delete10)
declare -A WHAT=(
  [iud]='insert one row, update it, delete it (3 captured rows per transaction)'
  [insert1]='insert one row'
  [insert10]='insert ten rows in one statement'
  [delete10]='insert ten rows in one statement, delete them in one statement (20 captured rows per transaction)'
)
declare -A ROWS_PER_TX=([iud]=3 [insert1]=1 [insert10]=10 [delete10]=20)
TABLES=(bench_captured bench_uncaptured)

bench_prepare_tools curl # pgbench; curl for the fan-out's server (bench_start_server)
bench_build
bench_begin "$ROOT/.pg/bench-realtime"
bench_create_database

# ---- the two tables, the publication, the trigger
bench_apply_examples
gp_log "creating public.bench_captured (published) and public.bench_uncaptured, both like public.readings"
psql_q "$SUPER_URL" >/dev/null <<'SQL'
create table public.bench_captured (like public.readings including all);
create table public.bench_uncaptured (like public.readings including all);
do $$
declare
    v_table text;
begin
    foreach v_table in array array['bench_captured', 'bench_uncaptured'] loop
        execute format('alter table public.%I enable row level security, force row level security', v_table);
        execute format('grant select, insert, update, delete on table public.%I to authenticated', v_table);
        execute format(
            'create policy %I on public.%I for all to authenticated '
            'using (user_id = (select auth.uid()) and app_id = (select auth.app_id())) '
            'with check (user_id = (select auth.uid()) and app_id = (select auth.app_id()))',
            v_table || '_own', v_table);
    end loop;
end
$$;
alter publication supabase_realtime add table public.bench_captured;
SQL
CAPTURED="$(psql_q "$SUPER_URL" -Atc "select string_agg(schema_name || '.' || table_name, ',') from guestpass_server.realtime_sync()")"
[[ ",$CAPTURED," == *,public.bench_captured,* && ",$CAPTURED," != *,public.bench_uncaptured,* ]] ||
  gp_die "realtime_sync captured '$CAPTURED': not public.bench_captured alone of the two"

# ---- the pgbench scripts: the same SQL on each table, in the request frame (or bare, as the owner)
USER_ID=00000000-0000-4000-8000-00000000be01
CLAIMS="{\"sub\":\"$USER_ID\",\"role\":\"authenticated\",\"app_id\":\"$APP_ID\"}"
for table in "${TABLES[@]}"; do
  for kind in "${CASES[@]}"; do
    {
      echo "BEGIN;"
      if [ "$FRAME" = request ]; then
        echo "SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claims', '$CLAIMS', true);"
      fi
      # Bare: the owner columns are written out (no claims to default them from).
      owner_cols="" owner_vals=""
      if [ "$FRAME" = bare ]; then owner_cols="app_id, user_id, " owner_vals="'$APP_ID', '$USER_ID', "; fi
      case "$kind" in
        iud)
          echo "INSERT INTO public.$table (${owner_cols}kind, content) VALUES (${owner_vals}'face', '{\"n\": 1}') RETURNING id \\gset"
          echo "UPDATE public.$table SET content = '{\"n\": 2}' WHERE id = ':id';"
          echo "DELETE FROM public.$table WHERE id = ':id';"
          ;;
        insert1)
          echo "INSERT INTO public.$table (${owner_cols}kind, content) VALUES (${owner_vals}'face', '{\"n\": 1}');"
          ;;
        insert10)
          echo "INSERT INTO public.$table (${owner_cols}kind, content) SELECT ${owner_vals}'face', jsonb_build_object('n', g) FROM generate_series(1, 10) AS g;"
          ;;
        delete10)
          echo "WITH written AS (INSERT INTO public.$table (${owner_cols}kind, content) SELECT ${owner_vals}'face', jsonb_build_object('n', g) FROM generate_series(1, 10) AS g RETURNING id) SELECT array_agg(id) AS ids FROM written \\gset"
          echo "DELETE FROM public.$table WHERE id = ANY (':ids'::uuid[]);"
          ;;
      esac
      echo "COMMIT;"
    } >"$WORK/$kind-$table.sql"
  done
done
PGBENCH_ROLE="$LOGIN_ROLE"
if [ "$FRAME" = bare ]; then PGBENCH_ROLE=postgres; fi
export PGBENCH_ROLE

log_rows() { psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.realtime_changes where table_name = '$1'"; }
# Each script once by hand: it must commit, and be captured exactly when its table is published.
for kind in "${CASES[@]}"; do
  for table in "${TABLES[@]}"; do
    L0="$(log_rows "$table")"
    timeout -k 5 60 pgbench -n -h 127.0.0.1 -p "$PGPORT_BENCH" -U "$PGBENCH_ROLE" -c 1 -t 1 -f "$WORK/$kind-$table.sql" "$DB" \
      >"$WORK/probe-$kind-$table.out" 2>&1 || { cat "$WORK/probe-$kind-$table.out" >&2; gp_die "the SQL of $kind on $table failed"; }
    grep -q '^number of transactions actually processed: 1/1' "$WORK/probe-$kind-$table.out" ||
      { cat "$WORK/probe-$kind-$table.out" >&2; gp_die "the SQL of $kind on $table did not commit"; }
    want=0
    if [ "$table" = bench_captured ]; then want="${ROWS_PER_TX[$kind]}"; fi
    [ $(($(log_rows "$table") - L0)) = "$want" ] || gp_die "$kind on $table wrote $(($(log_rows "$table") - L0)) change-log rows, not $want"
  done
done
gp_log "SQL per transaction ($FRAME frame), on bench_captured:"
for kind in "${CASES[@]}"; do sed "s/^/    $kind: /" "$WORK/$kind-bench_captured.sql" | cut -c1-200 >&2; done

bench_cpu_init
LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- (1) the capture's write cost: for each case, ROUNDS rounds of both tables, the first table alternating
declare -A TX SECS FAILED LOGGED
seconds_plus() { python3 -c "import sys; print(float(sys.argv[1]) + int(sys.argv[2]) / float(sys.argv[3]))" "$1" "$2" "$3"; }
for kind in "${CASES[@]}"; do
  for table in "${TABLES[@]}"; do TX[$kind-$table]=0 SECS[$kind-$table]=0 FAILED[$kind-$table]=0 LOGGED[$kind-$table]=0; done
  for round in $(seq 1 "$ROUNDS"); do
    order=("${TABLES[@]}")
    if [ $((round % 2)) = 0 ]; then order=(bench_uncaptured bench_captured); fi
    for table in "${order[@]}"; do
      L0="$(log_rows "$table")"
      DURATION="$ROUND_SECONDS" bench_pgbench "$kind-$table-$round" -f "$WORK/$kind-$table.sql"
      TX[$kind-$table]=$((TX[$kind-$table] + PG_TX))
      FAILED[$kind-$table]=$((FAILED[$kind-$table] + ${PG_FAILED:-0}))
      SECS[$kind-$table]="$(seconds_plus "${SECS[$kind-$table]}" "$PG_TX" "$PG_TPS")"
      LOGGED[$kind-$table]=$((LOGGED[$kind-$table] + $(log_rows "$table") - L0))
    done
  done
  # The change log is pruned every minute in service; here it is emptied between cases.
  psql_q "$SUPER_URL" -c "truncate guestpass.realtime_changes" -c "vacuum analyze public.bench_captured, public.bench_uncaptured" >/dev/null
done
LOAD1="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- summary
SUMMARY_ARGS=()
for kind in "${CASES[@]}"; do
  SUMMARY_ARGS+=("$kind" "${WHAT[$kind]}" "${ROWS_PER_TX[$kind]}")
  for table in "${TABLES[@]}"; do
    SUMMARY_ARGS+=("${TX[$kind-$table]}" "${SECS[$kind-$table]}" "${FAILED[$kind-$table]}" "${LOGGED[$kind-$table]}")
  done
done
python3 - "$TARGET" "$FRAME" "$CONNECTIONS" "$ROUNDS" "$ROUND_SECONDS" "${BENCH_DURABLE:-1}" "$LOAD0" "$LOAD1" "${SUMMARY_ARGS[@]}" <<'PY'
import sys
target, frame, conns, rounds, round_s, durable, load0, load1 = sys.argv[1:9]
args = sys.argv[9:]
print(f"==== Realtime capture write cost: captured (published) vs uncaptured table, same SQL, same run")
print(f"    {frame} frame, pgbench -c{conns}, {rounds} rounds x {round_s}s per table and case, "
      f"{'durable (fsync, synchronous_commit on)' if durable == '1' else 'fsync off'}; load {load0} -> {load1}")
i = 0
while i < len(args):
    case, what, per_tx = args[i], args[i + 1], int(args[i + 2])
    cap = args[i + 3:i + 7]
    unc = args[i + 7:i + 11]
    i += 11
    tps_c = int(cap[0]) / float(cap[1]) if float(cap[1]) > 0 else 0.0
    tps_u = int(unc[0]) / float(unc[1]) if float(unc[1]) > 0 else 0.0
    ratio = tps_c / tps_u if tps_u > 0 else 0.0
    verdict = f"(target >= {target}: {'met' if ratio >= float(target) else 'NOT met'})"
    print(f"  {case:9} {what}")
    print(f"    captured     {tps_c:10.1f} tx/s   {cap[0]} tx, {cap[2]} failed, {cap[3]} change-log rows")
    print(f"    uncaptured   {tps_u:10.1f} tx/s   {unc[0]} tx, {unc[2]} failed, {unc[3]} change-log rows")
    print(f"    ratio        {ratio:10.2f}         {verdict}")
print("====")
PY

# ---- validity: no failed transaction; every captured transaction's rows logged, none for the uncaptured table
for kind in "${CASES[@]}"; do
  for table in "${TABLES[@]}"; do
    [ "${FAILED[$kind-$table]}" = 0 ] || gp_die "$kind on $table: ${FAILED[$kind-$table]} pgbench transactions failed"
    [ "${TX[$kind-$table]}" -gt 0 ] || gp_die "$kind on $table: nothing was measured"
  done
  [ "${LOGGED[$kind-bench_uncaptured]}" = 0 ] || gp_die "$kind: the uncaptured table has change-log rows"
  # pgbench counts the transactions it saw commit; one in flight at its stop may commit uncounted.
  want=$((TX[$kind-bench_captured] * ROWS_PER_TX[$kind]))
  got="${LOGGED[$kind-bench_captured]}"
  if [ "$got" -lt "$want" ] || [ "$got" -gt $((want + CONNECTIONS * ROWS_PER_TX[$kind])) ]; then
    gp_die "$kind: $got change-log rows for $want captured rows written"
  fi
done

# ---- (2) fan-out: 1,000 subscribers on this machine, changes/s delivered and p99 delay from the INSERT to the client
# (target p99 ≤ 250 ms at 100 changes/s). Everything it needs is in bench/realtime_fanout.sh, on this database: the
# unpublished copy of public.readings, the server, the guests, the writer's scripts; bench/realtime_fanout.py measures
# and prints the table.
# shellcheck source=bench/realtime_fanout.sh
. "$ROOT/bench/realtime_fanout.sh"
realtime_fanout
