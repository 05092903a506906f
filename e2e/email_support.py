"""What the email e2e files (test_email_*.py) share: a database of their own, its server, a mail catcher speaking
STARTTLS + AUTH with a throwaway certificate, apps configured to use it, the official client in either flow, and the
helpers that read mail, age rows instead of sleeping, and look for secrets in the server's log.

Each test_email_*.py file names this module in `pytest_plugins`, so its session fixtures exist once per session
whichever files run (a session fixture imported into several modules would be made once per module).

Why a database of its own: every `guestpass serve` on a database runs a mail sender that leases any due mail of any
app. The other e2e files leave servers running until the session ends, some with another refresh-token key (the key the
mail payloads are sealed with: such a server gives a mail up as "does not open"); and the delivery tests must know
which server holds a mail's lease. On a database of their own only the servers these files start send mail. Their
logs go to the session's workdir, so the session's log audit (log_audit.py) reads them with the rest.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx
import jwt
import pytest
from supabase import ClientOptions, create_client

from conftest import (
    App,
    Database,
    Server,
    _die_with_parent,
    _require_env,
    api_headers,
    new_device_secret,
    psql,
    remember_code,
    remember_secret,
    run,
    stop_process,
    through_pgbouncer,
)
from mailbox import Mailbox
from support import VERSION, create_app

REPO = Path(__file__).resolve().parent.parent
MAIL_CATCHER = REPO / "scripts" / "mail-catcher"
SMTP_USER = "guestpass-mailer"
SMTP_PASSWORD = remember_secret("smtp-" + secrets.token_urlsafe(18))
SENDER = "noreply@example.com"
SENDER_NAME = "GuestPass Tests"
SITE_URL = "http://localhost:3000"
REDIRECT_URLS = "http://localhost:3000/*,myapp://callback"
MAIL_TIMEOUT = 15.0  # seconds a mail may take from the request to the catcher

# Every test request comes from 127.0.0.1: the per-client-address email buckets must not be what a test meets.
EMAIL_SERVER_ENV = {
    "GUESTPASS_SIGNUP_BURST": "1000",
    "GUESTPASS_SIGNUP_RATE_PER_HOUR": "100000",
    "GUESTPASS_EMAIL_SENDS_PER_IP": "100000",
    "GUESTPASS_EMAIL_VERIFIES_PER_IP": "100000",
    "GUESTPASS_PASSWORD_SIGNINS_PER_IP": "100000",
    "GUESTPASS_SHUTDOWN_DRAIN_MS": "0",  # servers come and go in the delivery tests: no readiness drain
}


# ---------------------------------------------------------------- databases and servers


def new_database(base: Database, label: str) -> Database:
    """A new database on the test cluster brought up like the session's (`guestpass dev up`, sql/examples, one app),
    its server logs in `base.workdir` (so the session's log audit reads them). Drop it with `drop_database`."""
    admin_url = _require_env("GUESTPASS_TEST_DATABASE_URL")
    name = f"guestpass_{label}_{os.getpid()}_{secrets.token_hex(3)}"
    stack = json.loads(run([
        base.bin, "dev", "up", "--database-url", admin_url, "--database", name, "--dir", str(REPO / "sql" / "examples"),
        "--app", f"{label}-pytest", "--key-file", str(base.workdir / f"{label}-jwt-signing-key.pem"), "--json",
    ]))
    return Database(
        super_url=stack["owner_url"],
        apps=[App(**app) for app in stack["apps"]],
        workdir=base.workdir,
        bin=base.bin,
        serve_environment=through_pgbouncer(stack["serve_environment"], _require_env("GUESTPASS_TEST_CLUSTER_DIR")),
        name=name,
    )


def drop_database(db: Database) -> None:
    try:
        run([db.bin, "dev", "down", "--database-url", _require_env("GUESTPASS_TEST_DATABASE_URL"), "--database", db.name])
    except Exception as error:  # noqa: BLE001 - the cluster is throwaway anyway
        print(f"could not drop {db.name}: {error}")


class ServerSet:
    """Servers on one database, stopped together (`stop_all`); each can be killed or restarted on its own."""

    def __init__(self, db: Database):
        self.db = db
        self.servers: list[Server] = []

    def start(self, name: str, **env: str) -> Server:
        server = Server(self.db, name, {**EMAIL_SERVER_ENV, **env})
        self.servers.append(server)
        return server.start()

    def stop_all(self) -> None:
        for server in self.servers:
            server.stop()


def kill_server(server: Server) -> None:
    """kill -9: no shutdown of any kind (no lease is given back, nothing is recorded)."""
    proc, server.proc = server.proc, None
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def email_database(database) -> Database:
    db = new_database(database, "email")
    try:
        yield db
    finally:
        drop_database(db)


@pytest.fixture(scope="session")
def email_servers(email_database) -> ServerSet:
    servers = ServerSet(email_database)
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture(scope="session")
def email_server(email_servers) -> Server:
    """The email files' main server (generous per-address limits; links point at it)."""
    return email_servers.start("email-main")


# ---------------------------------------------------------------- the mail catcher


@pytest.fixture(scope="session")
def smtp_certificate(database) -> tuple[Path, Path]:
    """A throwaway self-signed certificate (P-256) for localhost and 127.0.0.1: (cert, key)."""
    directory = database.workdir / "smtp-tls"
    directory.mkdir(exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    run([
        "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout", str(key), "-out", str(cert),
    ])
    return cert, key


class MailCatcher:
    """A running `scripts/mail-catcher` (STARTTLS required, AUTH required) storing into its directory; it can be
    stopped and started again on the same port (the relay going down and coming back)."""

    def __init__(self, directory: Path, log_path: Path, cert: Path, key: Path):
        self.directory = directory
        self.log_path = log_path
        self.cert = cert
        self.key = key
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.mailbox = Mailbox(directory)

    def start(self, port: int | None = None, fail_next: int = 0) -> "MailCatcher":
        port = self.port if port is None else port
        ready = self.directory / ".ready"
        ready.unlink(missing_ok=True)
        argv = [
            sys.executable, str(MAIL_CATCHER), "--host", "127.0.0.1", "--port", str(port), "--dir", str(self.directory),
            "--tls-cert", str(self.cert), "--tls-key", str(self.key), "--require-tls", "--auth", f"{SMTP_USER}:{SMTP_PASSWORD}",
            "--ready-file", str(ready), "--fail-next", str(fail_next),
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 15
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mail-catcher did not start:\n{self.log_tail()}")
            time.sleep(0.05)
        self.port = int(ready.read_text().strip())
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_process(proc)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    # -- reading

    def wait_for(self, to: str, after_seq: int = 0, timeout: float = MAIL_TIMEOUT):
        return self.mailbox.wait_for(to=to, timeout=timeout, after_seq=after_seq)

    def last_seq(self) -> int:
        return self.mailbox.last_seq()

    def messages_to(self, address: str) -> list:
        wanted = address.lower()
        return [m for m in self.mailbox.messages() if wanted in (a.lower() for a in m.rcpt_tos)]

    def count_to(self, address: str) -> int:
        wanted = address.lower()
        return sum(1 for e in self.mailbox.entries() if wanted in (a.lower() for a in e["rcpt_tos"]))


def start_catcher(database: Database, certificate: tuple[Path, Path], name: str, port: int = 0,
                  fail_next: int = 0) -> MailCatcher:
    """A new catcher in `<workdir>/<name>/` (its log `<workdir>/<name>.log`, named mail-catcher-…: the log audit skips
    it, since the mailbox is where codes are meant to be)."""
    assert "mail-catcher" in name
    directory = database.workdir / name
    directory.mkdir(exist_ok=True)
    return MailCatcher(directory, database.workdir / f"{name}.log", *certificate).start(port=port, fail_next=fail_next)


@pytest.fixture(scope="session")
def mail_catcher(database, smtp_certificate) -> MailCatcher:
    catcher = start_catcher(database, smtp_certificate, "mail-catcher-email")
    try:
        yield catcher
    finally:
        catcher.stop()


# ---------------------------------------------------------------- apps


def configure_app(database: Database, app: App, **options) -> None:
    """`guestpass apps configure --app <app> --<option> <value>` for each option (snake_case → --kebab-case; booleans as
    true/false), as the operator: the database owner's URL, and the server's key environment (the SMTP password is
    sealed with a key derived from it)."""
    argv = [database.bin, "apps", "configure", "--app", app.app_id]
    for name, value in options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        argv += ["--" + name.replace("_", "-"), str(value)]
    keys = {k: v for k, v in database.serve_environment.items() if k.startswith(("GUESTPASS_JWT_", "GUESTPASS_REFRESH_"))}
    run(argv, env={**keys, "DATABASE_URL": database.super_url})


def smtp_options(port: int, ca_file: Path) -> dict:
    """The options of an app mailing through a catcher on `port` (STARTTLS, trusting `ca_file`, AUTH)."""
    return dict(
        smtp_host="127.0.0.1", smtp_port=port, smtp_user=SMTP_USER, smtp_password=SMTP_PASSWORD,
        smtp_security="starttls", smtp_sender=SENDER, smtp_sender_name=SENDER_NAME, smtp_ca_file=str(ca_file),
        site_url=SITE_URL, redirect_urls=REDIRECT_URLS,
    )


def new_email_app(database: Database, catcher: MailCatcher, name: str, **options) -> App:
    """A new app of `database` that mails through `catcher`, with `options` on top (configure_app's)."""
    app = create_app(database, name)
    configure_app(database, app, **{**smtp_options(catcher.port, catcher.cert), **options})
    return app


@pytest.fixture(scope="module")
def email_app(request, email_database, mail_catcher) -> App:
    """A fresh app per test module (settings never leak between modules), mailing through the session's catcher."""
    return new_email_app(email_database, mail_catcher, f"email-{request.module.__name__}")


@pytest.fixture(scope="module")
def other_email_app(request, email_database, mail_catcher) -> App:
    return new_email_app(email_database, mail_catcher, f"email-other-{request.module.__name__}")


# ---------------------------------------------------------------- clients and requests


def new_address(tag: str) -> str:
    """A new address: `tag` and 12 random letters. No digits after the tag: the mailbox finds the code as the digits
    after the word "code", and the mail's text holds the address."""
    assert "code" not in tag
    return f"{tag}-{''.join(secrets.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(12))}@example.com"


def new_password() -> str:
    """A password meeting any rule these tests configure (lower case, upper case, digits), remembered for the audit."""
    return remember_secret(f"Pw{secrets.token_hex(8)}x9")


def email_client(server: Server, app: App, flow: str = "pkce"):
    """The official client as an app makes it (`create_client`), in `flow` (supabase-py's default is pkce); no auto
    refresh (its timer thread would outlive the test)."""
    options = ClientOptions(auto_refresh_token=False, persist_session=False, flow_type=flow)
    return create_client(server.url, app.publishable_key, options)


def guest_client(server: Server, app: App, flow: str = "pkce"):
    """A client signed in as a new guest (anonymous sign-in with a fresh device secret): (client, auth response)."""
    client = email_client(server, app, flow)
    response = client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
    assert response.session is not None and response.user.is_anonymous is True
    return client, response


def claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def auth_headers(app: App, token: str | None = None, version: bool = True) -> dict:
    headers = api_headers(app) if token is None else {"apikey": app.publishable_key, "Authorization": f"Bearer {token}"}
    if version:
        headers["X-Supabase-Api-Version"] = VERSION
    return headers


def auth_call(http, server: Server, app: App, method: str, path: str, body=None, token: str | None = None,
              version: bool = True, query: dict | None = None, content: bytes | None = None):
    """A raw request to /auth/v1/<path> as the SDKs send it (apikey, the version header unless `version` is false)."""
    headers = auth_headers(app, token, version)
    if content is not None:
        headers["Content-Type"] = "application/json"
        return http.request(method, f"{server.url}/auth/v1/{path}", headers=headers, params=query, content=content)
    return http.request(method, f"{server.url}/auth/v1/{path}", headers=headers, params=query, json=body)


def assert_gotrue_error(response, status: int | tuple, code: str | None = None, echoed: bool = True) -> dict:
    """`response` is GoTrue's error envelope: `status` (one or any of several), a JSON object with a string `code`
    (equal to `code` when given) and a non-empty `message`, and the version header echoed when the request sent it."""
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, f"expected {statuses}, got {response.status_code}: {response.text[:500]}"
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON: {response.status_code} {response.text[:300]!r}") from None
    assert isinstance(body, dict) and isinstance(body.get("code"), str) and body["code"], body
    assert isinstance(body.get("message"), str) and body["message"], body
    if code is not None:
        assert body["code"] == code, f"expected {code}, got {body}"
    if echoed:
        assert response.headers.get("x-supabase-api-version") == VERSION, dict(response.headers)
    return body


def api_error(call) -> Exception:
    """The exception `call()` raises (an AssertionError when it returns)."""
    try:
        result = call()
    except Exception as error:  # noqa: BLE001 - returned for the caller to judge
        return error
    user = getattr(result, "user", None)
    raise AssertionError(f"expected an error, got a {type(result).__name__} (user {getattr(user, 'id', None)})")


def assert_api_error(call, status: int, code: str):
    """`call()` raises the SDK's AuthApiError (or a subclass) with `status` and `code`."""
    error = api_error(call)
    assert getattr(error, "code", None) == code and getattr(error, "status", None) == status, (
        f"expected {status} {code}, got {type(error).__name__} {getattr(error, 'status', None)} "
        f"{getattr(error, 'code', None)}: {error}"
    )
    return error


# ---------------------------------------------------------------- mail


def mailed(catcher: MailCatcher, to: str, after_seq: int = 0, timeout: float = MAIL_TIMEOUT):
    """The next mail to `to` after `after_seq`: (message, code, link). The code and the link's token are remembered
    for the log audit."""
    message = catcher.wait_for(to, after_seq=after_seq, timeout=timeout)
    code = Mailbox.code(message)
    link = Mailbox.link(message)
    if code:
        remember_code(code)
    if link:
        token = link_query(link).get("token")
        if token:
            remember_secret(token)
    return message, code, link


def link_query(link: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(link).query, keep_blank_values=True).items()}


def on_server(link: str, server: Server) -> str:
    """The mailed link with its scheme and host those of `server` (the link names whichever server rendered it)."""
    parts = urlsplit(link)
    base = urlsplit(server.url)
    return urlunsplit(parts._replace(scheme=base.scheme, netloc=base.netloc))


def open_link(http, server: Server, link: str, **query_changes: str):
    """GET the mailed link (as a browser opening it: no API key), without following the redirect."""
    url = on_server(link, server)
    if query_changes:
        parts = urlsplit(url)
        query = link_query(url)
        query.update(query_changes)
        url = urlunsplit(parts._replace(query=str(httpx.QueryParams(query))))
    return http.get(url, follow_redirects=False)


def fragment_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).fragment, keep_blank_values=True).items()}


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query, keep_blank_values=True).items()}


