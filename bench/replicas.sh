#!/usr/bin/env bash
# Throughput past one process: consume_quota over HTTP (bench/consume.lua) with one `guestpass serve` straight to
# PostgreSQL, the same without prepared statements (GUESTPASS_DB_POOL_MODE=transaction, what PgBouncer needs), one
# behind PgBouncer (transaction pooling), and three behind the same PgBouncer, on one machine and one database, same
# total concurrency, same time. It prints the three rates side by side, with pgbench on the same
# consume as the yardstick.
#
#   ./bench/replicas.sh
#
# Sets up everything itself and tears it down at exit (bench/lib.sh): a throwaway cluster in .pg/bench-replicas with
# a PgBouncer in front of it (`scripts/pg-cluster pgbouncer`, default_pool_size = BENCH_CONNECTIONS, so PostgreSQL
# sees the same number of sessions in every run), a database, an app whose daily allowance never runs out, and
# BENCH_USERS guests (default 4 × BENCH_CONNECTIONS, at most 128). Three replicas share BENCH_CONNECTIONS: one wrk per
# replica, each with a third of the connections (at least one), all at once; their rates add up.
#
# What it shows on a small machine: with 2 cores, replicas compete with PostgreSQL for the same CPUs, so three do
# not go faster than one here; what matters is that they go as fast, exactly (test_replicas), and that PgBouncer
# costs little. On separate machines the replicas' CPU adds up until PostgreSQL is the limit.
#
# Environment: BENCH_DURATION (seconds of each run, default 10), BENCH_CONNECTIONS (default 9), BENCH_THREADS
# (pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up per set-up, default 2), BENCH_USERS,
# BENCH_SKIP_BUILD=1, BENCH_BIN, BENCH_KEEP_CLUSTER=1, BENCH_DURABLE (bench/lib.sh). Exit status 1 when a run has
# errors or non-200 answers.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

BENCH_CONNECTIONS="${BENCH_CONNECTIONS:-9}"
bench_read_settings
DEFAULT_USERS=$((4 * CONNECTIONS))
[ "$DEFAULT_USERS" -le 128 ] || DEFAULT_USERS=128
USERS="${BENCH_USERS:-$DEFAULT_USERS}"
if ! [[ "$USERS" =~ ^[0-9]+$ ]] || [ "$USERS" -lt 1 ] || [ "$USERS" -gt 128 ]; then gp_die "BENCH_USERS must be in 1...128"; fi
PER_REPLICA=$(((CONNECTIONS + 2) / 3))

bench_prepare_tools wrk curl pgbouncer
bench_build
bench_begin "$ROOT/.pg/bench-replicas"
bench_create_database
DATABASE_URL="$SUPER_URL" "$BIN" apps configure --app "$APP_ID" --daily-free 1000000000 >/dev/null
PG_BOUNCER_POOL_SIZE="$CONNECTIONS" "$PGC" pgbouncer "$CLUSTER" >/dev/null
BOUNCER_PORT="$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).port)' "$("$PGC" pgbouncer-url "$CLUSTER")")"
BOUNCER_URL="${LOGIN_URL/:$PGPORT_BENCH\//:$BOUNCER_PORT/}"
[ "$BOUNCER_URL" != "$LOGIN_URL" ] || gp_die "could not point $LOGIN_URL at PgBouncer"

