#!/usr/bin/env bash
# The email area, in one run (release build, own cluster and servers, torn down at exit as bench/lib.sh does):
#
#   ./bench/email.sh
#
# 1. Password sign-ins: POST /auth/v1/token?grant_type=password (wrk, bench/email_password.lua) as BENCH_PASSWORD_USERS
#    confirmed users made beforehand (POST /auth/v1/signup {email, password}; the app has autoconfirm on, so each
#    answer is a session). Each sign-in is one scrypt verification at the standard parameters (N = 2^15, r = 8, p = 1)
#    on the server's hashing pool (PasswordHasher: one hash per core at once, at SCHED_IDLE). Printed: sign-ins/s at BENCH_CONNECTIONS,
#    per core, and against the pool's ideal (cores / one KDF); the time of one KDF measured two ways: scrypt alone
#    through OpenSSL (python's hashlib.scrypt, the libcrypto the server links) and a sign-in loop at concurrency 1
#    (its p50, with the HTTP and SQL around it); the memory of one hash, read from a stored hash's parameters
#    (128 · r · N), and the server's RSS before and at its peak during the runs.
# 2. The pool's effect on other routes: a light, paced probe of POST /rest/v1/rpc/get_quota (bench/email_quota.lua,
#    BENCH_PROBE_CONNECTIONS connections each pausing BENCH_PROBE_DELAY_MS between requests, as guests signed up
#    first) for BENCH_DURATION seconds, first with the server otherwise idle, then during a sign-in flood (wrk on the
#    password route with BENCH_FLOOD_CONNECTIONS connections, default 4 × cores, started a second before the probe
#    and ending a second after it). Target: flood p99 ≤ 2 × idle p99.
# 3. One-time-code verifications over HTTP against pgbench running the same SQL, alternating in BENCH_ROUNDS rounds.
#    BENCH_MAILS addresses otp-<i>@bench.example get a pending code each (POST /auth/v1/otp, send interval 0; that also
#    queues the mails of part 4). The codes exist only in the mails and their HMAC key is the server's, so a correct
#    code cannot be replayed by pgbench (and a correct one is single use anyway). The fair pairing is a wrong code on
#    both sides: HTTP sends token 000000 for a random address (otp-2 … otp-BENCH_MAILS; otp-1 is kept for the end-to-end
#    check of part 4) and expects 403 otp_expired (the server computes the code's HMAC and runs
#    guestpass_server.email_verify, which finds no matching live code and counts the miss against the address's codes);
#    pgbench runs guestpass_server.email_verify with a code hash that matches nothing, for a random address of the same
#    range, in the request's frame (BEGIN; set_config role anon, request.jwt.claims {"app_id","role":"anon"} as the
#    server spells them, request.client_ip; the call with the server's arguments; COMMIT), as the server's login role.
#    Both thus run the whole SQL of a failed verification (the per-client bucket, the candidate scan, the miss counted),
#    i.e. a successful one minus the session's insert. After the first five misses an address's code is dead (no
#    candidate left to compare), so the steady state both sides measure is that of a dead code; the warm-up gets there.
#    Target: HTTP/pgbench ≥ 0.60.
# 4. Outbox drain: the BENCH_MAILS mails of part 3 wait in guestpass.mail_outbox (the first server runs with
#    GUESTPASS_MAIL_SENDER=off). It is stopped and a server with the sender on starts; the outbox is polled until no
#    unsent row is left (at most BENCH_DRAIN_TIMEOUT seconds). The relay is the local mail catcher (scripts/mail-catcher,
#    aiosmtpd, plain SMTP on loopback). Printed: mails/s (the span of sent_at, and the wall time from the server's
#    start), target ≥ 200; then the books: every recipient's .eml files in the catcher's directory (exactly one each,
#    none missing, none doubled, none unexpected), no failed row, no second attempt, and the code mailed to otp-1 signs
#    in over POST /auth/v1/verify.
#
# Client addresses (BENCH_CLIENT_IP, vary-ip by default): every request carries X-Forwarded-For: <random 10.x.y.z>
# (the servers trust that header here) and pgbench sets the same kind of request.client_ip, so the per-client buckets
# (email_send, email_verify, password: GUESTPASS_*_PER_IP set too large to bind) are spread over many rows as many
# clients' would be; fixed-ip sends none (every request is 127.0.0.1; pgbench sets 127.0.0.1).
#
# Environment: bench/lib.sh's BENCH_DURATION (default 10), BENCH_ROUNDS (default 2), BENCH_CONNECTIONS (default 8),
# BENCH_THREADS (default 2), BENCH_WARMUP (default 2), BENCH_SKIP_BUILD / BENCH_BIN, BENCH_KEEP_CLUSTER, BENCH_DURABLE;
# and BENCH_CLIENT_IP (vary-ip|fixed-ip), BENCH_PASSWORD_USERS (default 16, 1...200), BENCH_KDF_SECONDS (the
# concurrency-1 sign-in loop, default 3, 1...60), BENCH_FLOOD_CONNECTIONS (default 4 × cores; more than the cores,
# at most 64), BENCH_PROBE_CONNECTIONS (default 2, 1...16), BENCH_PROBE_DELAY_MS (default 20, 1...1000), BENCH_MAILS
# (default 2000, 10...20000), BENCH_DRAIN_TIMEOUT (seconds, default 120, 10...600). The build is
# `swift build -c release --product guestpass` (BENCH_SKIP_BUILD=1 or BENCH_BIN=PATH skip it). The mail catcher needs
# aiosmtpd: the first of .venv, .dev/mail-venv and python3 that has it, else a venv made once in .pg/bench-mail-venv.
# Exit status 1 when a measurement is invalid (errors or unexpected answers, failed pgbench transactions, a mail lost,
# doubled or failed, a drain past its timeout); a figure below its target is reported, not an error.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
CPUS="$(nproc)"
CLIENT_IP="${BENCH_CLIENT_IP:-vary-ip}"
ROUNDS="${BENCH_ROUNDS:-2}"
PASSWORD_USERS="${BENCH_PASSWORD_USERS:-16}"
KDF_SECONDS="${BENCH_KDF_SECONDS:-3}"
FLOOD_CONNECTIONS="${BENCH_FLOOD_CONNECTIONS:-$((4 * CPUS))}"
PROBE_CONNECTIONS="${BENCH_PROBE_CONNECTIONS:-2}"
PROBE_DELAY_MS="${BENCH_PROBE_DELAY_MS:-20}"
MAILS="${BENCH_MAILS:-2000}"
DRAIN_TIMEOUT="${BENCH_DRAIN_TIMEOUT:-120}"
in_range() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
case "$CLIENT_IP" in vary-ip | fixed-ip) ;; *) gp_die "BENCH_CLIENT_IP must be vary-ip or fixed-ip" ;; esac
in_range "$ROUNDS" 1 "$DURATION" || gp_die "BENCH_ROUNDS must be in 1...BENCH_DURATION"
in_range "$PASSWORD_USERS" 1 200 || gp_die "BENCH_PASSWORD_USERS must be in 1...200"
in_range "$KDF_SECONDS" 1 60 || gp_die "BENCH_KDF_SECONDS must be in 1...60"
in_range "$FLOOD_CONNECTIONS" $((CPUS + 1)) 64 || gp_die "BENCH_FLOOD_CONNECTIONS must be in $((CPUS + 1))...64 (more than the cores)"
in_range "$PROBE_CONNECTIONS" 1 16 || gp_die "BENCH_PROBE_CONNECTIONS must be in 1...16"
in_range "$PROBE_DELAY_MS" 1 1000 || gp_die "BENCH_PROBE_DELAY_MS must be in 1...1000"
in_range "$MAILS" 10 20000 || gp_die "BENCH_MAILS must be in 10...20000"
in_range "$DRAIN_TIMEOUT" 10 600 || gp_die "BENCH_DRAIN_TIMEOUT must be in 10...600"
ROUND_SECONDS=$((DURATION / ROUNDS))
PER_IP=100000000        # GUESTPASS_{EMAIL_SENDS,EMAIL_VERIFIES,PASSWORD_SIGNINS}_PER_IP: too large to bind
PASSWORD="bench-Password-7" # the password of every bench user
WRONG_CODE=000000           # what HTTP sends to /verify (a right guess, 1 in 10^6 for a live code, is counted apart)
VERIFY_TARGET=0.60          # HTTP / pgbench, verifications
FLOOD_TARGET=2              # get_quota p99 during a sign-in flood / idle
DRAIN_TARGET=200            # mails/s

