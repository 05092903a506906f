"""End-to-end fixtures: a fresh database on the test cluster and `guestpass serve` subprocesses.

Environment (exported by scripts/test):
  GUESTPASS_TEST_DATABASE_URL  superuser URL of the throwaway cluster (db postgres)
  GUESTPASS_TEST_CLUSTER_DIR   that cluster's directory (scripts/pg-cluster)
  GUESTPASS_PG_CLUSTER         scripts/pg-cluster
  GUESTPASS_BIN                the built guestpass binary
  GUESTPASS_E2E_DATABASE       `pgbouncer` (default): every server reaches PostgreSQL through PgBouncer in transaction
                               pooling mode (GUESTPASS_DB_POOL_MODE=transaction), as in production; `direct`: straight
                               to PostgreSQL, with prepared statements
Every server listens on 127.0.0.1 only and is killed at teardown (and with this process,
through PR_SET_PDEATHSIG, should pytest itself be killed).
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

READY_TIMEOUT = 30.0  # seconds a server gets to answer /health/ready
HTTP_TIMEOUT = 15.0  # seconds per HTTP request of the tests
COMMAND_TIMEOUT = 120  # seconds per guestpass / psql command


def pytest_configure(config: pytest.Config) -> None:
    # A SIGTERM (e.g. from `timeout`) runs the fixture teardowns like Ctrl-C does.
    def on_term(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_term)


# ---------------------------------------------------------------- helpers


def _require_env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.exit(
            f"{name} is not set: run the suite through ./scripts/test, or export GUESTPASS_TEST_DATABASE_URL "
            "(a superuser URL of a scripts/pg-cluster cluster) and GUESTPASS_BIN (the guestpass binary)",
            returncode=4,
        )
    return value


def run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        cmd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=COMMAND_TIMEOUT
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} {' '.join(cmd[1:3])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def psql(url: str, sql: str) -> str:
    return run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql]).strip()


def pg_cluster(*args: str) -> str:
    """Runs scripts/pg-cluster with `args`; its stdout, stripped."""
    return run([_require_env("GUESTPASS_PG_CLUSTER"), *args]).strip()


def with_port(url: str, port: int) -> str:
    """`url` (a postgresql:// URL on 127.0.0.1) pointed at `port` instead."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=(credentials + "@" if credentials else "") + f"127.0.0.1:{port}"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def stop_process(proc: subprocess.Popen) -> None:
    """Terminates `proc` (then kills it after 10 s) and reaps it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def start_on_free_port(argv, log_path, answers, attempts: int = 3, timeout: float = 20.0):
    """Starts `argv(port)` on a free loopback port (output appended to `log_path`) and returns `(url, proc)` once
    `answers(url)` is true; a picked port can be taken in between, so it retries with another, `attempts` times."""
    for _attempt in range(attempts):
        port = free_port()
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                argv(port), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if answers(url):
                return url, proc
            time.sleep(0.1)
        stop_process(proc)
    raise RuntimeError(f"{argv(0)[1]} did not start:\n{log_path.read_text(errors='replace')[-3000:]}")


class StandIn:
    """A running stand-in of an Apple service (`guestpass apple-standin`, `guestpass devicecheck-standin`), signing with
    a .p8 key of its own, on a free loopback port. A subclass names its control endpoint that answers once it serves
    (`PROBE`) and adds the calls its tests make."""

    PROBE = ""

    def __init__(self, url: str, proc: subprocess.Popen | None, key_file: Path, log_path: Path):
        self.url = url
        self.proc = proc
        self.key_file = key_file
        self.log_path = log_path

    @classmethod
    def start(cls, database, command: str, key_name: str, *options: str):
        """`guestpass <command> --key-file <workdir>/<key_name>.p8 <options>`, its key generated unless another module's
        stand-in made it already; its output goes to `<workdir>/<command>.log`."""
        key_file = database.workdir / f"{key_name}.p8"
        if not key_file.exists():
            run([database.bin, "keys", "generate", "--out", str(key_file)])
        log_path = database.workdir / f"{command}.log"
        url, proc = start_on_free_port(
            lambda port: [database.bin, command, "--host", "127.0.0.1", "--port", str(port), "--key-file", str(key_file),
                          *options],
            log_path, lambda url: cls(url, None, key_file, log_path).answers(),
        )
        return cls(url, proc, key_file, log_path)

    def answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}{self.PROBE}", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        stop_process(self.proc)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""


DEVICE_SECRETS: set[str] = set()
# Secrets of the email tests (passwords, mailed link tokens, the SMTP password), and the one-time codes mailed: the log
# audit looks for each (codes only as a whole number, not inside a timestamp or an id).
USED_SECRETS: set[str] = set()
MAILED_CODES: set[str] = set()


def remember_secret(value: str) -> str:
    """`value` (a password, link token, SMTP password: 8 characters or more) must never reach a log."""
    if len(value) >= 8:
        USED_SECRETS.add(value)
    return value


def remember_code(code: str) -> str:
    """A mailed one-time code must never reach a log."""
    MAILED_CODES.add(code)
    return code


def new_device_secret() -> str:
    """A new device secret (a random v4 UUID), remembered so that the log audit (log_audit.py) can look for it in the logs."""
    secret = str(uuid.uuid4())
    DEVICE_SECRETS.add(secret)
    return secret


# ---------------------------------------------------------------- database


@dataclasses.dataclass
class App:
    app_id: str
    name: str
    publishable_key: str
    secret_key: str


@dataclasses.dataclass
class Database:
    super_url: str
    apps: list[App]
    workdir: Path
    bin: str
    serve_environment: dict[str, str]  # DATABASE_URL and GUESTPASS_JWT_SIGNING_KEY_FILE for `guestpass serve`
    name: str  # the database's name on the test cluster


SESSION_WORKDIRS: list[Path] = []
# Workdirs of a database of their own whose servers see a few hundred requests (the PostgREST spec suite's): audited
# for secrets like every other, but too small for the whole suite's "plentiful logs" check.
AUDIT_VOLUME_EXEMPT: set[Path] = set()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The log audit (log_audit.py) over every server log of the session, after every test, whatever their order."""
    from log_audit import audit

    whole_suite = session.testscollected > 200 and not session.config.option.keyword and not session.config.option.markexpr
    for workdir in SESSION_WORKDIRS:
        problems = audit(
            workdir, DEVICE_SECRETS | USED_SECRETS, whole_suite and workdir not in AUDIT_VOLUME_EXEMPT, codes=MAILED_CODES
        )
        if problems:
            print(f"\nLOG AUDIT FAILED ({workdir}): {problems[:20]}")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def database(tmp_path_factory: pytest.TempPathFactory) -> Database:
    """A database of this session on the test cluster, brought up by `guestpass dev up` (the set-up scripts/serve,
    bench/ and the Swift harness share): migrations with sql/examples, two apps, a signing key. Dropped at the end."""
    admin_url = _require_env("GUESTPASS_TEST_DATABASE_URL")
    binary = _require_env("GUESTPASS_BIN")
    if not os.access(binary, os.X_OK):
        pytest.exit(f"GUESTPASS_BIN={binary} is not an executable", returncode=4)
    dbname = f"guestpass_py_{os.getpid()}_{secrets.token_hex(3)}"
    workdir = tmp_path_factory.mktemp("guestpass")
    SESSION_WORKDIRS.append(workdir)
    examples = Path(__file__).resolve().parent.parent / "sql" / "examples"
    try:
        stack = json.loads(run([
            binary, "dev", "up", "--database-url", admin_url, "--database", dbname, "--dir", str(examples),
            "--app", "pytest-one", "--app", "pytest-two", "--key-file", str(workdir / "jwt-signing-key.pem"), "--json",
        ]))
        yield Database(
            super_url=stack["owner_url"],
            apps=[App(**app) for app in stack["apps"]],
            workdir=workdir,
            bin=binary,
            serve_environment=through_pgbouncer(stack["serve_environment"], _require_env("GUESTPASS_TEST_CLUSTER_DIR")),
            name=dbname,
        )
    finally:
        try:
            run([binary, "dev", "down", "--database-url", admin_url, "--database", dbname])
        except Exception as error:  # noqa: BLE001 - the cluster is throwaway anyway
            print(f"could not drop {dbname}: {error}")


def pgbouncer_environment(url: str) -> dict[str, str]:
    """DATABASE_URL (and GUESTPASS_DB_POOL_MODE) for a `guestpass` command reaching `url`'s database through the test
    cluster's PgBouncer, as the servers do (straight to it with GUESTPASS_E2E_DATABASE=direct)."""
    return through_pgbouncer({"DATABASE_URL": url}, _require_env("GUESTPASS_TEST_CLUSTER_DIR"))


def through_pgbouncer(serve_environment: dict[str, str], cluster_dir: str) -> dict[str, str]:
    """The servers' environment with DATABASE_URL through a PgBouncer (transaction pooling) in front of the cluster
    at `cluster_dir`, unless GUESTPASS_E2E_DATABASE=direct."""
    mode = os.environ.get("GUESTPASS_E2E_DATABASE", "pgbouncer")
    if mode == "direct":
        return serve_environment
    if mode != "pgbouncer":
        pytest.exit(f"GUESTPASS_E2E_DATABASE must be pgbouncer or direct, got {mode}", returncode=4)
    pg_cluster("pgbouncer", cluster_dir)
    bouncer_port = urlsplit(pg_cluster("pgbouncer-url", cluster_dir)).port
    return {
        **serve_environment,
        "DATABASE_URL": with_port(serve_environment["DATABASE_URL"], bouncer_port),
        "GUESTPASS_DB_POOL_MODE": "transaction",
    }


@dataclasses.dataclass
class ReadReplica:
    """A streaming replica of the test cluster (pg_basebackup -R), with the session database on it."""

    super_url: str  # superuser, the session database, straight to the replica
    read_url: str  # for GUESTPASS_DATABASE_READ_URL: the login role, through the replica's own PgBouncer (or direct)

    def caught_up_with(self, primary_super_url: str, timeout: float = 15.0) -> None:
        """Waits until the replica has replayed everything the primary wrote so far. The insert position, not the
        write position: the test cluster commits asynchronously, so a commit record may not be written out yet."""
        target = psql(primary_super_url, "select pg_current_wal_insert_lsn()")
        deadline = time.monotonic() + timeout
        while psql(self.super_url, f"select pg_last_wal_replay_lsn() >= '{target}'::pg_lsn") != "t":
            if time.monotonic() > deadline:
                raise AssertionError(f"the replica did not replay up to {target} within {timeout} s")
            time.sleep(0.05)


@pytest.fixture(scope="session")
def read_replica(database: Database) -> ReadReplica:
    """A read replica of the test cluster on loopback, destroyed at the end of the session."""
    directory = str(database.workdir / "replica")
    pg_cluster("replica", directory, _require_env("GUESTPASS_TEST_CLUSTER_DIR"))
    try:
        login = database.serve_environment["DATABASE_URL"]
        serve = through_pgbouncer({"DATABASE_URL": with_port(login, int(pg_cluster("port", directory)))}, directory)
        yield ReadReplica(super_url=pg_cluster("url", directory, "postgres", database.name), read_url=serve["DATABASE_URL"])
    finally:
        pg_cluster("destroy", directory)


# ---------------------------------------------------------------- servers


class Server:
    """One `guestpass serve` subprocess on 127.0.0.1:<free port>."""

    def __init__(self, db: Database, name: str, env: dict[str, str]):
        self.db = db
        self.name = name
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.log_path = db.workdir / f"{name}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Server":
        last_error = ""
        for _attempt in range(3):  # a picked port can be taken in between: retry with another
            self.port = free_port()
            env = {
                **os.environ,
                **self.db.serve_environment,
                "GUESTPASS_HOST": "127.0.0.1",
                "GUESTPASS_PORT": str(self.port),
                # JSON lines at debug level: the log audit reads every line of every server for secrets.
                "LOG_FORMAT": "json",
                "LOG_LEVEL": "debug",
                "GUESTPASS_METRICS_ADDRESS": "127.0.0.1:0",  # a free port each: servers run side by side
                "GUESTPASS_CONSOLE_ADDRESS": "off",  # the console's tests give theirs a port of its own
                **self.env,
            }
            log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
            try:
                self.proc = subprocess.Popen(
                    [self.db.bin, "serve"], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    preexec_fn=_die_with_parent,
                )
            finally:
                log.close()
            if self._wait_ready():
                return self
            last_error = self.log_tail()
            self.stop()
        raise RuntimeError(f"guestpass serve ({self.name}) did not become ready:\n{last_error}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                if httpx.get(f"{self.url}/health/ready", timeout=2).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


@pytest.fixture(scope="session")
def start_server(database: Database):
    """Factory: start_server(name, **env) → a ready Server; all are stopped at session end."""
    servers: list[Server] = []

    def start(name: str, **env: str) -> Server:
        server = Server(database, name, env)
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="session")
def server(start_server) -> Server:
    """The main server: a generous per-IP sign-up limit (every test request comes from 127.0.0.1),
    a custom issuer, and a 3 s refresh-token reuse window."""
    return start_server(
        "main",
        GUESTPASS_SIGNUP_BURST="1000",
        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
        GUESTPASS_JWT_ISSUER="guestpass-pytest",
        GUESTPASS_REFRESH_REUSE_WINDOW="3",
    )


@pytest.fixture(scope="session")
def app(database: Database) -> App:
    return database.apps[0]


@pytest.fixture(scope="session")
def other_app(database: Database) -> App:
    return database.apps[1]


@pytest.fixture()
def http() -> httpx.Client:
    with httpx.Client(timeout=HTTP_TIMEOUT) as client:
        yield client


def api_headers(app: App, **extra: str) -> dict[str, str]:
    return {"apikey": app.publishable_key, "Authorization": f"Bearer {app.publishable_key}", **extra}


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        # Attach the server logs of the failed test.
        for name in ("server", "rate_limited_servers"):
            value = item.funcargs.get(name)
            for srv in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(srv, Server):
                    report.sections.append((f"guestpass serve {srv.name} log (tail)", srv.log_tail()))
