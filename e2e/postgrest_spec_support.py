"""PostgREST's own test suite, run against GuestPass: its fixture schema in a database of its own, and its cases.

The fixture (e2e/postgrest_spec/fixture/, PostgREST's test/spec/fixtures, unchanged; see its NOTICE) is loaded into a
database brought up by `guestpass dev up`, with three rewrites: PostgREST's anonymous test role is GuestPass's `anon`
(the publishable key alone), its default and author roles are `authenticated` (a guest's token), and `public`, which
GuestPass's migrations made, is not created again. What PostgreSQL here cannot load (PostGIS is not installed) fails
statement by statement and is named in KNOWN_LOAD_ERRORS; any other error stops the suite.

A case file (e2e/postgrest_spec/cases/*.json) ports one hspec file:

    {"spec": "test/spec/Feature/Query/InsertSpec.hs",
     "server_env": {"GUESTPASS_DB_SCHEMAS": "v1,v2"},     optional: the server's settings, over DEFAULT_SERVER_ENV
                                                          (PostgREST's config for the file: see test/spec/Main.hs)
     "not_ported": [{"it": "...", "why": "..."}],          every `it` of the file left out, and why
     "cases": [case, ...]}

and a case is

    name      the hspec `describe` path and `it` text, unique in its file
    line      the line of the `it` in the spec file (at the commit of fixture/NOTICE)
    as        "anon" (PostgREST's anonymous role; the default), "user" (a guest's token, role authenticated) or
              "service" (the secret key)
    token_claims  with "as": "user", time claims to sign the guest's token anew with, each in seconds from now
              ({"exp": -35}), with the server's own key: PostgREST's generateJWT over its payload
    method, path (relative to /rest/v1/, query string as sent), headers, and body (JSON, sent serialised) or
              body_text (sent as it is); a body is sent as application/json unless headers say otherwise
    expect    what PostgREST answers: status; headers (a subset; names in any case; null = absent); and one of
              body (JSON, equal as values: objects unordered, arrays in order), body_text (exact) or "empty": true
    differs   only where GuestPass answers otherwise on purpose: {"readme": a phrase of the README's list of
              deliberate differences from PostgREST, "guestpass": an expect of what GuestPass answers instead}
    unserved  as differs, for a case of a feature GuestPass does not serve at all (CSV bodies, Prefer: tx, ...):
              run and checked like a difference, but outside the areas the conformance ratio counts

After every case that is not a GET or HEAD the harness puts the fixture's rows back (spec_snapshot.restore(), see
postgrest_spec/snapshot.sql): PostgREST's suite rolls every request back, so no case depends on another; except that
a request with `Prefer: tx=commit` keeps its writes for the next request of the same `it`, as it does there.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent / "postgrest_spec"
FIXTURE_FILES = ("schema.sql", "jwt.sql", "jsonschema.sql", "privileges.sql", "data.sql")  # load.sql's order
ROLE_REWRITES = (
    ("postgrest_test_anonymous", "anon"),
    ("postgrest_test_default_role", "authenticated"),
    ("postgrest_test_author", "authenticated"),
)
# PostGIS is not installed here: its extension, and what is built on it, fail to load.
KNOWN_LOAD_ERRORS = re.compile(
    r'extension "postgis" is not available|type "(extensions\.geometry|shops|test\.lines|test\.shop_bles)" does not exist'
    r'|type test\.(lines|shop_bles) does not exist|relation "(shops|shop_bles|lines)" does not exist'
)
REST = "/rest/v1/"
# PostgREST's baseCfg: the fixture's `test` schema exposed, no extra search path. A file's "server_env" is laid over
# it; one server runs per distinct environment, started when its first case runs.
DEFAULT_SERVER_ENV = {"GUESTPASS_DB_SCHEMAS": "test", "GUESTPASS_DB_EXTRA_SEARCH_PATH": ""}
WRITE_METHODS_SAFE = ("GET", "HEAD")


def fixture_sql() -> str:
    """The fixture's files, in PostgREST's load order, with the role and schema rewrites applied."""
    text = "\n".join((HERE / "fixture" / name).read_text() for name in FIXTURE_FILES)
    for theirs, ours in ROLE_REWRITES:
        text = text.replace(theirs, ours)
    return re.sub(r"^CREATE SCHEMA public;", "CREATE SCHEMA IF NOT EXISTS public;", text, flags=re.MULTILINE)


def load_fixture(super_url: str) -> None:
    """Loads the fixture and the snapshot its cases are restored from; raises on any error not known beforehand."""
    loaded = subprocess.run(["psql", "-q", "-X", "-d", super_url, "-f", "-"], input=fixture_sql(), text=True,
                            capture_output=True, timeout=300)
    errors = [line for line in loaded.stderr.splitlines() if "ERROR:" in line]
    unexpected = [line for line in errors if not KNOWN_LOAD_ERRORS.search(line)]
    if loaded.returncode != 0 or unexpected:
        raise RuntimeError(f"loading PostgREST's fixture failed: {unexpected[:10] or loaded.stderr[-2000:]}")
    subprocess.run(["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", super_url, "-f", str(HERE / "snapshot.sql")],
                   check=True, capture_output=True, timeout=120)


def restore(super_url: str) -> None:
    subprocess.run(["psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", super_url, "-c", "select spec_snapshot.restore()"],
                   check=True, capture_output=True, timeout=60)


@dataclasses.dataclass
class SpecFile:
    path: Path
    spec: str
    cases: list[dict[str, Any]]
    not_ported: list[dict[str, str]]
    server_env: dict[str, str]


def spec_files() -> list[SpecFile]:
    files = []
    for path in sorted((HERE / "cases").glob("*.json")):
        document = json.loads(path.read_text())
        files.append(SpecFile(path, document["spec"], document["cases"], document.get("not_ported", []),
                              {**DEFAULT_SERVER_ENV, **document.get("server_env", {})}))
    return files


def all_cases() -> list[dict[str, Any]]:
    return [dict(case, file=file.path.name, spec=file.spec, server_env=file.server_env)
            for file in spec_files() for case in file.cases]


def resigned(token: str, key_file: Path, offsets: dict[str, int]) -> str:
    """`token` with its time claims `offsets` seconds from now, signed again with the server's key (PEM, ES256)."""
    import jwt  # pyjwt, with cryptography for ES256
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})
    now = int(time.time())
    claims.update({name: now + offset for name, offset in offsets.items()})
    return jwt.encode(claims, key_file.read_bytes(), algorithm="ES256", headers={"kid": header["kid"], "typ": header.get("typ", "JWT")})