bench_prepare_tools wrk curl openssl
if [ -z "${BENCH_BIN:-}" ] && [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  gp_log "building (swift build -c release --product guestpass)"
  swift build -c release --product guestpass
fi
BENCH_SKIP_BUILD=1 bench_build
# What else keeps this machine's CPUs busy (a 2-core VM shared with builds and tests): /proc/stat over one second.
cpu_sample() { awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }
read -r TOTAL0 IDLE0 <<<"$(cpu_sample)"
sleep 1
read -r TOTAL1 IDLE1 <<<"$(cpu_sample)"
BUSY_BEFORE="$(python3 -c "import sys; t, i = int(sys.argv[1]), int(sys.argv[2]); print(100 * (t - i) / max(1, t))" \
  $((TOTAL1 - TOTAL0)) $((IDLE1 - IDLE0)))"

# ---- a python with aiosmtpd for the mail catcher
MAIL_PY=""
for candidate in "$ROOT/.venv/bin/python" "$ROOT/.dev/mail-venv/bin/python" "$ROOT/.pg/bench-mail-venv/bin/python" python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import aiosmtpd' >/dev/null 2>&1; then MAIL_PY="$candidate"; break; fi
done
if [ -z "$MAIL_PY" ]; then
  gp_log "installing the mail catcher's aiosmtpd into .pg/bench-mail-venv"
  mkdir -p "$ROOT/.pg"
  python3 -m venv "$ROOT/.pg/bench-mail-venv" 2>/dev/null ||
    { gp_ensure_apt python3-venv && /usr/bin/python3 -m venv "$ROOT/.pg/bench-mail-venv"; }
  timeout -k 5 300 "$ROOT/.pg/bench-mail-venv/bin/python" -m pip install -q --disable-pip-version-check aiosmtpd
  MAIL_PY="$ROOT/.pg/bench-mail-venv/bin/python"
fi

bench_begin "$ROOT/.pg/bench-email"
CATCHER_PID=""
BACKGROUND_PIDS=()
stop_helpers() {
  local pid
  for pid in "${BACKGROUND_PIDS[@]}" $CATCHER_PID; do kill "$pid" 2>/dev/null || true; done
}
trap 'rc=$?; stop_helpers; (exit $rc); bench_cleanup' EXIT
bench_create_database

# ---- the mail catcher, and the app: email with autoconfirm (a sign-up is a session), no interval between two mails
# to one address, the largest hourly cap, its SMTP relay the catcher
mkdir -p "$WORK/mail"
"$MAIL_PY" "$ROOT/scripts/mail-catcher" --dir "$WORK/mail" --port 0 --ready-file "$WORK/catcher.port" >"$WORK/catcher.log" 2>&1 &
CATCHER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/catcher.port" ] && break; kill -0 "$CATCHER_PID" 2>/dev/null || break; sleep 0.1; done
[ -s "$WORK/catcher.port" ] || { cat "$WORK/catcher.log" >&2; gp_die "the mail catcher did not start"; }
CATCHER_PORT="$(tr -d '[:space:]' <"$WORK/catcher.port")"
DATABASE_URL="$SUPER_URL" "$BIN" apps configure --app "$APP_ID" --email-enabled true --email-autoconfirm true \
  --email-send-interval 0 --email-hourly-limit 1000000 --smtp-host 127.0.0.1 --smtp-port "$CATCHER_PORT" \
  --smtp-security plain --smtp-sender noreply@example.com >/dev/null

SERVER_ENV=(GUESTPASS_EMAIL_SENDS_PER_IP="$PER_IP" GUESTPASS_EMAIL_VERIFIES_PER_IP="$PER_IP"
  GUESTPASS_PASSWORD_SIGNINS_PER_IP="$PER_IP" GUESTPASS_SHUTDOWN_DRAIN_MS=0)
[ "$CLIENT_IP" = vary-ip ] && SERVER_ENV+=(GUESTPASS_TRUSTED_PROXY_HEADER=X-Forwarded-For)
bench_start_server "${SERVER_ENV[@]}" GUESTPASS_MAIL_SENDER=off
bench_cpu_init
helper() { timeout -k 5 360 python3 "$ROOT/bench/email_helpers.py" "$@"; }
json() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]); print(eval(sys.argv[2], {}, v))' "$1" "$2"; }
calc() { python3 -c "import sys; a = [float(x) for x in sys.argv[1:]]; print($1)" "${@:2}"; }
rss_kb() { ps -o rss= -p "$1" 2>/dev/null | tr -d ' ' || echo 0; }
# rss_sampler PID SECONDS FILE: the RSS (kB) of PID every 0.2 s for SECONDS, in the background (pid in $!)
rss_sampler() {
  (for _ in $(seq 1 $(($2 * 5))); do rss_kb "$1"; sleep 0.2; done) >"$3" 2>/dev/null &
  BACKGROUND_PIDS+=($!)
}
peak_kb() { sort -n "$1" | tail -n 1; }

