"""Refresh-token error codes through HTTP, and the error shape (`{"code","message"}`, echoed API version)."""

from __future__ import annotations

from conftest import api_headers, psql

VERSION = "2024-01-01"
TOKEN_PATH = "/auth/v1/token?grant_type=refresh_token"


def refresh(http, server, app, token, **headers):
    return http.post(server.url + TOKEN_PATH, headers=api_headers(app, **headers), json={"refresh_token": token})


def assert_error(response, status, code, echoed=True):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and isinstance(body["message"], str) and body["message"]
    assert response.headers["content-type"].startswith("application/json")
    if echoed:
        assert response.headers.get("x-supabase-api-version") == VERSION
    else:
        assert "x-supabase-api-version" not in response.headers


def test_garbage_refresh_token(server, app, http):
    for garbage in ("garbage", "x" * 300, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"):
        assert_error(refresh(http, server, app, garbage, **{"X-Supabase-Api-Version": VERSION}), 400, "refresh_token_not_found")
    # Without the request header, none is echoed.
    assert_error(refresh(http, server, app, "garbage"), 400, "refresh_token_not_found", echoed=False)


def test_error_shape_on_other_failures(server, app, http):
    versioned = {"X-Supabase-Api-Version": VERSION}
    # No apikey at all.
    response = http.post(server.url + TOKEN_PATH, headers=versioned, json={"refresh_token": "garbage"})
    assert response.status_code == 401 and response.json()["code"]
    assert response.headers.get("x-supabase-api-version") == VERSION
    # An unknown apikey.
    response = http.get(server.url + "/auth/v1/user", headers={"apikey": "sb_publishable_nope", **versioned})
    assert response.status_code == 401 and response.json()["code"]
    assert response.headers.get("x-supabase-api-version") == VERSION
    # An unsupported grant type.
    response = http.post(
        server.url + "/auth/v1/token?grant_type=password", headers=api_headers(app, **versioned), json={}
    )
    assert_error(response, 400, "unsupported_grant_type")
    # A device secret that is not a random UUID.
    response = http.post(
        server.url + "/auth/v1/signup", headers=api_headers(app, **versioned), json={"data": {"device_id": "1234"}}
    )
    assert_error(response, 400, "validation_failed")


def test_refresh_rotation_and_reuse(server, app, http, database):
    """Main server: reuse window 3 s. t0 → t1 → t2; t1 (parent of active) → active; t0 within the
    window → active; t0 after it → refresh_token_already_used and the family is revoked."""
    versioned = {"X-Supabase-Api-Version": VERSION}
    signed = http.post(server.url + "/auth/v1/signup", headers=api_headers(app), json={})
    assert signed.status_code == 200
    t0 = signed.json()["refresh_token"]
    r1 = refresh(http, server, app, t0)
    assert r1.status_code == 200, r1.text
    t1 = r1.json()["refresh_token"]
    r2 = refresh(http, server, app, t1)
    assert r2.status_code == 200, r2.text
    t2 = r2.json()["refresh_token"]
    assert len({t0, t1, t2}) == 3

    parent = refresh(http, server, app, t1)
    assert parent.status_code == 200 and parent.json()["refresh_token"] == t2
    within = refresh(http, server, app, t0)
    assert within.status_code == 200 and within.json()["refresh_token"] == t2

    # The reuse window (3 s on this server) passes: the used tokens are aged, not waited for.
    user_id = signed.json()["user"]["id"]
    psql(
        database.super_url,
        "update guestpass.refresh_tokens as t set revoked_at = t.revoked_at - interval '1 minute' "
        f"from guestpass.sessions as s where s.id = t.session_id and s.user_id = '{user_id}' and t.revoked_at is not null",
    )
    assert_error(refresh(http, server, app, t0, **versioned), 400, "refresh_token_already_used")
    for token in (t1, t2):
        response = refresh(http, server, app, token, **versioned)
        assert response.status_code == 400
        assert response.json()["code"] in ("session_not_found", "refresh_token_already_used")
    access = signed.json()["access_token"]
    user = http.get(server.url + "/auth/v1/user", headers={"apikey": app.publishable_key, "Authorization": f"Bearer {access}"})
    assert user.status_code in (401, 403)
