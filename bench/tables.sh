#!/usr/bin/env bash
# Table API throughput (PostgREST's /rest/v1/<table>): HTTP (wrk on a release build) against pgbench running the very
# statements the server runs for those requests, in the same transaction frame, at the same concurrency, on the same
# database, for the same time. Three requests on the example table public.readings (sql/examples):
#
#   (a) read     GET /rest/v1/readings?select=*&kind=eq.palm&order=created_at.desc&limit=10 — 10 of the user's palm
#                readings, newest first (each read user has 20 palm and 10 coffee readings)
#   (b) insert   POST /rest/v1/readings, body {"kind":"face","content":{"n":1}}, Prefer: return=minimal (201)
#   (c) 1000     GET /rest/v1/readings?select=*&limit=1000 — 1000 rows as PostgreSQL's JSON text, by a user with 1200;
#                reported as MB/s of response body and the server's CPU per request
#
#   ./bench/tables.sh
#
# Sets up everything itself and tears it down at exit (also on failure or Ctrl-C), as bench/consume.sh does
# (bench/lib.sh): a throwaway cluster in .pg/bench-tables, a database, migrations with sql/examples (`guestpass migrate
# up --dir sql/examples` after `guestpass dev up`, as `dev up --dir` would), an app, a signing key, and `guestpass
# serve` on a free loopback port with GUESTPASS_DB_POOL_SIZE = the concurrency. BENCH_USERS users (default 4 ×
# BENCH_CONNECTIONS, at most 128) sign up over HTTP for the reads, as many others for the inserts (so the face rows the
# inserts add never sit in front of the palm rows a read scans), and one for the 1000-row read; their readings are
# seeded in SQL (as the superuser, owner columns from each user's claims).
#
# The SQL is the server's own: before the measurement PostgreSQL logs every statement (ALTER SYSTEM SET log_statement
# = 'all', log_parameter_max_length = -1, pg_reload_conf() on the throwaway cluster) while a first server answers one
# request of each kind; the transactions those requests ran (BEGIN [READ ONLY]; the identity set_config(…); [the role's
# statement_timeout]; the statement; COMMIT) are read back from the cluster's log, their parameters substituted as the
# literals PostgreSQL logged (untyped, as the server sends them), and written as one pgbench script per user with that
# user's claims in place of the probe user's. Logging is then reset and the measured server is a fresh one.
# pgbench sends each transaction as one compound query (statements joined by \;), one round trip, as the server
# pipelines it; BENCH_SQL_SPLIT=1 sends one statement per round trip instead (as bench/consume.sh's scripts do).
#
# Environment: BENCH_DURATION (seconds of each kind of run, default 10), BENCH_ROUNDS (default 2: HTTP and SQL
# alternate in that many rounds of BENCH_DURATION / BENCH_ROUNDS seconds per request kind), BENCH_CONNECTIONS (default
# 8), BENCH_THREADS (wrk threads / pgbench jobs, default 2), BENCH_WARMUP (seconds of HTTP warm-up per request kind,
# default 2, 0 = none), BENCH_USERS (default 4 × BENCH_CONNECTIONS, at most 128), BENCH_SQL_SPLIT=1 (see above),
# BENCH_SKIP_BUILD=1 (use the existing release build), BENCH_BIN=PATH, BENCH_KEEP_CLUSTER=1 (keep .pg/bench-tables
# afterwards), BENCH_DURABLE, BENCH_PG_CONF, BENCH_PROFILE (bench/lib.sh). Exit status 1 when a measurement is invalid
# (wrk errors, any answer but 200 for reads or 201 for inserts, failed pgbench transactions, or fewer rows inserted
# than 201s answered or insert transactions committed); a ratio below its target (HTTP ≥ 0.70 × the SQL for (a) and
# (b)) is reported, not an error.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib.sh"

bench_read_settings
TARGET=0.70 # HTTP / SQL, for (a) and (b)
ROUNDS="${BENCH_ROUNDS:-2}"
if ! [[ "$ROUNDS" =~ ^[0-9]+$ ]] || [ "$ROUNDS" -lt 1 ] || [ "$ROUNDS" -gt "$DURATION" ]; then
  gp_die "BENCH_ROUNDS must be in 1...BENCH_DURATION"
