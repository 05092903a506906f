#!/usr/bin/env bash
# The stack's floor beside GuestPass's (issue 34): server CPU per request of the floor route (GET /health/live) on
#   nio          SwiftNIO's HTTP/1 server alone: one channel handler answers on the event loop (bench/stack-floor)
#   hummingbird  Hummingbird 2.28, one route, no middleware, jobs on NIO's event loops as guestpass runs them
#   guestpass    `guestpass serve`, the floor route of bench/cpu.sh
# and what one request transaction costs its client in libpq and the kernel alone: pgbench's own CPU per pipelined
# BEGIN; set_config(role, claims); SELECT 1; COMMIT (the frame every GuestPass request transaction sends).
#
#   ./bench/stack_floor.sh
#
# The three servers take turns, BENCH_RUNS rounds of BENCH_DURATION seconds each (wrk -t BENCH_THREADS -c
# BENCH_CONNECTIONS, after a warm-up), so they share the machine's noise; each one's median is printed with the spread,
# in µs and in units of one ES256 verification on this machine (`openssl speed ecdsap256`), as bench/cpu.sh prints.
# A route of GuestPass cannot cost less than hummingbird's floor plus the client's share of its transactions: the
# issue's targets are read against that sum. Environment: bench/lib.sh's (BENCH_DURATION default 6 here, BENCH_RUNS
# default 3, BENCH_SKIP_BUILD=1 also skips bench/stack-floor's build).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

