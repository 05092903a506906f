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
# Environment: BENCH_DURATION (seconds, default 10), BENCH_CONNECTIONS (default 8),
# BENCH_THREADS (wrk threads / pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up,
# default 2, 0 = none), BENCH_CLIENT_IP=vary-ip|fixed-ip (X-Forwarded-For per request: random
# 10.x.y.z, or none, default vary-ip), BENCH_SKIP_BUILD=1 (use the existing release build),
# BENCH_KEEP_CLUSTER=1 (keep .pg/bench afterwards). Exit status 1 when a measurement is invalid
# (errors or non-200 answers); a ratio below the 0.40 target is reported, not an error.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
CLIENT_IP="${BENCH_CLIENT_IP:-vary-ip}"
TARGET=0.40
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

# ---- HTTP: wrk
WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/signup.lua")
if [ "$WARMUP" -gt 0 ]; then
  gp_log "HTTP warm-up: ${WARMUP}s"
  timeout -k 5 $((WARMUP + 30)) "${WRK[@]}" -d "${WARMUP}s" "$URL" -- "$PUBLISHABLE_KEY" "$CLIENT_IP" >/dev/null
fi
gp_log "HTTP: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --latency POST /auth/v1/signup"
SRV0="$(proc_ticks "$SERVER_PID")"
PG0="$(pg_ticks)"
timeout -k 5 $((DURATION + 60)) "${WRK[@]}" -d "${DURATION}s" --latency "$URL" -- "$PUBLISHABLE_KEY" "$CLIENT_IP" \
  | tee "$WORK/wrk.out" >&2
HTTP_SERVER_TICKS=$(($(proc_ticks "$SERVER_PID") - SRV0))
HTTP_PG_TICKS=$(($(pg_ticks) - PG0))
bench_wrk_result "$WORK/wrk.out"

# ---- SQL: pgbench, the same connection count and time, as the login role with anon + app claims
cat >"$WORK/create_guest_user.sql" <<SQL
begin;
select set_config('role', 'anon', true), set_config('request.jwt.claims', '{"role":"anon","app_id":"$APP_ID"}', true);
select public.create_guest_user(gen_random_uuid());
commit;
SQL
PG_CHILDREN0="$(pg_children)"
gp_log "SQL: pgbench -c$CONNECTIONS -j$THREADS -T$DURATION (create_guest_user)"
# create_guest_user takes the sign-up buckets (migration 0014); the HTTP side sends a new client address per request,
# so the SQL side gets limits that never bind.
PGOPTIONS="-c guestpass.signup_ip_burst=100000000 -c guestpass.signup_ip_rate_per_hour=100000000000 -c guestpass.signup_app_burst=100000000 -c guestpass.signup_app_rate_per_hour=100000000000" \
timeout -k 5 $((DURATION + 60)) pgbench -n -h 127.0.0.1 -p "$PGPORT_BENCH" -U "$LOGIN_ROLE" \
  -c "$CONNECTIONS" -j "$THREADS" -T "$DURATION" -f "$WORK/create_guest_user.sql" "$DB" \
  2>&1 | tee "$WORK/pgbench.out" >&2
bench_wait_reaped "$PG_CHILDREN0"
SQL_PG_TICKS=$(($(pg_ticks) - PG0 - HTTP_PG_TICKS))
bench_pgbench_result "$WORK/pgbench.out"

# ---- for reference: pgbench on guestpass_server.sign_up_guest, the SQL the HTTP sign-up runs (user,
# device, session, refresh token, rate-limit buckets), with the server's arguments; soft-fails
# (n/a) if that internal function's signature changed.
SIGNUP_TPS=""
if [ "${BENCH_SIGNUP_SQL:-1}" = 1 ]; then
  if [ "$CLIENT_IP" = vary-ip ]; then
    IP_SQL="'10.' || (random() * 255)::int || '.' || (random() * 255)::int || '.' || (1 + random() * 253)::int"
  else
    IP_SQL="'127.0.0.1'"
  fi
  cat >"$WORK/sign_up_guest.sql" <<SQL