fi
ROUND_SECONDS=$((DURATION / ROUNDS))
DEFAULT_USERS=$((4 * CONNECTIONS))
[ "$DEFAULT_USERS" -le 128 ] || DEFAULT_USERS=128
USERS="${BENCH_USERS:-$DEFAULT_USERS}"
if ! [[ "$USERS" =~ ^[0-9]+$ ]] || [ "$USERS" -lt 1 ] || [ "$USERS" -gt 128 ]; then gp_die "BENCH_USERS must be in 1...128"; fi
SQL_SPLIT="${BENCH_SQL_SPLIT:-0}"
[[ "$SQL_SPLIT" =~ ^[01]$ ]] || gp_die "BENCH_SQL_SPLIT must be 0 or 1"

KINDS=(read insert big)
declare -A WHAT=(
  [read]='GET /rest/v1/readings?select=*&kind=eq.palm&order=created_at.desc&limit=10'
  [insert]='POST /rest/v1/readings {"kind":"face","content":{"n":1}} (return=minimal)'
  [big]='GET /rest/v1/readings?select=*&limit=1000'
)
declare -A METHOD=([read]=GET [insert]=POST [big]=GET)
declare -A REQ_PATH=(
  [read]='/rest/v1/readings?select=*&kind=eq.palm&order=created_at.desc&limit=10'
  [insert]='/rest/v1/readings'
  [big]='/rest/v1/readings?select=*&limit=1000'
)
declare -A EXPECT=([read]=200 [insert]=201 [big]=200)
INSERT_BODY='{"kind":"face","content":{"n":1}}'
READ_PALM=20 READ_OTHER=10 BIG_ROWS=1200

bench_prepare_tools wrk curl
bench_build
bench_begin "$ROOT/.pg/bench-tables"
bench_create_database
bench_apply_examples
PG_LOG="$CLUSTER/log/postgres.log"
[ -f "$PG_LOG" ] || gp_die "no cluster log at $PG_LOG"

# ---- the first server, with PostgreSQL logging every statement: sign-ups, then one request of each kind
psql_q "$SUPER_URL" -c "alter system set log_statement = 'all'" -c "alter system set log_parameter_max_length = -1" \
  -c "select pg_reload_conf()" >/dev/null
sleep 0.2
# shellcheck disable=SC2119
bench_start_server

TOTAL_USERS=$((2 * USERS + 1))
bench_sign_up_users "$URL" "$TOTAL_USERS"
# users 1…U read, U+1…2U insert, 2U+1 reads 1000 rows; each group's tokens as a Lua list for bench/tables.lua
timeout -k 5 60 python3 - "$USERS" "$WORK" "$READ_PALM" "$READ_OTHER" "$BIG_ROWS" <<'PY' || gp_die "writing the token lists failed"
import json, re, sys
users, work, palm, other, big = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
with open(f"{work}/tokens.lua") as f:
    tokens = re.findall(r'"([^"]+)"', f.read())
assert len(tokens) == 2 * users + 1, len(tokens)
groups = {"read": range(1, users + 1), "insert": range(users + 1, 2 * users + 1), "big": range(2 * users + 1, 2 * users + 2)}
for name, indices in groups.items():
    with open(f"{work}/tokens-{name}.lua", "w") as f:
        f.write("return {\n" + "".join(f'  "{tokens[i - 1]}",\n' for i in indices) + "}\n")
    with open(f"{work}/users-{name}.txt", "w") as f:
        f.write("".join(f"{i}\n" for i in indices))
# The seed: the owner columns from each user's claims (sub, app_id); created_at one minute apart, newest first.
def owner(i):
    with open(f"{work}/claims-{i}.json") as f:
        claims = json.load(f)
    return f"('{claims['app_id']}'::uuid, '{claims['sub']}'::uuid)"
def rows(indices, count, kinds):
    return ("insert into public.readings (app_id, user_id, kind, content, created_at)\n"
            f"select u.app_id, u.user_id, (array[{', '.join(repr(k) for k in kinds)}])[1 + g % {len(kinds)}], "
            "jsonb_build_object('n', g), now() - g * interval '1 minute'\n"
            f"from (values {', '.join(owner(i) for i in indices)}) as u (app_id, user_id) cross join generate_series(1, {count}) as g;\n")