# ---- the machine's unit: one ES256 (P-256 ECDSA) verification, as OpenSSL measures it on this machine
gp_log "machine unit: openssl speed -seconds 1 ecdsap256"
ES256_VERIFIES="$(timeout -k 5 60 openssl speed -seconds 1 ecdsap256 2>/dev/null | awk '/ecdsa \(nistp256\)/ { print $NF }' | tail -n 1)"
[ -n "$ES256_VERIFIES" ] || ES256_VERIFIES=0

# =====================================================================================================================
# 1. password sign-ins
gp_log "signing up $PASSWORD_USERS confirmed email users (POST /auth/v1/signup {email, password}, autoconfirm)"
helper signup "$URL" "$PUBLISHABLE_KEY" "$PASSWORD_USERS" "$PASSWORD" "$WORK/password-users.lua" 2 ||
  gp_die "signing up the email users failed"
STORED_HASH="$(psql_q "$SUPER_URL" -Atc "select password_hash from guestpass.email_credentials where password_hash is not null limit 1")"
[[ "$STORED_HASH" =~ ^\$scrypt\$ln=([0-9]+),r=([0-9]+),p=([0-9]+)\$ ]] || gp_die "no scrypt hash stored: ${STORED_HASH:0:40}"
KDF_LOGN="${BASH_REMATCH[1]}" KDF_R="${BASH_REMATCH[2]}" KDF_P="${BASH_REMATCH[3]}"
HASH_MIB="$(calc 'int(128 * a[1] * 2 ** a[0]) / 2 ** 20' "$KDF_LOGN" "$KDF_R")"
gp_log "one KDF alone: hashlib.scrypt (OpenSSL) N=2^$KDF_LOGN r=$KDF_R p=$KDF_P, median of 5"
KDF_MS="$(timeout -k 5 120 python3 "$ROOT/bench/email_helpers.py" scrypt "$KDF_LOGN" "$KDF_R" "$KDF_P" 5)"

