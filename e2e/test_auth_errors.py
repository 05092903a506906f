"""GoTrue's error shape (`{"code","message"}`, the echoed API version) on the failures of the /auth/v1 routes."""

from __future__ import annotations

from conftest import api_headers
from support import TOKEN_PATH, VERSION, assert_error


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
        server.url + "/auth/v1/token?grant_type=client_credentials", headers=api_headers(app, **versioned), json={}
    )
    assert_error(response, 400, "unsupported_grant_type")
    # A device secret that is not a random UUID.
    response = http.post(
        server.url + "/auth/v1/signup", headers=api_headers(app, **versioned), json={"data": {"device_id": "1234"}}
    )
    assert_error(response, 400, "validation_failed")
