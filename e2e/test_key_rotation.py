"""Signing-key rotation end to end, and the HS256 mode.

Rotation: a server signing with key 1 issues a session; a server signing with key 2 and still verifying key 1
(`GUESTPASS_JWT_VERIFY_KEY_FILES`) accepts the old access token, lists both keys in its JWKS, and refreshes the old
refresh token (refresh tokens are keyed by `GUESTPASS_REFRESH_TOKEN_SECRET`, not by the signing key), answering with a
token signed by key 2. HS256 (`GUESTPASS_JWT_HS256_SECRET`, for Supabase-legacy setups): sign-up, the user, RPC and
refresh work; the JWKS publishes no secret.
"""

from __future__ import annotations

import base64
import json

from conftest import api_headers, run
from support import create_app, guest_headers, refresh, sign_up_guest


def header(token: str) -> dict:
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_rotating_the_signing_key_keeps_sessions_working(http, start_server, database):
    key1, key2 = database.workdir / "rotation-1.pem", database.workdir / "rotation-2.pem"
    for key in (key1, key2):
        if not key.exists():
            run([database.bin, "keys", "generate", "--out", str(key)])
    secret = "rotation-refresh-secret-0123456789abcdef0123456789"
    old = start_server("rotation-old", GUESTPASS_JWT_SIGNING_KEY_FILE=str(key1), GUESTPASS_REFRESH_TOKEN_SECRET=secret)
    new = start_server("rotation-new", GUESTPASS_JWT_SIGNING_KEY_FILE=str(key2), GUESTPASS_JWT_VERIFY_KEY_FILES=str(key1),
                       GUESTPASS_REFRESH_TOKEN_SECRET=secret)
    app = create_app(database, "rotation")
    guest = sign_up_guest(http, old, app)
    old_kid = header(guest.access_token)["kid"]

    assert http.get(new.url + "/auth/v1/user", headers=guest_headers(app, guest)).status_code == 200, "the old key verifies"
    kids = {key["kid"] for key in http.get(new.url + "/auth/v1/.well-known/jwks.json").json()["keys"]}
    assert old_kid in kids and len(kids) == 2, "the JWKS lists both keys"
    refreshed = refresh(http, new, app, guest.refresh_token)
    assert refreshed.status_code == 200, refreshed.text
    assert header(refreshed.json()["access_token"])["kid"] in kids - {old_kid}, "new tokens are signed with the new key"


def test_hs256_mode(http, start_server, database):
    server = start_server("hs256", GUESTPASS_JWT_SIGNING_KEY_FILE="", GUESTPASS_JWT_HS256_SECRET="hs256-test-secret-0123456789abcdef0123456789abcdef")
    app = create_app(database, "hs256")
    guest = sign_up_guest(http, server, app)
    assert header(guest.access_token)["alg"] == "HS256"
    assert http.get(server.url + "/auth/v1/user", headers=guest_headers(app, guest)).status_code == 200
    assert http.post(server.url + "/rest/v1/rpc/get_quota", headers=guest_headers(app, guest), json={}).status_code == 200
    assert refresh(http, server, app, guest.refresh_token).status_code == 200
    assert http.get(server.url + "/auth/v1/.well-known/jwks.json").json()["keys"] == []
    forged = guest.access_token[:-4] + ("AAAA" if not guest.access_token.endswith("AAAA") else "BBBB")
    assert http.get(server.url + "/auth/v1/user", headers={**api_headers(app), "Authorization": f"Bearer {forged}"}).status_code == 401
