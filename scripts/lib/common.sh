# shellcheck shell=bash
# Shared helpers for the GuestPass developer scripts. Source it; do not run it.

GP_LOG_PREFIX="${GP_LOG_PREFIX:-guestpass}"

gp_log() { printf '[%s] %s\n' "$GP_LOG_PREFIX" "$*" >&2; }
gp_die() { printf '[%s] error: %s\n' "$GP_LOG_PREFIX" "$*" >&2; exit 1; }

gp_is_root() { [ "$(id -u)" -eq 0 ]; }

# Prefix for commands that need root: empty when root, "sudo" when available.
gp_sudo() {
  if gp_is_root; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    gp_die "need root to run: $* (not root and sudo is not available)"
  fi
}

gp_pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# Install the given Debian packages, but only those missing. apt-get update runs
# only when something must be installed.
gp_ensure_apt() {
  local missing=() p
  for p in "$@"; do
    gp_pkg_installed "$p" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || gp_die "missing packages (${missing[*]}) and no apt-get"
  gp_log "installing: ${missing[*]}"
  gp_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null ||
    gp_die "apt-get update failed"
  gp_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null || gp_die "apt-get install ${missing[*]} failed"
}

# Packages every script needs to build and run guestpass against a local cluster.
# shellcheck disable=SC2034
GP_BASE_PACKAGES=(postgresql-15 postgresql-client-15 libpq-dev libssl-dev libcurl4-openssl-dev)
# Extra packages for the SQL policy suite, the end-to-end suite (which runs through PgBouncer) and its browser tests
# of the operator console (Debian's chromium and its driver).
# shellcheck disable=SC2034
GP_TEST_PACKAGES=(postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl pgbouncer chromium chromium-driver)

# guestpass binary path (after swift build).
gp_bin_path() {
  local dir
  dir="$(swift build --show-bin-path "$@")" || return 1
  printf '%s/guestpass\n' "$dir"
}

# gp_json_field FILE KEY [KEY...]: one value of a JSON file (list indices as numbers), e.g. the
# description `guestpass dev up --json` writes: gp_json_field stack.json apps 0 publishable_key.
gp_json_field() {
  python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]: v = v[int(k)] if isinstance(v, list) else v[k]
print(v)' "$@"
}

# gp_pick_port HOST PORT: PORT when HOST:PORT can be bound now (as guestpass binds it: SO_REUSEADDR), else a port the
# system finds free on HOST; PORT 0 asks for the latter. A check, not a reservation: another process can take the port
# before the server binds it (the server then stops, naming the listener and its variable). Without python3 it prints
# PORT (the server's own bind error then says it).
gp_pick_port() {
  command -v python3 >/dev/null 2>&1 || { printf '%s\n' "$2"; return 0; }
  python3 - "$1" "$2" <<'PY'
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
def bind(port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return s.getsockname()[1]
try:
    print(bind(port))
except OSError:
    print(bind(0))
PY
}

# gp_port_free HOST PORT: whether HOST:PORT can be bound now (see gp_pick_port); port 0 always can.
gp_port_free() { [ "$2" = 0 ] || [ "$(gp_pick_port "$1" "$2")" = "$2" ]; }
