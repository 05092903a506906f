# shellcheck shell=bash
# The fan-out half of bench/realtime.sh: sourced by it (after bench_create_database and the capture half), run as
# `realtime_fanout`.
# The measurement itself is bench/realtime_fanout.py (its docstring says what is measured and how); this file sets up
# what it needs, on the cluster and database bench/realtime.sh made:
#
#   - sql/examples (bench_apply_examples, unless applied already): public.readings, row-level security per user, in the
#     supabase_realtime publication (so captured), and public.readings_unpublished, a copy of it (same columns,
#     defaults, checks, indexes and foreign key to public.users) outside the publication: the writer's yardstick;
#   - `guestpass serve` (bench_start_server) with its metrics listener on a free loopback port;
#   - BENCH_RT_SUBSCRIBERS guests signed up over HTTP (bench_sign_up_users; the sign-up limits are raised by
#     bench_start_server), listed with their tokens for the receivers and in bench_rt.subscribers (i, user_id,
#     app_id) for the writer;
#   - four pgbench scripts, one INSERT each, run as the table owner (the superuser of the throwaway cluster: no
#     request frame, row-level security bypassed), with explicit app_id and user_id of a signed-up guest,
#     created_at = clock_timestamp() (what the receivers subtract from the arrival time) and content {"phase": N}
#     (which write of the run the row belongs to):
#       per-user (un)published   a random guest's reading: \set i random(1, N) … where i = :i
#       shared (un)published     guest 1's reading (the guest all the shared scenario's sockets belong to)
#
# Then realtime_fanout.py runs the scenarios (per-user: 1 change → 1 socket; shared: 1 change → every socket), each
# at its rate (halved, up to BENCH_RT_MAX_STEPS times, while p99 is above BENCH_RT_TARGET_MS or changes are missing),
# with the same INSERT at the same rate on the unpublished copy right after, and for per-user a burst as fast as
# pgbench goes (unpublished, then published with the subscribers listening). It prints the table, keeps the raw numbers
# (results.json, summary.txt, delays-*.txt, the pgbench outputs, the server's log) in BENCH_RT_RAW_DIR (default
# /tmp/guestpass-realtime-fanout-<date>-<time>), and fails when a change was lost, duplicated or misdelivered, a
# socket was closed by the server, or a write failed.
#
# Environment: BENCH_RT_SUBSCRIBERS (default 1000, at most 2000), BENCH_RT_RATE (per-user changes/s, default 100),
# BENCH_RT_SHARED_RATE (shared changes/s, default 10), BENCH_RT_SECONDS (seconds of each write, default 30),
# BENCH_RT_BURST_SECONDS (default 10, 0 = no burst), BENCH_RT_PROCS (receiver processes, default 2),
# BENCH_RT_TARGET_MS (default 250), BENCH_RT_MAX_STEPS (default 4), BENCH_RT_SCENARIOS (default per-user,shared),
# BENCH_RT_RAW_DIR, BENCH_PYTHON (a python with websockets ≥ 14; default .venv's, which is created with websockets
# when missing, as scripts/test creates it).

rt_setting() { # rt_setting NAME DEFAULT MIN MAX → the value of BENCH_RT_NAME, checked
  local value name="BENCH_RT_$1"
  value="${!name:-$2}"
  [[ "$value" =~ ^[0-9]+$ ]] || gp_die "$name must be a whole number"
  if [ "$value" -lt "$3" ] || [ "$value" -gt "$4" ]; then gp_die "$name must be in $3...$4"; fi
  printf '%s\n' "$value"
}