# The one probe by hand: a sign-in must succeed before anything is measured.
FIRST_USER="$(sed -n 's/^ *{ "\([^"]*\)".*/\1/p' "$WORK/password-users.lua" | head -n 1)"
status="$(curl -sS -o "$WORK/probe-password.json" -w '%{http_code}' --max-time 10 -X POST "$URL/auth/v1/token?grant_type=password" \
  -H "apikey: $PUBLISHABLE_KEY" -H "Authorization: Bearer $PUBLISHABLE_KEY" -H 'Content-Type: application/json' \
  -d "{\"email\":\"$FIRST_USER\",\"password\":\"$PASSWORD\"}")"
[ "$status" = 200 ] && grep -q '"access_token"' "$WORK/probe-password.json" ||
  gp_die "probe password sign-in answered $status: $(head -c 300 "$WORK/probe-password.json")"

PASSWORD_ARGS=("$PUBLISHABLE_KEY" "$WORK/password-users.lua" "$CLIENT_IP")
gp_log "sign-ins at concurrency 1: wrk -t1 -c1 -d${KDF_SECONDS}s"
timeout -k 5 $((KDF_SECONDS + 60)) wrk -t 1 -c 1 --timeout 10s -d "${KDF_SECONDS}s" -s "$ROOT/bench/email_password.lua" \
  "$URL" -- "${PASSWORD_ARGS[@]}" >"$WORK/wrk-password-c1.out"
bench_wrk_result "$WORK/wrk-password-c1.out"
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD sign-ins at concurrency 1 failed or were not answered 200"
C1_RATE="$(calc 'a[0] / (a[1] / 1e6)' "$HTTP_REQUESTS" "$HTTP_US")" C1_P50_US="$P50_US"

RSS_IDLE="$(rss_kb "$SERVER_PID")"
gp_log "sign-ins: wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s POST /auth/v1/token?grant_type=password ($PASSWORD_USERS users)"
rss_sampler "$SERVER_PID" "$DURATION" "$WORK/rss-password.txt"
S0="$(proc_ticks "$SERVER_PID")" G0="$(pg_ticks)"
timeout -k 5 $((DURATION + 60)) wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -d "${DURATION}s" --latency \
  -s "$ROOT/bench/email_password.lua" "$URL" -- "${PASSWORD_ARGS[@]}" >"$WORK/wrk-password.out"
PW_SERVER_TICKS=$(($(proc_ticks "$SERVER_PID") - S0)) PW_PG_TICKS=$(($(pg_ticks) - G0))
wait "${BACKGROUND_PIDS[-1]}" 2>/dev/null || true
bench_wrk_result "$WORK/wrk-password.out"
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD sign-ins failed or were not answered 200: the rate is not a valid measurement"
PW_REQUESTS="$HTTP_REQUESTS" PW_RATE="$(calc 'a[0] / (a[1] / 1e6)' "$HTTP_REQUESTS" "$HTTP_US")"
PW_P50_US="$P50_US" PW_P99_US="$P99_US"
RSS_PASSWORD_PEAK="$(peak_kb "$WORK/rss-password.txt")"

# =====================================================================================================================
# 2. another route's latency, idle and during a sign-in flood
bench_sign_up_users "$URL" 16
PROBE=(wrk -t 1 -c "$PROBE_CONNECTIONS" --timeout 10s -d "${DURATION}s" --latency -s "$ROOT/bench/email_quota.lua" "$URL" --
  "$PUBLISHABLE_KEY" "$WORK/tokens.lua")
status="$(curl -sS -o "$WORK/probe-quota.json" -w '%{http_code}' --max-time 10 -X POST "$URL/rest/v1/rpc/get_quota" \
  -H "apikey: $PUBLISHABLE_KEY" -H "Authorization: Bearer $(sed -n '2s/^ *"\(.*\)",$/\1/p' "$WORK/tokens.lua")" \
  -H 'Content-Type: application/json' -d '{}')"
[ "$status" = 200 ] && grep -q 'quota_remaining' "$WORK/probe-quota.json" ||
  gp_die "probe get_quota answered $status: $(head -c 300 "$WORK/probe-quota.json")"
gp_log "get_quota probe, idle: $PROBE_CONNECTIONS connections, ${PROBE_DELAY_MS} ms pause each, ${DURATION}s"
BENCH_WRK_DELAY_MS="$PROBE_DELAY_MS" timeout -k 5 $((DURATION + 60)) "${PROBE[@]}" >"$WORK/wrk-quota-idle.out"
bench_wrk_result "$WORK/wrk-quota-idle.out"
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD idle get_quota requests failed"
IDLE_RATE="$(calc 'a[0] / (a[1] / 1e6)' "$HTTP_REQUESTS" "$HTTP_US")" IDLE_P50_US="$P50_US" IDLE_P99_US="$P99_US" IDLE_MAX_US="$MAX_US"

gp_log "get_quota probe during a sign-in flood: wrk -t$THREADS -c$FLOOD_CONNECTIONS on the password route"
rss_sampler "$SERVER_PID" $((DURATION + 2)) "$WORK/rss-flood.txt"
RSS_SAMPLER_PID="${BACKGROUND_PIDS[-1]}"
timeout -k 5 $((DURATION + 60)) wrk -t "$THREADS" -c "$FLOOD_CONNECTIONS" --timeout 10s -d "$((DURATION + 2))s" --latency \
  -s "$ROOT/bench/email_password.lua" "$URL" -- "${PASSWORD_ARGS[@]}" >"$WORK/wrk-flood.out" &
FLOOD_PID=$!
BACKGROUND_PIDS+=("$FLOOD_PID")
sleep 1
BENCH_WRK_DELAY_MS="$PROBE_DELAY_MS" timeout -k 5 $((DURATION + 60)) "${PROBE[@]}" >"$WORK/wrk-quota-flood.out"
wait "$FLOOD_PID" || gp_die "the sign-in flood's wrk failed"
wait "$RSS_SAMPLER_PID" 2>/dev/null || true
bench_wrk_result "$WORK/wrk-quota-flood.out"
[ "$HTTP_BAD" = 0 ] || gp_die "$HTTP_BAD get_quota requests during the flood failed"
FLOOD_PROBE_RATE="$(calc 'a[0] / (a[1] / 1e6)' "$HTTP_REQUESTS" "$HTTP_US")"
FLOOD_P50_US="$P50_US" FLOOD_P99_US="$P99_US" FLOOD_MAX_US="$MAX_US"
bench_wrk_result "$WORK/wrk-flood.out"
FLOOD_RATE="$(calc 'a[0] / (a[1] / 1e6)' "$HTTP_REQUESTS" "$HTTP_US")" FLOOD_BAD="$HTTP_BAD" FLOOD_SIGNIN_P99_US="$P99_US"
RSS_FLOOD_PEAK="$(peak_kb "$WORK/rss-flood.txt")"

# =====================================================================================================================
# 3. one-time codes: BENCH_MAILS pending codes (and queued mails), then wrong-code verifications, HTTP against pgbench
gp_log "queueing $MAILS codes: POST /auth/v1/otp for otp-1…otp-$MAILS@bench.example ($CONNECTIONS at once)"
OTP="$(helper otp "$URL" "$PUBLISHABLE_KEY" 1 "$MAILS" "$CONNECTIONS")" || gp_die "queueing the codes failed"
[ "$(json "$OTP" sent)" = "$MAILS" ] || gp_die "POST /auth/v1/otp: $(json "$OTP" statuses)"
OTP_RATE="$(calc 'a[0] / a[1]' "$MAILS" "$(json "$OTP" seconds)")"
QUEUED="$(psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.mail_outbox where sent_at is null and failed_at is null")"
CODES="$(psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.email_codes where address like 'otp-%@bench.example' and used_at is null")"
[ "$QUEUED" = "$MAILS" ] && [ "$CODES" = "$MAILS" ] || gp_die "after $MAILS sends: $QUEUED mails queued, $CODES pending codes"