begin;
select set_config('role', 'anon', true), set_config('request.jwt.claims', '{"role":"anon","app_id":"$APP_ID"}', true);
select * from guestpass_server.sign_up_guest(encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'), null, '{}'::jsonb, $IP_SQL, 1000000, 1000000 / 3600.0, 100000000, 100000000 / 3600.0, null, gen_random_uuid(), encode(sha256(convert_to(gen_random_uuid()::text, 'UTF8')), 'hex'));
commit;
SQL
  gp_log "SQL (reference): pgbench -c$CONNECTIONS -j$THREADS -T$DURATION (guestpass_server.sign_up_guest)"
  if timeout -k 5 $((DURATION + 60)) pgbench -n -h 127.0.0.1 -p "$PGPORT_BENCH" -U "$LOGIN_ROLE" \
    -c "$CONNECTIONS" -j "$THREADS" -T "$DURATION" -f "$WORK/sign_up_guest.sql" "$DB" >"$WORK/pgbench-signup.out" 2>&1 &&
    grep -q '^number of failed transactions: 0 ' "$WORK/pgbench-signup.out"; then
    SIGNUP_TPS="$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$WORK/pgbench-signup.out" | tail -n 1)"
  else
    gp_log "pgbench on sign_up_guest failed (reported as n/a): $(grep -m1 -iE 'error|fatal' "$WORK/pgbench-signup.out" || true)"
  fi
fi

# ---- what landed in the database
COUNTS="$(psql_q "$SUPER_URL" -Atc "select (select count(*) from public.users) || ' users, ' ||
  (select count(*) from public.devices) || ' devices, ' || (select count(*) from guestpass.sessions) || ' sessions'" 2>/dev/null || echo '?')"

# ---- summary
python3 - "$HTTP_REQUESTS" "$HTTP_US" "$HTTP_BAD" "$P50_US" "$P90_US" "$P99_US" "$MAX_US" \
  "$PG_TPS" "${PG_TX:-?}" "${PG_FAILED:-0}" "${PG_LAT:-?}" "$TARGET" "$CONNECTIONS" "$THREADS" "$DURATION" \
  "$CLIENT_IP" "$(nproc)" "$COUNTS" "$TICKS" "$HTTP_SERVER_TICKS" "$HTTP_PG_TICKS" "$SQL_PG_TICKS" "${SIGNUP_TPS:-}" <<'PY' >&2
import sys
(req, us, bad, p50, p90, p99, pmax, pg_tps, pg_tx, pg_failed, pg_lat, target, conns, threads, dur, client_ip, cpus,
 counts, ticks, http_srv, http_pg, sql_pg, signup_tps) = sys.argv[1:]
tick_ms = 1000 / int(ticks)
per = lambda t, n: f"{int(t) * tick_ms / max(1, int(n)):.2f} ms" if n.isdigit() else "?"
http_rate = int(req) / (int(us) / 1e6)
ratio = http_rate / float(pg_tps)
ms = lambda v: f"{int(v) / 1000:.2f} ms"
signup_ref = (
    f"pgbench on guestpass_server.sign_up_guest (the SQL behind the HTTP sign-up): {float(signup_tps):.1f} tx/s; "
    f"HTTP/that = {http_rate / float(signup_tps):.2f}"
    if signup_tps else "pgbench on guestpass_server.sign_up_guest: n/a"
)
verdict = "meets the target" if ratio >= float(target) else "BELOW the target"
print(f"""
==== GuestPass sign-up benchmark (release build, {cpus} CPUs, loopback, one database)
  concurrency        {conns} connections ({threads} wrk threads / pgbench jobs), {dur} s each, server pool {conns}
  HTTP  sign-up      {http_rate:10.1f} req/s   POST /auth/v1/signup, {req} requests, {bad} errors/non-200 (client IP: {client_ip})
        latency      p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(pmax)}
        CPU/request  server {per(http_srv, req)}, postgres {per(http_pg, req)}
  SQL   pgbench      {float(pg_tps):10.1f} tx/s    create_guest_user(gen_random_uuid()) as anon, {pg_tx} tx, {pg_failed} failed, avg {pg_lat} ms
        CPU/tx       postgres {per(sql_pg, pg_tx)}
  ratio HTTP/pgbench {ratio:10.2f}         target >= {target}: {verdict}
  reference          {signup_ref}
  database           {counts}
====""")
PY
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD HTTP requests failed or were not answered 200: the HTTP rate is not a valid measurement"
[ "${PG_FAILED:-0}" = 0 ] || gp_die "$PG_FAILED pgbench transactions failed"
