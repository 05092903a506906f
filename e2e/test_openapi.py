"""Issue 13: the OpenAPI document (`GET /openapi.json`, kept in Sources/GuestPassApp/HTTP/openapi.json).

The live server's document is a valid OpenAPI 3.1 document (openapi-spec-validator); every route registered in the
Swift sources is documented, every documented path is served (no 404), and the documented RPC functions are the core
`public` functions of sql/schema.sql, all present in the live database. Then schemathesis fuzzes every operation of a
server of its own (bounded examples, a fixed seed, loopback): 0 server errors, 0 responses outside the document
(status, content type, body schema). A guest's bearer token gets the fuzzer past 401. The first run leaves out logout
and account deletion, so the other operations reach their work; a second run, as another guest, fuzzes every
operation with them, so the ones after them meet a token whose session or user is gone.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV31SpecValidator

from conftest import psql
from support import guest_headers, guestpass_version, sign_up_guest
from test_welcome_grant import create_grant_app, standin  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "Sources" / "GuestPassApp" / "HTTP" / "openapi.json"
ROUTE_SOURCES = ROOT / "Sources" / "GuestPassApp"
SCHEMA_SQL = ROOT / "sql" / "schema.sql"
METHODS = ("get", "post", "put", "patch", "delete")
FUZZ_TIMEOUT = 300  # seconds per schemathesis run (it takes about a minute on 2 cores)
MAX_EXAMPLES = 50  # per operation and phase
SEED = 13
CHECKS = "all"  # every check; e2e/schemathesis.toml adjusts a few per operation, each with its reason
CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
CLIENT_ADDRESS = "198.51.100.13"  # the fuzzer's address for the per-client buckets (GUESTPASS_TRUSTED_PROXY_HEADER)
METRICS_SOURCE = "ServiceMetrics.swift"
VERSION_PLACEHOLDER = "GuestPassVersion.number"  # the file's info.version (OpenAPIDocument.versionPlaceholder)
DESTRUCTIVE = ("/auth/v1/logout", "/v1/account/delete")  # end the guest's session: only in the second run


@pytest.fixture(scope="module")
def fuzz_server(start_server, database):
    """A server of its own: the fuzzer's per-client buckets follow X-Forwarded-For, so it drains no bucket of
    127.0.0.1 that another module's tests need; generous sign-up limits (the fuzzer signs up many guests); a storage
    directory, so the storage routes reach their work (without one they answer 503)."""
    storage = database.workdir / "openapi-storage"
    storage.mkdir(parents=True, exist_ok=True)
    return start_server(
        "openapi",
        GUESTPASS_STORAGE_DIR=str(storage),
        GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For",
        GUESTPASS_SIGNUP_BURST="100000",
        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
        GUESTPASS_APP_SIGNUP_BURST="100000",
        GUESTPASS_APP_SIGNUP_RATE_PER_HOUR="100000",
        # The email routes' own limits, so the fuzzer reaches their logic rather than their 429s.
        GUESTPASS_EMAIL_SENDS_PER_IP="100000",
        GUESTPASS_EMAIL_VERIFIES_PER_IP="100000",
        GUESTPASS_PASSWORD_SIGNINS_PER_IP="100000",
    )


@pytest.fixture(scope="module")
def fuzz_app(database, standin):  # noqa: F811
    """An app of its own, its DeviceCheck pointed at the stand-in (so the welcome grant answers as in production)."""
    return create_grant_app(database, standin, "openapi-fuzz")


@pytest.fixture(scope="module")
def served(fuzz_server) -> dict:
    response = httpx.get(fuzz_server.url + "/openapi.json", timeout=10)
    assert response.status_code == 200, response.text[:300]
    assert response.headers["content-type"].split(";")[0] == "application/json"
    return response.json()


def documented_operations(document: dict) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item if method in METHODS}


def source_routes() -> set[tuple[str, str]]:
    """(METHOD, /path) of every route registration in Sources/GuestPassApp, read in order: `router.group("p")` sets
    the prefix of the `.get/.post/…("x")` calls after it; `router.get("x")` stands alone; `:name` is `{name}`."""
    routes = set()
    call = re.compile(r'(router)?(?<![pP]arameters)\.(group|get|post|put|patch|delete)\("([^"]*)"\)')
    for source in sorted(ROUTE_SOURCES.rglob("*.swift")):
        if source.name == METRICS_SOURCE:
            continue  # /metrics is served by the metrics listener (GUESTPASS_METRICS_ADDRESS), not the API port
        if source.parent.name == "Console":
            continue  # the operator console's pages: its own listener (GUESTPASS_CONSOLE_ADDRESS), test_console.py
        prefix = ""
        for match in call.finditer(source.read_text()):
            on_router, verb, path = match.group(1) is not None, match.group(2), match.group(3)
            if verb == "group":
                if on_router:
                    prefix = path.strip("/")
                continue
            full = path.strip("/") if on_router else "/".join(p for p in (prefix, path.strip("/")) if p)
            routes.add((verb.upper(), "/" + re.sub(r":(\w+)", r"{\1}", full)))
    return routes


def test_the_served_document_is_valid_openapi_31_and_the_one_beside_the_code(served, database):
    assert served["openapi"].startswith("3.1")
    validate(served, cls=OpenAPIV31SpecValidator)
    kept = json.loads(DOCUMENT.read_text())
    # info.version has one home, GuestPassVersion.number: the file names it, the server writes the number in.
    assert kept["info"]["version"] == VERSION_PLACEHOLDER
    kept["info"]["version"] = guestpass_version(database.bin)[0]
    assert served == kept, "the server serves the document kept beside the code, with the version `--version` prints"


def test_every_route_in_the_sources_is_documented(served):
    routes = source_routes()
    assert len(routes) >= 15, f"the route scan found too little: {sorted(routes)}"
    assert ("POST", "/rest/v1/rpc/{function}") in routes and ("GET", "/health/ready") in routes
    missing = routes - documented_operations(served)
    assert not missing, f"routes registered in Sources/GuestPassApp but not in openapi.json: {sorted(missing)}"


def test_every_documented_path_is_served(fuzz_server, served, http):
    assert http.get(fuzz_server.url + "/no/such/route").status_code == 404, "the probe tells a missing route"
    for method, path in sorted(documented_operations(served)):
        if "{" in path or path.startswith("/rest/v1/rpc/"):
            continue  # the RPC functions are checked against the database below
        status = http.request(method, fuzz_server.url + path).status_code
        assert status not in (404, 405), f"{method} {path} is documented but the server answers {status}"


def test_documented_functions_are_the_core_public_functions(served, database):
    documented = {path.rsplit("/", 1)[1] for path in served["paths"] if re.fullmatch(r"/rest/v1/rpc/\w+", path)}
    core = set(re.findall(r"^CREATE FUNCTION public\.(\w+)\(", SCHEMA_SQL.read_text(), re.MULTILINE))
    assert documented == core, f"documented {sorted(documented - core)} not core; core {sorted(core - documented)} undocumented"
    live = set(psql(database.super_url, "select proname from pg_proc where pronamespace = 'public'::regnamespace").split())
    assert core <= live, f"missing from the live database: {sorted(core - live)}"


def test_huge_numbers_in_user_data_keep_the_profile_readable(fuzz_server, fuzz_app, http):
    """Found by schemathesis: PostgreSQL's jsonb gives a stored -5.76e231 back as 232 digits, and reading the profile
    refused them: PUT /auth/v1/user, and then every GET of the user, were 500s."""
    guest = sign_up_guest(http, fuzz_server, fuzz_app)
    data = {"big": -5.760016731011541e231, "largest": 1.7976931348623157e308, "tiny": 5e-324}
    updated = http.put(fuzz_server.url + "/auth/v1/user", headers=guest_headers(fuzz_app, guest), json={"data": data})
    assert updated.status_code == 200, updated.text[:300]
    read = http.get(fuzz_server.url + "/auth/v1/user", headers=guest_headers(fuzz_app, guest))
    assert read.status_code == 200, read.text[:300]
    # They come back as PostgreSQL writes them, in full (232 and 309 digits, which Python reads as ints): the values
    # sent, exactly, so each is the float sent.
    assert {key: float(read.json()["user_metadata"][key]) for key in data} == data


def test_a_dead_session_is_a_403_not_a_500(fuzz_server, fuzz_app, standin, http):  # noqa: F811
    """Found by schemathesis: after a logout (or with the account deleted) the access token still verifies until it
    expires, and the account routes' SQL refuses it with 42501, which the GoTrue dialect answered as a 500."""
    guest = sign_up_guest(http, fuzz_server, fuzz_app)
    headers = guest_headers(fuzz_app, guest)
    assert http.post(fuzz_server.url + "/auth/v1/logout", headers=headers).status_code == 204
    for path in ("/v1/devices/transfer-code", "/v1/account/recovery-code"):
        response = http.post(fuzz_server.url + path, headers=headers)
        assert response.status_code == 403, f"{path}: {response.status_code} {response.text[:300]}"
        assert response.json()["code"] == "session_not_found"

    deleted = sign_up_guest(http, fuzz_server, fuzz_app)
    headers = guest_headers(fuzz_app, deleted)
    assert http.post(fuzz_server.url + "/v1/account/delete", headers=headers).status_code == 200
    token = standin.token("openapi-dead-session")
    response = http.post(fuzz_server.url + "/v1/devicecheck/grant", headers=headers, json={"device_token": token})
    assert response.status_code == 403 and response.json()["code"] == "session_not_found", response.text[:300]


