#!/usr/bin/env bash
# consume_quota throughput: HTTP (wrk → POST /rest/v1/rpc/consume_quota on a release build) against pgbench calling
# public.consume_quota directly, at the same concurrency, on the same database, for the same time.
#
#   ./bench/consume.sh
#
# Sets up everything itself and tears it down at exit (also on failure or Ctrl-C), as bench/signup.sh does
# (bench/lib.sh): a throwaway cluster in .pg/bench-consume, a database, migrations, an app, a signing key, and
# `guestpass serve` on a free loopback port with GUESTPASS_DB_POOL_SIZE = the concurrency. The app's daily free
# allowance is set to 1000000000 (`guestpass apps configure --daily-free`), so every consume succeeds (charged:
# free) and never reaches credits or PT429. BENCH_USERS users (default 4 × BENCH_CONNECTIONS, at most 128, the
# most scripts pgbench takes) sign up over HTTP first; each consume is by one of them picked at random, so
# concurrent consumes rarely queue on the same user row (consume_at locks it).
#
# HTTP: every request is POST /rest/v1/rpc/consume_quota, body {}, apikey = the publishable key, Authorization =
# one user's access token (bench/consume.lua). SQL: pgbench as guestpass_authenticator (the server's login role)
# with one script per user, picked at random (-f file@1 each), each the transaction the server runs for that
# request: BEGIN; set_config('role', 'authenticated', true), set_config('request.jwt.claims', <the user's token
# payload, exactly as the server passes it>, true); SELECT public.consume_quota(); COMMIT.
#
# Environment: BENCH_DURATION (seconds of each kind of run, default 10), BENCH_ROUNDS (default 2: the HTTP run, the
# ceiling and ours alternate in that many rounds of BENCH_DURATION / BENCH_ROUNDS seconds, so they share the machine's
# drift), BENCH_CONNECTIONS (default 8), BENCH_THREADS (wrk threads /
# pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up, default 2, 0 = none), BENCH_USERS (default
# 4 × BENCH_CONNECTIONS, 1...128), BENCH_PROFILE=1 (perf samples the server during the HTTP run and prints its top
# symbols), BENCH_SKIP_BUILD=1 (use the existing release build), BENCH_KEEP_CLUSTER=1 (keep
# .pg/bench-consume afterwards). Exit status 1 when a measurement is invalid (errors, non-200 answers, or fewer
# consumes recorded in the database than answered); a ratio below its target (our SQL ≥ 0.60 × the ceiling, HTTP ≥
# 0.80 × our SQL) is reported, not an error.
#
# Paced: after the peak HTTP run, a second one of the same length in which each connection pauses between requests
# (BENCH_WRK_DELAY_MS in bench/consume.lua) so the load is about half the peak; its p99 is the latency of a normal
# load (target: at most 10 ms).
#
# The ceiling: pgbench on the minimal SQL of a consume (bench/ceiling.sql: a one-row INSERT … ON CONFLICT DO UPDATE
# of the user's day counter) framed exactly like ours, same users, same concurrency.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
TARGET=0.80     # HTTP / our SQL
SQL_TARGET=0.60 # our SQL / the ceiling
ROUNDS="${BENCH_ROUNDS:-2}"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le "$DURATION" ] || gp_die "BENCH_ROUNDS must be in 1...BENCH_DURATION"
ROUND_SECONDS=$((DURATION / ROUNDS))
DEFAULT_USERS=$((4 * CONNECTIONS))
[ "$DEFAULT_USERS" -le 128 ] || DEFAULT_USERS=128
USERS="${BENCH_USERS:-$DEFAULT_USERS}"
if ! [[ "$USERS" =~ ^[0-9]+$ ]] || [ "$USERS" -lt 1 ] || [ "$USERS" -gt 128 ]; then gp_die "BENCH_USERS must be in 1...128"; fi

bench_prepare_tools wrk curl
bench_build
bench_begin "$ROOT/.pg/bench-consume"
bench_create_database
DATABASE_URL="$SUPER_URL" "$BIN" apps configure --app "$APP_ID" --daily-free 1000000000 >/dev/null
# shellcheck disable=SC2119
bench_start_server

