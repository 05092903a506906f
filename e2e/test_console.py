"""The operator console over plain HTTP (issue 36): its own listener (the API's port does not serve it), its headers
and cookies, no secret in any page source, the sign-in limit, and 0 5xx when its forms are fuzzed."""

from __future__ import annotations

import re
import secrets
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import new_device_secret, psql, remember_secret
from console_support import ConsoleClient, new_operator, start_console, totp
from support import create_app, sign_up_guest

PAGES = ["/apps", "/users", "/audit", "/health"]


@pytest.fixture(scope="module")
def console(database, start_server):
    return start_console(database, start_server, "console-http")


@pytest.fixture(scope="module")
def app(database):
    return create_app(database, "console-http")


@pytest.fixture(scope="module")
def operator(database, app):
    return new_operator(database, app.app_id)


@pytest.fixture(scope="module")
def signed_in(console, operator):
    client = ConsoleClient(console[1])
    client.sign_in(operator)
    yield client
    client.close()


def test_the_api_port_does_not_serve_the_console(console, http):
    server, base = console
    assert http.get(base + "/sign-in").status_code == 200
    for path in ["/sign-in", "/apps", "/console.css", "/health"]:
        assert http.get(server.url + path).status_code == 404, path


def test_pages_carry_the_security_headers_and_the_cookie_is_strict(console, operator):
    _, base = console
    client = ConsoleClient(base)
    try:
        page = client.http.get("/sign-in")
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["cache-control"] == "no-store"
        pre = re.search(r'name="pre" value="([^"]+)"', page.text).group(1)
        answer = client.http.post("/sign-in", data={"pre": pre, "email": operator.email, "password": operator.password})
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie, cookie
        # Signed in by password only: the pages wait for the code.
        assert client.http.get("/apps").headers.get("location") == "/sign-in"
    finally:
        client.close()


def test_a_page_without_a_session_sends_to_sign_in(console):
    _, base = console
    for path in PAGES + ["/users/00000000-0000-0000-0000-000000000000"]:
        answer = httpx.get(base + path, cookies={"gp_console": "forged-" + secrets.token_urlsafe(20)})
        assert answer.status_code == 303 and answer.headers["location"] == "/sign-in", path


def test_no_secret_reaches_a_page(console, database, app, operator, signed_in, http):
    server, _ = console
    guest = sign_up_guest(http, server, app)
    secret_values = [app.secret_key, app.publishable_key, guest.access_token, guest.refresh_token, operator.password,
                     operator.totp_secret, signed_in.http.cookies.get("gp_console")]
    hashes = psql(database.super_url, "select string_agg(key_hash, ' ') from guestpass.api_keys").split()
    hashes += psql(database.super_url, "select string_agg(password_hash, ' ') from guestpass.operators").split()
    hashes += psql(database.super_url, "select string_agg(token_hash, ' ') from guestpass.operator_sessions").split()
    sources = [signed_in.http.get(path).text for path in PAGES]
    sources.append(signed_in.http.get(f"/apps/{app.app_id}").text)
    sources.append(signed_in.http.get(f"/users/{guest.user_id}").text)
    for source in sources:
        assert "guestpass console" in source.lower()
        for value in secret_values + hashes:
            assert value and value not in source, "a secret reached a page"


def test_failed_sign_ins_are_limited(console, database, app):
    _, base = console
    victim = new_operator(database, app.app_id, second_factor=False)
    client = ConsoleClient(base)
    try:
        statuses = []
        for _ in range(7):
            pre = re.search(r'name="pre" value="([^"]+)"', client.http.get("/sign-in").text).group(1)
            statuses.append(client.http.post("/sign-in", data={"pre": pre, "email": victim.email, "password": "wrong-" + secrets.token_hex(4)}).status_code)
        assert statuses[:5] == [401] * 5 and statuses[-1] == 429, statuses
        pre = re.search(r'name="pre" value="([^"]+)"', client.http.get("/sign-in").text).group(1)
        right = client.http.post("/sign-in", data={"pre": pre, "email": victim.email, "password": victim.password})
        assert right.status_code == 429, "the right password is refused too while the limit holds"
    finally:
        client.close()


FORMS = [
    ("/users/{user}/credits", ["delta", "reason"]),
    ("/users/{user}/premium", ["premium"]),
    ("/users/{user}/devices/{user}/revoke", []),
    ("/users/{user}/sessions/{user}/end", []),
    ("/apps/{app}/quota", ["daily_free_allowance", "welcome_grant_credits"]),
    ("/apps/{app}/keys", ["kind"]),
    ("/apps/{app}/keys/{user}/revoke", []),
]
TEXT = st.one_of(st.text(max_size=40), st.integers(-10**12, 10**12).map(str), st.sampled_from(["", "0", "-1", "on", "'", "%00", "\u0000"]))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(form=st.sampled_from(FORMS), values=st.lists(TEXT, min_size=2, max_size=2), user=st.one_of(st.uuids().map(str), TEXT),
       raw=st.binary(max_size=64))
