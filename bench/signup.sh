#!/usr/bin/env bash
# Sign-up throughput: HTTP (wrk → POST /auth/v1/signup on a release build) against pgbench calling
# public.create_guest_user directly, at the same concurrency, on the same database, for the same time.
#
#   ./bench/signup.sh
#
# Sets up everything itself and tears it down at exit (also on failure or Ctrl-C): a throwaway
# cluster in .pg/bench (scripts/pg-cluster), a database, migrations, an app, a signing key, and
# `guestpass serve` on a free loopback port with GUESTPASS_DB_POOL_SIZE = the concurrency and a
# sign-up limit too large to trigger. Every request creates a new user + device + session (a fresh
# v4 device secret per request, bench/signup.lua); every pgbench transaction creates a user + device.
#
# Environment: BENCH_DURATION (seconds of each kind of run, default 10), BENCH_ROUNDS (default 2: HTTP, the ceiling
# and sign_up_guest alternate in that many rounds of BENCH_DURATION / BENCH_ROUNDS seconds), BENCH_CONNECTIONS (default 8),
# BENCH_THREADS (wrk threads / pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up,
# default 2, 0 = none), BENCH_CLIENT_IP=vary-ip|fixed-ip (X-Forwarded-For per request: random
# 10.x.y.z, or none, default vary-ip), BENCH_SKIP_BUILD=1 (use the existing release build),
# BENCH_KEEP_CLUSTER=1 (keep .pg/bench afterwards), BENCH_PROFILE=1 (perf samples the server during the HTTP run). Exit status 1 when a measurement is invalid
# (errors or non-200 answers); a ratio below its target (sign_up_guest ≥ 0.40 × the ceiling, HTTP ≥ 0.80 ×
# sign_up_guest) is reported, not an error. The ceiling: pgbench on the minimal SQL of a guest (bench/ceiling.sql:
# one INSERT … ON CONFLICT DO NOTHING of app + device hash), framed exactly like ours, same concurrency. The floor:
# pgbench on the rows a sign-up writes (both rate-limit buckets, user, device, session, refresh token) as one plain
# prepared statement run by the owner, same frame: floor/ceiling is what the work itself allows, SQL/floor what our SQL adds.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
CLIENT_IP="${BENCH_CLIENT_IP:-vary-ip}"
ROUNDS="${BENCH_ROUNDS:-2}"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le "$DURATION" ] || gp_die "BENCH_ROUNDS must be in 1...BENCH_DURATION"
ROUND_SECONDS=$((DURATION / ROUNDS))
TARGET=0.80     # HTTP / sign_up_guest
SQL_TARGET=0.40 # sign_up_guest / the ceiling
APP_CAPACITY=100000000 # the app's sign-up bucket in the SQL runs: too large to bind, as the server's
case "$CLIENT_IP" in vary-ip | fixed-ip) ;; *) gp_die "BENCH_CLIENT_IP must be vary-ip or fixed-ip" ;; esac

bench_prepare_tools wrk curl
bench_build
bench_begin "$ROOT/.pg/bench"
bench_create_database
bench_start_server GUESTPASS_TRUSTED_PROXY_HEADER=X-Forwarded-For

# One request by hand: it must succeed before anything is measured.
status="$(curl -sS -o "$WORK/probe.json" -w '%{http_code}' --max-time 10 -X POST "$URL/auth/v1/signup" \
  -H "apikey: $PUBLISHABLE_KEY" -H "Authorization: Bearer $PUBLISHABLE_KEY" -H 'Content-Type: application/json' \
  -d "{\"data\":{\"device_id\":\"$(python3 -c 'import uuid; print(uuid.uuid4())')\"}}")"
[ "$status" = 200 ] || gp_die "probe sign-up answered $status: $(head -c 300 "$WORK/probe.json")"

bench_cpu_init

# ---- The SQL scripts, run by pgbench as the login role with anon + app claims: the ceiling (the minimal guest,
# bench/ceiling.sql), public.create_guest_user, and guestpass_server.sign_up_guest (the SQL the HTTP sign-up runs: user,
# device, session, refresh token, rate-limit buckets, with the server's arguments).
FRAME="begin;
select set_config('role', 'anon', true), set_config('request.jwt.claims', '{\"role\":\"anon\",\"app_id\":\"$APP_ID\"}', true);"
bench_create_ceiling
printf '%s\n%s\ncommit;\n' "$FRAME" \
  "insert into bench_ceiling.guests (app_id, device_hash) values ('$APP_ID', md5(random()::text)) on conflict (app_id, device_hash) do nothing;" \
  >"$WORK/ceiling.sql"