# Read users: a third of their rows coffee (g % 3 = 1), the rest palm.
assert palm == 2 * other
with open(f"{work}/seed.sql", "w") as f:
    f.write("begin;\n" + rows(groups["read"], palm + other, ["palm", "coffee", "palm"])
            + rows(groups["big"], big, ["face", "palm", "coffee"]) + "commit;\nanalyze public.readings;\n")
PY
gp_log "seeding readings: $READ_PALM palm + $READ_OTHER coffee for each of $USERS read users, $BIG_ROWS for the 1000-row reader"
psql_q "$SUPER_URL" -f "$WORK/seed.sql" >/dev/null || gp_die "seeding the readings failed"
[ "$(psql_q "$SUPER_URL" -Atc "select count(*) from (select user_id from public.readings where kind = 'palm' group by user_id having count(*) >= 10) as u")" -ge "$USERS" ] ||
  gp_die "the read users have fewer than 10 palm readings each"

token_of() { sed -n '2s/^ *"\(.*\)",$/\1/p' "$WORK/tokens-$1.lua"; }
# One request of each kind, logged by PostgreSQL; the answers checked.
LOG_OFFSET="$(stat -c %s "$PG_LOG")"
for kind in "${KINDS[@]}"; do
  body_args=()
  : >"$WORK/probe-$kind.body"
  if [ "${METHOD[$kind]}" = POST ]; then
    body_args=(-H 'Content-Type: application/json' -H 'Prefer: return=minimal' --data-binary "$INSERT_BODY")
  fi
  status="$(curl -sS -o "$WORK/probe-$kind.body" -D "$WORK/probe-$kind.headers" -w '%{http_code}' --max-time 30 \
    -X "${METHOD[$kind]}" "$URL${REQ_PATH[$kind]}" -H "apikey: $PUBLISHABLE_KEY" \
    -H "Authorization: Bearer $(token_of "$kind")" "${body_args[@]}")" || gp_die "probe ($kind) failed"
  [ "$status" = "${EXPECT[$kind]}" ] ||
    gp_die "probe ${WHAT[$kind]} answered $status, not ${EXPECT[$kind]}: $(head -c 600 "$WORK/probe-$kind.body")"
done
timeout -k 5 30 python3 - "$WORK" "$READ_PALM" <<'PY' || gp_die "a probe's answer is not what was asked for"
import json, sys
work = sys.argv[1]
read = json.load(open(f"{work}/probe-read.body"))
assert isinstance(read, list) and len(read) == 10, f"read: {len(read)} rows"
assert all(r["kind"] == "palm" for r in read), "read: a row that is not palm"
assert [r["created_at"] for r in read] == sorted((r["created_at"] for r in read), reverse=True), "read: not newest first"
big = json.load(open(f"{work}/probe-big.body"))
assert isinstance(big, list) and len(big) == 1000, f"1000-row read: {len(big)} rows"
assert open(f"{work}/probe-insert.body", "rb").read() == b"", "insert: a body with return=minimal"
PY
psql_q "$SUPER_URL" -c "alter system reset log_statement" -c "alter system reset log_parameter_max_length" \
  -c "select pg_reload_conf()" >/dev/null

# ---- the transactions those requests ran, from the cluster's log → one pgbench script per user and kind
gp_log "reading the server's transactions from the cluster log"
timeout -k 5 60 python3 - "$PG_LOG" "$LOG_OFFSET" "$WORK" "$LOGIN_ROLE" "$DB" "$SQL_SPLIT" <<'PY' || gp_die "reading the logged transactions failed"
import re, sys
log_file, offset, work, role, db, split = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6] == "1"
with open(log_file, "rb") as f:
    f.seek(offset)
    text = f.read().decode("utf-8")
# Records: a line with the cluster's prefix ('%m [%p] %q%u@%d '), then its continuation lines (PostgreSQL starts each
# with a tab).
prefix = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[(\d+)\] (?:(\S*)@(\S*) )?([A-Z]+):  (.*)$")
records = []
for line in text.split("\n"):
    m = prefix.match(line)
    if m:
        records.append([m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)])
    elif line.startswith("\t") and records:
        records[-1][4] += "\n" + line[1:]