def test_fuzzed_forms_never_answer_5xx(console, app, signed_in, form, values, user, raw):
    path, fields = form
    target = path.format(user=quote(user, safe="") or "x", app=app.app_id)
    csrf = signed_in.csrf("/apps")
    data = {"csrf": csrf, **dict(zip(fields, values))}
    answer = signed_in.http.post(target, data=data)
    assert answer.status_code < 500, (target, data, answer.status_code, answer.text[:300])
    answer = signed_in.http.post(target, content=raw, headers={"content-type": "application/x-www-form-urlencoded"})
    assert answer.status_code < 500, (target, raw, answer.status_code)
    search = signed_in.http.get("/users", params={"kind": values[0] or "email", "value": values[1] or "x"})
    assert search.status_code < 500, (values, search.status_code)


def test_an_operator_deletes_an_account_as_its_user_would(console, database, app, signed_in, http):
    """The same path as POST /v1/account/delete: the user's rows in app tables go with it, its token is refused, and
    the audit keeps a row; without the typed confirmation nothing happens."""
    server, _ = console
    guest = sign_up_guest(http, server, app)
    headers = {"apikey": app.publishable_key, "Authorization": f"Bearer {guest.access_token}"}
    inserted = http.post(server.url + "/rest/v1/readings", headers=headers, json={"kind": "palm", "content": {"n": 1}})
    assert inserted.status_code == 201, inserted.text
    csrf = signed_in.csrf(f"/users/{guest.user_id}")
    refused = signed_in.http.post(f"/users/{guest.user_id}/delete", data={"csrf": csrf, "confirm": "yes"})
    assert refused.status_code == 400
    assert psql(database.super_url, f"select count(*) from public.users where id = '{guest.user_id}'").strip() == "1"
    answer = signed_in.http.post(f"/users/{guest.user_id}/delete", data={"csrf": csrf, "confirm": guest.user_id})
    assert answer.status_code == 303 and answer.headers["location"] == "/users?done=deleted", answer.text[:300]
    assert psql(database.super_url, f"select count(*) from public.users where id = '{guest.user_id}'").strip() == "0"
    assert psql(database.super_url, f"select count(*) from public.readings where user_id = '{guest.user_id}'").strip() == "0"
    assert http.get(server.url + "/auth/v1/user", headers=headers).status_code in (401, 403)
    audit = psql(database.super_url, f"select action from guestpass.operator_audit where user_id = '{guest.user_id}'")
    assert audit.strip() == "account_deleted", audit
    assert signed_in.http.get(f"/users/{guest.user_id}").status_code == 404


def test_a_new_key_is_shown_once_and_works_until_revoked(console, app, signed_in, http):
    server, _ = console
    csrf = signed_in.csrf(f"/apps/{app.app_id}")
    created = signed_in.http.post(f"/apps/{app.app_id}/keys", data={"csrf": csrf, "kind": "publishable"})
    assert created.status_code == 200, created.text[:300]
    key = re.search(r'<code id="new-key">([^<]+)</code>', created.text).group(1)
    remember_secret(key)
    assert http.post(server.url + "/auth/v1/signup", headers={"apikey": key}, json={"data": {"device_id": new_device_secret()}}).status_code == 200
    again = signed_in.http.get(f"/apps/{app.app_id}")
    assert key not in again.text, "the key is shown on the answer that made it only"
    key_id = psql(server.db.super_url, f"select id from guestpass.api_keys where app_id = '{app.app_id}' order by created_at desc limit 1").strip()
    revoked = signed_in.http.post(f"/apps/{app.app_id}/keys/{key_id}/revoke", data={"csrf": csrf})
    assert revoked.status_code == 303
    assert psql(server.db.super_url, f"select revoked_at is not null from guestpass.api_keys where id = '{key_id}'").strip() == "t"
    audit = psql(server.db.super_url, f"select string_agg(action, ',' order by id) from guestpass.operator_audit where detail ->> 'key_id' = '{key_id}'")
    assert audit.strip() == "key_created,key_revoked", audit


def test_a_code_is_good_once(console, database, app):
    """RFC 6238 section 5.2: a code that signed a session in does not sign in another (someone who saw it typed)."""
    _, base = console
    victim = new_operator(database, app.app_id)
    first = ConsoleClient(base)
    second = ConsoleClient(base)
    try:
        first.sign_in(victim)
        code = totp(victim.totp_secret, victim.last_step * 30 + 1)
        pre = re.search(r'name="pre" value="([^"]+)"', second.http.get("/sign-in").text).group(1)
        answer = second.http.post("/sign-in", data={"pre": pre, "email": victim.email, "password": victim.password})
        assert answer.headers["location"] == "/sign-in/code"
        replay = second.http.post("/sign-in/code", data={"csrf": second.csrf("/sign-in/code"), "code": code})
        assert replay.status_code == 401, replay.status_code
        assert second.http.get("/apps").status_code == 303, "the replayed code signed nobody in"
    finally:
        first.close()
        second.close()