def fuzz(server, app, token: str, workdir: Path, name: str, *filters: str) -> subprocess.CompletedProcess:
    """One bounded schemathesis run against `server`, as the guest of `token`; its output is kept in `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(subprocess.sys.executable).with_name("schemathesis")), "--config-file", str(CONFIG), "run",
        server.url + "/openapi.json",
        "--checks", CHECKS, "--phases", "examples,coverage,fuzzing", "--max-examples", str(MAX_EXAMPLES),
        "--seed", str(SEED), "--generation-database", "none", "--workers", "1", "--request-timeout", "20",
        "--no-color", "--suppress-health-check", "all", "--continue-on-failure",
        "-H", f"apikey: {app.publishable_key}", "-H", f"Authorization: Bearer {token}",
        "-H", f"X-Forwarded-For: {CLIENT_ADDRESS}",
        "--report", "junit", "--report-dir", str(workdir / "report"), *filters,
    ]
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=FUZZ_TIMEOUT)
    (workdir / f"{name}.log").write_text(proc.stdout + proc.stderr)
    return proc


def assert_clean(proc: subprocess.CompletedProcess, name: str) -> None:
    summary = proc.stdout[-6000:]
    assert proc.returncode == 0, f"schemathesis ({name}) exited {proc.returncode}:\n{summary}\n{proc.stderr[-2000:]}"
    assert re.search(r"\b\d+ passed\b", summary) or "No issues found" in summary, summary


def test_schemathesis_finds_no_server_error_and_no_schema_violation(fuzz_server, fuzz_app, database, http):
    workdir = database.workdir / "schemathesis"
    guest = sign_up_guest(http, fuzz_server, fuzz_app)
    excluded = [arg for path in DESTRUCTIVE for arg in ("--exclude-path", path)]
    main = fuzz(fuzz_server, fuzz_app, guest.access_token, workdir, "main", *excluded)
    print(main.stdout[-3000:])
    assert_clean(main, "every operation but logout and deletion")
    assert http.get(fuzz_server.url + "/health/ready").status_code == 200

    # Every operation again, logout and deletion included, as another guest: the operations that run after them see
    # an access token whose session or user is gone.
    last = sign_up_guest(http, fuzz_server, fuzz_app)
    ending = fuzz(fuzz_server, fuzz_app, last.access_token, workdir, "ending")
    print(ending.stdout[-3000:])
    assert_clean(ending, "every operation, logout and deletion included")


@pytest.mark.parametrize(
    ("method", "path", "allow", "shape"),
    [
        ("TRACE", "/health/live", "GET", "gotrue"),
        ("PUT", "/auth/v1/signup", "POST", "gotrue"),
        ("DELETE", "/auth/v1/user", "GET, PUT", "gotrue"),
        ("GET", "/v1/account/merge", "POST", "gotrue"),
        ("PUT", "/auth/v1/verify", "GET, POST", "gotrue"),
        ("POST", "/auth/v1/reauthenticate", "GET", "gotrue"),
        ("PUT", "/rest/v1/rpc/get_quota", "GET, POST", "postgrest"),
        ("TRACE", "/rest/v1/rpc/consume_quota", "POST", "postgrest"),
        ("PUT", "/rest/v1/rpc/any_function", "GET, HEAD, POST", "postgrest"),
    ],
)
def test_an_unrouted_method_on_a_known_path_is_405_with_allow(fuzz_server, fuzz_app, http, method, path, allow, shape):
    """Found by schemathesis (issue 26): these answered 404. The methods come from the document, the shape from the
    route group: GoTrue's {code, message}, PostgREST's four keys with PGRST117."""
    response = http.request(method, fuzz_server.url + path, headers={"apikey": fuzz_app.publishable_key})
    assert response.status_code == 405, f"{method} {path}: {response.status_code} {response.text[:300]}"
    assert response.headers["allow"] == allow
    body = response.json()
    if shape == "gotrue":
        assert list(body) == ["code", "message"] and body["code"] == "method_not_allowed", body
    else:
        assert sorted(body) == ["code", "details", "hint", "message"] and body["code"] == "PGRST117", body
    assert http.request(method, fuzz_server.url + path + "/no/such/route").status_code == 404
