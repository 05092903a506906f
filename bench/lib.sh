# shellcheck shell=bash disable=SC2034  # the variables set here are used by the scripts that source it
# Shared setup of the benchmarks in bench/ (signup.sh, consume.sh). Source it; do not run it.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"    # sets ROOT, cd's there, sources scripts/lib/common.sh
#   bench_read_settings                            # DURATION CONNECTIONS THREADS WARMUP from BENCH_*
#   bench_prepare_tools wrk curl                   # apt packages + pgbench
#   bench_build                                    # release build (unless BENCH_SKIP_BUILD=1) → BIN
#   bench_begin "$ROOT/.pg/bench"                  # WORK dir + teardown trap, for that cluster
#   bench_create_database                          # cluster, then `guestpass dev up` (database, migrations, app, key)
#   bench_apply_examples                           # sql/examples on it (`guestpass migrate up --dir sql/examples`)
#   bench_start_server [NAME=value ...]            # guestpass serve on a free loopback port → URL, SERVER_PID
#                                                  # (every server started is stopped at exit)
#   bench_sign_up_users URL N                      # N guests over HTTP → $WORK/tokens.lua, $WORK/claims-<i>.json
#   bench_websockets_python                        # a python with websockets → BENCH_WS_PYTHON
#   bench_cpu_init; proc_ticks PID; pg_ticks       # CPU accounting (clock ticks)
#   bench_wrk_result FILE                          # parse the WRK_RESULT line of a bench/*.lua script
#   bench_http_rounds_begin; bench_http_round N ARGS…; bench_http_rounds_end   # wrk rounds, totals and worst latencies
#   bench_pgbench_result FILE                      # parse pgbench's summary
#
# Environment: BENCH_DURATION (seconds, default 10), BENCH_CONNECTIONS (default 8), BENCH_THREADS (wrk
# threads / pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up, default 2, 0 = none),
# BENCH_SKIP_BUILD=1 (use the existing release build), BENCH_BIN=PATH (use that guestpass binary, no build),
# BENCH_KEEP_CLUSTER=1 (keep the cluster afterwards), BENCH_DURABLE=0 (fsync and synchronous_commit off, as the
# test clusters run; default on, as production runs), BENCH_PG_CONF (extra postgresql.conf lines, e.g.
# "shared_preload_libraries = 'pg_stat_statements'" to profile).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$ROOT" || exit 1
# shellcheck source=scripts/lib/common.sh
. "$ROOT/scripts/lib/common.sh"
GP_LOG_PREFIX=bench

PGC="$ROOT/scripts/pg-cluster"
DB=guestpass_bench
LOGIN_ROLE=guestpass_authenticator

psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

bench_read_settings() {
  DURATION="${BENCH_DURATION:-10}"
  CONNECTIONS="${BENCH_CONNECTIONS:-8}"
  THREADS="${BENCH_THREADS:-2}"
  WARMUP="${BENCH_WARMUP:-2}"
  local n
  for n in DURATION CONNECTIONS THREADS WARMUP; do
    [[ "${!n}" =~ ^[0-9]+$ ]] || gp_die "BENCH_$n must be a whole number"
  done
  if [ "$DURATION" -lt 1 ] || [ "$DURATION" -gt 300 ]; then gp_die "BENCH_DURATION must be in 1...300"; fi
  if [ "$WARMUP" -gt 60 ]; then gp_die "BENCH_WARMUP must be at most 60"; fi
  if [ "$CONNECTIONS" -lt 1 ] || [ "$CONNECTIONS" -gt 64 ]; then gp_die "BENCH_CONNECTIONS must be in 1...64"; fi
  if [ "$THREADS" -lt 1 ] || [ "$THREADS" -gt "$CONNECTIONS" ]; then gp_die "BENCH_THREADS must be in 1...BENCH_CONNECTIONS"; fi
}

bench_prepare_tools() {
  gp_ensure_apt "${GP_BASE_PACKAGES[@]}" "$@"
  command -v pgbench >/dev/null || gp_die "pgbench not found (postgresql-client-15)"
}