printf '%s\n%s\ncommit;\n' "$FRAME" "select public.create_guest_user(gen_random_uuid());" >"$WORK/create_guest_user.sql"
if [ "$CLIENT_IP" = vary-ip ]; then
  IP_SQL="'10.' || (random() * 255)::int || '.' || (random() * 255)::int || '.' || (1 + random() * 253)::int"
else
  IP_SQL="'127.0.0.1'"
fi
printf '%s\n%s\ncommit;\n' "$FRAME" \
  "select * from guestpass_server.sign_up_guest(encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'), null, '{}'::jsonb, $IP_SQL, 1000000, 1000000 / 3600.0, $APP_CAPACITY, $APP_CAPACITY / 3600.0, null, gen_random_uuid(), encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'));" \
  >"$WORK/sign_up_guest.sql"
# The floor: the rows sign_up_guest writes (the client's bucket, a shard of the app's, user, device, session, refresh
# token), written by one plain statement with no function, no check and no rule of ours, run by the owner in the same
# frame and prepared (as our functions' statements are): what the work itself costs in this schema. The app's
# shards (guestpass.shard_count) exist first, as they do after any sign-up. (Colons in literals are spelled chr(58): pgbench -M prepared
# reads :name as a variable.)
psql_q "$SUPER_URL" -c "insert into guestpass.rate_limits (bucket, tokens, updated_at)
  select 'signup:app:$APP_ID:' || g, $APP_CAPACITY / guestpass.shard_count($APP_CAPACITY), now()
  from generate_series(0, guestpass.shard_count($APP_CAPACITY) - 1) as g on conflict do nothing" >/dev/null
printf '%s\n%s\ncommit;\n' "begin;
select set_config('role', current_user, true), set_config('request.jwt.claims', '{\"role\":\"anon\",\"app_id\":\"$APP_ID\"}', true);" \
  "with ip as (
    insert into guestpass.rate_limits as r (bucket, tokens, updated_at) values (replace('signup;ip;', ';', chr(58)) || $IP_SQL, 999999, now())
    on conflict (bucket) do update set tokens = r.tokens - 1, updated_at = now() where r.tokens >= 1
), app as (
    update guestpass.rate_limits as r set tokens = r.tokens - 1, updated_at = now()
    where r.bucket = (select replace('signup;app;$APP_ID;', ';', chr(58)) || floor(random() * guestpass.shard_count($APP_CAPACITY))::int) and r.tokens >= 1
), u as (
    insert into public.users (app_id) values ('$APP_ID') returning id
), d as (
    insert into public.devices (app_id, user_id) select '$APP_ID', u.id from u returning id, user_id
), ds as (
    insert into guestpass.device_secrets (device_id, app_id, secret_hash)
    select d.id, '$APP_ID', encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex') from d
), s as (
    insert into guestpass.sessions (id, app_id, user_id, device_id, ip) select gen_random_uuid(), '$APP_ID', d.user_id, d.id, '127.0.0.1' from d returning id
)
insert into guestpass.refresh_tokens (session_id, counter, token_hash)
select s.id, 0, encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex') from s;" >"$WORK/floor.sql"

# ---- The measurement: ROUNDS rounds of HTTP (wrk), the ceiling and sign_up_guest (pgbench), ROUND_SECONDS each, so
# the three see the same machine; totals are summed, the latency percentiles are the worst round's. Then
# create_guest_user (for comparison, no target) for BENCH_DURATION.
WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/signup.lua")
if [ "$WARMUP" -gt 0 ]; then
  gp_log "HTTP warm-up: ${WARMUP}s"
  timeout -k 5 $((WARMUP + 30)) "${WRK[@]}" -d "${WARMUP}s" "$URL" -- "$PUBLISHABLE_KEY" "$CLIENT_IP" >/dev/null