if [ "$CLIENT_IP" = vary-ip ]; then
  IP_SQL="'10.' || (random() * 255)::int || '.' || (random() * 255)::int || '.' || (1 + random() * 253)::int"
else
  IP_SQL="'127.0.0.1'"
fi
# The claims as the server spells an API key's anon claims (sorted keys: RequestIdentity.keyClaimsJSON).
CLAIMS="{\"app_id\":\"$APP_ID\",\"role\":\"anon\"}"
NO_MATCH="$(printf 'bench-no-such-code' | sha256sum | cut -c1-64)"   # matches no code's HMAC
REFRESH_HASH="$(printf 'bench-refresh' | sha256sum | cut -c1-64)"  # unused on a miss, passed as the server passes one
AUTH_CODE_HASH="$(printf 'bench-auth-code' | sha256sum | cut -c1-64)"
cat >"$WORK/verify.sql" <<SQL
\\set i random(2, $MAILS)
begin;
select set_config('role', 'anon', true), set_config('request.jwt.claims', '$CLAIMS', true), set_config('request.client_ip', $IP_SQL, true);
select * from guestpass_server.email_verify('email', 'otp-' || :i || '@bench.example', '$NO_MATCH', null, false, null, gen_random_uuid(), '$REFRESH_HASH', null, '$AUTH_CODE_HASH', $PER_IP, $PER_IP / 300.0);
commit;
SQL
# One verification by hand each way: both must answer otp_expired before anything is measured.
status="$(curl -sS -o "$WORK/probe-verify.json" -w '%{http_code}' --max-time 10 -X POST "$URL/auth/v1/verify" \
  -H "apikey: $PUBLISHABLE_KEY" -H "Authorization: Bearer $PUBLISHABLE_KEY" -H 'Content-Type: application/json' \
  -d "{\"type\":\"email\",\"email\":\"otp-2@bench.example\",\"token\":\"$WRONG_CODE\"}")"
[ "$status" = 403 ] && grep -q otp_expired "$WORK/probe-verify.json" ||
  gp_die "probe verification answered $status: $(head -c 300 "$WORK/probe-verify.json")"