# The release build, before anything needs tearing down.
bench_build() {
  if [ -n "${BENCH_BIN:-}" ]; then
    BIN="$BENCH_BIN"
    [ -x "$BIN" ] || gp_die "BENCH_BIN=$BIN is not an executable"
    return 0
  fi
  if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
    gp_log "building (swift build -c release)"
    swift build -c release
  fi
  BIN="$(gp_bin_path -c release)"
  [ -x "$BIN" ] || gp_die "no release guestpass binary at $BIN"
}

# ---- teardown: the server, the cluster (unless BENCH_KEEP_CLUSTER=1), the work directory
SERVER_PID=""
SERVER_PIDS=()
CLUSTER_MADE=0
bench_cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  for pid in "${SERVER_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$CLUSTER_MADE" = 1 ]; then
    if [ "${BENCH_KEEP_CLUSTER:-0}" = 1 ]; then
      gp_log "keeping the cluster: $("$PGC" url "$CLUSTER" postgres "$DB" 2>/dev/null || echo "$CLUSTER")"
    else
      "$PGC" destroy "$CLUSTER" >/dev/null 2>&1 || gp_log "could not destroy $CLUSTER"
    fi
  fi
  [ -n "${WORK:-}" ] && rm -rf -- "$WORK"
  exit "$rc"
}

