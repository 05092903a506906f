#!/usr/bin/env bash
# Realtime benchmarks.
#
#   ./bench/realtime.sh
#
# (1) Capture write cost: the first half (branch wt-rtsql) goes here; see the marked place below.
# (2) Fan-out: 1,000 subscribers on this machine, changes/s delivered and the delay from the writer's INSERT to the
#     client (target: p99 ≤ 250 ms at 100 changes/s). Set-up in bench/realtime_fanout.sh, measurement in
#     bench/realtime_fanout.py (their headers say what and how). Two scenarios: per-user (1,000 guests, each subscribed
#     to its own readings with user_id=eq.<id>; pgbench inserts 100 readings/s of random guests: each change reaches
#     one socket) and shared (1,000 sockets of one guest, no filter; 10 readings/s: each change reaches every socket,
#     10,000 deliveries/s); each beside pgbench writing the same INSERT at the same rate into an unpublished copy.
#
# Sets up everything itself and tears it down at exit (bench/lib.sh): a throwaway cluster in .pg/bench-realtime
# (durable: fsync and synchronous_commit on, as production runs; BENCH_DURABLE=0 for the test clusters' settings), a
# database, the core migrations and an app (`guestpass dev up`); the fan-out adds sql/examples, the server and the
# guests.
#
# Environment: BENCH_CONNECTIONS (default 8: the server's pool, and the fan-out's burst writers), BENCH_SKIP_BUILD=1,
# BENCH_BIN=PATH, BENCH_KEEP_CLUSTER=1, BENCH_DURABLE, BENCH_PG_CONF (bench/lib.sh); BENCH_REALTIME_PARTS (default
# "capture fanout": which halves run); the fan-out's BENCH_RT_* (bench/realtime_fanout.sh). Exit status 1 when a
# measurement is invalid; a figure below its target is reported, not an error.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
PARTS=" ${BENCH_REALTIME_PARTS:-capture fanout} "

# shellcheck disable=SC2119 # no extra apt packages: pgbench only
bench_prepare_tools curl
bench_build
bench_begin "$ROOT/.pg/bench-realtime"
bench_create_database

# ---- (1) the capture's write cost (pgbench on a published vs an unpublished table): written on branch wt-rtsql.
# PLACEHOLDER: that half replaces this comment (when [[ "$PARTS" == *" capture "* ]]).

# ---- (2) fan-out: 1,000 subscribers on this machine, changes/s delivered and p99 delay from the INSERT to the client
# (target p99 ≤ 250 ms at 100 changes/s). Everything it needs is in bench/realtime_fanout.sh, after the database:
# sql/examples, the server, the guests, the writer's scripts; bench/realtime_fanout.py measures and prints the table.
if [[ "$PARTS" == *" fanout "* ]]; then
  # shellcheck source=bench/realtime_fanout.sh
  . "$ROOT/bench/realtime_fanout.sh"
  realtime_fanout
fi
