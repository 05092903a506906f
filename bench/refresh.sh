#!/usr/bin/env bash
# Refresh-token rotation throughput: HTTP (wrk → POST /auth/v1/token?grant_type=refresh_token on a release build)
# against pgbench calling guestpass_server.refresh_session directly, at the same concurrency, on the same database,
# for the same time.
#
#   ./bench/refresh.sh
#
# Sets up everything itself and tears it down at exit (also on failure or Ctrl-C), as bench/consume.sh does
# (bench/lib.sh): a throwaway cluster in .pg/bench-refresh, a database, migrations, an app, a signing key, and
# `guestpass serve` on a free loopback port with GUESTPASS_DB_POOL_SIZE = the concurrency.
#
# HTTP: 4 × BENCH_CONNECTIONS guests sign up over HTTP first (and as many more for the warm-up, whose tokens it uses
# up). Every request presents one session's current refresh token and gets the next one (bench/refresh.lua keeps
# each thread's sessions and swaps in the answer's token), so every request is a rotation: lock the session, check
# the token, revoke it, insert its successor, touch the session and the device, read the user.
#
# SQL: pgbench as guestpass_authenticator (the server's login role) with the frame the server uses for a refresh
# (BEGIN; set_config('role', 'anon', true), set_config('request.jwt.claims', '{"role":"anon","app_id":…}', true);
# SELECT … FROM guestpass_server.refresh_session(…); COMMIT), each client rotating a session of its own: BENCH_CONNECTIONS
# more guests sign up over HTTP, their active tokens' hashes are set (as the superuser, once, before the run) to
# sha256('<session id>:<counter>'), and each transaction passes the hashes of its session's counter and the next
# one, keeping the counter in a pgbench variable (\gset from the call's active_counter). The SQL side thus computes
# two SHA-256s in SQL that the server computes in Swift, and nothing else that the server does not do.
#
# Environment: BENCH_DURATION (seconds of each kind of run, default 10), BENCH_ROUNDS (default 2: HTTP and SQL alternate
# in that many rounds of BENCH_DURATION / BENCH_ROUNDS seconds, each HTTP round with sessions of its own),
# BENCH_CONNECTIONS (default 8), BENCH_THREADS (wrk threads /
# pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up, default 2, 0 = none), BENCH_SKIP_BUILD=1 (use the
# existing release build), BENCH_KEEP_CLUSTER=1 (keep .pg/bench-refresh afterwards). Exit status 1 when a
# measurement is invalid (errors, non-200 answers, or fewer rotations in the database than answers or transactions);
# a ratio below its target (HTTP ≥ 0.70 × the SQL) is reported, not an error.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
TARGET=0.70 # HTTP / our SQL
SESSIONS=$((4 * CONNECTIONS))
ROUNDS="${BENCH_ROUNDS:-2}"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le "$DURATION" ] || gp_die "BENCH_ROUNDS must be in 1...BENCH_DURATION"
ROUND_SECONDS=$((DURATION / ROUNDS))
REUSE_WINDOW=10 # the server's default GUESTPASS_REFRESH_REUSE_WINDOW, passed as is to the SQL side

bench_prepare_tools wrk curl
bench_build
bench_begin "$ROOT/.pg/bench-refresh"
bench_create_database
# shellcheck disable=SC2119
bench_start_server

