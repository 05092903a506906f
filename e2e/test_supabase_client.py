"""Must show 4: the official `supabase` Python client (PyPI) against GuestPass."""

from __future__ import annotations

import uuid

import pytest
from supabase import ClientOptions, create_client
from supabase_auth.errors import AuthApiError

from conftest import new_device_secret


def make_client(server, app):
    # No auto refresh: its timer thread would outlive the test.
    options = ClientOptions(auto_refresh_token=False, persist_session=False)
    return create_client(server.url, app.publishable_key, options)


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


def test_same_device_same_user_on_fresh_clients(server, app, other_app):
    device = new_device_secret()
    first = make_client(server, app).auth.sign_in_anonymously({"options": {"data": {"device_id": device}}})
    second = make_client(server, app).auth.sign_in_anonymously({"options": {"data": {"device_id": device}}})
    assert first.user.id == second.user.id
    assert first.session.refresh_token != second.session.refresh_token, "each sign-in is its own session"
    # The same device secret in another app is another user.
    elsewhere = make_client(server, other_app).auth.sign_in_anonymously({"options": {"data": {"device_id": device}}})
    assert elsewhere.user.id != first.user.id
    # A different device is a different user.
    fresh = make_client(server, app).auth.sign_in_anonymously(
        {"options": {"data": {"device_id": new_device_secret()}}}
    )
    assert fresh.user.id != first.user.id


def test_client_sees_refresh_error_code(server, app):
    client = make_client(server, app)
    with pytest.raises(AuthApiError) as caught:
        client.auth.refresh_session("not-a-refresh-token")
    # The client reads `code` only when the response echoes X-Supabase-Api-Version (2024-01-01).
    assert caught.value.status == 400
    assert caught.value.code == "refresh_token_not_found"