# ---------------------------------------------------------------- the database, as the superuser


def sql(database: Database, statement: str) -> str:
    return psql(database.super_url, statement)


def quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def allow_next_mail(database: Database, address: str) -> None:
    """As if the last mail to `address` left an hour ago: the app's one-mail-per-interval rule lets the next one go."""
    sql(database, f"update guestpass.mail_outbox set created_at = created_at - interval '1 hour' "
                  f"where recipient = {quoted(address.lower())}")


def outbox_count(database: Database, address: str) -> int:
    return int(sql(database, f"select count(*) from guestpass.mail_outbox where recipient = {quoted(address.lower())}"))


def outbox_rows(database: Database, address: str) -> list[dict]:
    out = sql(database, "select coalesce(json_agg(row_to_json(o) order by o.id), '[]') from ("
                        "select id, kind, attempts, sent_at, failed_at, last_error, payload is null as erased, "
                        "next_attempt_at > now() as waiting, claimed_until from guestpass.mail_outbox "
                        f"where recipient = {quoted(address.lower())}) as o")
    return json.loads(out)


def wait_until(condition, timeout: float = MAIL_TIMEOUT, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout} s")
        time.sleep(0.05)


def user_count(database: Database, app: App, address: str) -> int:
    return int(sql(database, f"select count(*) from public.users where app_id = '{app.app_id}' "
                             f"and lower(email) = {quoted(address.lower())}"))


