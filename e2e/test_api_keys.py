"""Attack: API keys where they do not belong, and keys that are not keys.

A secret key in the query string (`?apikey=gp_sec_…` without the header, in any percent-encoding) is refused with
401 `secret_key_in_url` on every route (PGRST301 in PostgREST's shape on `/rest/v1`), runs nothing, and never grants
`service_role`, not even next to a publishable key. A publishable key in the query string works. A malformed key
(`gp_pub_nope`, 5,000 `a`s, uppercase hex, a NUL, one digit too many or too few) is 401 `invalid_api_key`, never a
5xx, and is refused without a database lookup: with `guestpass.api_keys` locked, malformed keys are still answered
at once while a well-formed unknown key waits for the lock.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
import urllib.parse

import httpx
import pytest

from conftest import _die_with_parent, psql, run
from support import assert_json_error, raw_request, sign_up_guest

pytestmark = pytest.mark.attack  # from the attack run: a hole found and kept closed

SECRET_MESSAGE_HINT = "header"  # the refusal tells the client where a secret key belongs


def users_of(database, app) -> int:
    return int(psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'"))


def malformed_keys(app) -> dict[str, str]:
    return {
        "gp_pub_nope": "gp_pub_nope",
        "5000 a": "a" * 5000,
        "uppercase hex": "gp_pub_" + app.publishable_key[7:].upper(),
        "uppercase prefix": app.publishable_key.upper(),
        "non-hex digits": "gp_pub_" + "g" * 64,
        "one digit short": app.publishable_key[:-1],
        "one digit over": app.publishable_key + "0",
        "unknown prefix": "sb_publishable_" + app.publishable_key[7:],
        "non-ASCII": "gp_pub_" + "\u00e9" * 32,
    }


def test_secret_key_in_the_url_is_refused(server, app, database, http):
    guest = sign_up_guest(http, server, app)
    secret = app.secret_key
    spellings = {
        "plain": secret,
        "percent-encoded": "".join(f"%{byte:02x}" for byte in secret.encode()),
        "first letter encoded": "%67" + secret[1:],
    }
    routes = [
        ("POST", "/auth/v1/signup", None, "secret_key_in_url"),
        ("GET", "/auth/v1/user", guest, "secret_key_in_url"),
        ("POST", "/auth/v1/logout", guest, "secret_key_in_url"),
        ("POST", "/auth/v1/token?grant_type=refresh_token", None, "secret_key_in_url"),
        ("POST", "/v1/devicecheck/grant", guest, "secret_key_in_url"),
        ("POST", "/rest/v1/rpc/list_readings", None, "PGRST301"),
        ("GET", "/rest/v1/rpc/list_readings", None, "PGRST301"),
        ("POST", "/rest/v1/rpc/grant_credits", None, "PGRST301"),
    ]
    before = users_of(database, app)
    problems = []
    for method, path, bearer, code in routes:
        for spelling_name, spelling in spellings.items():
            url = f"{server.url}{path}{'&' if '?' in path else '?'}apikey={spelling}"
            headers = {"Authorization": f"Bearer {bearer.access_token}"} if bearer else {}
            payload = {"p_user_id": guest.user_id, "p_amount": 1000} if path.endswith("grant_credits") else {}
            response = http.request(method, url, headers=headers, json=payload if method == "POST" else None)
            if response.status_code != 401:
                problems.append(f"{method} {path} ({spelling_name}): {response.status_code} {response.text[:200]}")
                continue
            body = assert_json_error(response, f"{method} {path}")
            if body["code"] != code or SECRET_MESSAGE_HINT not in body["message"]:
                problems.append(f"{method} {path} ({spelling_name}): {body}")
    assert not problems, "a secret key in the URL must be refused:\n" + "\n".join(problems)
    assert users_of(database, app) == before, "a refused sign-up must create nothing"
    credits = psql(database.super_url, f"select credits_balance from public.users where id = '{guest.user_id}'")
    assert credits == "0", f"grant_credits must not have run: balance {credits}"


def test_a_secret_key_in_the_url_never_grants_service_role(server, app, http):
    # list_readings is granted to authenticated and service_role, not to anon: 200 here would mean service_role.
    base = f"{server.url}/rest/v1/rpc/list_readings"
    public, secret = app.publishable_key, app.secret_key
    attempts = {
        "publishable then secret": (f"{base}?apikey={public}&apikey={secret}", {}),
        "secret then publishable": (f"{base}?apikey={secret}&apikey={public}", {}),
        "publishable header, secret in URL": (f"{base}?apikey={secret}", {"apikey": public}),
        "uppercase secret": (f"{base}?apikey={secret.upper()}", {}),
        "differently cased parameter": (f"{base}?APIKEY={secret}", {}),
    }
    for name, (url, headers) in attempts.items():
        response = http.post(url, headers=headers, json={})
        assert response.status_code == 401, f"{name}: {response.status_code} {response.text[:200]}"
        if name in ("publishable then secret", "secret then publishable", "publishable header, secret in URL"):
            # Refused because a secret key stands in the URL, not merely for want of a grant.
            assert SECRET_MESSAGE_HINT in response.json()["message"], f"{name}: {response.text[:200]}"
    # The secret key in its header is service_role (the control: the route does answer that role).
    assert http.post(base, headers={"apikey": secret}, json={}).status_code == 200


def test_publishable_key_in_the_url_works(server, app, http):
    signed_up = http.post(f"{server.url}/auth/v1/signup?apikey={app.publishable_key}", json={})
    assert signed_up.status_code == 200, signed_up.text
    token = signed_up.json()["access_token"]
    quota = http.post(
        f"{server.url}/rest/v1/rpc/get_quota?apikey={app.publishable_key}", headers={"Authorization": f"Bearer {token}"},
        json={},
    )
    assert quota.status_code == 200 and "quota_remaining" in quota.json(), quota.text


def test_publishable_key_in_the_url_of_a_get_rpc_call(server, app, http):
    """`GET /rest/v1/rpc/<fn>` takes its arguments from the query string; `apikey` there is the key, not an argument."""
    token = sign_up_guest(http, server, app).access_token
    quota = http.get(
        f"{server.url}/rest/v1/rpc/get_quota?apikey={app.publishable_key}", headers={"Authorization": f"Bearer {token}"}
    )
    assert quota.status_code == 200 and "quota_remaining" in quota.json(), quota.text


def test_malformed_keys_are_401(server, app, http):
    problems = []
    for name, key in malformed_keys(app).items():
        for where in ("header", "query"):
            for path, code in (("/auth/v1/signup", "invalid_api_key"), ("/rest/v1/rpc/get_quota", "PGRST301")):
                if where == "header":
                    response = http.post(server.url + path, headers={"apikey": key.encode()}, json={})
                else:
                    response = http.post(f"{server.url}{path}?apikey={urllib.parse.quote(key)}", json={})
                if response.status_code != 401 or assert_json_error(response, name)["code"] != code:
                    problems.append(f"{name} in the {where} of {path}: {response.status_code} {response.text[:200]}")
    for query in ("apikey=%00", f"apikey={app.publishable_key[:-1]}%00", f"apikey={app.publishable_key}%00",
                  f"apikey=%00{app.publishable_key}"):
        response = http.post(f"{server.url}/auth/v1/signup?{query}", json={})
        if response.status_code != 401 or response.json()["code"] != "invalid_api_key":
            problems.append(f"?{query[:30]}…: {response.status_code} {response.text[:200]}")
    assert not problems, "\n".join(problems)


def test_keys_with_raw_bytes_and_huge_keys_never_reach_a_5xx(server, app):
    problems = []
    for key in (b"gp_pub_\x00" + b"0" * 63, app.publishable_key.encode() + b"\x00", b"\xff" * 71, b"a" * 100_000):
        answer = raw_request(server, "POST", "/auth/v1/signup", [(b"apikey", key)], b"{}")
        if answer.status is None or not 400 <= answer.status < 500:
            problems.append(f"{key[:20]!r}… ({len(key)} bytes): {answer.status} {answer.body[:200]!r}")
    assert not problems, "\n".join(problems)
    assert server.proc.poll() is None, server.log_tail()


@contextlib.contextmanager
def api_keys_table_locked(database):
    """Holds ACCESS EXCLUSIVE on guestpass.api_keys from another session (until the block ends): every key lookup
    waits."""
    name = f"attack-api-keys-lock-{secrets.token_hex(4)}"
    holder = subprocess.Popen(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", database.super_url, "-c",
         "begin; lock table guestpass.api_keys in access exclusive mode; select pg_sleep(30); commit;"],
        env={**os.environ, "PGAPPNAME": name}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent,
    )
    try:
        deadline = time.monotonic() + 10
        while psql(
            database.super_url,
            "select count(*) from pg_locks l join pg_stat_activity a using (pid) "
            f"where a.application_name = '{name}' and l.relation = 'guestpass.api_keys'::regclass and l.granted",
        ) != "1":
            assert holder.poll() is None and time.monotonic() < deadline, "could not lock guestpass.api_keys"
            time.sleep(0.05)
        yield
    finally:
        psql(database.super_url, f"select pg_terminate_backend(pid) from pg_stat_activity where application_name = '{name}'")
        try:
            holder.wait(timeout=10)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait(timeout=10)


@pytest.fixture()
def keys_server(start_server):
    """A server of its own: an empty key cache, and a request left waiting on the lock harms nobody else."""
    srv = start_server("attack-api-keys")
    try:
        yield srv
    finally:
        srv.stop()


def test_malformed_keys_are_refused_without_a_database_lookup(keys_server, app, database):
    with api_keys_table_locked(database), httpx.Client(timeout=2.0) as client:
        for name, key in malformed_keys(app).items():
            started = time.monotonic()
            response = client.post(keys_server.url + "/auth/v1/signup", headers={"apikey": key.encode()}, json={})
            took = time.monotonic() - started
            assert response.status_code == 401 and response.json()["code"] == "invalid_api_key", f"{name}: {response.text}"
            assert took < 1.0, f"{name}: answered in {took:.2f}s, as if it waited for the locked key table"
        # The lock is effective: a well-formed key nobody has cached does wait for it.
        with pytest.raises(httpx.TimeoutException):
            client.post(
                keys_server.url + "/auth/v1/signup", headers={"apikey": "gp_pub_" + secrets.token_hex(32)}, json={},
                timeout=0.5,
            )


def test_rotating_keys_then_revoking_the_old_ones(http, server, database):
    """`apps rotate-keys` adds working keys while the old ones keep working; `apps revoke-key` retires one (a server
    that has not cached it refuses it at once; one that has, within its one-minute cache); `apps list` shows both,
    never the keys."""
    import json as _json

    from support import create_app

    app = create_app(database, "rotate-me")
    env = {"DATABASE_URL": database.super_url}
    rotated = run([database.bin, "apps", "rotate-keys", "--app", app.app_id], env=env)
    new_publishable = next(line.split()[-1] for line in rotated.splitlines() if line.startswith("publishable key:"))
    assert new_publishable != app.publishable_key

    def sign_up(key: str) -> int:
        return http.post(server.url + "/auth/v1/signup", headers={"apikey": key, "Authorization": f"Bearer {key}"},
                         json={}).status_code

    assert sign_up(new_publishable) == 200
    assert sign_up(app.secret_key) == 200, "the old secret key still works"
    run([database.bin, "apps", "revoke-key", "--app", app.app_id, "--key", app.publishable_key], env=env)
    assert sign_up(app.publishable_key) == 401, "the revoked key, never cached by this server, is refused at once"
    assert sign_up(new_publishable) == 200

    listed = _json.loads(run([database.bin, "apps", "list", "--json"], env=env))
    keys = next(a for a in listed if a["app_id"] == app.app_id)["keys"]
    assert len(keys) == 4 and sum(k.get("revoked_at") is not None for k in keys) == 1
    assert app.publishable_key not in _json.dumps(listed) and new_publishable not in _json.dumps(listed)
