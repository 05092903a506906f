#!/usr/bin/env bash
# Server CPU per request, per route, beside the server's own floor (issue 34): what a request costs GuestPass itself,
# whatever the machine's cores, wrk and PostgreSQL are doing.
#
#   ./bench/cpu.sh
#
# Routes (each as one of BENCH_USERS signed-up guests, picked at random per request; the reads' users have 20 palm and
# 10 coffee readings, the inserts are the other half's):
#   floor    GET  /health/live                   HTTP and the middleware; no API key check, no token, no SQL
#   user     GET  /auth/v1/user                  API key, token, one request transaction
#   rpc      POST /rest/v1/rpc/get_quota {}      API key, token, the RPC path
#   read     GET  /rest/v1/readings?select=*&kind=eq.palm&order=created_at.desc&limit=10
#   insert   POST /rest/v1/readings {"kind":"face","content":{"n":1}}  (Prefer: return=minimal)
#   join     a Realtime join: phx_join of a channel with one postgres_changes binding (its user's rows), its reply and
#            'Subscribed to PostgreSQL', then phx_leave and its reply, on 4 × BENCH_CONNECTIONS open sockets, each at
#            most 40 cycles a second (the server's per-socket message limit; bench/cpu_join.py); one join = that cycle
#
# For each route: a warm-up, then BENCH_RUNS runs of BENCH_DURATION seconds at BENCH_CONNECTIONS connections (wrk). Per
# run: the server's CPU (utime + stime of its process from /proc, clock ticks) ÷ the requests answered, and PostgreSQL's
# (the postmaster and its backends) ÷ the same; the median run is printed, with the spread. Then, per HTTP route, one run
# paced at about half the median peak rate (BENCH_WRK_DELAY_MS in bench/tables.lua): its p99 ("p99 at half its peak").
# Then a second server under LD_PRELOAD=malloc_count.so (bench/malloc_count.c, built here with cc) answers each route for
# a few seconds: heap allocations ÷ requests (exact counts; that server's time is not measured).
#
# The unit: CPU times depend on the machine, so each is also given in ES256 verifications on this machine
# (`openssl speed ecdsap256`, one core): a route's µs ÷ the µs of one verification. Targets (issue 34), as µs and as
# units: floor ≤ 35 / 0.9, user ≤ 70 / 1.75, rpc ≤ 60 / 1.5, read ≤ 110 / 2.7, insert ≤ 90 / 2.2 (a route meets its
# target when it meets either; reported, not an error).
#
# Sets up everything itself and tears it down at exit (bench/lib.sh): a throwaway durable cluster in .pg/bench-cpu,
# `guestpass dev up`, sql/examples, `guestpass serve` on a free loopback port (pool size = BENCH_CONNECTIONS, JSON logs
# at warning, as the container runs). Environment: BENCH_DURATION (seconds per run, default 10), BENCH_RUNS (default
# 3), BENCH_CONNECTIONS (default 8), BENCH_THREADS (default 2), BENCH_WARMUP (default 2), BENCH_USERS (default 32),
# BENCH_ROUTES (a space-separated subset, default all), BENCH_ALLOCATIONS=0 (skip the allocation pass),
# BENCH_PYTHON (a python with websockets; default the repository's .venv, made if missing), and bench/lib.sh's BENCH_SKIP_BUILD,
# BENCH_BIN, BENCH_KEEP_CLUSTER, BENCH_DURABLE, BENCH_PG_CONF, BENCH_PROFILE (perf of the server during the runs of
# BENCH_PROFILE_ROUTE, default read; BENCH_PROFILE_EVENT=probe_libc:malloc shows who allocates: bench/lib.sh). Exit status 1 when a measurement is invalid (errors, an unexpected status, a failed join).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
RUNS="${BENCH_RUNS:-3}"
USERS="${BENCH_USERS:-32}"
ALLOCATIONS="${BENCH_ALLOCATIONS:-1}"
[[ "$RUNS" =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] && [ "$RUNS" -le 9 ] || gp_die "BENCH_RUNS must be in 1...9"
[[ "$USERS" =~ ^[0-9]+$ ]] && [ "$USERS" -ge 2 ] && [ "$USERS" -le 128 ] || gp_die "BENCH_USERS must be in 2...128"
ALL_ROUTES=(floor user rpc read insert join)
read -r -a ROUTES <<<"${BENCH_ROUTES:-${ALL_ROUTES[*]}}"
for route in "${ROUTES[@]}"; do [[ " ${ALL_ROUTES[*]} " == *" $route "* ]] || gp_die "unknown route in BENCH_ROUTES: $route"; done

declare -A METHOD=([floor]=GET [user]=GET [rpc]=POST [read]=GET [insert]=POST)
declare -A REQ_PATH=(
  [floor]=/health/live [user]=/auth/v1/user [rpc]=/rest/v1/rpc/get_quota
  [read]='/rest/v1/readings?select=*&kind=eq.palm&order=created_at.desc&limit=10' [insert]=/rest/v1/readings
)
declare -A BODY=([rpc]='{}' [insert]='{"kind":"face","content":{"n":1}}')
declare -A PREFER=([rpc]=- [insert]=return=minimal)
declare -A EXPECT=([floor]=200 [user]=200 [rpc]=200 [read]=200 [insert]=201)
declare -A TOKENS=([floor]=read [user]=read [rpc]=read [read]=read [insert]=insert [join]=read)
declare -A TARGET_US=([floor]=35 [user]=70 [rpc]=60 [read]=110 [insert]=90)
declare -A TARGET_UNITS=([floor]=0.9 [user]=1.75 [rpc]=1.5 [read]=2.7 [insert]=2.2)

bench_prepare_tools wrk curl openssl gcc
bench_build
bench_begin "$ROOT/.pg/bench-cpu"
bench_websockets_python
PYTHON="$BENCH_WS_PYTHON"
cc -O2 -shared -fPIC -o "$WORK/malloc_count.so" "$ROOT/bench/malloc_count.c" || gp_die "building bench/malloc_count.c failed"

gp_log "one ES256 verification on this machine (openssl speed ecdsap256, 3 s)"
VERIFY_PER_S="$(openssl speed -seconds 3 ecdsap256 2>/dev/null | awk '/nistp256/ { print $NF }' | tail -n 1)"
[[ "$VERIFY_PER_S" =~ ^[0-9.]+$ ]] || gp_die "openssl speed printed no verify/s"

bench_create_database
bench_apply_examples
# shellcheck disable=SC2119
bench_start_server
bench_sign_up_users "$URL" "$USERS"
# The first half reads (and asks for itself and its quota), the second half inserts: the face rows inserted never sit
# in front of the palm rows a read scans.
timeout -k 5 60 python3 - "$USERS" "$WORK" <<'PY' || gp_die "writing the token lists failed"
import json, re, sys
users, work = int(sys.argv[1]), sys.argv[2]
tokens = re.findall(r'"([^"]+)"', open(f"{work}/tokens.lua").read())
half = users // 2
for name, group in (("read", range(1, half + 1)), ("insert", range(half + 1, users + 1))):
    with open(f"{work}/tokens-{name}.lua", "w") as f:
        f.write("return {\n" + "".join(f'  "{tokens[i - 1]}",\n' for i in group) + "}\n")
owners = []
for i in range(1, half + 1):
    claims = json.load(open(f"{work}/claims-{i}.json"))
    owners.append(f"('{claims['app_id']}'::uuid, '{claims['sub']}'::uuid)")
with open(f"{work}/seed.sql", "w") as f:
    f.write("insert into public.readings (app_id, user_id, kind, content, created_at)\n"
            "select u.app_id, u.user_id, (array['palm', 'coffee', 'palm'])[1 + g % 3], jsonb_build_object('n', g), "
            "now() - g * interval '1 minute'\n"
            f"from (values {', '.join(owners)}) as u (app_id, user_id) cross join generate_series(1, 30) as g;\n"
            "analyze public.readings;\n")
PY
psql_q "$SUPER_URL" -f "$WORK/seed.sql" >/dev/null || gp_die "seeding the readings failed"
WS_URL="ws://127.0.0.1:$PORT/realtime/v1/websocket?apikey=$PUBLISHABLE_KEY&vsn=1.0.0"
bench_cpu_init

WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/tables.lua")
wrk_args() { # wrk_args ROUTE → WRK_ARGS, the arguments after `--` for bench/tables.lua
  WRK_ARGS=("$PUBLISHABLE_KEY" "$WORK/tokens-${TOKENS[$1]}.lua" "${METHOD[$1]}" "${REQ_PATH[$1]}" "${EXPECT[$1]}")
  if [ "${METHOD[$1]}" = POST ]; then WRK_ARGS+=("${BODY[$1]}" "${PREFER[$1]}"); fi
}
# One load of ROUTE for SECONDS → REQUESTS (answered), P99_US, BAD (errors and unexpected statuses), RATE (per s)
load() { # load ROUTE SECONDS OUT [pace-ms]
  local route="$1" seconds="$2" out="$3" pace="${4:-}"
  if [ "$route" = join ]; then
    timeout -k 5 $((seconds + 60)) "$PYTHON" "$ROOT/bench/cpu_join.py" "$WS_URL" "$WORK/tokens-read.lua" "$seconds" \
      $((4 * CONNECTIONS)) >"$out" 2>"$out.err" || { cat "$out.err" >&2; gp_die "the join run failed"; }
    local line
    line="$(grep '^JOIN_RESULT ' "$out")" || gp_die "the join run printed no result"
    REQUESTS="$(sed -n 's/.* joins=\([0-9]*\).*/\1/p' <<<"$line")"
    P99_US="$(sed -n 's/.* p99_us=\([0-9]*\).*/\1/p' <<<"$line")"
    BAD="$(sed -n 's/.* failures=\([0-9]*\).*/\1/p' <<<"$line")"
    if [ "$BAD" != 0 ]; then cat "$out.err" >&2; fi
    RATE="$(python3 -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]))" "$REQUESTS" "$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' <<<"$line")")"
    return 0
  fi
  wrk_args "$route"
  BENCH_WRK_DELAY_MS="$pace" timeout -k 5 $((seconds + 60)) "${WRK[@]}" -d "${seconds}s" --latency "$URL" -- "${WRK_ARGS[@]}" >"$out"
  bench_wrk_result "$out"
  REQUESTS="$HTTP_REQUESTS"
  BAD=$((HTTP_BAD + $(sed -n 's/^WRK_STATUS unexpected=\([0-9]*\).*/\1/p' "$out")))
  RATE="$(python3 -c "import sys; print(int(sys.argv[1]) / (int(sys.argv[2]) / 1e6))" "$HTTP_REQUESTS" "$HTTP_US")"
}