realtime_fanout() {
  local subscribers rate shared_rate seconds burst procs target steps scenarios raw metrics_port ws_url bound
  subscribers="$(rt_setting SUBSCRIBERS 1000 1 2000)"
  rate="$(rt_setting RATE 100 1 10000)"
  shared_rate="$(rt_setting SHARED_RATE 10 1 1000)"
  seconds="$(rt_setting SECONDS 30 5 300)"
  burst="$(rt_setting BURST_SECONDS 10 0 120)"
  procs="$(rt_setting PROCS 2 1 8)"
  target="$(rt_setting TARGET_MS 250 1 60000)"
  steps="$(rt_setting MAX_STEPS 4 1 8)"
  scenarios="${BENCH_RT_SCENARIOS:-per-user,shared}"
  [[ "$scenarios" =~ ^(per-user|shared)(,(per-user|shared))?$ ]] || gp_die "BENCH_RT_SCENARIOS: per-user, shared or both"
  raw="${BENCH_RT_RAW_DIR:-/tmp/guestpass-realtime-fanout-$(date +%Y%m%d-%H%M%S)}"
  mkdir -p "$raw"
  bench_websockets_python
  # Every socket is a file descriptor, in the server and in a receiver.
  if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((2 * subscribers + 1024)) ]; then
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    [ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((2 * subscribers + 1024)) ] ||
      gp_die "open files limited to $(ulimit -n): $subscribers sockets need more"
  fi

  # ---- the tables: sql/examples, the unpublished copy, the writer's list of guests
  # sql/examples: bench/realtime.sh's capture half has applied it already.
  if [ "$(psql_q "$SUPER_URL" -Atc "select to_regclass('public.readings') is not null")" != t ]; then bench_apply_examples; fi
  [ "$(psql_q "$SUPER_URL" -Atc "select rolsuper or rolbypassrls from pg_roles where rolname = current_user")" = t ] ||
    gp_die "the owner URL's role is not a superuser: it cannot write public.readings (row-level security forced)"
  psql_q "$SUPER_URL" >/dev/null <<'SQL'
create schema bench_rt;
create table bench_rt.subscribers (i integer primary key, user_id uuid not null, app_id uuid not null);
create table public.readings_unpublished (like public.readings including all);
alter table public.readings_unpublished
    add constraint readings_unpublished_user_id_fkey foreign key (user_id, app_id)
    references public.users (id, app_id) on delete cascade;
SQL
  local captured
  captured="$(psql_q "$SUPER_URL" -Atc "select string_agg(schema_name || '.' || table_name, ',' order by 1, 2) from guestpass_server.realtime_sync()")"
  [[ ",$captured," == *,public.readings,* ]] || gp_die "public.readings is not captured (realtime_sync: $captured)"
  [[ ",$captured," != *,public.readings_unpublished,* ]] || gp_die "public.readings_unpublished is captured"

  # ---- the server, with its metrics on a port of its own, and the guests
  metrics_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  bench_start_server GUESTPASS_METRICS_ADDRESS="127.0.0.1:$metrics_port"
  curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:$metrics_port/metrics" || gp_die "no metrics on 127.0.0.1:$metrics_port"
  bench_sign_up_users "$URL" "$subscribers"
  timeout -k 5 60 python3 - "$WORK" "$subscribers" "$APP_ID" <<'PY' || gp_die "listing the guests failed"
import json, re, sys
work, n, app = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tokens = re.findall(r'^  "([^"]+)",$', open(f"{work}/tokens.lua").read(), re.M)
assert len(tokens) == n, f"{len(tokens)} tokens for {n} guests"
users = []
with open(f"{work}/subscribers.tsv", "w") as tsv:
    for i, token in enumerate(tokens, 1):
        claims = json.load(open(f"{work}/claims-{i}.json"))
        assert claims["app_id"] == app, f"guest {i} belongs to app {claims['app_id']}"
        users.append({"token": token, "user_id": claims["sub"]})
        tsv.write(f"{i}\t{claims['sub']}\t{claims['app_id']}\n")