fi
bench_http_rounds_begin
CEIL_TX=0 CEIL_SECONDS=0 CEIL_TICKS=0 SQL_TX=0 SQL_SECONDS=0 SQL_PG_TICKS=0 SQL_FAILED=0
FLOOR_TX=0 FLOOR_SECONDS=0 FLOOR_TICKS=0
seconds_plus() { python3 -c "import sys; print(float(sys.argv[1]) + int(sys.argv[2]) / float(sys.argv[3]))" "$@"; }
tx_per_second() { python3 -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]))" "$@"; }
bench_profile_start "$SERVER_PID"
for round in $(seq 1 "$ROUNDS"); do
  gp_log "round $round of $ROUNDS: wrk -t$THREADS -c$CONNECTIONS -d${ROUND_SECONDS}s POST /auth/v1/signup, then pgbench ceiling and sign_up_guest"
  bench_http_round "$round" "$PUBLISHABLE_KEY" "$CLIENT_IP"

  DURATION="$ROUND_SECONDS" bench_pgbench "ceiling-$round" -f "$WORK/ceiling.sql"
  CEIL_TX=$((CEIL_TX + PG_TX)) CEIL_TICKS=$((CEIL_TICKS + PG_CPU_TICKS))
  CEIL_SECONDS="$(seconds_plus "$CEIL_SECONDS" "$PG_TX" "$PG_TPS")"
  DURATION="$ROUND_SECONDS" bench_pgbench "sign_up_guest-$round" -f "$WORK/sign_up_guest.sql"
  SQL_TX=$((SQL_TX + PG_TX)) SQL_PG_TICKS=$((SQL_PG_TICKS + PG_CPU_TICKS)) SQL_FAILED=$((SQL_FAILED + ${PG_FAILED:-0}))
  SQL_SECONDS="$(seconds_plus "$SQL_SECONDS" "$PG_TX" "$PG_TPS")"
  DURATION="$ROUND_SECONDS" PGBENCH_ROLE=postgres bench_pgbench "floor-$round" -M prepared -f "$WORK/floor.sql"
  FLOOR_TX=$((FLOOR_TX + PG_TX)) FLOOR_TICKS=$((FLOOR_TICKS + PG_CPU_TICKS))
  FLOOR_SECONDS="$(seconds_plus "$FLOOR_SECONDS" "$PG_TX" "$PG_TPS")"
done
bench_profile_stop
bench_http_rounds_end
CEIL_TPS="$(tx_per_second "$CEIL_TX" "$CEIL_SECONDS")"
FLOOR_TPS="$(tx_per_second "$FLOOR_TX" "$FLOOR_SECONDS")"
# create_guest_user takes the sign-up buckets (migration 0014); the HTTP side sends a new client address per request,
# so the SQL side gets limits that never bind.
PGOPTIONS="-c guestpass.signup_ip_burst=100000000 -c guestpass.signup_ip_rate_per_hour=100000000000 -c guestpass.signup_app_burst=100000000 -c guestpass.signup_app_rate_per_hour=100000000000" \
  bench_pgbench create_guest_user -f "$WORK/create_guest_user.sql"
CGU_TPS="$PG_TPS" CGU_TX="$PG_TX" CGU_TICKS="$PG_CPU_TICKS" CGU_FAILED="$PG_FAILED"
PG_TX="$SQL_TX" PG_FAILED="$SQL_FAILED" PG_TPS="$(tx_per_second "$SQL_TX" "$SQL_SECONDS")"
PG_LAT="$(python3 -c "import sys; print(round(1000 * float(sys.argv[2]) * int(sys.argv[3]) / int(sys.argv[1]), 3))" "$SQL_TX" "$SQL_SECONDS" "$CONNECTIONS")"

# ---- what landed in the database
COUNTS="$(psql_q "$SUPER_URL" -Atc "select (select count(*) from public.users) || ' users, ' ||
  (select count(*) from public.devices) || ' devices, ' || (select count(*) from guestpass.sessions) || ' sessions'" 2>/dev/null || echo '?')"