# Context switches of the server's threads so far (voluntary: a thread that waited, so a hand-off between threads;
# involuntary: preempted): counts, so they hold on a loaded machine where times do not.
switches() { cat /proc/"$SERVER_PID"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { print v + 0, n + 0 }'; }

# ---- CPU per request: RUNS runs per route
declare -A RESULTS HALF
for route in "${ROUTES[@]}"; do
  if [ "$WARMUP" -gt 0 ]; then load "$route" "$WARMUP" "$WORK/warmup-$route.out"; fi
  [ "$route" = "${BENCH_PROFILE_ROUTE:-read}" ] && bench_profile_start "$SERVER_PID"
  RESULTS[$route]=""
  for run in $(seq 1 "$RUNS"); do
    srv0="$(proc_ticks "$SERVER_PID")" pg0="$(pg_ticks)"
    read -r vol0 invol0 <<<"$(switches)"
    load "$route" "$DURATION" "$WORK/run-$route-$run.out"
    srv=$(($(proc_ticks "$SERVER_PID") - srv0)) pg=$(($(pg_ticks) - pg0))
    read -r vol1 invol1 <<<"$(switches)"
    [ "$BAD" = 0 ] || gp_die "$route: $BAD requests failed or were not answered ${EXPECT[$route]:-ok}: not a valid measurement"
    [ "$REQUESTS" -gt 0 ] || gp_die "$route: nothing was answered"
    RESULTS[$route]+="$REQUESTS:$srv:$pg:$P99_US:$RATE:$((vol1 - vol0)):$((invol1 - invol0)) "
    gp_log "$route run $run: $REQUESTS in ${DURATION}s, server $((srv * 1000000 / TICKS / REQUESTS)) µs/request, postgres $((pg * 1000000 / TICKS / REQUESTS)) µs/request, p99 $((P99_US / 1000)) ms, $(((vol1 - vol0) * 100 / REQUESTS)) voluntary switches per 100 requests"
  done
  [ "$route" = "${BENCH_PROFILE_ROUTE:-read}" ] && bench_profile_stop
  if [ "$route" != join ]; then
    peak="$(python3 -c "import statistics, sys; print(statistics.median(float(r.split(':')[4]) for r in sys.argv[1].split()))" "${RESULTS[$route]}")"
    # At rate R over C connections each waits C/R s per request; at half the peak that is latency + pause = 2C/peak,
    # and a request's latency at the peak is about C/peak: the pause is C/peak, in ms.
    pace="$(python3 -c "import sys; print(round(int(sys.argv[1]) * 1000 / float(sys.argv[2]), 3))" "$CONNECTIONS" "$peak")"
    load "$route" "$DURATION" "$WORK/half-$route.out" "$pace"
    [ "$BAD" = 0 ] || gp_die "$route: $BAD requests failed at half load"
    HALF[$route]="$P99_US:$RATE"
  fi
done

# ---- allocations per request: a server under the counting allocator
declare -A ALLOCS
if [ "$ALLOCATIONS" = 1 ]; then
  kill -TERM "$SERVER_PID"
  for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  wait "$SERVER_PID" 2>/dev/null || true
  head -c 8 /dev/zero >"$WORK/malloc.count"
  bench_start_server LD_PRELOAD="$WORK/malloc_count.so" MALLOC_COUNT_FILE="$WORK/malloc.count"
  WS_URL="ws://127.0.0.1:$PORT/realtime/v1/websocket?apikey=$PUBLISHABLE_KEY&vsn=1.0.0"
  count() { od -An -t u8 -N8 "$WORK/malloc.count" | tr -d ' '; }
  for route in "${ROUTES[@]}"; do
    load "$route" 1 "$WORK/alloc-warmup-$route.out"
    c0="$(count)"
    load "$route" 3 "$WORK/alloc-$route.out"
    sleep 0.3 # requests in flight at wrk's stop finish
    ALLOCS[$route]="$(python3 -c "import sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3]), 1))" "$c0" "$(count)" "$REQUESTS")"
    gp_log "$route: ${ALLOCS[$route]} allocations per request"
  done
