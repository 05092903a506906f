"""Moving to a new phone, recovery, and the user's devices.

The old phone makes a transfer code; the new phone redeems it in the sign-up call (`signInAnonymously` with
`data: {device_id: <its own new secret>, transfer_code}`) and is the same user as a new device. A spent, expired
(the row aged, not slept on) or wrong code is refused alike; 20 concurrent redemptions add one device. A recovery code
restores the account once and a regenerated one voids the old. Revoking a device ends its refresh at once and its
secret signs in no more, the other device untouched.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import api_headers, new_device_secret, psql
from support import assert_error, bearer_headers, create_app, make_client, refresh


@pytest.fixture(scope="module")
def device_server(start_server):
    """Its own server, so the per-address redemption bucket (10 an hour) is this module's alone."""
    return start_server("devices", GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For", GUESTPASS_SIGNUP_BURST="1000",
                        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000")


def phone(http, server, app, ip: str, **data) -> httpx.Response:
    """A sign-up from a phone with a new secret of its own, from address `ip`."""
    return http.post(server.url + "/auth/v1/signup", headers=api_headers(app, **{"X-Forwarded-For": ip}),
                     json={"data": {"device_id": new_device_secret(), **data}})


def bearer(app, session: dict) -> dict:
    return bearer_headers(app, session["access_token"])


def devices(http, server, app, session) -> list[dict]:
    response = http.post(server.url + "/rest/v1/rpc/list_devices", headers=bearer(app, session), json={})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_transfer_code_moves_the_account_to_a_new_phone_once(http, device_server, database):
    server = device_server
    app = create_app(database, "transfer")
    old = phone(http, server, app, "192.0.2.10").json()
    made = http.post(server.url + "/v1/devices/transfer-code", headers=bearer(app, old))
    assert made.status_code == 200, made.text
    code = made.json()["code"]
    assert made.json()["qr_payload"].endswith(code) and made.json()["expires_at"]
    assert psql(database.super_url, f"select count(*) from guestpass.account_codes where code_hash like '%{code}%'") == "0"

    new = phone(http, server, app, "192.0.2.11", transfer_code=code.lower().replace("-", " "))
    assert new.status_code == 200, new.text
    new = new.json()
    assert new["user"]["id"] == old["user"]["id"]
    listed = devices(http, server, app, new)
    assert len(listed) == 2 and sum(d["is_current"] for d in listed) == 1
    assert refresh(http, server, app, old["refresh_token"]).status_code == 200, "the old phone keeps working"

    again = phone(http, server, app, "192.0.2.11", transfer_code=code)
    wrong = phone(http, server, app, "192.0.2.11", transfer_code="ABCDE-FGHJK")
    assert_error(again, 400, "invalid_transfer_code", echoed=False)
    assert (again.status_code, again.content) == (wrong.status_code, wrong.content)

    expiring = http.post(server.url + "/v1/devices/transfer-code", headers=bearer(app, old)).json()["code"]
    psql(database.super_url, f"update guestpass.account_codes set expires_at = now() - interval '1 second' "
                             f"where user_id = '{old['user']['id']}' and used_at is null and kind = 'transfer'")
    late = phone(http, server, app, "192.0.2.12", transfer_code=expiring)
    assert (late.status_code, late.content) == (wrong.status_code, wrong.content)


def test_twenty_concurrent_redemptions_of_one_code_add_one_device(http, device_server, database):
    server = device_server
    app = create_app(database, "transfer-race")
    old = phone(http, server, app, "192.0.2.20").json()
    code = http.post(server.url + "/v1/devices/transfer-code", headers=bearer(app, old)).json()["code"]
    clients = [httpx.Client(timeout=30) for _ in range(20)]
    try:
        with ThreadPoolExecutor(max_workers=20) as pool:
            answers = list(pool.map(
                lambda i: phone(clients[i], server, app, f"192.0.2.{100 + i}", transfer_code=code), range(20)))
    finally:
        for client in clients:
            client.close()
    assert sorted(a.status_code for a in answers) == [200] + [400] * 19, [a.text for a in answers][:2]
    assert len(devices(http, server, app, old)) == 2


def test_a_recovery_code_restores_the_account_once_and_a_new_one_voids_the_old(http, device_server, database):
    server = device_server
    app = create_app(database, "recovery")
    first = phone(http, server, app, "192.0.2.30").json()
    old_code = http.post(server.url + "/v1/account/recovery-code", headers=bearer(app, first)).json()["code"]
    code = http.post(server.url + "/v1/account/recovery-code", headers=bearer(app, first)).json()["code"]
    assert len(code.replace("-", "")) == 20 and code != old_code
    assert_error(phone(http, server, app, "192.0.2.31", recovery_code=old_code), 400, "invalid_recovery_code", echoed=False)

    third = phone(http, server, app, "192.0.2.32", recovery_code=code)
    assert third.status_code == 200, third.text
    assert third.json()["user"]["id"] == first["user"]["id"] and third.json()["recovery_code_used"] is True
    assert_error(phone(http, server, app, "192.0.2.33", recovery_code=code), 400, "invalid_recovery_code", echoed=False)


def test_revoking_a_device_ends_it_at_once_and_leaves_the_other(http, device_server, database):
    server = device_server
    app = create_app(database, "revoke")
    secret = new_device_secret()
    old = http.post(server.url + "/auth/v1/signup", headers=api_headers(app, **{"X-Forwarded-For": "192.0.2.40"}),
                    json={"data": {"device_id": secret}}).json()
    # The only device cannot be revoked (no other way in).
    only = devices(http, server, app, old)[0]["device_id"]
    refused = http.post(server.url + "/rest/v1/rpc/revoke_device", headers=bearer(app, old), json={"p_device_id": only})
    assert refused.status_code == 409, refused.text

    code = http.post(server.url + "/v1/devices/transfer-code", headers=bearer(app, old)).json()["code"]
    new = phone(http, server, app, "192.0.2.41", transfer_code=code).json()
    revoked = http.post(server.url + "/rest/v1/rpc/revoke_device", headers=bearer(app, new), json={"p_device_id": only})
    assert revoked.status_code == 200 and revoked.json() is True

    assert refresh(http, server, app, old["refresh_token"]).status_code == 400
    again = http.post(server.url + "/auth/v1/signup", headers=api_headers(app, **{"X-Forwarded-For": "192.0.2.40"}),
                      json={"data": {"device_id": secret}})
    assert_error(again, 401, "device_revoked", echoed=False)
    assert refresh(http, server, app, new["refresh_token"]).status_code == 200, "the other device is untouched"
    assert [d["is_current"] for d in devices(http, server, app, new)] == [True]


def test_the_python_client_redeems_a_transfer_code_in_sign_in_anonymously(http, device_server, database):
    server = device_server
    app = create_app(database, "transfer-py")
    old = phone(http, server, app, "192.0.2.50").json()
    code = http.post(server.url + "/v1/devices/transfer-code", headers=bearer(app, old)).json()["code"]
    moved = make_client(server, app).auth.sign_in_anonymously(
        {"options": {"data": {"device_id": new_device_secret(), "transfer_code": code}}})
    assert moved.user.id == old["user"]["id"]