BENCH_DURATION="${BENCH_DURATION:-6}"
bench_read_settings
RUNS="${BENCH_RUNS:-3}"
[[ "$RUNS" =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] && [ "$RUNS" -le 9 ] || gp_die "BENCH_RUNS must be in 1...9"
FLOOR_SCRATCH="$ROOT/.build-stack-floor"

bench_prepare_tools wrk curl openssl
bench_build
if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  gp_log "building bench/stack-floor (swift build -c release)"
  (cd "$ROOT/bench/stack-floor" && swift build -c release --scratch-path "$FLOOR_SCRATCH")
fi
FLOOR_BIN="$FLOOR_SCRATCH/release"
[ -x "$FLOOR_BIN/NIOFloor" ] && [ -x "$FLOOR_BIN/HummingbirdFloor" ] || gp_die "no bench/stack-floor build in $FLOOR_BIN"
bench_begin "$ROOT/.pg/bench-stack-floor"

gp_log "one ES256 verification on this machine (openssl speed ecdsap256, 3 s)"
VERIFY_PER_S="$(openssl speed -seconds 3 ecdsap256 2>/dev/null | awk '/nistp256/ { print $NF }' | tail -n 1)"
[[ "$VERIFY_PER_S" =~ ^[0-9.]+$ ]] || gp_die "openssl speed printed no verify/s"

bench_create_database
# shellcheck disable=SC2119
bench_start_server
declare -A FLOOR_URL=([guestpass]="$URL/health/live")
declare -A FLOOR_PID=([guestpass]="$SERVER_PID")
for name in nio hummingbird; do
  binary=NIOFloor
  [ "$name" = hummingbird ] && binary=HummingbirdFloor
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$FLOOR_BIN/$binary" "$port" >>"$WORK/$name.log" 2>&1 &
  FLOOR_PID[$name]=$!
  SERVER_PIDS+=("${FLOOR_PID[$name]}")
  FLOOR_URL[$name]="http://127.0.0.1:$port/health/live"
  for _ in $(seq 1 100); do curl -fsS -o /dev/null --max-time 2 "${FLOOR_URL[$name]}" 2>/dev/null && break; sleep 0.1; done
  curl -fsS -o /dev/null --max-time 2 "${FLOOR_URL[$name]}" || gp_die "$binary did not answer"
done

SERVERS=(nio hummingbird guestpass)
declare -A SAMPLES=()
for name in "${SERVERS[@]}"; do
  [ "$WARMUP" -gt 0 ] && wrk -t "$THREADS" -c "$CONNECTIONS" -d "${WARMUP}s" "${FLOOR_URL[$name]}" >/dev/null
done
for run in $(seq 1 "$RUNS"); do
  for name in "${SERVERS[@]}"; do
    t0="$(proc_ticks "${FLOOR_PID[$name]}")"
    timeout -k 5 $((DURATION + 60)) wrk -t "$THREADS" -c "$CONNECTIONS" -d "${DURATION}s" "${FLOOR_URL[$name]}" >"$WORK/wrk-$name-$run.out"
    ticks=$(($(proc_ticks "${FLOOR_PID[$name]}") - t0))
    requests="$(awk '/requests in/ { print $1 }' "$WORK/wrk-$name-$run.out")"
    bad="$(awk '/Non-2xx/ { print $NF }' "$WORK/wrk-$name-$run.out")"
    [ -z "$bad" ] || gp_die "$name answered $bad non-2xx responses"
    [[ "$requests" =~ ^[0-9]+$ ]] && [ "$requests" -gt 0 ] || gp_die "wrk printed no request count for $name"
    us="$(python3 -c "print(f'{$ticks * 1e6 / $(getconf CLK_TCK) / $requests:.1f}')")"
    gp_log "$name run $run: $requests in ${DURATION}s, server $us µs/request"
    SAMPLES[$name]="${SAMPLES[$name]:-} $us"
  done
done

# libpq's and the kernel's share of a request transaction on the client side: pgbench's own CPU per transaction.
cat >"$WORK/frame.sql" <<'SQL'
\startpipeline
begin;
select set_config('role', 'authenticated', true), set_config('request.jwt.claims', '{"role":"authenticated"}', true);
select 1;
commit;
\endpipeline
SQL
gp_log "client side of a pipelined request transaction: pgbench -M extended -c$CONNECTIONS -j$THREADS -T$DURATION"
/usr/bin/time -f '%U %S' -o "$WORK/pgbench.time" timeout -k 5 $((DURATION + 60)) pgbench -n -M extended -h 127.0.0.1 \
  -p "$PGPORT_BENCH" -U "$LOGIN_ROLE" -c "$CONNECTIONS" -j "$THREADS" -T "$DURATION" -f "$WORK/frame.sql" "$DB" \
  >"$WORK/pgbench.out" 2>&1 || { cat "$WORK/pgbench.out" >&2; gp_die "pgbench failed"; }
PG_TX="$(awk '/number of transactions actually processed/ { split($NF, a, "/"); print a[1] }' "$WORK/pgbench.out")"
[[ "$PG_TX" =~ ^[0-9]+$ ]] && [ "$PG_TX" -gt 0 ] || gp_die "pgbench printed no transaction count"
read -r PG_USER PG_SYS <"$WORK/pgbench.time"

python3 - "$VERIFY_PER_S" "$RUNS" "$DURATION" "$THREADS" "$CONNECTIONS" "$PG_TX" "$PG_USER" "$PG_SYS" \
  "${SAMPLES[nio]}" "${SAMPLES[hummingbird]}" "${SAMPLES[guestpass]}" <<'PY'
import statistics, sys
verify, runs, duration, threads, connections, tx, user, system = sys.argv[1:9]
unit = 1e6 / float(verify)
print(f"\n==== The stack's floor (GET /health/live; release builds, loopback, wrk -t{threads} -c{connections}, {runs} alternating runs of {duration} s)")
print(f"  unit: one ES256 verification = {unit:.1f} µs on this machine ({float(verify):.0f} verify/s)")
print(f"  {'server':<12} {'µs/request':>22} {'units':>6}")
for name, samples in zip(("nio", "hummingbird", "guestpass"), sys.argv[9:12]):
    values = sorted(float(v) for v in samples.split())
    median = statistics.median(values)
    print(f"  {name:<12} {median:7.1f} [{values[0]:5.1f}–{values[-1]:5.1f}] {median / unit:6.2f}")
    print(f"FLOOR_RESULT server={name} us={median:.1f} units={median / unit:.3f}")
client = (float(user) + float(system)) * 1e6 / int(tx)
print(f"  {'libpq client':<12} {client:7.1f} {'':>13} {client / unit:6.2f}   (pgbench's CPU per pipelined request transaction, {tx} of them)")
print(f"FLOOR_RESULT server=libpq-client us={client:.1f} units={client / unit:.3f}")
print("====")
PY