# ---------------------------------------------------------------- the server's log


def assert_no_secrets_in_log(server: Server, secrets_: list[str]) -> None:
    """None of `secrets_` (codes, passwords, link tokens, the SMTP password) appears in the server's whole log; a code
    only counts as a whole number (not inside a timestamp or an id)."""
    log = server.log_path.read_text(errors="replace")
    assert log.strip(), "the server logged nothing"
    for secret in secrets_:
        if not secret:
            continue
        if secret.isdigit():
            found = re.search(r"(?<![0-9A-Za-z.:_-])" + secret + r"(?![0-9A-Za-z])", log)
        else:
            found = secret in log
        assert not found, f"a secret ({secret[:2]}…, {len(secret)} characters) is in {server.log_path.name}"


# ---------------------------------------------------------------- a relay that never answers


class SilentRelay:
    """A TCP listener that accepts SMTP connections and never says a word: a send to it hangs (until the client's
    timeout), so a mail can be caught between its lease and its delivery."""

    def __init__(self, port: int = 0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                connection, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.accepted.append(connection)

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=5)
        for connection in self.accepted:
            connection.close()
        self.sock.close()


# ---------------------------------------------------------------- failure reports


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "email_server" in getattr(item, "fixturenames", ()):
        server = item.funcargs.get("email_server")
        # conftest's hook already attaches the log of a fixture named `server`.
        if isinstance(server, Server) and item.funcargs.get("server") is not server:
            report.sections.append((f"guestpass serve {server.name} log (tail)", server.log_tail()))
