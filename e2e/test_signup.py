"""Sign-up through the official `supabase` Python client: one device secret is one guest per app."""

from __future__ import annotations

from conftest import new_device_secret
from support import make_client


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