# Executions of the login role in the bench database: (pid, sql, parameters as the literals PostgreSQL logged).
literal = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')", re.S)
executions = []
for i, (pid, user, database, level, message) in enumerate(records):
    if user != role or database != db or level != "LOG":
        continue
    m = re.match(r"execute [^:]*: (.*)$", message, re.S) or re.match(r"statement: (.*)$", message, re.S)
    if not m:
        continue
    params = {}
    for later in records[i + 1:]:
        if later[0] != pid:
            continue
        if later[3] == "DETAIL" and later[4].startswith("parameters: "):
            params = {int(n): v for n, v in literal.findall(later[4][len("parameters: "):])}
        break
    executions.append((pid, m.group(1), params))
# Transactions per backend: BEGIN … COMMIT.
transactions, open_by_pid = [], {}
for pid, sql, params in executions:
    if re.match(r"(?i)begin\b", sql):
        open_by_pid[pid] = [(sql, params)]
    elif pid in open_by_pid:
        open_by_pid[pid].append((sql, params))
        if re.match(r"(?i)(commit|end)\b", sql):
            transactions.append(open_by_pid.pop(pid))
found = [t for t in transactions if any("readings" in sql for sql, _ in t)]
kinds = ["read", "insert", "big"]  # the probes' order
assert len(found) == len(kinds), f"expected {len(kinds)} logged transactions on readings, found {len(found)}"
users = {k: [int(line) for line in open(f"{work}/users-{k}.txt")] for k in kinds}
def quote(value):
    return "'" + value.replace("'", "''") + "'"
def substitute(sql, params):
    def value(m):
        n = int(m.group(1))
        assert n in params, f"parameter ${n} not logged: {sql[:200]}"
        return params[n]
    return re.sub(r"\$(\d+)(?!\d)", value, sql)
for kind, transaction in zip(kinds, found):
    probe_claims = open(f"{work}/claims-{users[kind][0]}.json").read()
    statements, claims_slots = [], 0
    for sql, params in transaction:
        # The claims parameter (the token's payload as the server passed it) becomes each user's own.
        marked = {n: ("\x00CLAIMS\x00" if v == quote(probe_claims) else v) for n, v in params.items()}
        claims_slots += sum(v == "\x00CLAIMS\x00" for v in marked.values())
        statements.append(substitute(sql, marked))
    assert claims_slots == 1, f"{kind}: the probe user's claims were passed {claims_slots} times, not once"
    assert re.match(r"(?i)begin\b", statements[0]) and re.match(r"(?i)commit\b", statements[-1])
    assert "\x00" not in "".join(statements).replace("\x00CLAIMS\x00", "")
    with open(f"{work}/logged-{kind}.txt", "w") as f:
        f.write("\n".join(statements).replace("\x00CLAIMS\x00", "'<claims>'") + "\n")
    for i in users[kind]:
        claims = open(f"{work}/claims-{i}.json").read()
        body = [s.replace("\x00CLAIMS\x00", quote(claims)) for s in statements]
        script = (";\n" if split else "\\;\n").join(body) + ";\n"
        # pgbench substitutes :name with its own variables (client_id, scale, random_seed, default_seed).
        for v in ("client_id", "scale", "random_seed", "default_seed"):
            assert not re.search(":" + v + r"\b", script), f"{kind}: :{v} in the script"
        with open(f"{work}/{kind}-{i}.sql", "w") as f:
            f.write(script)
PY
for kind in "${KINDS[@]}"; do
  gp_log "SQL ($kind), as the server ran it (claims elided):"
  sed 's/^/    /' "$WORK/logged-$kind.txt" | cut -c1-400 >&2
done

# The measured server: a fresh one (the first one's connections may log their next statement before the reload).
alive() { ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; } # a zombie has exited
kill -TERM "$SERVER_PID"
for _ in $(seq 1 100); do alive "$SERVER_PID" || break; sleep 0.1; done
if alive "$SERVER_PID"; then gp_die "the first server did not stop"; fi
wait "$SERVER_PID" 2>/dev/null || true
[ "$(psql_q "$SUPER_URL" -Atc 'show log_statement')" = none ] || gp_die "statement logging is still on"
# shellcheck disable=SC2119
bench_start_server

