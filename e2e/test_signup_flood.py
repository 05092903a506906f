"""Attack: minting guests without end through `rpc("create_guest_user")` with only the publishable key.

Creating a guest over RPC takes a token from the same per-IP bucket as `POST /auth/v1/signup` (burst 5 here): the
6th new guest from one client is a 429 in PostgREST's shape with `Retry-After`, and sign-up from that client is then
refused too; finding an existing device creates nothing and still answers. An IPv6 client is its /64: rotating the
interface id does not refill the bucket, another /64 has its own. Only version 4 device ids are accepted.
Every test uses client addresses no other test uses (through the trusted X-Forwarded-For header), and the module
has an app of its own, so the app's guests can be counted.
"""

from __future__ import annotations

import ipaddress
import random
import uuid

import pytest

from conftest import api_headers, psql
from support import assert_json_error, create_app

pytestmark = pytest.mark.attack  # from the attack run: a hole found and kept closed

BURST = 5
CREATE = "/rest/v1/rpc/create_guest_user"


@pytest.fixture(scope="module")
def flood_server(start_server):
    srv = start_server(
        "attack-flood",
        GUESTPASS_SIGNUP_BURST=str(BURST),
        GUESTPASS_SIGNUP_RATE_PER_HOUR="1",
        GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For",
    )
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def flood_app(database):
    return create_app(database, "attack-guest-flood")


def fresh_ipv4() -> str:
    """An address of 198.18.0.0/15 (benchmarking, never routed) that no other test picks in practice."""
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("198.18.0.0")) + random.randrange(1, 2**17 - 1)))


def fresh_ipv6_prefix() -> str:
    """A random /64 of 2001:db8::/32 (documentation), as its first four groups."""
    return "2001:db8:%x:%x" % (random.randrange(1, 0xFFFF), random.randrange(1, 0xFFFF))


def create_guest(http, server, app, ip, device_id):
    return http.post(
        server.url + CREATE, headers=api_headers(app, **{"X-Forwarded-For": ip}), json={"p_device_id": device_id}
    )


def guests_of(database, app) -> int:
    return int(psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'"))


def assert_rate_limited(response, what):
    assert response.status_code == 429, f"{what}: expected 429, got {response.status_code} {response.text}"
    body = assert_json_error(response, what)
    assert int(response.headers["retry-after"]) >= 1, f"{what}: Retry-After {response.headers.get('retry-after')!r}"
    return body


def test_rpc_guest_creation_takes_the_signup_bucket(flood_server, flood_app, database, http):
    ip = fresh_ipv4()
    before = guests_of(database, flood_app)
    devices = [str(uuid.uuid4()) for _ in range(BURST + 1)]

    created = [create_guest(http, flood_server, flood_app, ip, device) for device in devices[:BURST]]
    assert [r.status_code for r in created] == [200] * BURST, [f"{r.status_code} {r.text}" for r in created]
    user_ids = [r.json() for r in created]
    assert len(set(user_ids)) == BURST and all(uuid.UUID(user_id) for user_id in user_ids), user_ids

    refused = create_guest(http, flood_server, flood_app, ip, devices[BURST])
    body = assert_rate_limited(refused, f"guest #{BURST + 1} from {ip}")
    assert set(body) == {"code", "message", "details", "hint"} and body["code"] == "PT429", body
    assert guests_of(database, flood_app) == before + BURST, "the refused call must create nothing"

    # One bucket: sign-up from the same client is refused as well.
    signup = http.post(
        flood_server.url + "/auth/v1/signup", headers=api_headers(flood_app, **{"X-Forwarded-For": ip}), json={}
    )
    assert_rate_limited(signup, f"sign-up from {ip} after {BURST} RPC guests")
    # The same IPv4 client written as an IPv4-mapped IPv6 address is the same client.
    mapped = create_guest(http, flood_server, flood_app, f"::ffff:{ip}", str(uuid.uuid4()))
    assert_rate_limited(mapped, f"::ffff:{ip}")

    # Finding an existing device creates nothing and takes nothing: still answered, with the same guest.
    for device, user_id in zip(devices[:BURST], user_ids):
        found = create_guest(http, flood_server, flood_app, ip, device)
        assert found.status_code == 200 and found.json() == user_id, f"{found.status_code} {found.text}"
    assert guests_of(database, flood_app) == before + BURST

    # Another client has its own bucket.
    other = create_guest(http, flood_server, flood_app, fresh_ipv4(), devices[BURST])
    assert other.status_code == 200, other.text


def test_signup_then_rpc_share_the_bucket(flood_server, flood_app, http):
    ip = fresh_ipv4()
    for attempt in range(BURST):
        signup = http.post(
            flood_server.url + "/auth/v1/signup", headers=api_headers(flood_app, **{"X-Forwarded-For": ip}), json={}
        )
        assert signup.status_code == 200, f"sign-up #{attempt + 1}: {signup.status_code} {signup.text}"
    assert_rate_limited(create_guest(http, flood_server, flood_app, ip, str(uuid.uuid4())), f"RPC after {BURST} sign-ups")


def test_an_ipv6_client_is_its_slash_64(flood_server, flood_app, http):
    prefix = fresh_ipv6_prefix()
    for host in range(1, BURST + 1):
        response = create_guest(http, flood_server, flood_app, f"{prefix}::{host}", str(uuid.uuid4()))
        assert response.status_code == 200, f"{prefix}::{host}: {response.status_code} {response.text}"
    # Every other address of the /64, in any spelling, is the same client.
    group3, group4 = prefix.split(":")[2:]
    for address in (
        f"{prefix}::{BURST + 1}",
        f"{prefix}:ffff:ffff:ffff:ffff",
        f"2001:DB8:{group3.upper()}:{group4.upper()}:0:0:0:abcd",
        f"2001:0db8:{int(group3, 16):04x}:{int(group4, 16):04x}:1:2:3:4",
    ):
        assert_rate_limited(create_guest(http, flood_server, flood_app, address, str(uuid.uuid4())), address)
        signup = http.post(
            flood_server.url + "/auth/v1/signup", headers=api_headers(flood_app, **{"X-Forwarded-For": address}), json={}
        )
        assert_rate_limited(signup, f"sign-up from {address}")
    # The next /64 is another client.
    neighbour = "2001:db8:%x:%x::1" % (int(group3, 16), (int(group4, 16) + 1) % 0x10000)
    response = create_guest(http, flood_server, flood_app, neighbour, str(uuid.uuid4()))
    assert response.status_code == 200, f"{neighbour}: {response.status_code} {response.text}"


def test_only_random_device_ids_are_accepted(flood_server, flood_app, http):
    ip = fresh_ipv4()
    for device_id, code in (
        ("6f1ed002-ab5d-1c94-a4d9-1c3b4a3a0b7e", "22023"),  # version 1 (time-based, guessable)
        ("6f1ed002-ab5d-4c94-c4d9-1c3b4a3a0b7e", "22023"),  # version 4 digit, wrong variant
        ("00000000-0000-0000-0000-000000000000", "22023"),
        ("1234", "22P02"),
        (None, "22023"),
    ):
        response = create_guest(http, flood_server, flood_app, ip, device_id)
        assert response.status_code == 400, f"{device_id!r}: {response.status_code} {response.text}"
        assert assert_json_error(response, repr(device_id))["code"] == code, response.text
    # None of them took a token: the client still has its whole burst.
    for attempt in range(BURST):
        response = create_guest(http, flood_server, flood_app, ip, str(uuid.uuid4()))
        assert response.status_code == 200, f"guest #{attempt + 1} after refused ids: {response.status_code} {response.text}"