# ---- users: sign up over HTTP; their access tokens (for wrk) and their claims (the tokens' payloads, for pgbench)
bench_sign_up_users "$URL" "$USERS"
timeout -k 5 60 python3 - "$USERS" "$WORK" <<'PY' || gp_die "writing the pgbench scripts failed"
import json, sys
users, work = int(sys.argv[1]), sys.argv[2]
for i in range(1, users + 1):
    with open(f"{work}/claims-{i}.json") as f:
        claims = f.read()
    # pgbench substitutes :name with its variables (client_id, scale, random_seed, default_seed) in scripts.
    assert not any(":" + v in claims for v in ("client_id", "scale", "random_seed", "default_seed")), claims
    frame = ("begin;\n"
             "select set_config('role', 'authenticated', true), "
             f"set_config('request.jwt.claims', '{claims.replace(chr(39), chr(39) * 2)}', true);\n")
    with open(f"{work}/consume-{i}.sql", "w") as f:
        f.write(frame + "select public.consume_quota();\ncommit;\n")
    # The ceiling: the same frame around the minimal consume, a one-row upsert of the user's day counter.
    user_id = json.loads(claims)["sub"]
    with open(f"{work}/ceiling-{i}.sql", "w") as f:
        f.write(frame + "insert into bench_ceiling.usage as u (user_id, day, used) "
                f"values ('{user_id}', current_date, 1) on conflict (user_id, day) do update set used = u.used + 1;\n"
                "commit;\n")
PY

# One consume by hand each way: both must succeed before anything is measured.
status="$(curl -sS -o "$WORK/probe.json" -w '%{http_code}' --max-time 10 -X POST "$URL/rest/v1/rpc/consume_quota" \
  -H "apikey: $PUBLISHABLE_KEY" -H "Authorization: Bearer $(sed -n '2s/^ *"\(.*\)",$/\1/p' "$WORK/tokens.lua")" \
  -H 'Content-Type: application/json' -d '{}')"
if [ "$status" != 200 ] || ! grep -q '"charged" *: *"free"' "$WORK/probe.json"; then
  gp_die "probe consume answered $status: $(head -c 300 "$WORK/probe.json")"
fi
psql_q "$LOGIN_URL" -f "$WORK/consume-1.sql" >"$WORK/probe-sql.out" 2>&1 ||
  gp_die "probe consume in SQL failed: $(head -c 300 "$WORK/probe-sql.out")"

bench_cpu_init
consumes() { psql_q "$SUPER_URL" -Atc "select coalesce(sum(free_used + premium_used + credit_used), 0) from guestpass.daily_usage"; }
rss_kb() { ps -o rss= -p "$SERVER_PID" | tr -d ' '; }
RSS0="$(rss_kb)"

# ---- The measurement: ROUNDS rounds, each of HTTP (wrk), the ceiling (pgbench) and ours (pgbench), ROUND_SECONDS
# each, so the three see the same machine (a VM's speed drifts by more than the differences measured). Totals are
# summed over the rounds; the latency percentiles are the worst round's.
bench_create_ceiling
CEILING_SCRIPTS=()
PGB_SCRIPTS=()
for i in $(seq 1 "$USERS"); do
  CEILING_SCRIPTS+=(-f "$WORK/ceiling-$i.sql@1")
  PGB_SCRIPTS+=(-f "$WORK/consume-$i.sql@1")
done
WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/consume.lua")
if [ "$WARMUP" -gt 0 ]; then
  gp_log "HTTP warm-up: ${WARMUP}s"
  timeout -k 5 $((WARMUP + 30)) "${WRK[@]}" -d "${WARMUP}s" "$URL" -- "$PUBLISHABLE_KEY" "$WORK/tokens.lua" >"$WORK/warmup.out"
