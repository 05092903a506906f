#!/usr/bin/env bash
# Storage, in one run (release build, own cluster, servers and SeaweedFS, torn down at exit as bench/lib.sh does):
#
#   ./bench/storage.sh
#
# 1. Transfers on the file system: one object of 1 MiB and one of 64 MiB, BENCH_TRANSFER_ROUNDS times each, uploaded
#    (POST /storage/v1/object/bench/<key>, a raw body streamed by `curl -T`, the app's secret key) and downloaded
#    (GET, to /dev/null; then again, untimed, to a file compared with the source), against the same bytes written and read on the same disk without
#    HTTP: `dd bs=1M conv=fsync` into the server's data directory (the server fsyncs an object before it answers) and
#    `dd` back to /dev/null, the data files dropped from the page cache before each read on both sides; each side
#    timed by its own tool (curl's time_total, dd's figure). Printed: the median seconds and MiB/s of each, and HTTP/dd as throughput ratios. Target: ≥ 0.7 each way.
# 2. 10 KiB uploads/s: wrk POSTs a new key per request (bench/storage_upload.lua, BENCH_CONNECTIONS connections) for
#    BENCH_DURATION seconds, against pgbench running the same metadata SQL (bench/storage_metadata.sql: the reservation
#    and permission dry run, then the row, in the request's frame, as the login role) for as long. Target: HTTP/pgbench
#    ≥ 0.5.
# 3. Memory: the server's RSS (VmRSS, sampled every 20 ms) idle, and at its peak while one BENCH_BIG_MIB object
#    (default 1024 MiB) is uploaded and then downloaded. Target: peak ≤ idle + 64 MiB.
# 4. The same on SeaweedFS (scripts/seaweedfs: `weed mini` on loopback; the server path-style with SigV4, 8 MiB parts):
#    transfers against the same dd figures, 10 KiB uploads/s, and the RSS of the big object, reported (a second
#    process does the storing, so no target).
#
# Environment: bench/lib.sh's BENCH_DURATION (default 10), BENCH_CONNECTIONS (default 8), BENCH_THREADS (default 2),
# BENCH_SKIP_BUILD / BENCH_BIN, BENCH_KEEP_CLUSTER, BENCH_DURABLE; BENCH_TRANSFER_ROUNDS (default 5, 1...20),
# BENCH_BIG_MIB (default 1024, 64...4096), BENCH_S3 (1 default; 0 skips part 4).
# Exit status 1 when a measurement is invalid (a failed transfer, bytes that do not round-trip, wrk errors, failed
# pgbench transactions); a figure below its target is reported, not an error.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
ROUNDS="${BENCH_TRANSFER_ROUNDS:-5}"
BIG_MIB="${BENCH_BIG_MIB:-1024}"
WITH_S3="${BENCH_S3:-1}"
in_range() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
in_range "$ROUNDS" 1 20 || gp_die "BENCH_TRANSFER_ROUNDS must be in 1...20"
in_range "$BIG_MIB" 64 4096 || gp_die "BENCH_BIG_MIB must be in 64...4096"
TRANSFER_TARGET=0.7
UPLOAD_TARGET=0.5
RSS_TARGET_MIB=64

bench_prepare_tools wrk curl
bench_build
bench_begin "$ROOT/.pg/bench-storage"
SEAWEED_DIR=""
SAMPLER_PID=""
stop_helpers() {
  [ -n "$SAMPLER_PID" ] && kill "$SAMPLER_PID" 2>/dev/null
  [ -n "$SEAWEED_DIR" ] && "$ROOT/scripts/seaweedfs" stop "$SEAWEED_DIR" >/dev/null 2>&1
  return 0
}
trap 'rc=$?; stop_helpers; (exit $rc); bench_cleanup' EXIT
bench_create_database
SECRET_KEY="$(gp_json_field "$WORK/stack.json" apps 0 secret_key)"
CLAIMS="{\"app_id\":\"$APP_ID\",\"role\":\"service_role\"}"
LOGIN_ROLE=guestpass_authenticator
DATABASE_URL="$SUPER_URL" "$BIN" apps configure --app "$APP_ID" --storage-upload-bytes-limit $(((BIG_MIB + 1) << 20)) >/dev/null
psql_q "$SUPER_URL" -c "insert into storage.buckets (app_id, id, name) values ('$APP_ID', 'bench', 'bench')" >/dev/null
DATA_DIR="$WORK/storage"
mkdir -p "$DATA_DIR"

