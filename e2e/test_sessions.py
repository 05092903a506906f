"""Sessions: sign in, refresh (rotation, the reuse window, family revocation), get the user, sign out, through the
official `supabase` Python client and plain HTTP; the refresh-token error codes the client sees."""

from __future__ import annotations

import uuid

import pytest
from supabase_auth.errors import AuthApiError

from conftest import api_headers, new_device_secret, psql
from support import VERSION, assert_error, make_client, refresh


@pytest.mark.parametrize("with_device", [False, True], ids=["no-device", "device"])
def test_sign_in_refresh_get_user(server, app, with_device):
    client = make_client(server, app)
    device = new_device_secret()
    credentials = {"options": {"data": {"device_id": device}}} if with_device else None
    signed_in = client.auth.sign_in_anonymously(credentials)
    assert signed_in.user is not None and signed_in.session is not None
    user_id = signed_in.user.id
    uuid.UUID(user_id)
    assert signed_in.user.is_anonymous is True
    assert signed_in.session.access_token and signed_in.session.refresh_token
    assert signed_in.session.token_type.lower() == "bearer"
    assert device not in signed_in.model_dump_json()

    refreshed = client.auth.refresh_session()
    assert refreshed.session is not None and refreshed.user is not None
    assert refreshed.user.id == user_id
    assert refreshed.session.refresh_token != signed_in.session.refresh_token, "refresh tokens rotate"

    got = client.auth.get_user()
    assert got is not None and got.user is not None
    assert got.user.id == user_id
    assert got.user.is_anonymous is True
    assert got.user.aud == "authenticated"

    client.auth.sign_out()  # scope global
    with pytest.raises(AuthApiError):
        client.auth.refresh_session(refreshed.session.refresh_token)


def test_client_sees_refresh_error_code(server, app):
    client = make_client(server, app)
    with pytest.raises(AuthApiError) as caught:
        client.auth.refresh_session("not-a-refresh-token")
    # The client reads `code` only when the response echoes X-Supabase-Api-Version (2024-01-01).
    assert caught.value.status == 400
    assert caught.value.code == "refresh_token_not_found"


def test_garbage_refresh_token(server, app, http):
    for garbage in ("garbage", "x" * 300, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"):
        assert_error(refresh(http, server, app, garbage, **{"X-Supabase-Api-Version": VERSION}), 400, "refresh_token_not_found")
    # Without the request header, none is echoed.
    assert_error(refresh(http, server, app, "garbage"), 400, "refresh_token_not_found", echoed=False)


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