sed 's/^\\set i .*//; s/|| :i ||/|| 2 ||/' "$WORK/verify.sql" | psql_q "$LOGIN_URL" -At >"$WORK/probe-verify-sql.out" 2>&1 &&
  grep -q '^otp_expired|' "$WORK/probe-verify-sql.out" ||
  gp_die "probe verification in SQL: $(head -c 300 "$WORK/probe-verify-sql.out")"

WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/email_verify.lua")
VERIFY_ARGS=("$PUBLISHABLE_KEY" 2 "$MAILS" "$WRONG_CODE" "$CLIENT_IP")
if [ "$WARMUP" -gt 0 ]; then
  gp_log "HTTP warm-up: ${WARMUP}s"
  timeout -k 5 $((WARMUP + 30)) "${WRK[@]}" -d "${WARMUP}s" "$URL" -- "${VERIFY_ARGS[@]}" >"$WORK/warmup-verify.out"
fi
bench_http_rounds_begin
SQL_TX=0 SQL_SECONDS=0 SQL_PG_TICKS=0 SQL_FAILED=0 MATCHED=0
for round in $(seq 1 "$ROUNDS"); do
  gp_log "round $round of $ROUNDS: wrk -t$THREADS -c$CONNECTIONS -d${ROUND_SECONDS}s POST /auth/v1/verify (wrong codes), then pgbench email_verify"
  bench_http_round "verify-$round" "${VERIFY_ARGS[@]}"
  MATCHED=$((MATCHED + $(wrk_field matched)))
  DURATION="$ROUND_SECONDS" bench_pgbench "verify-$round" -f "$WORK/verify.sql"
  SQL_TX=$((SQL_TX + PG_TX)) SQL_PG_TICKS=$((SQL_PG_TICKS + PG_CPU_TICKS)) SQL_FAILED=$((SQL_FAILED + ${PG_FAILED:-0}))
  SQL_SECONDS="$(calc 'a[0] + a[1] / a[2]' "$SQL_SECONDS" "$PG_TX" "$PG_TPS")"
done
bench_http_rounds_end
V_REQUESTS="$HTTP_REQUESTS" V_BAD="$HTTP_BAD" V_P50_US="$P50_US" V_P99_US="$P99_US"
V_RATE="$(calc 'a[0] / (a[1] / 1e6)' "$HTTP_REQUESTS" "$HTTP_US")"
V_SQL_TPS="$(calc 'a[0] / a[1]' "$SQL_TX" "$SQL_SECONDS")"
V_SERVER_TICKS="$HTTP_SERVER_TICKS" V_PG_TICKS="$HTTP_PG_TICKS"
[ "$V_BAD" = 0 ] || gp_die "$V_BAD verifications were not answered 403 otp_expired: the HTTP rate is not a valid measurement"
[ "$SQL_FAILED" = 0 ] || gp_die "$SQL_FAILED pgbench verifications failed"

