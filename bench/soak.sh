#!/usr/bin/env bash
# Soak: a mixed load for a bounded time (launches = sign-up or refresh, get_quota, consume_quota; bench/soak.lua)
# against a release build, printing the server's RSS every 30 s, and at the end the request count, the errors and
# the latency percentiles, with a verdict on memory: RSS after the first minute stays within 10% to the end.
#
#   ./bench/soak.sh                      # 5 minutes
#   BENCH_SOAK_SECONDS=600 ./bench/soak.sh
#
# Sets up everything itself and tears it down at exit (bench/lib.sh): a durable throwaway cluster in .pg/bench-soak,
# `guestpass dev up`, an app whose daily free allowance never runs out, and `guestpass serve` on a free loopback port
# with sign-up limits too large to trigger. Environment: BENCH_SOAK_SECONDS (default 300, 60...3600),
# BENCH_CONNECTIONS (default 8), BENCH_THREADS (default 2), BENCH_SKIP_BUILD=1, BENCH_KEEP_CLUSTER=1. Exit status 1
# when a request failed or was answered anything but 200, or when RSS grew by more than 10% after the first minute.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
SOAK="${BENCH_SOAK_SECONDS:-300}"
[[ "$SOAK" =~ ^[0-9]+$ ]] && [ "$SOAK" -ge 60 ] && [ "$SOAK" -le 3600 ] || gp_die "BENCH_SOAK_SECONDS must be in 60...3600"
INTERVAL=30

bench_prepare_tools wrk curl
bench_build
bench_begin "$ROOT/.pg/bench-soak"
bench_create_database
DATABASE_URL="$SUPER_URL" "$BIN" apps configure --app "$APP_ID" --daily-free 1000000000 >/dev/null
# shellcheck disable=SC2119
bench_start_server

rss_kb() { ps -o rss= -p "$SERVER_PID" | tr -d ' '; }
gp_log "soak: wrk -t$THREADS -c$CONNECTIONS -d${SOAK}s (bench/soak.lua), RSS every ${INTERVAL}s"
timeout -k 5 $((SOAK + 60)) wrk -t "$THREADS" -c "$CONNECTIONS" -d "${SOAK}s" --timeout 10s --latency \
  -s "$ROOT/bench/soak.lua" "$URL" -- "$PUBLISHABLE_KEY" >"$WORK/wrk.out" 2>&1 &
WRK_PID=$!
SAMPLES=("0 $(rss_kb)")
for ((t = INTERVAL; t <= SOAK; t += INTERVAL)); do
  sleep "$INTERVAL" # the sampling period of a soak is time itself
  kill -0 "$WRK_PID" 2>/dev/null || break
  SAMPLES+=("$t $(rss_kb)")
  gp_log "t=${t}s RSS $(awk '{printf "%.1f MB", $2 / 1024}' <<<"${SAMPLES[-1]}")"
done
wait "$WRK_PID" || { cat "$WORK/wrk.out" >&2; gp_die "wrk failed"; }
SAMPLES+=("end $(rss_kb)")
bench_wrk_result "$WORK/wrk.out"
COUNTS="$(psql_q "$SUPER_URL" -Atc "select (select count(*) from public.users) || ' users, ' ||
  (select count(*) from guestpass.sessions) || ' sessions, ' || (select count(*) from guestpass.refresh_tokens) ||
  ' refresh tokens, ' || (select coalesce(sum(free_used), 0) from guestpass.daily_usage) || ' consumes'")"

python3 - "$HTTP_REQUESTS" "$HTTP_US" "$HTTP_BAD" "$P50_US" "$P90_US" "$P99_US" "$MAX_US" "$CONNECTIONS" \
  "$THREADS" "$SOAK" "$(nproc)" "$COUNTS" "${SAMPLES[@]}" <<'PY' >&2
import sys
req, us, bad, p50, p90, p99, pmax, conns, threads, soak, cpus, counts, *samples = sys.argv[1:]
samples = [(t, int(kb)) for t, kb in (s.split() for s in samples) if kb.isdigit()]
ms = lambda v: f"{int(v) / 1000:.2f} ms"
# RSS after the first minute, and the most it reached from then on (the end sample included).
since = next((i for i, (t, _) in enumerate(samples) if t == "end" or int(t) >= 60), len(samples) - 1)
base = samples[since][1]
worst = max(kb for _, kb in samples[since:])
growth = (worst - base) / base
print(f"""
==== GuestPass soak (release build, {cpus} CPUs, loopback): {soak} s of launches, get_quota and consumes
  load       {conns} connections ({threads} wrk threads), {int(req) / (int(us) / 1e6):.1f} req/s, {req} requests, {bad} errors/non-200
  latency    p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(pmax)}
  RSS        """ + ", ".join(f"{t}{'' if t == 'end' else ' s'} {kb / 1024:.1f} MB" for t, kb in samples) + f"""
  memory     after the first minute {base / 1024:.1f} MB, at most {worst / 1024:.1f} MB since: {growth:+.1%} (target within 10%)
  database   {counts}
====""")
sys.exit(0 if growth <= 0.10 else 3)
PY
verdict=$?
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD requests failed or were answered other than 200"
[ "$verdict" = 0 ] || gp_die "RSS grew by more than 10% after the first minute"