# ---- summary
python3 - "$HTTP_REQUESTS" "$HTTP_US" "$HTTP_BAD" "$P50_US" "$P90_US" "$P99_US" "$MAX_US" \
  "$PG_TPS" "${PG_TX:-?}" "${PG_FAILED:-0}" "${PG_LAT:-?}" "$TARGET" "$CONNECTIONS" "$THREADS" "$DURATION" \
  "$CLIENT_IP" "$(nproc)" "$COUNTS" "$TICKS" "$HTTP_SERVER_TICKS" "$HTTP_PG_TICKS" "$SQL_PG_TICKS" \
  "$CEIL_TPS" "$CEIL_TX" "$CEIL_TICKS" "$CGU_TPS" "$CGU_TX" "$CGU_TICKS" "$SQL_TARGET" "$ROUNDS" \
  "$FLOOR_TPS" "$FLOOR_TX" "$FLOOR_TICKS" <<'PY' >&2
import sys
(req, us, bad, p50, p90, p99, pmax, pg_tps, pg_tx, pg_failed, pg_lat, target, conns, threads, dur, client_ip, cpus,
 counts, ticks, http_srv, http_pg, sql_pg, ceil_tps, ceil_tx, ceil_pg, cgu_tps, cgu_tx, cgu_pg, sql_target, rounds,
 floor_tps, floor_tx, floor_pg) = sys.argv[1:]
tick_ms = 1000 / int(ticks)
per = lambda t, n: f"{int(t) * tick_ms / max(1, int(n)):.3f} ms" if n.isdigit() else "?"
http_rate = int(req) / (int(us) / 1e6)
ratio = http_rate / float(pg_tps)
sql_ratio = float(pg_tps) / float(ceil_tps)
ms = lambda v: f"{int(v) / 1000:.2f} ms"
verdict = lambda value, goal: "meets the target" if value >= float(goal) else "BELOW the target"
print(f"""
==== GuestPass sign-up benchmark (release build, {cpus} CPUs, loopback, one database)
  concurrency        {conns} connections ({threads} wrk threads / pgbench jobs), {dur} s each in {rounds} rounds, server pool {conns}
  HTTP  sign-up      {http_rate:10.1f} req/s   POST /auth/v1/signup, {req} requests, {bad} errors/non-200 (client IP: {client_ip})
        latency      p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(pmax)} (the worst round's)
        CPU/request  server {per(http_srv, req)}, postgres {per(http_pg, req)}
  SQL   pgbench      {float(pg_tps):10.1f} tx/s    guestpass_server.sign_up_guest (what the HTTP sign-up runs), {pg_tx} tx, {pg_failed} failed, avg {pg_lat} ms
        CPU/tx       postgres {per(sql_pg, pg_tx)}
        pgbench      {float(cgu_tps):10.1f} tx/s    public.create_guest_user(gen_random_uuid()) as anon (user + device), {cgu_tx} tx
        CPU/tx       postgres {per(cgu_pg, cgu_tx)}
  ceiling pgbench    {float(ceil_tps):10.1f} tx/s    the minimal guest (INSERT … ON CONFLICT, bench/ceiling.sql), same frame, {ceil_tx} tx
        CPU/tx       postgres {per(ceil_pg, ceil_tx)}
  floor   pgbench    {float(floor_tps):10.1f} tx/s    sign-up's rows by one plain prepared statement as the owner (no function), same frame, {floor_tx} tx
        CPU/tx       postgres {per(floor_pg, floor_tx)}
  ratio SQL/ceiling  {sql_ratio:10.2f}         sign_up_guest / ceiling, target >= {sql_target}: {verdict(sql_ratio, sql_target)}
  ratio floor/ceil.  {float(floor_tps) / float(ceil_tps):10.2f}         the work itself / ceiling (no target: what the rows alone allow)
  ratio SQL/floor    {float(pg_tps) / float(floor_tps):10.2f}         sign_up_guest / the work itself (no target: what our SQL adds)
  ratio HTTP/SQL     {ratio:10.2f}         HTTP / sign_up_guest, target >= {target}: {verdict(ratio, target)}
  database           {counts}
====""")
PY
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD HTTP requests failed or were not answered 200: the HTTP rate is not a valid measurement"
[ "${PG_FAILED:-0}" = 0 ] || gp_die "$PG_FAILED sign_up_guest transactions failed"
[ "${CGU_FAILED:-0}" = 0 ] || gp_die "$CGU_FAILED create_guest_user transactions failed"