# =====================================================================================================================
# 4. the outbox drain: the first server (sender off) stops, one with the sender on starts
gp_log "stopping the first server (its mail sender was off)"
kill -TERM "$SERVER_PID" 2>/dev/null || true
for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER_PID" 2>/dev/null && gp_die "the first server did not stop within 10 s"
unsent() { psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.mail_outbox where sent_at is null and failed_at is null"; }
WAITING="$(unsent)"
[ "$WAITING" = "$MAILS" ] || gp_die "$WAITING mails wait in the outbox, $MAILS were queued"
CATCHER_T0="$(proc_ticks "$CATCHER_PID")"
gp_log "draining $WAITING mails: a server with the mail sender on, to the mail catcher on port $CATCHER_PORT"
T_LAUNCH="$(date +%s.%N)"
bench_start_server "${SERVER_ENV[@]}" GUESTPASS_MAIL_SENDER=on
T_READY="$(date +%s.%N)"
S0="$(proc_ticks "$SERVER_PID")" G0="$(pg_ticks)"
DRAINED=0
DEADLINE=$(($(date +%s) + DRAIN_TIMEOUT))
while [ "$(date +%s)" -lt "$DEADLINE" ]; do
  if [ "$(unsent)" = 0 ]; then DRAINED=1; break; fi
  sleep 0.1
done
T_DONE="$(date +%s.%N)"
DRAIN_SERVER_TICKS=$(($(proc_ticks "$SERVER_PID") - S0)) DRAIN_PG_TICKS=$(($(pg_ticks) - G0))
[ "$DRAINED" = 1 ] || gp_die "$(unsent) mails still unsent after ${DRAIN_TIMEOUT}s"
sleep 0.5 # the catcher's last files
CATCHER_TICKS=$(($(proc_ticks "$CATCHER_PID") - CATCHER_T0))
BOOKS="$(psql_q "$SUPER_URL" -AtF ' ' -c "select count(*) filter (where sent_at is not null),
    count(*) filter (where failed_at is not null), count(*) filter (where attempts > 1), coalesce(max(attempts), 0),
    coalesce(extract(epoch from max(sent_at) - min(sent_at)), 0), coalesce(extract(epoch from max(sent_at)), 0),
    count(*) filter (where payload is not null)
  from guestpass.mail_outbox")"
read -r SENT FAILED RETRIED MAX_ATTEMPTS SENT_SPAN LAST_SENT PAYLOADS_LEFT <<<"$BOOKS"
DRAIN_RATE="$(calc 'max(a[0] - 1, 1) / max(a[1], 1e-6)' "$SENT" "$SENT_SPAN")"
DRAIN_WALL="$(calc 'a[1] - a[0]' "$T_LAUNCH" "$LAST_SENT")"
DRAIN_WALL_RATE="$(calc 'a[0] / a[1]' "$SENT" "$DRAIN_WALL")"
CATCHER="$(helper catcher "$WORK/mail" 1 "$MAILS")" || gp_die "reading the catcher's mails failed"
CODE_1="$(json "$CATCHER" code_of_first)"
E2E='{"status": 0, "session": false}'
[[ "$CODE_1" =~ ^[0-9]+$ ]] && E2E="$(helper verify "$URL" "$PUBLISHABLE_KEY" otp-1@bench.example "$CODE_1")"
RSS_DRAIN="$(rss_kb "$SERVER_PID")"

# What the servers logged (LOG_LEVEL=warning: every line is a warning or worse), by level and message.
LOG_SUMMARY="$(python3 - "$WORK/server.log" <<'PY'
import collections, json, sys
counts = collections.Counter()
for line in open(sys.argv[1], errors="replace"):
    try:
        entry = json.loads(line)
        counts[(entry.get("level", "?"), entry.get("message", "?"), entry.get("error", ""))] += 1
    except ValueError:
        if line.strip():
            counts[("text", line.strip()[:120], "")] += 1
print("; ".join(f"{n} x {level} {message!r}" + (f" ({error})" if error else "") for (level, message, error), n in counts.most_common(6)) or "nothing")
PY
)"
# =====================================================================================================================
LOG_SUMMARY="$LOG_SUMMARY" python3 - <<PY >&2
import os
log_summary = os.environ["LOG_SUMMARY"]
cpus, ticks = $CPUS, $TICKS
tick_ms = 1000 / ticks
per = lambda t, n: f"{t * tick_ms / max(1, n):.3f} ms"
ms = lambda us: f"{us / 1000:.2f} ms"
mb = lambda kb: f"{int(kb or 0) / 1024:.0f} MB"
meets = lambda ok: "meets the target" if ok else "MISSES the target"
es256 = float("$ES256_VERIFIES" or 0)
kdf_ms = $KDF_MS
pw_rate, c1_rate = $PW_RATE, $C1_RATE
ideal = cpus * 1000 / kdf_ms
idle_p99, flood_p99 = $IDLE_P99_US, $FLOOD_P99_US
flood_ratio = flood_p99 / max(1, idle_p99)
v_rate, v_sql = $V_RATE, $V_SQL_TPS
v_ratio = v_rate / v_sql
drain = $DRAIN_RATE
import json
catcher = json.loads(r'''$CATCHER''')
e2e = json.loads(r'''$E2E''')
books_ok = (catcher["exactly_once"] == catcher["expected"] == $MAILS and catcher["missing"] == 0 and catcher["doubled"] == 0
            and catcher["unexpected"] == 0 and $FAILED == 0 and $SENT == $MAILS)