bench_begin() { # bench_begin CLUSTER_DIR
  CLUSTER="$1"
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/guestpass-bench.XXXXXX")"
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# ---- cluster, then the stack (`guestpass dev up`, as scripts/serve and e2e/ do) → PGPORT_BENCH SUPER_URL
# LOGIN_URL APP_ID PUBLISHABLE_KEY, and $WORK/stack.json
bench_create_database() {
  "$PGC" destroy "$CLUSTER" >/dev/null
  CLUSTER_MADE=1
  # Durable, as production runs (the test clusters of scripts/pg-cluster run with fsync off): BENCH_DURABLE=0 keeps
  # the throwaway settings.
  local conf=""
  if [ "${BENCH_DURABLE:-1}" = 1 ]; then conf=$'fsync = on\nfull_page_writes = on\nsynchronous_commit = on'; fi
  PG_CLUSTER_EXTRA_CONF="$conf${BENCH_PG_CONF:+$'\n'$BENCH_PG_CONF}" "$PGC" create "$CLUSTER" >/dev/null
  PGPORT_BENCH="$("$PGC" port "$CLUSTER")"
  "$BIN" dev up --database-url "$("$PGC" url "$CLUSTER" postgres postgres)" --database "$DB" --app bench \
    --key-file "$WORK/jwt-signing-key.pem" --json >"$WORK/stack.json" 2>"$WORK/dev-up.log" ||
    { tail -n 20 "$WORK/dev-up.log" >&2; gp_die "guestpass dev up failed"; }
  SUPER_URL="$(gp_json_field "$WORK/stack.json" owner_url)"
  LOGIN_URL="$(gp_json_field "$WORK/stack.json" login_url)"
  APP_ID="$(gp_json_field "$WORK/stack.json" apps 0 app_id)"
  PUBLISHABLE_KEY="$(gp_json_field "$WORK/stack.json" apps 0 publishable_key)"
  [[ "$APP_ID" =~ ^[0-9a-f-]{36}$ ]] || gp_die "guestpass dev up printed no app id"
}

# ---- the example app's schema (sql/examples) on the bench database, as `guestpass dev up --dir sql/examples` would
bench_apply_examples() {
  gp_log "applying sql/examples (guestpass migrate up --dir sql/examples)"
  "$BIN" migrate up --database-url "$SUPER_URL" --dir "$ROOT/sql/examples" >"$WORK/migrate-examples.log" 2>&1 ||
    { tail -n 20 "$WORK/migrate-examples.log" >&2; gp_die "applying sql/examples failed"; }
}

# ---- the server, with GUESTPASS_DB_POOL_SIZE = the concurrency and sign-up limits too large to trigger, logging JSON
# lines at warning as the container does (LOG_FORMAT=json, docker/Dockerfile: the text format's handler re-renders every
# line's metadata each time a request sets its request id, about 2 % of a consume's server CPU in perf);
# extra NAME=value arguments go into its environment.
# shellcheck disable=SC2120
bench_start_server() {
  PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  URL="http://127.0.0.1:$PORT"
  gp_log "starting guestpass serve on $URL (pool size $CONNECTIONS)"
  env DATABASE_URL="$LOGIN_URL" GUESTPASS_HOST=127.0.0.1 GUESTPASS_PORT="$PORT" \
    GUESTPASS_JWT_SIGNING_KEY_FILE="$WORK/jwt-signing-key.pem" GUESTPASS_DB_POOL_SIZE="$CONNECTIONS" \
    GUESTPASS_SIGNUP_BURST=1000000 GUESTPASS_SIGNUP_RATE_PER_HOUR=1000000 \
    GUESTPASS_APP_SIGNUP_BURST=100000000 GUESTPASS_APP_SIGNUP_RATE_PER_HOUR=100000000 \
    GUESTPASS_METRICS_ADDRESS=127.0.0.1:0 \
    LOG_LEVEL=warning LOG_FORMAT=json "$@" "$BIN" serve >>"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  local ready=0
  for _ in $(seq 1 300); do # 30 s
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if curl -fsS -o /dev/null --max-time 2 "$URL/health/ready" 2>/dev/null; then ready=1; break; fi
    sleep 0.1
  done
  [ "$ready" = 1 ] || { tail -n 30 "$WORK/server.log" >&2; gp_die "the server did not become ready"; }
}

# ---- N guests signed up over HTTP at URL: their access tokens as a Lua list ($WORK/tokens.lua, for the bench/*.lua
# scripts) and each one's claims, the token's payload byte for byte ($WORK/claims-<i>.json, i = 1...N, for pgbench).
bench_sign_up_users() { # bench_sign_up_users URL N
  gp_log "signing up $2 users"
  timeout -k 5 120 python3 - "$1" "$PUBLISHABLE_KEY" "$2" "$WORK" <<'PY' || gp_die "signing up the bench users failed"
import base64, json, sys, urllib.request, uuid
url, apikey, users, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
tokens = []
for i in range(1, users + 1):
    request = urllib.request.Request(
        url + "/auth/v1/signup", method="POST",
        data=json.dumps({"data": {"device_id": str(uuid.uuid4())}}).encode(),
        headers={"apikey": apikey, "Authorization": "Bearer " + apikey, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        token = json.load(response)["access_token"]
    tokens.append(token)
    payload = token.split(".")[1]
    claims = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    json.loads(claims)  # a JSON object, passed on byte for byte
    with open(f"{work}/claims-{i}.json", "w") as f:
        f.write(claims)
with open(f"{work}/tokens.lua", "w") as f:
    f.write("return {\n" + "".join(f'  "{t}",\n' for t in tokens) + "}\n")
PY
}

# ---- a python that has websockets >= 14 (Realtime clients: bench/realtime_fanout.py, bench/cpu_join.py) → BENCH_WS_PYTHON:
# BENCH_PYTHON, else the repository's .venv (made, and websockets installed, if missing)
bench_websockets_python() {
  if [ -n "${BENCH_PYTHON:-}" ]; then
    BENCH_WS_PYTHON="$BENCH_PYTHON"
  else
    BENCH_WS_PYTHON="$ROOT/.venv/bin/python"
    if ! "$BENCH_WS_PYTHON" -c 'import websockets' >/dev/null 2>&1; then
      gp_log "installing websockets into $ROOT/.venv"
      if [ ! -x "$BENCH_WS_PYTHON" ] || ! "$BENCH_WS_PYTHON" -m pip --version >/dev/null 2>&1; then
        rm -rf "$ROOT/.venv"
        python3 -m venv "$ROOT/.venv" >/dev/null 2>&1 || { gp_ensure_apt python3-venv; python3 -m venv "$ROOT/.venv"; }
      fi
      timeout -k 5 300 "$BENCH_WS_PYTHON" -m pip install -q --disable-pip-version-check 'websockets>=14,<16' ||
        gp_die "pip install websockets failed"
    fi
  fi
  "$BENCH_WS_PYTHON" -c 'import sys, websockets; sys.exit(int(websockets.__version__.split(".")[0]) < 14)' 2>/dev/null ||
    gp_die "$BENCH_WS_PYTHON has no websockets >= 14"
}

# ---- CPU accounting (clock ticks from /proc): the server process, and the cluster's postmaster
# with its children (live ones directly, exited ones through the postmaster's cutime/cstime).
bench_cpu_init() {
  TICKS="$(getconf CLK_TCK)"
  PG_MAIN_PID="$(head -n 1 "$CLUSTER/data/postmaster.pid")"
}
proc_ticks() { # proc_ticks PID [with-children]
  local f
  f="$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null)" || { echo 0; return; }
  # after "pid (comm) ": field 3 is state, so utime/stime/cutime/cstime are fields 12..15 here
  if [ "${2:-}" = with-children ]; then
    awk '{ print $12 + $13 + $14 + $15 }' <<<"$f"
  else
    awk '{ print $12 + $13 }' <<<"$f"
  fi
}
pg_ticks() {
  local total child
  total="$(proc_ticks "$PG_MAIN_PID" with-children)"
  for child in $(pgrep -P "$PG_MAIN_PID"); do total=$((total + $(proc_ticks "$child"))); done
  echo "$total"
}
pg_children() { pgrep -c -P "$PG_MAIN_PID" || true; }
# Exited backends count (through cutime/cstime) only once the postmaster has reaped them.
bench_wait_reaped() { # bench_wait_reaped CHILDREN_BEFORE
  for _ in $(seq 1 50); do [ "$(pg_children)" -le "$1" ] && break; sleep 0.1; done
  sleep 0.2
}

# ---- pgbench at the bench's concurrency, as the login role (or PGBENCH_ROLE), on the bench database; CPU of
# PostgreSQL counted
# bench_pgbench LABEL PGBENCH-SCRIPT-ARGS... → PG_TPS PG_TX PG_FAILED PG_LAT and PG_CPU_TICKS; output in $WORK/pgbench-LABEL.out
bench_pgbench() {
  local label="$1" children t0
  shift
  children="$(pg_children)"
  t0="$(pg_ticks)"
  gp_log "SQL ($label): pgbench -c$CONNECTIONS -j$THREADS -T$DURATION"
  timeout -k 5 $((DURATION + 60)) pgbench -n -h 127.0.0.1 -p "$PGPORT_BENCH" -U "${PGBENCH_ROLE:-$LOGIN_ROLE}" \
    -c "$CONNECTIONS" -j "$THREADS" -T "$DURATION" "$@" "$DB" >"$WORK/pgbench-$label.out" 2>&1 ||
    { cat "$WORK/pgbench-$label.out" >&2; gp_die "pgbench ($label) failed"; }
  sed '/^SQL script [0-9]*:/,$d' "$WORK/pgbench-$label.out" | grep -E '^(tps|latency|number of failed)' >&2 || true
  bench_wait_reaped "$children"
  PG_CPU_TICKS=$(($(pg_ticks) - t0))
  bench_pgbench_result "$WORK/pgbench-$label.out"
}

# The ceiling schema (bench/ceiling.sql) in the bench database.
bench_create_ceiling() {
  psql_q "$SUPER_URL" -f "$ROOT/bench/ceiling.sql" >/dev/null
}

# ---- profiling (BENCH_PROFILE=1): perf samples the server during the HTTP run; the top symbols are printed after
# (BENCH_PROFILE_OUT=FILE keeps perf.data for `perf report -i FILE`). BENCH_PROFILE_EVENT=EVENT records every hit of
# that event instead of sampling time: e.g. `perf probe -x /lib/x86_64-linux-gnu/libc.so.6 malloc` once, then
# BENCH_PROFILE_EVENT=probe_libc:malloc shows who allocates.
bench_profile_start() { # bench_profile_start PID
  PROFILE_PID=""
  [ "${BENCH_PROFILE:-0}" = 1 ] || return 0
  command -v perf >/dev/null || gp_ensure_apt linux-perf
  local sampling=(-F 499)
  if [ -n "${BENCH_PROFILE_EVENT:-}" ]; then sampling=(-e "$BENCH_PROFILE_EVENT"); fi
  perf record -q "${sampling[@]}" -g -p "$1" -o "$WORK/perf.data" >/dev/null 2>&1 &
  PROFILE_PID=$!
}
bench_profile_stop() {
  [ -n "${PROFILE_PID:-}" ] || return 0
  kill -INT "$PROFILE_PID" 2>/dev/null || true
  wait "$PROFILE_PID" 2>/dev/null || true
  if [ -n "${BENCH_PROFILE_OUT:-}" ]; then cp "$WORK/perf.data" "$BENCH_PROFILE_OUT"; fi
  gp_log "server profile (perf, self time by library, then the top 40 symbols):"
  perf report -i "$WORK/perf.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -12 >&2 || true
  perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' |
    sed 's/  *-  *- *$//' | cut -c1-160 | head -40 >&2 || true
}

# ---- results
# The WRK_RESULT line the bench/*.lua scripts print in done() → HTTP_REQUESTS HTTP_US HTTP_BAD P50_US P90_US
# P99_US MAX_US.
bench_wrk_result() { # bench_wrk_result FILE
  RESULT_LINE="$(grep 'WRK_RESULT' "$1" | sed 's/WRK_RESULT/ /')"
  [ -n "$RESULT_LINE" ] || gp_die "wrk printed no result"
  HTTP_REQUESTS="$(wrk_field requests)"
  HTTP_US="$(wrk_field duration_us)"
  HTTP_BAD=$(($(wrk_field non2xx) + $(wrk_field connect) + $(wrk_field read) + $(wrk_field write) + $(wrk_field timeout)))
  P50_US="$(wrk_field p50_us)"
  P90_US="$(wrk_field p90_us)"
  P99_US="$(wrk_field p99_us)"
  MAX_US="$(wrk_field max_us)"
}
wrk_field() { printf '%s\n' "$RESULT_LINE" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# Rounds of HTTP load (wrk, the array WRK, against URL and SERVER_PID): the totals are summed over the rounds, the
# latency percentiles are the worst round's, and the CPU of the server and of PostgreSQL during each round is added to
# HTTP_SERVER_TICKS and HTTP_PG_TICKS. bench_http_rounds_end leaves the totals in bench_wrk_result's variables.
bench_http_rounds_begin() {
  HTTP_REQUESTS_SUM=0 HTTP_US_SUM=0 HTTP_BAD_SUM=0 HTTP_SERVER_TICKS=0 HTTP_PG_TICKS=0
  P50_MAX=0 P90_MAX=0 P99_MAX=0 MAX_MAX=0
}
bench_http_round() { # bench_http_round ROUND WRK_SCRIPT_ARGS… (the arguments after --; ROUND_SECONDS long)
  local round="$1" server0 pg0
  shift
  server0="$(proc_ticks "$SERVER_PID")"
  pg0="$(pg_ticks)"
  timeout -k 5 $((ROUND_SECONDS + 60)) "${WRK[@]}" -d "${ROUND_SECONDS}s" --latency "$URL" -- "$@" >"$WORK/wrk-$round.out"
  HTTP_SERVER_TICKS=$((HTTP_SERVER_TICKS + $(proc_ticks "$SERVER_PID") - server0))
  HTTP_PG_TICKS=$((HTTP_PG_TICKS + $(pg_ticks) - pg0))
  bench_wrk_result "$WORK/wrk-$round.out"
  HTTP_REQUESTS_SUM=$((HTTP_REQUESTS_SUM + HTTP_REQUESTS)) HTTP_US_SUM=$((HTTP_US_SUM + HTTP_US))
  HTTP_BAD_SUM=$((HTTP_BAD_SUM + HTTP_BAD))
  [ "$P50_US" -gt "$P50_MAX" ] && P50_MAX="$P50_US"
  [ "$P90_US" -gt "$P90_MAX" ] && P90_MAX="$P90_US"
  [ "$P99_US" -gt "$P99_MAX" ] && P99_MAX="$P99_US"
  [ "$MAX_US" -gt "$MAX_MAX" ] && MAX_MAX="$MAX_US"
  return 0
}
bench_http_rounds_end() {
  HTTP_REQUESTS="$HTTP_REQUESTS_SUM" HTTP_US="$HTTP_US_SUM" HTTP_BAD="$HTTP_BAD_SUM"
  P50_US="$P50_MAX" P90_US="$P90_MAX" P99_US="$P99_MAX" MAX_US="$MAX_MAX"
}

# pgbench's summary → PG_TPS PG_TX PG_FAILED PG_LAT (per-script sections are indented and not matched).
bench_pgbench_result() { # bench_pgbench_result FILE
  PG_TPS="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$1" | tail -n 1)"
  PG_TX="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1")"
  PG_FAILED="$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$1")"
  PG_LAT="$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' "$1")"
  [ -n "$PG_TPS" ] || gp_die "pgbench printed no tps"
}