rows() { psql_q "$SUPER_URL" -Atc "select count(*) from public.readings"; }
# Each script once by hand (as the login role, one transaction): it must commit before anything is measured.
for kind in "${KINDS[@]}"; do
  first="$(head -n 1 "$WORK/users-$kind.txt")"
  R0="$(rows)"
  timeout -k 5 60 pgbench -n -h 127.0.0.1 -p "$PGPORT_BENCH" -U "$LOGIN_ROLE" -c 1 -t 1 -f "$WORK/$kind-$first.sql" "$DB" \
    >"$WORK/probe-sql-$kind.out" 2>&1 || { cat "$WORK/probe-sql-$kind.out" >&2; gp_die "the SQL of $kind failed"; }
  grep -q '^number of transactions actually processed: 1/1' "$WORK/probe-sql-$kind.out" ||
    { cat "$WORK/probe-sql-$kind.out" >&2; gp_die "the SQL of $kind did not commit"; }
  if [ "$kind" = insert ] && [ "$(rows)" -le "$R0" ]; then gp_die "the SQL of the insert inserted nothing"; fi
done
BIG_BODY_BYTES="$(stat -c %s "$WORK/probe-big.body")"

bench_cpu_init
LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- The measurement: for each kind, ROUNDS rounds of HTTP (wrk) then SQL (pgbench), ROUND_SECONDS each, so both see
# the same machine; totals are summed over the rounds, the latency percentiles are the worst round's.
TIMEFORMAT='%3U+%3S' # `time`: user + system CPU seconds, summed by python below
declare -A H_WRK_MS H_REQ H_US H_BAD H_UNEXPECTED H_BYTES H_SRV H_PG H_ROWS P50 P90 P99 PMAX S_TX S_SECONDS S_PG S_FAILED S_ROWS
seconds_plus() { python3 -c "import sys; print(float(sys.argv[1]) + int(sys.argv[2]) / float(sys.argv[3]))" "$1" "$2" "$3"; }
wrk_args() { # wrk_args KIND → the arguments after `--` for bench/tables.lua
  WRK_ARGS=("$PUBLISHABLE_KEY" "$WORK/tokens-$1.lua" "${METHOD[$1]}" "${REQ_PATH[$1]}" "${EXPECT[$1]}")
  if [ "${METHOD[$1]}" = POST ]; then WRK_ARGS+=("$INSERT_BODY"); fi
}
WRK=(wrk -t "$THREADS" -c "$CONNECTIONS" --timeout 10s -s "$ROOT/bench/tables.lua")
for kind in "${KINDS[@]}"; do
  H_WRK_MS[$kind]=0 H_REQ[$kind]=0 H_US[$kind]=0 H_BAD[$kind]=0 H_UNEXPECTED[$kind]=0 H_BYTES[$kind]=0 H_SRV[$kind]=0 H_PG[$kind]=0
  H_ROWS[$kind]=0 P50[$kind]=0 P90[$kind]=0 P99[$kind]=0 PMAX[$kind]=0
  S_TX[$kind]=0 S_SECONDS[$kind]=0 S_PG[$kind]=0 S_FAILED[$kind]=0 S_ROWS[$kind]=0
  PGB_SCRIPTS=()
  while read -r i; do PGB_SCRIPTS+=(-f "$WORK/$kind-$i.sql@1"); done <"$WORK/users-$kind.txt"
  wrk_args "$kind"
  if [ "$WARMUP" -gt 0 ]; then
    gp_log "HTTP warm-up ($kind): ${WARMUP}s"
    timeout -k 5 $((WARMUP + 30)) "${WRK[@]}" -d "${WARMUP}s" "$URL" -- "${WRK_ARGS[@]}" >"$WORK/warmup-$kind.out"
    sleep 0.5
  fi
  if [ "$kind" = big ]; then bench_profile_start "$SERVER_PID"; fi
  for round in $(seq 1 "$ROUNDS"); do
    gp_log "round $round of $ROUNDS ($kind): wrk -t$THREADS -c$CONNECTIONS -d${ROUND_SECONDS}s ${WHAT[$kind]}, then pgbench"
    R0="$(rows)"
    SRV0="$(proc_ticks "$SERVER_PID")"
    PG0="$(pg_ticks)"
    # bash's `time` counts wrk's CPU too (through timeout, which waits for it): the client's share of the 2 cores
    { time timeout -k 5 $((ROUND_SECONDS + 60)) "${WRK[@]}" -d "${ROUND_SECONDS}s" --latency "$URL" -- "${WRK_ARGS[@]}" \
      >"$WORK/wrk-$kind-$round.out"; } 2>"$WORK/wrk-$kind-$round.time"
    H_SRV[$kind]=$((H_SRV[$kind] + $(proc_ticks "$SERVER_PID") - SRV0))
    H_PG[$kind]=$((H_PG[$kind] + $(pg_ticks) - PG0))
    bench_wrk_result "$WORK/wrk-$kind-$round.out"
    H_WRK_MS[$kind]="$(python3 -c "import sys; print(float(sys.argv[1]) + 1000 * sum(map(float, sys.argv[2].split('+'))))" "${H_WRK_MS[$kind]}" \
      "$(tail -n 1 "$WORK/wrk-$kind-$round.time")")"
    gp_log "HTTP ($kind-$round): $((HTTP_REQUESTS * 1000000 / HTTP_US)) req/s, p50 $((P50_US / 1000)) ms, p99 $((P99_US / 1000)) ms"
    STATUS_LINE="$(grep '^WRK_STATUS ' "$WORK/wrk-$kind-$round.out")" || gp_die "wrk printed no status count"
    H_UNEXPECTED[$kind]=$((H_UNEXPECTED[$kind] + $(sed -n 's/.* unexpected=\([0-9]*\).*/\1/p' <<<"$STATUS_LINE")))
    H_BYTES[$kind]=$((H_BYTES[$kind] + $(sed -n 's/.* bytes=\([0-9]*\).*/\1/p' <<<"$STATUS_LINE")))
    H_REQ[$kind]=$((H_REQ[$kind] + HTTP_REQUESTS)) H_US[$kind]=$((H_US[$kind] + HTTP_US)) H_BAD[$kind]=$((H_BAD[$kind] + HTTP_BAD))
    [ "$P50_US" -gt "${P50[$kind]}" ] && P50[$kind]="$P50_US"
    [ "$P90_US" -gt "${P90[$kind]}" ] && P90[$kind]="$P90_US"
    [ "$P99_US" -gt "${P99[$kind]}" ] && P99[$kind]="$P99_US"
    [ "$MAX_US" -gt "${PMAX[$kind]}" ] && PMAX[$kind]="$MAX_US"
    sleep 0.5 # requests wrk left in flight at its stop still finish in the server
    R1="$(rows)"
    H_ROWS[$kind]=$((H_ROWS[$kind] + R1 - R0))

    DURATION="$ROUND_SECONDS" bench_pgbench "$kind-$round" "${PGB_SCRIPTS[@]}"
    S_TX[$kind]=$((S_TX[$kind] + PG_TX)) S_PG[$kind]=$((S_PG[$kind] + PG_CPU_TICKS))
    S_FAILED[$kind]=$((S_FAILED[$kind] + ${PG_FAILED:-0}))
    S_SECONDS[$kind]="$(seconds_plus "${S_SECONDS[$kind]}" "$PG_TX" "$PG_TPS")"
    S_ROWS[$kind]=$((S_ROWS[$kind] + $(rows) - R1))
  done
  if [ "$kind" = big ]; then bench_profile_stop; fi