fi

# ---- summary
SUMMARY=()
for route in "${ROUTES[@]}"; do
  SUMMARY+=("$route" "${RESULTS[$route]}" "${HALF[$route]:-}" "${ALLOCS[$route]:-}" "${TARGET_US[$route]:-}" "${TARGET_UNITS[$route]:-}")
done
python3 - "$TICKS" "$VERIFY_PER_S" "$CONNECTIONS" "$THREADS" "$DURATION" "$RUNS" "$(nproc)" "${SUMMARY[@]}" <<'PY' >&2
import statistics, sys
ticks, verify_per_s, conns, threads, duration, runs, cpus = sys.argv[1:8]
rest = sys.argv[8:]
tick_us = 1e6 / int(ticks)
unit_us = 1e6 / float(verify_per_s)
rows = []
for k in range(0, len(rest), 6):
    route, results, half, allocs, target_us, target_units = rest[k:k + 6]
    runs_ = [tuple(map(float, r.split(":"))) for r in results.split()]
    server = sorted(s * tick_us / n for n, s, _, _, _, _, _ in runs_)
    postgres = statistics.median(p * tick_us / n for n, _, p, _, _, _, _ in runs_)
    rate = statistics.median(r for _, _, _, _, r, _, _ in runs_)
    p99 = statistics.median(q for _, _, _, q, _, _, _ in runs_) / 1000
    switches = statistics.median(v / n for n, _, _, _, _, v, _ in runs_)
    rows.append((route, statistics.median(server), server[0], server[-1], postgres, rate, p99, half, allocs, target_us, target_units, switches))