print(f"""
==== GuestPass email benchmark ({cpus} CPUs, loopback, one database, client IP: $CLIENT_IP)
  binary             $BIN
  machine before     {$BUSY_BEFORE:.0f} % of the CPUs busy before the bench started (other processes)
  machine unit       one ES256 verify {1e6 / es256 if es256 else float('nan'):.1f} µs (openssl speed ecdsap256: {es256:.0f} verifies/s)
  1 password sign-in POST /auth/v1/token?grant_type=password, scrypt N=2^$KDF_LOGN r=$KDF_R p=$KDF_P, $PASSWORD_USERS users
    one KDF          {kdf_ms:8.1f} ms  scrypt alone (hashlib.scrypt over OpenSSL, median of 5)
    concurrency 1    {c1_rate:8.1f} /s   p50 {ms($C1_P50_US)} (the KDF and the request around it)
    c$CONNECTIONS             {pw_rate:8.1f} /s   {pw_rate / cpus:.1f} per core; {pw_rate / ideal:.2f} × the pool's ideal ({cpus} cores / one KDF = {ideal:.1f}/s)
                              p50 {ms($PW_P50_US)}  p99 {ms($PW_P99_US)}, $PW_REQUESTS sign-ins, 0 errors
    CPU/sign-in      server {per($PW_SERVER_TICKS, $PW_REQUESTS)}, postgres {per($PW_PG_TICKS, $PW_REQUESTS)}
    memory per hash  {$HASH_MIB:.0f} MiB (128 · r · N); server RSS {mb("$RSS_IDLE")} before, peak {mb("$RSS_PASSWORD_PEAK")} at c$CONNECTIONS, {mb("$RSS_FLOOD_PEAK")} in the flood
  2 get_quota p99    POST /rest/v1/rpc/get_quota, $PROBE_CONNECTIONS connections pausing ${PROBE_DELAY_MS} ms
    idle             p50 {ms($IDLE_P50_US)}  p99 {ms(idle_p99)}  max {ms($IDLE_MAX_US)}  ({$IDLE_RATE:.0f} req/s)
    sign-in flood    p50 {ms($FLOOD_P50_US)}  p99 {ms(flood_p99)}  max {ms($FLOOD_MAX_US)}  ({$FLOOD_PROBE_RATE:.0f} req/s; flood c$FLOOD_CONNECTIONS: {$FLOOD_RATE:.1f} sign-ins/s, sign-in p99 {ms($FLOOD_SIGNIN_P99_US)}, $FLOOD_BAD refused/failed)
    ratio            {flood_ratio:8.2f}       flood p99 / idle p99, target <= $FLOOD_TARGET: {meets(flood_ratio <= $FLOOD_TARGET)}
  3 OTP verify       wrong codes for $((MAILS - 1)) addresses with a pending code (both sides: the SQL of a failed verification)
    HTTP             {v_rate:8.1f} /s   POST /auth/v1/verify, $V_REQUESTS requests, all 403 otp_expired ($MATCHED right guesses), p50 {ms($V_P50_US)}  p99 {ms($V_P99_US)}
    CPU/request      server {per($V_SERVER_TICKS, $V_REQUESTS)}, postgres {per($V_PG_TICKS, $V_REQUESTS)}
    pgbench          {v_sql:8.1f} tx/s guestpass_server.email_verify in the request frame, $SQL_TX tx, 0 failed
    CPU/tx           postgres {per($SQL_PG_TICKS, $SQL_TX)}
    ratio            {v_ratio:8.2f}       HTTP / pgbench, target >= $VERIFY_TARGET: {meets(v_ratio >= $VERIFY_TARGET)}
    (queueing them)  {$OTP_RATE:8.1f} /s   POST /auth/v1/otp, $MAILS sends, $CONNECTIONS at once (a user, a code, a mail each)
  4 outbox drain     $MAILS mails, sender on at start, to scripts/mail-catcher over plain SMTP on loopback
    rate             {drain:8.1f} /s   over the span of sent_at; {$DRAIN_WALL_RATE:.1f}/s from the server's launch ({$DRAIN_WALL:.2f} s)
    CPU/mail         server {per($DRAIN_SERVER_TICKS, $SENT)}, postgres {per($DRAIN_PG_TICKS, $SENT)}, catcher {per($CATCHER_TICKS, $SENT)}
    target           >= $DRAIN_TARGET mails/s: {meets(drain >= $DRAIN_TARGET)}
    books            sent $SENT, failed $FAILED, retried $RETRIED (max attempts $MAX_ATTEMPTS), payloads left $PAYLOADS_LEFT;
                     catcher: {catcher["files"]} files, {catcher["exactly_once"]} of {catcher["expected"]} recipients exactly once, {catcher["missing"]} missing, {catcher["doubled"]} doubled, {catcher["unexpected"]} unexpected
    server log       {log_summary}
    end to end       otp-1's mailed code {catcher["code_of_first"]} → POST /auth/v1/verify {e2e["status"]}, session: {e2e["session"]}

  summary""")
rows = [
    ("sign-ins/s", f"{pw_rate:.1f} ({pw_rate / cpus:.1f} per core, {pw_rate / ideal:.2f} x ideal)", "-", "-"),
    ("one KDF", f"{kdf_ms:.1f} ms, {$HASH_MIB:.0f} MiB", "-", "-"),
    ("get_quota p99", f"{idle_p99 / 1000:.2f} -> {flood_p99 / 1000:.2f} ms ({flood_ratio:.2f}x)", "<= $FLOOD_TARGET x", "ok" if flood_ratio <= $FLOOD_TARGET else "MISSED"),
    ("verify HTTP/SQL", f"{v_rate:.0f} / {v_sql:.0f} = {v_ratio:.2f}", ">= $VERIFY_TARGET", "ok" if v_ratio >= $VERIFY_TARGET else "MISSED"),
    ("outbox drain", f"{drain:.1f} mails/s", ">= $DRAIN_TARGET", "ok" if drain >= $DRAIN_TARGET else "MISSED"),
    ("delivery books", "exactly once each" if books_ok else "NOT exactly once", "exactly once", "ok" if books_ok else "FAILED"),
]
print(f"    {'measure':<17}{'figure':<44}{'target':<14}verdict")
for name, figure, target, verdict in rows:
    print(f"    {name:<17}{figure:<44}{target:<14}{verdict}")
print("""====""")
PY
[ "$(json "$CATCHER" 'exactly_once == expected == '"$MAILS"' and missing == 0 and doubled == 0 and unexpected == 0')" = True ] ||
  gp_die "the catcher did not receive every mail exactly once: $CATCHER"
[ "$FAILED" = 0 ] && [ "$SENT" = "$MAILS" ] || gp_die "outbox: $SENT sent, $FAILED failed of $MAILS"
[ "$(json "$E2E" session)" = True ] || gp_die "the code mailed to otp-1 did not sign in: $E2E"
[ "$FLOOD_BAD" = 0 ] || gp_die "$FLOOD_BAD sign-ins of the flood failed or were refused"