fi
RSS1="$(rss_kb)"
bench_http_rounds_begin
HTTP_CONSUMES=0
CEIL_TX=0 CEIL_SECONDS=0 CEIL_TICKS=0 SQL_TX=0 SQL_SECONDS=0 SQL_PG_TICKS=0 SQL_CONSUMES=0 SQL_FAILED=0
seconds_of() { python3 -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]))" "$1" "$2"; }
add() { python3 -c "import sys; print(float(sys.argv[1]) + float(sys.argv[2]))" "$1" "$2"; }
bench_profile_start "$SERVER_PID"
for round in $(seq 1 "$ROUNDS"); do
  gp_log "round $round of $ROUNDS: wrk -t$THREADS -c$CONNECTIONS -d${ROUND_SECONDS}s POST /rest/v1/rpc/consume_quota ($USERS users), then pgbench ceiling and ours"
  C0="$(consumes)"
  bench_http_round "$round" "$PUBLISHABLE_KEY" "$WORK/tokens.lua"
  sleep 0.5 # requests wrk left in flight at its stop still finish in the server
  C1="$(consumes)"
  HTTP_CONSUMES=$((HTTP_CONSUMES + C1 - C0))

  DURATION="$ROUND_SECONDS" bench_pgbench "ceiling-$round" "${CEILING_SCRIPTS[@]}"
  [ "${PG_FAILED:-0}" = 0 ] || gp_die "$PG_FAILED ceiling transactions failed"
  CEIL_TX=$((CEIL_TX + PG_TX)) CEIL_TICKS=$((CEIL_TICKS + PG_CPU_TICKS))
  CEIL_SECONDS="$(add "$CEIL_SECONDS" "$(seconds_of "$PG_TX" "$PG_TPS")")"

  C2="$(consumes)"
  DURATION="$ROUND_SECONDS" bench_pgbench "consume-$round" "${PGB_SCRIPTS[@]}"
  SQL_TX=$((SQL_TX + PG_TX)) SQL_PG_TICKS=$((SQL_PG_TICKS + PG_CPU_TICKS)) SQL_FAILED=$((SQL_FAILED + ${PG_FAILED:-0}))
  SQL_SECONDS="$(add "$SQL_SECONDS" "$(seconds_of "$PG_TX" "$PG_TPS")")"
  SQL_CONSUMES=$((SQL_CONSUMES + $(consumes) - C2))
done
bench_profile_stop
RSS2="$(rss_kb)"
bench_http_rounds_end
PG_TX="$SQL_TX" PG_FAILED="$SQL_FAILED" PG_TPS="$(python3 -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]))" "$SQL_TX" "$SQL_SECONDS")"
PG_LAT="$(python3 -c "import sys; print(round(1000 * float(sys.argv[2]) * int(sys.argv[3]) / int(sys.argv[1]), 3))" "$SQL_TX" "$SQL_SECONDS" "$CONNECTIONS")"
CEIL_TPS="$(python3 -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]))" "$CEIL_TX" "$CEIL_SECONDS")"

# ---- HTTP at half the peak rate: each connection pauses between requests (bench/consume.lua, BENCH_WRK_DELAY_MS) so
# the load is about half what the server sustained; the latency that matters at a normal load is this one.
HALF_DELAY_MS="$(python3 -c "import sys; r, us, c, p50 = map(int, sys.argv[1:]); rate = r / (us / 1e6)
print(max(1, round(1000 * c / (rate / 2) - p50 / 1000)))" "$HTTP_REQUESTS" "$HTTP_US" "$CONNECTIONS" "$P50_US")"
gp_log "HTTP at half the peak rate: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s, ${HALF_DELAY_MS} ms between a connection's requests"
PEAK=("$HTTP_REQUESTS" "$HTTP_US" "$HTTP_BAD" "$P50_US" "$P90_US" "$P99_US" "$MAX_US")
C0="$(consumes)"
BENCH_WRK_DELAY_MS="$HALF_DELAY_MS" timeout -k 5 $((DURATION + 60)) "${WRK[@]}" -d "${DURATION}s" --latency "$URL" -- \
  "$PUBLISHABLE_KEY" "$WORK/tokens.lua" >"$WORK/wrk-half.out"
bench_wrk_result "$WORK/wrk-half.out"
HALF_REQUESTS="$HTTP_REQUESTS" HALF_US="$HTTP_US" HALF_BAD="$HTTP_BAD" HALF_P50_US="$P50_US" HALF_P99_US="$P99_US"
HTTP_REQUESTS="${PEAK[0]}" HTTP_US="${PEAK[1]}" HTTP_BAD="${PEAK[2]}"
P50_US="${PEAK[3]}" P90_US="${PEAK[4]}" P99_US="${PEAK[5]}" MAX_US="${PEAK[6]}"
sleep 0.5
HALF_CONSUMES=$(($(consumes) - C0))

# ---- summary
python3 - "$HTTP_REQUESTS" "$HTTP_US" "$HTTP_BAD" "$P50_US" "$P90_US" "$P99_US" "$MAX_US" \
  "$PG_TPS" "${PG_TX:-0}" "${PG_FAILED:-0}" "${PG_LAT:-?}" "$TARGET" "$CONNECTIONS" "$THREADS" "$DURATION" \
  "$(nproc)" "$USERS" "$TICKS" "$HTTP_SERVER_TICKS" "$HTTP_PG_TICKS" "$SQL_PG_TICKS" \
  "$HTTP_CONSUMES" "$HALF_CONSUMES" "$SQL_CONSUMES" "$RSS0" "$RSS1" "$RSS2" "$CEIL_TPS" "$CEIL_TX" "$CEIL_TICKS" "$SQL_TARGET" \
  "$HALF_REQUESTS" "$HALF_US" "$HALF_BAD" "$HALF_P50_US" "$HALF_P99_US" "$HALF_DELAY_MS" "$ROUNDS" <<'PY' >&2