floor = next((r[1] for r in rows if r[0] == "floor"), None)
print(f"""
==== GuestPass server CPU per request (release build, {cpus} CPUs, loopback, wrk -t{threads} -c{conns}, {runs} runs of {duration} s per route)
  unit: one ES256 verification = {unit_us:.1f} µs on this machine (openssl speed ecdsap256: {float(verify_per_s):.0f} verify/s)
  median of the runs [lowest–highest]; "above floor" = less the floor route's median; units = µs ÷ the unit;
  switches = the server threads' voluntary context switches per request (hand-offs between threads)""")
print(f"  {'route':<7} {'server µs/req':>22} {'above floor':>11} {'units':>6} {'target':>14} {'postgres µs/req':>15} {'allocs/req':>10} {'switches':>8} {'req/s':>8} {'p99 ms':>7} {'p99 at ~half (req/s)':>22}")
for route, server, low, high, postgres, rate, p99, half, allocs, target_us, target_units, switches in rows:
    units = server / unit_us
    above = f"{server - floor:.0f}" if floor is not None else "-"
    verdict = "-"
    if target_us:
        met = server <= float(target_us) or units <= float(target_units)
        verdict = f"≤{target_us}/{target_units} {'met' if met else 'MISSED'}"
    half_text = "-"
    if half:
        h_p99, h_rate = map(float, half.split(":"))
        half_text = f"{h_p99 / 1000:.2f} ({h_rate:.0f})"
    print(f"  {route:<7} {server:7.0f} [{low:5.0f}–{high:5.0f}] {above:>11} {units:6.2f} {verdict:>14} {postgres:15.0f} {allocs or '-':>10} {switches:8.2f} {rate:8.0f} {p99:7.2f} {half_text:>22}")
    print(f"CPU_RESULT route={route} server_us={server:.1f} units={units:.3f} postgres_us={postgres:.1f} allocs={allocs or 'na'} switches={switches:.2f} rate={rate:.0f} p99_ms={p99:.2f}", file=sys.stdout)
print("====")
PY