done

# ---- summary
LOAD1="$(cut -d' ' -f1-3 /proc/loadavg)"
SUMMARY_ARGS=()
for kind in "${KINDS[@]}"; do
  SUMMARY_ARGS+=("$kind" "${WHAT[$kind]}" "${EXPECT[$kind]}" "${H_REQ[$kind]}" "${H_US[$kind]}" "${H_BAD[$kind]}"
    "${H_UNEXPECTED[$kind]}" "${H_BYTES[$kind]}" "${H_SRV[$kind]}" "${H_PG[$kind]}" "${H_ROWS[$kind]}" "${P50[$kind]}"
    "${P90[$kind]}" "${P99[$kind]}" "${PMAX[$kind]}" "${S_TX[$kind]}" "${S_SECONDS[$kind]}" "${S_PG[$kind]}"
    "${S_FAILED[$kind]}" "${S_ROWS[$kind]}" "${H_WRK_MS[$kind]}")
done
python3 - "$TARGET" "$CONNECTIONS" "$THREADS" "$DURATION" "$ROUNDS" "$(nproc)" "$USERS" "$TICKS" "$BIG_BODY_BYTES" \
  "$SQL_SPLIT" "$LOAD0" "$LOAD1" "${SUMMARY_ARGS[@]}" <<'PY' >&2