# ---- sessions: sign up over HTTP; refresh tokens for the measured run and for the warm-up, session ids for pgbench
gp_log "signing up $(((ROUNDS + 1) * SESSIONS + CONNECTIONS)) guests"
timeout -k 5 120 python3 - "$URL" "$PUBLISHABLE_KEY" "$SESSIONS" "$CONNECTIONS" "$WORK" "$ROUNDS" <<'PY' ||
import json, sys, urllib.request, uuid
url, apikey, sessions, clients, work, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
def sign_up():
    request = urllib.request.Request(
        url + "/auth/v1/signup", method="POST",
        data=json.dumps({"data": {"device_id": str(uuid.uuid4())}}).encode(),
        headers={"apikey": apikey, "Authorization": "Bearer " + apikey, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)
for name in ["warmup"] + [f"tokens-{r}" for r in range(1, rounds + 1)]:
    tokens = [sign_up()["refresh_token"] for _ in range(sessions)]
    with open(f"{work}/{name}.lua", "w") as f:
        f.write("return {\n" + "".join(f'  "{t}",\n' for t in tokens) + "}\n")
with open(f"{work}/pgbench-users.txt", "w") as f:
    f.write("".join(sign_up()["user"]["id"] + "\n" for _ in range(clients)))
PY
  gp_die "signing up the bench guests failed"

# The pgbench clients' sessions: client k (0-based) rotates the session of the k-th user, whose active token's hash
# becomes sha256('<session id>:0').
psql_q "$SUPER_URL" -v ON_ERROR_STOP=1 >/dev/null <<SQL || gp_die "preparing the pgbench sessions failed"
create table bench_refresh_clients (client integer primary key, session_id uuid not null, counter integer not null default 0);
insert into bench_refresh_clients (client, session_id)
select u.n - 1, s.id
from unnest(array[$(sed "s/.*/'&'::uuid/" "$WORK/pgbench-users.txt" | paste -sd,)]) with ordinality as u (id, n)
join guestpass.sessions as s on s.user_id = u.id;
update guestpass.refresh_tokens as t
set token_hash = encode(sha256(convert_to(t.session_id::text || ':' || t.counter, 'UTF8')), 'hex')
from bench_refresh_clients as c
where t.session_id = c.session_id;
grant select on bench_refresh_clients to guestpass_authenticator;
SQL
[ "$(psql_q "$SUPER_URL" -Atc 'select count(*) from bench_refresh_clients')" = "$CONNECTIONS" ] ||
  gp_die "expected one session per pgbench client"
cat >"$WORK/refresh.sql" <<SQL
\\if :counter < 0
select session_id as sid, counter from bench_refresh_clients where client = :client_id \\gset
\\endif
begin;
select set_config('role', 'anon', true), set_config('request.jwt.claims', '{"role":"anon","app_id":"$APP_ID"}', true);
select r.active_counter as counter from guestpass_server.refresh_session(
    ':sid', :counter,
    encode(sha256(convert_to(':sid' || ':' || :counter, 'UTF8')), 'hex'),
    encode(sha256(convert_to(':sid' || ':' || (:counter + 1), 'UTF8')), 'hex'),
    $REUSE_WINDOW
) as r where r.status = 'rotated' \\gset
commit;
SQL

# One refresh by hand each way: both must rotate before anything is measured.
FIRST_TOKEN="$(sed -n '2s/^ *"\(.*\)",$/\1/p' "$WORK/warmup.lua")"
status="$(curl -sS -o "$WORK/probe.json" -w '%{http_code}' --max-time 10 -X POST \
  "$URL/auth/v1/token?grant_type=refresh_token" -H "apikey: $PUBLISHABLE_KEY" \
  -H "Authorization: Bearer $PUBLISHABLE_KEY" -H 'Content-Type: application/json' \
  -d "{\"refresh_token\":\"$FIRST_TOKEN\"}")"
[ "$status" = 200 ] || gp_die "probe refresh answered $status: $(head -c 300 "$WORK/probe.json")"
NEXT_TOKEN="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["refresh_token"])' "$WORK/probe.json")"
sed -i "2s/.*/  \"$NEXT_TOKEN\",/" "$WORK/warmup.lua"

bench_cpu_init
rotations() { psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.refresh_tokens where counter > 0"; }

# ---- The measurement: ROUNDS rounds of HTTP (wrk, fresh sessions each round) then SQL (pgbench), ROUND_SECONDS
# each, so both see the same machine; totals are summed, the latency percentiles are the worst round's.
WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/refresh.lua")
if [ "$WARMUP" -gt 0 ]; then
  gp_log "HTTP warm-up: ${WARMUP}s (sessions of its own)"
  BENCH_WRK_THREADS="$THREADS" timeout -k 5 $((WARMUP + 30)) "${WRK[@]}" -d "${WARMUP}s" "$URL" -- \
    "$PUBLISHABLE_KEY" "$WORK/warmup.lua" >"$WORK/warmup.out"
fi
sleep 0.5 # requests wrk left in flight at its stop still finish in the server
bench_http_rounds_begin
HTTP_ROTATIONS=0
SQL_TX=0 SQL_SECONDS=0 SQL_PG_TICKS=0 SQL_FAILED=0 SQL_ROTATIONS=0
bench_profile_start "$SERVER_PID"
for round in $(seq 1 "$ROUNDS"); do
  gp_log "round $round of $ROUNDS: wrk -t$THREADS -c$CONNECTIONS -d${ROUND_SECONDS}s POST /auth/v1/token?grant_type=refresh_token ($SESSIONS sessions), then pgbench"
  R0="$(rotations)"
  BENCH_WRK_THREADS="$THREADS" bench_http_round "$round" "$PUBLISHABLE_KEY" "$WORK/tokens-$round.lua"
  sleep 0.5
  R1="$(rotations)"
  HTTP_ROTATIONS=$((HTTP_ROTATIONS + R1 - R0))

  DURATION="$ROUND_SECONDS" bench_pgbench "refresh-$round" -D counter=-1 -f "$WORK/refresh.sql"
  SQL_TX=$((SQL_TX + PG_TX)) SQL_PG_TICKS=$((SQL_PG_TICKS + PG_CPU_TICKS)) SQL_FAILED=$((SQL_FAILED + ${PG_FAILED:-0}))
  SQL_SECONDS="$(python3 -c "import sys; print(float(sys.argv[1]) + int(sys.argv[2]) / float(sys.argv[3]))" "$SQL_SECONDS" "$PG_TX" "$PG_TPS")"
  SQL_ROTATIONS=$((SQL_ROTATIONS + $(rotations) - R1))
  # The next round's pgbench clients start from their sessions' active counters (pgbench variables do not outlive a run).
  psql_q "$SUPER_URL" -Atc "update bench_refresh_clients as c set counter = (select max(t.counter) from guestpass.refresh_tokens as t where t.session_id = c.session_id)" >/dev/null
done
bench_profile_stop
bench_http_rounds_end
PG_TX="$SQL_TX" PG_FAILED="$SQL_FAILED" PG_TPS="$(python3 -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]))" "$SQL_TX" "$SQL_SECONDS")"
PG_LAT="$(python3 -c "import sys; print(round(1000 * float(sys.argv[2]) * int(sys.argv[3]) / int(sys.argv[1]), 3))" "$SQL_TX" "$SQL_SECONDS" "$CONNECTIONS")"

# ---- summary
python3 - "$HTTP_REQUESTS" "$HTTP_US" "$HTTP_BAD" "$P50_US" "$P90_US" "$P99_US" "$MAX_US" \
  "$PG_TPS" "${PG_TX:-0}" "${PG_FAILED:-0}" "${PG_LAT:-?}" "$TARGET" "$CONNECTIONS" "$THREADS" "$DURATION" \
  "$(nproc)" "$SESSIONS" "$TICKS" "$HTTP_SERVER_TICKS" "$HTTP_PG_TICKS" "$SQL_PG_TICKS" "$HTTP_ROTATIONS" "$SQL_ROTATIONS" "$ROUNDS" <<'PY' >&2
import sys
(req, us, bad, p50, p90, p99, pmax, pg_tps, pg_tx, pg_failed, pg_lat, target, conns, threads, dur, cpus, sessions,
 ticks, http_srv, http_pg, sql_pg, http_rotations, sql_rotations, rounds) = sys.argv[1:]
tick_ms = 1000 / int(ticks)
per = lambda t, n: f"{int(t) * tick_ms / max(1, int(n)):.3f} ms"
http_rate = int(req) / (int(us) / 1e6)
ratio = http_rate / float(pg_tps)
ms = lambda v: f"{int(v) / 1000:.2f} ms"
verdict = "meets the target" if ratio >= float(target) else "BELOW the target"
print(f"""
==== GuestPass refresh benchmark (release build, {cpus} CPUs, loopback, one database)
  concurrency        {conns} connections ({threads} wrk threads / pgbench jobs), {dur} s each in {rounds} rounds, server pool {conns}
  HTTP  refresh      {http_rate:10.1f} req/s   POST /auth/v1/token?grant_type=refresh_token, {sessions} sessions, {req} requests, {bad} errors/non-200
        latency      p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(pmax)} (the worst round's)
        CPU/request  server {per(http_srv, req)}, postgres {per(http_pg, req)}
  SQL   pgbench      {float(pg_tps):10.1f} tx/s    guestpass_server.refresh_session as anon, one session per client, {pg_tx} tx, {pg_failed} failed, avg {pg_lat} ms
        CPU/tx       postgres {per(sql_pg, pg_tx)}
  ratio HTTP/SQL     {ratio:10.2f}         target >= {target}: {verdict}
  database           rotations recorded: {http_rotations} during the HTTP runs, {sql_rotations} during pgbench
====""")
PY
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD HTTP requests failed or were not answered 200: the HTTP rate is not a valid measurement"
[ "${PG_FAILED:-0}" = 0 ] || gp_die "$PG_FAILED pgbench transactions failed"
# Every answer and every transaction must have rotated (a 200 that rotated nothing would not count).
[ "$HTTP_ROTATIONS" -ge "$HTTP_REQUESTS" ] || gp_die "only $HTTP_ROTATIONS rotations recorded for $HTTP_REQUESTS HTTP answers"
[ "$SQL_ROTATIONS" -ge "$PG_TX" ] || gp_die "only $SQL_ROTATIONS rotations recorded for $PG_TX pgbench transactions"