json.dump(users, open(f"{work}/users.json", "w"))
PY
  psql_q "$SUPER_URL" -c "\\copy bench_rt.subscribers from '$WORK/subscribers.tsv'" >/dev/null

  # ---- the writer's scripts (as the owner: explicit owner columns; created_at is the delay's start)
  local table kind
  for table in readings readings_unpublished; do
    {
      echo "\\set i random(1, $subscribers)"
      echo "insert into public.$table (app_id, user_id, kind, content, created_at) select app_id, user_id, 'face', jsonb_build_object('phase', :phase, 'n', :i), clock_timestamp() from bench_rt.subscribers where i = :i;"
    } >"$WORK/per-user-$table.sql"
    echo "insert into public.$table (app_id, user_id, kind, content, created_at) select app_id, user_id, 'palm', jsonb_build_object('phase', :phase, 'n', 1), clock_timestamp() from bench_rt.subscribers where i = 1;" \
      >"$WORK/shared-$table.sql"
  done
  # Each once by hand: one row, captured exactly when the table is published.
  log_rows() { psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.realtime_changes where table_name = '$1'"; }
  for kind in per-user shared; do
    for table in readings readings_unpublished; do
      local l0 want=0
      l0="$(log_rows "$table")"
      timeout -k 5 60 pgbench -n -t 1 -D phase=0 -f "$WORK/$kind-$table.sql" "$SUPER_URL" >"$WORK/probe-$kind-$table.out" 2>&1 ||
        { cat "$WORK/probe-$kind-$table.out" >&2; gp_die "the $kind INSERT into $table failed"; }
      [ "$(psql_q "$SUPER_URL" -Atc "select count(*) from public.$table where content->>'phase' = '0'")" -ge 1 ] ||
        gp_die "the $kind INSERT into $table inserted nothing"
      if [ "$table" = readings ]; then want=1; fi
      [ $(($(log_rows "$table") - l0)) = "$want" ] || gp_die "the $kind INSERT into $table was captured $(($(log_rows "$table") - l0)) times, not $want"
    done
  done
  gp_log "fan-out writer SQL (per-user; shared writes guest 1's rows, kind palm):"
  sed 's/^/    /' "$WORK/per-user-readings.sql" >&2

  # ---- the measurement
  bench_cpu_init
  ws_url="$(python3 -c 'import sys, urllib.parse; print(f"ws://127.0.0.1:{sys.argv[1]}/realtime/v1/websocket?apikey={urllib.parse.quote(sys.argv[2])}&vsn=1.0.0")' "$PORT" "$PUBLISHABLE_KEY")"
  # Bounded: per scenario, the connections, every step's two writes and drain, the burst.
  bound=$((2 * (300 + steps * (2 * seconds + 60)) + 2 * burst + 120))
  gp_log "fan-out: $subscribers subscribers, per-user at $rate/s, shared at $shared_rate/s, ${seconds}s each (at most ${bound}s); raw numbers in $raw"
  local status=0
  timeout -k 10 "$bound" "$BENCH_WS_PYTHON" "$ROOT/bench/realtime_fanout.py" run --ws-url "$ws_url" \
    --metrics-url "http://127.0.0.1:$metrics_port/metrics" --owner-url "$SUPER_URL" --server-pid "$SERVER_PID" \
    --postmaster-pid "$PG_MAIN_PID" --users "$WORK/users.json" \
    --per-user-published "$WORK/per-user-readings.sql" --per-user-unpublished "$WORK/per-user-readings_unpublished.sql" \
    --shared-published "$WORK/shared-readings.sql" --shared-unpublished "$WORK/shared-readings_unpublished.sql" \
    --scenarios "$scenarios" --subscribers "$subscribers" --rate "$rate" --shared-rate "$shared_rate" \
    --seconds "$seconds" --burst-seconds "$burst" --burst-clients "$CONNECTIONS" --procs "$procs" \
    --target-ms "$target" --max-steps "$steps" --raw-dir "$raw" --work-dir "$WORK" || status=$?
  cp "$WORK/server.log" "$raw/server.log" 2>/dev/null || true
  cp "$WORK"/*.sql "$raw/" 2>/dev/null || true
  local warnings
  warnings="$(grep -c -E '"level" *: *"(warning|error|critical)"' "$raw/server.log" 2>/dev/null || true)"
  if [ "${warnings:-0}" != 0 ]; then
    gp_log "the server logged $warnings warnings or errors during the fan-out (the first ones, $raw/server.log):"
    grep -E '"level" *: *"(warning|error|critical)"' "$raw/server.log" | head -n 5 | cut -c1-300 >&2
  fi
  [ "$status" = 0 ] || gp_die "fan-out: the measurement failed or is invalid (status $status; raw numbers in $raw)"
}