# wrk_runs LABEL URL... : one wrk per URL at once (the connections split between them) → RATE, BAD, P99_US (worst)
wrk_runs() {
  local label="$1" connections i=0 pids=() url requests=0 bad=0 longest=0 p99=0
  shift
  connections=$((CONNECTIONS / $#))
  [ "$#" -eq 1 ] || connections="$PER_REPLICA"
  if [ "$WARMUP" -gt 0 ]; then
    for url in "$@"; do
      timeout -k 5 $((WARMUP + 30)) wrk -t 1 -c "$connections" -d "${WARMUP}s" -s "$ROOT/bench/consume.lua" "$url" -- \
        "$PUBLISHABLE_KEY" "$WORK/tokens.lua" >/dev/null &
      pids+=($!)
    done
    wait "${pids[@]}"
    pids=()
  fi
  gp_log "$label: $# × wrk -t1 -c$connections -d${DURATION}s POST /rest/v1/rpc/consume_quota"
  for url in "$@"; do
    i=$((i + 1))
    timeout -k 5 $((DURATION + 60)) wrk -t 1 -c "$connections" -d "${DURATION}s" --latency -s "$ROOT/bench/consume.lua" \
      "$url" -- "$PUBLISHABLE_KEY" "$WORK/tokens.lua" >"$WORK/wrk-$label-$i.out" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for i in $(seq 1 "$#"); do
    bench_wrk_result "$WORK/wrk-$label-$i.out"
    requests=$((requests + HTTP_REQUESTS)) bad=$((bad + HTTP_BAD))
    [ "$HTTP_US" -gt "$longest" ] && longest="$HTTP_US"
    [ "$P99_US" -gt "$p99" ] && p99="$P99_US"
  done
  RATE="$(python3 -c "import sys; print(round(int(sys.argv[1]) / (int(sys.argv[2]) / 1e6), 1))" "$requests" "$longest")"
  BAD="$bad" P99="$p99"
  [ "$BAD" = 0 ] || gp_die "$label: $BAD requests failed or were not 200"
}

# ---- one replica straight to PostgreSQL (prepared statements), then through PgBouncer (transaction pooling)
bench_start_server
DIRECT="$URL"
bench_sign_up_users "$DIRECT" "$USERS"
bench_start_server GUESTPASS_DB_POOL_MODE=transaction
UNPREPARED="$URL"
bench_start_server DATABASE_URL="$BOUNCER_URL" GUESTPASS_DB_POOL_MODE=transaction
BOUNCED=("$URL")
for _ in 1 2; do
  bench_start_server DATABASE_URL="$BOUNCER_URL" GUESTPASS_DB_POOL_MODE=transaction GUESTPASS_DB_POOL_SIZE="$PER_REPLICA"
  BOUNCED+=("$URL")
done

wrk_runs direct "$DIRECT"
DIRECT_RATE="$RATE" DIRECT_P99="$P99"
wrk_runs direct-unprepared "$UNPREPARED"
UNPREPARED_RATE="$RATE" UNPREPARED_P99="$P99"
wrk_runs one-bounced "${BOUNCED[0]}"
ONE_RATE="$RATE" ONE_P99="$P99"
wrk_runs three-bounced "${BOUNCED[@]}"
THREE_RATE="$RATE" THREE_P99="$P99"

# ---- the yardstick: pgbench on the same consume, framed as the server frames it, straight to PostgreSQL
PGB_SCRIPTS=()
for i in $(seq 1 "$USERS"); do
  claims="$(sed "s/'/''/g" "$WORK/claims-$i.json")"
  printf "begin;\nselect set_config('role', 'authenticated', true), set_config('request.jwt.claims', '%s', true);\nselect public.consume_quota();\ncommit;\n" \
    "$claims" >"$WORK/consume-$i.sql"
  PGB_SCRIPTS+=(-f "$WORK/consume-$i.sql@1")
done
bench_cpu_init
bench_pgbench consume "${PGB_SCRIPTS[@]}"

python3 - "$DIRECT_RATE" "$DIRECT_P99" "$UNPREPARED_RATE" "$UNPREPARED_P99" "$ONE_RATE" "$ONE_P99" "$THREE_RATE" "$THREE_P99" "$PG_TPS" "$CONNECTIONS" \
  "$PER_REPLICA" "$DURATION" "$(nproc)" <<'PY' >&2
import sys
direct, direct_p99, unprepared, unprepared_p99, one, one_p99, three, three_p99, pgbench, conns, per, dur, cpus = sys.argv[1:]
print()
print(f"==== replicas: consume_quota over HTTP, {conns} connections in all, {dur}s each, {cpus} CPUs, one machine")
print(f"  {'set-up':<66} {'req/s':>9} {'p99 ms':>8} {'÷ pgbench':>10}")
rows = [("1 replica → PostgreSQL", direct, direct_p99),
        ("1 replica → PostgreSQL, transaction mode (no prepared statements)", unprepared, unprepared_p99), ("1 replica → PgBouncer (transaction) → PostgreSQL", one, one_p99),
        (f"3 replicas ({per} conns each) → PgBouncer → PostgreSQL", three, three_p99)]
for name, rate, p99 in rows:
    print(f"  {name:<66} {float(rate):>9.1f} {int(p99) / 1000:>8.2f} {float(rate) / float(pgbench):>10.2f}")
print(f"  {'pgbench, the same transaction, direct':<66} {float(pgbench):>9.1f}")
print(f"  3 replicas ÷ 1 (both through PgBouncer): {float(three) / float(one):.2f}; "
      f"PgBouncer ÷ direct: {float(one) / float(direct):.2f} (unprepared ÷ prepared {float(unprepared) / float(direct):.2f}, "
      f"the PgBouncer hop {float(one) / float(unprepared):.2f})")
PY
