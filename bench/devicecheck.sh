#!/usr/bin/env bash
# Welcome grants per second for one app: POST /v1/devicecheck/grant against the DeviceCheck stand-in answering at
# an Apple-like latency. A claim for a new device (bit0 unset) asks Apple again and sets the bit under the app's
# lease, so new-device grants of one app are serialised: about one per two Apple round trips. Three runs:
#   1. new devices: BENCH_CONNECTIONS clients, each signing up a guest with a fresh device and claiming, for
#      BENCH_DURATION seconds (sign-up and the token fetch are not timed);
#   2. reinstalls: second guests on devices already granted (answered from a first query, without the lease);
#   3. a burst of BENCH_BURST new devices claiming at the same moment, more than the 10 s lease wait can serve:
#      the rest are answered 503 devicecheck_busy, nothing granted, nothing left pending.
# Then checks the books: no pending claim, one grant per granted device, 10 credits per grant.
#
# Environment: BENCH_APPLE_LATENCY_MS (default 150), BENCH_BURST (default 60), and bench/lib.sh's BENCH_DURATION,
# BENCH_CONNECTIONS, BENCH_BIN, BENCH_SKIP_BUILD, BENCH_KEEP_CLUSTER.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_read_settings
LATENCY_MS="${BENCH_APPLE_LATENCY_MS:-150}"
BURST="${BENCH_BURST:-60}"
[[ "$LATENCY_MS" =~ ^[0-9]+$ ]] && [ "$LATENCY_MS" -le 5000 ] || gp_die "BENCH_APPLE_LATENCY_MS must be in 0...5000"
[[ "$BURST" =~ ^[0-9]+$ ]] && [ "$BURST" -ge 1 ] && [ "$BURST" -le 500 ] || gp_die "BENCH_BURST must be in 1...500"
bench_prepare_tools curl
bench_build
bench_begin "$ROOT/.pg/bench-devicecheck"
STANDIN_PID=""
trap 'rc=$?; [ -n "$STANDIN_PID" ] && kill "$STANDIN_PID" 2>/dev/null; (exit $rc); bench_cleanup' EXIT
bench_create_database

# ---- the stand-in, and the app pointed at it
"$BIN" keys generate --out "$WORK/devicecheck.p8" >/dev/null
STANDIN_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
STANDIN="http://127.0.0.1:$STANDIN_PORT"
"$BIN" devicecheck-standin --port "$STANDIN_PORT" --team-id BENCHTEAM1 --key-id BENCHKEY01 \
  --key-file "$WORK/devicecheck.p8" --latency-ms "$LATENCY_MS" >"$WORK/standin.log" 2>&1 &
STANDIN_PID=$!
for _ in $(seq 1 100); do curl -fsS -o /dev/null --max-time 2 "$STANDIN/_standin/devices/x" 2>/dev/null && break; sleep 0.1; done
DATABASE_URL="$SUPER_URL" "$BIN" apps configure --app "$APP_ID" --devicecheck-team-id BENCHTEAM1 \
  --devicecheck-key-id BENCHKEY01 --devicecheck-key-path "$WORK/devicecheck.p8" --devicecheck-base-url "$STANDIN" >/dev/null
bench_start_server
bench_cpu_init

drive() { timeout -k 5 $((DURATION + 150)) python3 "$ROOT/bench/devicecheck.py" "$@"; }
field() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]); print(eval(sys.argv[2], {}, v))' "$1" "$2"; }

gp_log "new devices: $CONNECTIONS clients for ${DURATION}s, Apple latency ${LATENCY_MS} ms"
S0="$(proc_ticks "$SERVER_PID")"
NEW="$(drive throughput "$URL" "$STANDIN" "$PUBLISHABLE_KEY" "$CONNECTIONS" "$DURATION")"
S1="$(proc_ticks "$SERVER_PID")"
gp_log "reinstalls: $CONNECTIONS clients for ${DURATION}s"
REINSTALL="$(drive reinstalls "$URL" "$STANDIN" "$PUBLISHABLE_KEY" "$CONNECTIONS" "$DURATION")"
gp_log "burst: $BURST new devices at once"
BURSTED="$(drive burst "$URL" "$STANDIN" "$PUBLISHABLE_KEY" "$BURST")"

# ---- the books
PENDING="$(psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.devicecheck_claims where state = 'pending'")"
GRANTED_CLAIMS="$(psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.devicecheck_claims where state = 'granted'")"
CREDITS="$(psql_q "$SUPER_URL" -Atc "select coalesce(sum(change), 0) from guestpass.credit_ledger where reason = 'welcome_grant'")"
LEASES="$(psql_q "$SUPER_URL" -Atc "select count(*) from guestpass.devicecheck_leases")"
GRANTED_SEEN=$(( $(field "$NEW" 'outcomes.get("granted", 0)') + $(field "$REINSTALL" 'outcomes.get("granted", 0)') \
  + $(field "$BURSTED" 'outcomes.get("granted", 0)') + CONNECTIONS ))
DOUBLE=0
for device in $(field "$NEW" '" ".join(granted_devices)') $(field "$BURSTED" '" ".join(granted_devices)'); do
  updates="$(curl -fsS "$STANDIN/_standin/devices/$device" | python3 -c 'import json,sys; print(json.load(sys.stdin)["updates"])')"
  [ "$updates" = 1 ] || DOUBLE=$((DOUBLE + 1))
done

NEW_GRANTS="$(field "$NEW" 'outcomes.get("granted", 0)')"
TICKS_PER_S="$(getconf CLK_TCK)"
{
  echo
  echo "==== welcome grants, one app, Apple latency ${LATENCY_MS} ms, $(nproc) CPUs"
  printf '  new devices   %6.2f grants/s   (%s in %ss, %s clients)  claim p50 %s ms  p99 %s ms  outcomes %s\n' \
    "$(python3 -c "print($NEW_GRANTS / $DURATION)")" "$NEW_GRANTS" "$DURATION" "$CONNECTIONS" \
    "$(field "$NEW" p50_ms)" "$(field "$NEW" p99_ms)" "$(field "$NEW" outcomes)"
  printf '  server CPU    %6.1f ms per new-device grant (with its guest'"'"'s sign-up)\n' \
    "$(python3 -c "print(($S1 - $S0) * 1000 / $TICKS_PER_S / max($NEW_GRANTS, 1))")"
  printf '  reinstalls    %6.2f claims/s   (bit0 already set: no lease)  p50 %s ms  p99 %s ms  outcomes %s\n' \
    "$(python3 -c "print($(field "$REINSTALL" claims) / $DURATION)")" "$(field "$REINSTALL" p50_ms)" \
    "$(field "$REINSTALL" p99_ms)" "$(field "$REINSTALL" outcomes)"
  printf '  burst of %s   %s in %ss  max claim %s ms  outcomes %s\n' "$BURST" "$(field "$BURSTED" claims)" \
    "$(field "$BURSTED" elapsed_s)" "$(field "$BURSTED" max_ms)" "$(field "$BURSTED" outcomes)"
  echo "  books         pending claims $PENDING, leases held $LEASES, granted claims $GRANTED_CLAIMS (clients saw $GRANTED_SEEN), welcome credits $CREDITS, devices updated more than once $DOUBLE"
} >&2
[ "$PENDING" = 0 ] && [ "$LEASES" = 0 ] && [ "$DOUBLE" = 0 ] && [ "$GRANTED_CLAIMS" = "$GRANTED_SEEN" ] &&
  [ "$CREDITS" = $((GRANTED_CLAIMS * 10)) ] || gp_die "the books do not balance"