def request(http: httpx.Client, base_url: str, headers: dict[str, str], case: dict[str, Any]) -> httpx.Response:
    """Sends a case's request as it is written: the path is not re-encoded, the body is sent byte for byte."""
    sent = {**headers, **case.get("headers", {})}
    content: bytes | None = None
    if "body" in case:
        content = json.dumps(case["body"]).encode()
    elif "body_text" in case:
        content = case["body_text"].encode()
    if content is not None and not any(name.lower() == "content-type" for name in sent):
        sent["Content-Type"] = "application/json"
    url = httpx.URL(base_url + REST + case["path"])
    return http.request(case.get("method", "GET"), url, headers=sent, content=content)


def mismatches(response: httpx.Response, expect: dict[str, Any]) -> list[str]:
    """How `response` differs from `expect` (empty when it matches), each a line a reader can act on."""
    found = []
    if response.status_code != expect["status"]:
        found.append(f"status {response.status_code}, expected {expect['status']}")
    for name, value in expect.get("headers", {}).items():
        actual = response.headers.get(name)
        if actual != value:
            found.append(f"header {name}: {actual!r}, expected {value!r}")
    if "body" in expect:
        try:
            actual_body = response.json()
        except ValueError:
            found.append(f"body is not JSON: {response.text[:300]!r}")
        else:
            if actual_body != expect["body"]:
                found.append(f"body {json.dumps(actual_body)[:600]}, expected {json.dumps(expect['body'])[:600]}")
    if "body_text" in expect and response.text != expect["body_text"]:
        found.append(f"body {response.text[:300]!r}, expected {expect['body_text'][:300]!r}")
    if expect.get("empty") and response.content:
        found.append(f"body {response.text[:300]!r}, expected none")
    return found
