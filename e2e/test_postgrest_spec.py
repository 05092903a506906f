"""PostgREST's own spec cases (test/spec/Feature/**, ported to e2e/postgrest_spec/cases/) on PostgREST's own fixture
schema, against a GuestPass server exposing the fixture's `test` schema: each case answers as PostgREST answers, or as
the README's list of deliberate differences says. The harness is e2e/postgrest_spec_support.py.

The conformance target (issue 35): of the ported cases of the areas the suite counts, at most 2 % answer differently
from PostgREST, and every one of those names its reason in the README.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import httpx
import pytest

from conftest import (
    AUDIT_VOLUME_EXEMPT, SESSION_WORKDIRS, App, Database, Server, _require_env, api_headers, new_device_secret, run,
)
from postgrest_spec_support import (
    DEFAULT_SERVER_ENV, all_cases, load_fixture, mismatches, request, resigned, restore, spec_files,
)

CASES = all_cases()
# A request with `Prefer: tx=commit` keeps what it wrote for the next request of the same `it` (a sequence reset, a
# row the next request reads), as in PostgREST's suite; the rows are put back after the `it`'s last write.
KEPT_FOR_NEXT = {
    (case["file"], case["name"]) for case, following in zip(CASES, CASES[1:])
    if "tx=commit" in case.get("headers", {}).get("Prefer", "")
    and (following["file"], following["line"]) == (case["file"], case["line"])
}
README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
MAX_DIFFERING = 0.02


@pytest.fixture(scope="module")
def spec_database(tmp_path_factory) -> Database:
    """A database of its own: GuestPass's migrations (`guestpass dev up`), then PostgREST's fixture."""
    admin_url = _require_env("GUESTPASS_TEST_DATABASE_URL")
    binary = _require_env("GUESTPASS_BIN")
    name = f"guestpass_pgrst_{os.getpid()}_{secrets.token_hex(3)}"
    workdir = tmp_path_factory.mktemp("postgrest-spec")
    SESSION_WORKDIRS.append(workdir)
    AUDIT_VOLUME_EXEMPT.add(workdir)
    stack = json.loads(run([binary, "dev", "up", "--database-url", admin_url, "--database", name, "--app", "spec",
                            "--key-file", str(workdir / "jwt-signing-key.pem"), "--json"]))
    try:
        load_fixture(stack["owner_url"])
        yield Database(super_url=stack["owner_url"], apps=[App(**app) for app in stack["apps"]], workdir=workdir,
                       bin=binary, serve_environment=stack["serve_environment"], name=name)
    finally:
        run([binary, "dev", "down", "--database-url", admin_url, "--database", name])


@pytest.fixture(scope="module")
def spec_servers(spec_database):
    """One server per distinct `server_env` of the case files, each started when a case first needs it."""
    servers: dict[str, Server] = {}

    def server_for(env: dict[str, str]) -> Server:
        key = json.dumps(env, sort_keys=True)
        if key not in servers:
            servers[key] = Server(spec_database, f"postgrest-spec-{len(servers)}", env).start()
        return servers[key]

    try:
        yield server_for
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def identities(spec_servers, spec_database) -> dict[str, dict[str, str]]:
    """Each case's `as`: its headers (the servers share the database and its keys, so one sign-up serves all)."""
    app = spec_database.apps[0]
    signed_up = httpx.post(spec_servers(DEFAULT_SERVER_ENV).url + "/auth/v1/signup", headers=api_headers(app),
                           json={"data": {"device_id": new_device_secret()}}, timeout=10)
    assert signed_up.status_code == 200, signed_up.text
    token = signed_up.json()["access_token"]
    return {
        "anon": {"apikey": app.publishable_key},
        "user": {"apikey": app.publishable_key, "Authorization": f"Bearer {token}"},
        "service": {"apikey": app.secret_key, "Authorization": f"Bearer {app.secret_key}"},
    }


def test_the_case_files_are_well_formed():
    files = spec_files()
    assert files, "no case files in e2e/postgrest_spec/cases"
    names = [(case["file"], case["name"]) for case in CASES]  # hspec files repeat an `it` text: unique per file
    assert len(set(names)) == len(names), [name for name in names if names.count(name) > 1]
    for case in CASES:
        assert case.get("as", "anon") in ("anon", "user", "service"), case["name"]
        assert "token_claims" not in case or case.get("as") == "user", case["name"]
        assert isinstance(case.get("line"), int) and "status" in case["expect"], case["name"]
        assert not ("differs" in case and "unserved" in case), case["name"]
        for key in ("differs", "unserved"):
            if key in case:
                reason = case[key]
                assert "status" in reason["guestpass"], case["name"]
                assert reason["readme"] in README, f"{case['name']}: the README does not say {reason['readme']!r}"
    for file in files:
        assert all(item.get("it") and item.get("why") for item in file.not_ported), file.path.name


def test_at_most_two_percent_of_the_counted_cases_differ_from_postgrest():
    counted = [case for case in CASES if "unserved" not in case]
    differing = [case["name"] for case in counted if "differs" in case]
    print(f"\n{len(counted)} cases counted, {len(differing)} differ on purpose; "
          f"{len(CASES) - len(counted)} of features not served; "
          f"{sum(len(file.not_ported) for file in spec_files())} not ported")
    assert len(counted) >= 1
    assert len(differing) <= MAX_DIFFERING * len(counted), differing


@pytest.mark.parametrize("case", CASES, ids=[f"{case['file']}:{case['line']}" for case in CASES])
def test_case(case, spec_servers, spec_database, identities):
    expect = case.get("differs", case.get("unserved", {})).get("guestpass", case["expect"])
    server = spec_servers(case["server_env"])
    headers = identities[case.get("as", "anon")]
    if "token_claims" in case:
        token = headers["Authorization"].removeprefix("Bearer ")
        key_file = spec_database.workdir / "jwt-signing-key.pem"
        headers = {**headers, "Authorization": "Bearer " + resigned(token, key_file, case["token_claims"])}
    with httpx.Client(timeout=10) as http:
        try:
            response = request(http, server.url, headers, case)
        finally:
            if case.get("method", "GET") not in ("GET", "HEAD") and (case["file"], case["name"]) not in KEPT_FOR_NEXT:
                restore(spec_database.super_url)
    found = mismatches(response, expect)
    assert not found, f"{case['name']} ({case['spec']}:{case['line']}):\n  " + "\n  ".join(found)
