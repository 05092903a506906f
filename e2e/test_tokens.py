"""Must show 1 (the PyJWT half): a sign-up token verifies with only the published JWKS."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

import jwt
import pytest

from conftest import api_headers, new_device_secret

JWKS_PATH = "/auth/v1/.well-known/jwks.json"


def b64url_json(segment: str) -> str:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)).decode()


def test_jwks_document(server, http):
    response = http.get(server.url + JWKS_PATH)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=600"
    assert response.headers["content-type"].startswith("application/json")
    keys = response.json()["keys"]
    assert keys, "at least one published key"
    for key in keys:
        assert key["kty"] == "EC" and key["crv"] == "P-256" and key["kid"]
        assert "d" not in key, "no private key material"
        assert key.get("alg", "ES256") == "ES256"


def test_access_token_verifies_with_jwks_only(server, app, http):
    device = new_device_secret()
    response = http.post(
        server.url + "/auth/v1/signup", headers=api_headers(app), json={"data": {"device_id": device, "plan": "free"}}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    token = body["access_token"]

    header = jwt.get_unverified_header(token)
    assert header["alg"] == "ES256" and header.get("kid")

    jwks_client = jwt.PyJWKClient(server.url + JWKS_PATH, headers={"apikey": app.publishable_key}, timeout=15)
    signing_key = jwks_client.get_signing_key_from_jwt(token)
    assert signing_key.key_id == header["kid"]
    claims = jwt.decode(
        token,
        signing_key.key,
        algorithms=["ES256"],
        audience="authenticated",
        issuer="guestpass-pytest",
        options={"require": ["exp", "iat", "sub", "aud", "iss"]},
    )

    assert claims["sub"] == body["user"]["id"]
    assert claims["role"] == "authenticated"
    assert claims["is_anonymous"] is True
    uuid.UUID(claims["session_id"])
    assert claims["app_id"] == app.app_id
    assert claims["aud"] == "authenticated"
    assert claims["exp"] - claims["iat"] == body["expires_in"] == 3600
    assert claims["exp"] == body["expires_at"]
    assert "anonymous" in json.dumps(claims.get("amr", []))
    assert claims.get("user_metadata", {}).get("plan") == "free"
    device_public_id = uuid.UUID(claims["device_id"])
    assert str(device_public_id) != device, "device_id claim is the device row's public id"

    # The device secret (and its stored hash) appear nowhere.
    secret_hash = hashlib.sha256(device.encode()).hexdigest()
    payload_text = b64url_json(token.split(".")[1])
    for text in (token, payload_text, response.text, json.dumps(dict(response.headers))):
        for needle in (device, device.upper(), device.replace("-", ""), secret_hash):
            assert needle not in text
    assert "device_id" not in json.dumps(body["user"].get("user_metadata", {}))

    # The same device signs in again: same user, same public device id, still no secret.
    again = http.post(server.url + "/auth/v1/signup", headers=api_headers(app), json={"data": {"device_id": device}})
    assert again.status_code == 200 and device not in again.text
    again_claims = jwt.decode(again.json()["access_token"], signing_key.key, algorithms=["ES256"], audience="authenticated")
    assert again_claims["sub"] == claims["sub"]
    assert again_claims["device_id"] == claims["device_id"]
    assert again_claims["session_id"] != claims["session_id"]

    # GET /auth/v1/user with the token answers the same user and leaks no secret either.
    user = http.get(server.url + "/auth/v1/user", headers={"apikey": app.publishable_key, "Authorization": f"Bearer {token}"})
    assert user.status_code == 200 and user.json()["id"] == claims["sub"]
    assert device not in user.text and secret_hash not in user.text

    # The verification really is bound to the published key and the claims.
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, signing_key.key, algorithms=["ES256"], audience="somebody-else")
    head, payload, signature = token.split(".")
    tampered_claims = json.loads(payload_text) | {"role": "service_role"}
    tampered = base64.urlsafe_b64encode(json.dumps(tampered_claims).encode()).rstrip(b"=").decode()
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(f"{head}.{tampered}.{signature}", signing_key.key, algorithms=["ES256"], audience="authenticated")


def test_other_app_token_carries_its_app_id(server, other_app, http):
    response = http.post(server.url + "/auth/v1/signup", headers=api_headers(other_app), json={})
    assert response.status_code == 200, response.text
    token = response.json()["access_token"]
    key = jwt.PyJWKClient(server.url + JWKS_PATH, timeout=15).get_signing_key_from_jwt(token)
    claims = jwt.decode(token, key.key, algorithms=["ES256"], audience="authenticated")
    assert claims["app_id"] == other_app.app_id
    assert claims.get("device_id") is None