median() { python3 -c "import statistics, sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.4f}')" "$@"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.2f}')" "$1" "$2"; }
mibps() { python3 -c "import sys; print(f'{float(sys.argv[1]) / float(sys.argv[2]):.0f}')" "$1" "$2"; }

# Reads come from the disk on both sides: before each download and each dd read, the data directory's files (the
# object's and dd's, and nothing else: not PostgreSQL's pages, not the binaries) are written back and dropped from the
# page cache (posix_fadvise DONTNEED).
evict_data() {
  sync
  python3 - "$DATA_DIR" <<'PY'
import os, sys
for directory, _, files in os.walk(sys.argv[1]):
    for name in files:
        fd = os.open(os.path.join(directory, name), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
PY
}

# Each side is timed by its own tool, so neither pays for starting a process: curl's time_total (connect to last
# byte) and dd's own figure.
# http_upload KEY FILE → seconds; http_download KEY OUT → seconds (the answer's status must be 200)
http_upload() {
  local answer
  # No `Expect: 100-continue` (curl's default for -T, a 1 s wait here; the SDKs do not send it).
  answer="$(curl -s -o "$WORK/upload.out" -w '%{http_code} %{time_total}' -T "$2" -X POST -H 'Expect:' -H "apikey: $SECRET_KEY" \
    -H 'Content-Type: application/octet-stream' "$URL/storage/v1/object/bench/$1")"
  [ "${answer% *}" = 200 ] || { cat "$WORK/upload.out" >&2; gp_die "upload of $1 answered ${answer% *}"; }
  echo "${answer#* }"
}
http_download() {
  local answer
  answer="$(curl -s -o "$2" -w '%{http_code} %{time_total}' -H "apikey: $SECRET_KEY" "$URL/storage/v1/object/bench/$1")"
  [ "${answer% *}" = 200 ] || gp_die "download of $1 answered ${answer% *}"
  echo "${answer#* }"
}
# dd_seconds DD-ARGS… → the seconds dd reports for its copy
dd_seconds() { dd "$@" 2>&1 | sed -n 's/.* copied, \([0-9.e+-]*\) s.*/\1/p'; }

# transfers LABEL MIB: the medians of ROUNDS uploads, downloads, dd writes and dd reads of one MIB-MiB object.
transfers() {
  local label="$1" mib="$2" source="$WORK/source-$2" i
  [ -f "$source" ] || head -c $((mib << 20)) /dev/urandom >"$source"
  local ups=() downs=() writes=() reads=()
  for i in $(seq 1 "$ROUNDS"); do
    local key="$label-$mib-$i-$RANDOM"
    ups+=("$(http_upload "$key" "$source")")
    evict_data
    # Timed to /dev/null, as dd reads; the bytes are compared apart, untimed.
    downs+=("$(http_download "$key" /dev/null)")
    http_download "$key" "$WORK/downloaded" >/dev/null
    cmp -s "$source" "$WORK/downloaded" || gp_die "the downloaded $mib MiB object differs from the uploaded one"
    rm -f "$WORK/downloaded"
    writes+=("$(dd_seconds if="$source" of="$DATA_DIR/dd-$i" bs=1M conv=fsync)")
    evict_data
    reads+=("$(dd_seconds if="$DATA_DIR/dd-$i" of=/dev/null bs=1M)")
    rm -f "$DATA_DIR/dd-$i"
  done
  UP="$(median "${ups[@]}")" DOWN="$(median "${downs[@]}")" DD_WRITE="$(median "${writes[@]}")" DD_READ="$(median "${reads[@]}")"
  UP_RATIO="$(ratio "$DD_WRITE" "$UP")" DOWN_RATIO="$(ratio "$DD_READ" "$DOWN")"
  printf '  %-6s %4d MiB  upload %7.4f s (%5s MiB/s) vs dd %7.4f s (%5s MiB/s): %s   download %7.4f s (%5s MiB/s) vs dd %7.4f s (%5s MiB/s): %s\n' \
    "$label" "$mib" "$UP" "$(mibps "$mib" "$UP")" "$DD_WRITE" "$(mibps "$mib" "$DD_WRITE")" "$UP_RATIO" \
    "$DOWN" "$(mibps "$mib" "$DOWN")" "$DD_READ" "$(mibps "$mib" "$DD_READ")" "$DOWN_RATIO" >>"$WORK/report"
}

# small_uploads LABEL: 10 KiB uploads/s over HTTP (wrk) → HTTP_RPS
small_uploads() {
  timeout -k 5 $((DURATION + 60)) wrk -t "$THREADS" -c "$CONNECTIONS" -d "${DURATION}s" --latency -s "$ROOT/bench/storage_upload.lua" \
    "$URL" -- "$SECRET_KEY" 10240 >"$WORK/wrk-$1.out"
  bench_wrk_result "$WORK/wrk-$1.out"
  [ "$HTTP_BAD" = 0 ] || { cat "$WORK/wrk-$1.out" >&2; gp_die "wrk ($1): $HTTP_BAD bad answers"; }
  HTTP_RPS="$(python3 -c "import sys; print(f'{int(sys.argv[1]) / (int(sys.argv[2]) / 1e6):.0f}')" "$HTTP_REQUESTS" "$HTTP_US")"
}

# rss_mib PID → VmRSS in MiB
rss_mib() { awk '/^VmRSS:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
# big_object LABEL PID: idle RSS, then the peak while one BIG_MIB object goes up and comes down → RSS_IDLE RSS_PEAK
big_object() {
  local label="$1" pid="$2" source="$WORK/source-big"
  [ -f "$source" ] || head -c $((BIG_MIB << 20)) /dev/zero >"$source"
  sleep 1
  RSS_IDLE="$(rss_mib "$pid")"
  (while kill -0 "$pid" 2>/dev/null; do rss_mib "$pid"; echo; sleep 0.02; done) >"$WORK/rss-$label" &
  SAMPLER_PID=$!
  BIG_UP="$(http_upload "big-$label" "$source")"
  BIG_DOWN="$(http_download "big-$label" /dev/null)"
  kill "$SAMPLER_PID" 2>/dev/null || true
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=""
  RSS_PEAK="$(sort -n "$WORK/rss-$label" | tail -n 1)"
}

# ---- 1-3: the file system
bench_start_server GUESTPASS_STORAGE_DIR="$DATA_DIR"
bench_cpu_init
: >"$WORK/report"
gp_log "transfers on the file system ($ROUNDS rounds each)"
transfers file 1
FILE_1_UP="$UP_RATIO" FILE_1_DOWN="$DOWN_RATIO"
transfers file 64
FILE_64_UP="$UP_RATIO" FILE_64_DOWN="$DOWN_RATIO"
gp_log "10 KiB uploads: HTTP (wrk) then the metadata SQL (pgbench)"
small_uploads file
FILE_RPS="$HTTP_RPS" FILE_P99="$P99_US"
STORE="file:$(realpath "$DATA_DIR")"
sed -e "s|__CLAIMS__|$CLAIMS|g" -e "s|__STORE__|$STORE|g" "$ROOT/bench/storage_metadata.sql" >"$WORK/storage_metadata.sql"
PGBENCH_ROLE="$LOGIN_ROLE" bench_pgbench storage-metadata -f "$WORK/storage_metadata.sql"
[ "${PG_FAILED:-0}" = 0 ] || gp_die "pgbench: $PG_FAILED failed transactions"
UPLOAD_RATIO="$(ratio "$FILE_RPS" "$PG_TPS")"
gp_log "one $BIG_MIB MiB object up and down, sampling the server's RSS"
big_object file "$SERVER_PID"
FILE_RSS_IDLE="$RSS_IDLE" FILE_RSS_PEAK="$RSS_PEAK" FILE_BIG_UP="$BIG_UP" FILE_BIG_DOWN="$BIG_DOWN"

# ---- 4: SeaweedFS
if [ "$WITH_S3" = 1 ]; then
  SEAWEED_DIR="$WORK/seaweedfs"
  gp_log "starting SeaweedFS (scripts/seaweedfs)"
  "$ROOT/scripts/seaweedfs" start "$SEAWEED_DIR" >/dev/null
  eval "$("$ROOT/scripts/seaweedfs" env "$SEAWEED_DIR")"
  bench_start_server GUESTPASS_STORAGE_BACKEND=s3 GUESTPASS_S3_ENDPOINT="$GUESTPASS_TEST_S3_ENDPOINT" \
    GUESTPASS_S3_BUCKET=guestpass-bench GUESTPASS_S3_ACCESS_KEY_ID="$GUESTPASS_TEST_S3_ACCESS_KEY" \
    GUESTPASS_S3_SECRET_ACCESS_KEY="$GUESTPASS_TEST_S3_SECRET_KEY"
  gp_log "transfers on SeaweedFS ($ROUNDS rounds each)"
  transfers s3 1
  transfers s3 64
  small_uploads s3
  S3_RPS="$HTTP_RPS" S3_P99="$P99_US"
  big_object s3 "$SERVER_PID"
  S3_RSS_IDLE="$RSS_IDLE" S3_RSS_PEAK="$RSS_PEAK" S3_BIG_UP="$BIG_UP" S3_BIG_DOWN="$BIG_DOWN"
fi

verdict() { python3 -c "import sys; print('meets' if float(sys.argv[1]) >= float(sys.argv[2]) else 'MISSES')" "$1" "$2"; }
{
  echo
  echo "==== Storage ($(nproc) cores; release build; durable PostgreSQL: ${BENCH_DURABLE:-1})"
  echo "Transfers (median of $ROUNDS; ratio = HTTP throughput / dd throughput on the same disk; the data files dropped from the page cache before reads):"
  cat "$WORK/report"
  echo "  file system: 1 MiB up $FILE_1_UP, down $FILE_1_DOWN; 64 MiB up $FILE_64_UP, down $FILE_64_DOWN (target ≥ $TRANSFER_TARGET each:" \
    "$(verdict "$FILE_1_UP" $TRANSFER_TARGET) $(verdict "$FILE_1_DOWN" $TRANSFER_TARGET) $(verdict "$FILE_64_UP" $TRANSFER_TARGET) $(verdict "$FILE_64_DOWN" $TRANSFER_TARGET))"
  echo "10 KiB uploads ($CONNECTIONS connections, ${DURATION}s):"
  echo "  file system: $FILE_RPS/s over HTTP (p99 $((FILE_P99 / 1000)) ms) vs pgbench $PG_TPS tps of the same metadata SQL: $UPLOAD_RATIO (target ≥ $UPLOAD_TARGET: $(verdict "$UPLOAD_RATIO" $UPLOAD_TARGET))"
  [ "$WITH_S3" = 1 ] && echo "  SeaweedFS:   $S3_RPS/s over HTTP (p99 $((S3_P99 / 1000)) ms)"
  echo "Server RSS with one $BIG_MIB MiB object (upload, then download):"
  echo "  file system: idle $FILE_RSS_IDLE MiB, peak $FILE_RSS_PEAK MiB (+$((FILE_RSS_PEAK - FILE_RSS_IDLE)) MiB; target ≤ +$RSS_TARGET_MIB:" \
    "$([ $((FILE_RSS_PEAK - FILE_RSS_IDLE)) -le $RSS_TARGET_MIB ] && echo meets || echo MISSES)); up ${FILE_BIG_UP}s, down ${FILE_BIG_DOWN}s"
  [ "$WITH_S3" = 1 ] && echo "  SeaweedFS:   idle $S3_RSS_IDLE MiB, peak $S3_RSS_PEAK MiB (+$((S3_RSS_PEAK - S3_RSS_IDLE)) MiB); up ${S3_BIG_UP}s, down ${S3_BIG_DOWN}s"
} >&2