import sys
target, conns, threads, dur, rounds, cpus, users, ticks, big_body, split, load0, load1 = sys.argv[1:13]
rest = sys.argv[13:]
tick_ms = 1000 / int(ticks)
frame = "one statement per round trip" if split == "1" else "one round trip each (compound query)"
ms = lambda v: f"{int(v) / 1000:.2f} ms"
per = lambda t, n: f"{int(t) * tick_ms / max(1, int(n)):.3f} ms"
print(f"""
==== GuestPass table API benchmark (release build, {cpus} CPUs, loopback, one database)
  concurrency        {conns} connections ({threads} wrk threads / pgbench jobs), {dur} s per kind and side in {rounds} rounds, server pool {conns}
  users              {users} reading, {users} inserting, 1 reading 1000 rows; SQL: the server's logged transactions, {frame}
  load average       {load0} before the measurement, {load1} after (the machine may be shared)""")
labels = {"read": "(a) read 10", "insert": "(b) insert", "big": "(c) read 1000"}
for k in range(0, len(rest), 21):
    (kind, what, expect, req, us, bad, unexpected, nbytes, h_srv, h_pg, h_rows, p50, p90, p99, pmax,
     s_tx, s_seconds, s_pg, s_failed, s_rows, wrk_ms) = rest[k:k + 21]
    http_rate = int(req) / (int(us) / 1e6)
    sql_rate = int(s_tx) / float(s_seconds) if float(s_seconds) > 0 else 0.0
    ratio = http_rate / sql_rate if sql_rate else 0.0
    verdict = ""
    if kind in ("read", "insert"):
        verdict = f"target >= {target}: " + ("meets the target" if ratio >= float(target) else "BELOW the target")
    print(f"""  {labels[kind]}
    HTTP             {http_rate:10.1f} req/s   {what}, {req} requests, {bad} errors/4xx-5xx, {unexpected} not {expect}
      latency        p50 {ms(p50)}  p90 {ms(p90)}  p99 {ms(p99)}  max {ms(pmax)} (the worst round's)
      CPU/request    server {per(h_srv, req)}, postgres {per(h_pg, req)}, wrk {float(wrk_ms) / max(1, int(req)):.3f} ms""")
    if kind == "big":
        seconds = int(us) / 1e6
        print(f"      throughput     {int(req) * int(big_body) / seconds / 1e6:.1f} MB/s of response body ({int(big_body)} bytes each), "
              f"{int(nbytes) / seconds / 1e6:.1f} MB/s read by wrk with headers")
    if kind == "insert":
        print(f"      database       {h_rows} rows inserted during the HTTP runs")
    print(f"""    SQL pgbench      {sql_rate:10.1f} tx/s    the same transactions, {s_tx} tx, {s_failed} failed
      CPU/tx         postgres {per(s_pg, s_tx)}""")
    if kind == "insert":
        print(f"      database       {s_rows} rows inserted during pgbench")
    print(f"    ratio HTTP/SQL   {ratio:10.2f}         {verdict}")
print("====")
PY

# ---- validity: no errors, only the expected statuses, and every 201 and every insert transaction a row
for kind in "${KINDS[@]}"; do
  [ "${H_BAD[$kind]}" = 0 ] || gp_die "$kind: ${H_BAD[$kind]} HTTP requests failed or were answered 4xx/5xx: not a valid measurement"
  [ "${H_UNEXPECTED[$kind]}" = 0 ] || gp_die "$kind: ${H_UNEXPECTED[$kind]} HTTP answers were not ${EXPECT[$kind]}: not a valid measurement"
  [ "${S_FAILED[$kind]}" = 0 ] || gp_die "$kind: ${S_FAILED[$kind]} pgbench transactions failed"
  if [ "${H_REQ[$kind]}" -eq 0 ] || [ "${S_TX[$kind]}" -eq 0 ]; then gp_die "$kind: nothing was measured"; fi
done
[ "${H_ROWS[insert]}" -ge "${H_REQ[insert]}" ] || gp_die "only ${H_ROWS[insert]} rows inserted for ${H_REQ[insert]} 201 answers"
[ "${S_ROWS[insert]}" -ge "${S_TX[insert]}" ] || gp_die "only ${S_ROWS[insert]} rows inserted for ${S_TX[insert]} insert transactions"