import sys
(req, us, bad, p50, p90, p99, pmax, pg_tps, pg_tx, pg_failed, pg_lat, target, conns, threads, dur, cpus, users,
 ticks, http_srv, http_pg, sql_pg, http_consumes, half_consumes, sql_consumes, rss0, rss1, rss2, ceil_tps, ceil_tx, ceil_pg, sql_target,
 half_req, half_us, half_bad, half_p50, half_p99, half_delay, rounds) = sys.argv[1:]
half_rate = int(half_req) / (int(half_us) / 1e6)
tick_ms = 1000 / int(ticks)
per = lambda t, n: f"{int(t) * tick_ms / max(1, int(n)):.3f} ms"
http_rate = int(req) / (int(us) / 1e6)
ratio = http_rate / float(pg_tps)
ms = lambda v: f"{int(v) / 1000:.2f} ms"
mb = lambda kb: f"{int(kb) / 1024:.1f} MB" if kb.isdigit() else "?"
sql_ratio = float(pg_tps) / float(ceil_tps)
verdict = lambda value, goal: "meets the target" if value >= float(goal) else "BELOW the target"
print(f"""
==== GuestPass consume_quota benchmark (release build, {cpus} CPUs, loopback, one database)
  concurrency        {conns} connections ({threads} wrk threads / pgbench jobs), {dur} s each in {rounds} rounds, server pool {conns}, {users} users
  HTTP  consume      {http_rate:10.1f} req/s   POST /rest/v1/rpc/consume_quota, {req} requests, {bad} errors/4xx-5xx
        latency      p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(pmax)} (the worst round's)
        CPU/request  server {per(http_srv, req)}, postgres {per(http_pg, req)}
  HTTP  half peak    {half_rate:10.1f} req/s   {half_rate / http_rate:.2f} × the peak ({half_delay} ms pause per connection), {half_bad} errors/4xx-5xx
        latency      p50 {ms(half_p50)}  p99 {ms(half_p99)}   target p99 <= 10 ms: {"meets the target" if int(half_p99) <= 10000 else "ABOVE the target"}
  SQL   pgbench      {float(pg_tps):10.1f} tx/s    consume_quota() as authenticated, {pg_tx} tx, {pg_failed} failed, avg {pg_lat} ms
        CPU/tx       postgres {per(sql_pg, pg_tx)}
  ceiling pgbench    {float(ceil_tps):10.1f} tx/s    the minimal consume (one-row upsert, bench/ceiling.sql), same frame, {ceil_tx} tx
        CPU/tx       postgres {per(ceil_pg, ceil_tx)}
  ratio SQL/ceiling  {sql_ratio:10.2f}         target >= {sql_target}: {verdict(sql_ratio, sql_target)}
  ratio HTTP/SQL     {ratio:10.2f}         target >= {target}: {verdict(ratio, target)}
  database           consumes recorded: {http_consumes} during the peak HTTP runs, {half_consumes} during the paced one, {sql_consumes} during pgbench
  server RSS         {mb(rss0)} before warm-up, {mb(rss1)} after, {mb(rss2)} after the HTTP run
====""")
PY
[ "$HALF_BAD" = 0 ] || gp_die "$HALF_BAD HTTP requests at half the peak rate failed or were answered 4xx/5xx"
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD HTTP requests failed or were answered 4xx/5xx: the HTTP rate is not a valid measurement"
[ "${PG_FAILED:-0}" = 0 ] || gp_die "$PG_FAILED pgbench transactions failed"
# Every answered request and every transaction must have consumed (a 200 that charged nothing would not count).
[ "$HTTP_CONSUMES" -ge "$HTTP_REQUESTS" ] || gp_die "only $HTTP_CONSUMES consumes recorded for $HTTP_REQUESTS HTTP answers"
[ "$HALF_CONSUMES" -ge "$HALF_REQUESTS" ] || gp_die "only $HALF_CONSUMES consumes recorded for $HALF_REQUESTS paced HTTP answers"
[ "$SQL_CONSUMES" -ge "$PG_TX" ] || gp_die "only $SQL_CONSUMES consumes recorded for $PG_TX pgbench transactions"
