"""Share codes and partners through the official Python client's `rpc`, with the Flowers example (bouquets).

Two users pair by code and then read each other's bouquets while a third reads none; 20 pairings at once against one
user cannot pass the partner limit; a brute force from one user and from one IP (bounded) is cut off by the rate
limit and finds nothing, and a wrong and an unknown code answer byte-identical bodies.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import new_device_secret
from support import create_app, guest_headers, make_client, sign_up_guest


@pytest.fixture(scope="module")
def partner_server(start_server):
    """A server that takes the client address from X-Forwarded-For, so each test pairs from addresses of its own
    (the per-address pairing bucket is shared by every app and test)."""
    return start_server(
        "partners", GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For", GUESTPASS_SIGNUP_BURST="1000",
        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
    )


def python_guest(server, app):
    client = make_client(server, app)
    client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})
    return client


def test_partners_pair_by_code_and_see_each_others_bouquets_only(partner_server, database):
    server = partner_server
    app = create_app(database, "flowers")
    alice, bob, carol = (python_guest(server, app) for _ in range(3))
    code = bob.rpc("get_share_code", {}).execute().data
    assert isinstance(code, str) and len(code) == 6
    assert bob.rpc("get_share_code", {}).execute().data == code, "the code is stable until rotated"

    paired = alice.rpc("pair_with_code", {"p_code": code.lower()}).execute().data
    assert paired["paired"] is True
    bob_id = bob.auth.get_user().user.id
    alice_id = alice.auth.get_user().user.id
    assert paired["partner_id"] == bob_id
    assert [p["partner_id"] for p in bob.rpc("list_partners", {}).execute().data] == [alice_id]

    alice.rpc("send_bouquet", {"p_recipient_id": bob_id, "p_flower": "rose", "p_note": "for you"}).execute()
    bob.rpc("send_bouquet", {"p_recipient_id": alice_id, "p_flower": "daisy"}).execute()
    assert sorted(b["flower"] for b in alice.rpc("list_bouquets", {}).execute().data) == ["daisy", "rose"]
    assert sorted(b["flower"] for b in bob.rpc("list_bouquets", {}).execute().data) == ["daisy", "rose"]
    assert carol.rpc("list_bouquets", {}).execute().data == []
    assert bob.rpc("bouquet_streak", {"p_partner_id": alice_id}).execute().data == 1

    # A rotated code pairs no more; unpairing ends it for both.
    new_code = bob.rpc("rotate_share_code", {}).execute().data
    assert new_code != code
    assert carol.rpc("pair_with_code", {"p_code": code}).execute().data == {"paired": False, "reason": "no_such_code"}
    assert alice.rpc("unpair", {"p_partner_id": bob_id}).execute().data is True
    assert bob.rpc("list_partners", {}).execute().data == []


def test_twenty_concurrent_pairings_against_one_user_respect_the_limit(http, partner_server, database):
    server = partner_server
    app = create_app(database, "flowers-race")
    target = sign_up_guest(http, server, app)
    code = http.post(server.url + "/rest/v1/rpc/get_share_code", headers=guest_headers(app, target), json={}).json()
    suitors = [sign_up_guest(http, server, app) for _ in range(20)]
    clients = [httpx.Client(timeout=30) for _ in suitors]
    try:
        with ThreadPoolExecutor(max_workers=len(suitors)) as pool:
            answers = list(pool.map(
                lambda i: clients[i].post(server.url + "/rest/v1/rpc/pair_with_code",
                                          headers=guest_headers(app, suitors[i], **{"X-Forwarded-For": f"203.0.113.{i + 1}"}),
                                          json={"p_code": code}),
                range(len(suitors))))
    finally:
        for client in clients:
            client.close()
    assert [a.status_code for a in answers] == [200] * 20, [a.text for a in answers if a.status_code != 200][:3]
    outcomes = sorted(str(a.json().get("reason", "paired")) for a in answers)
    assert outcomes == ["paired"] + ["partner_limit"] * 19
    partners = http.post(server.url + "/rest/v1/rpc/list_partners", headers=guest_headers(app, target), json={}).json()
    assert len(partners) == 1


def test_brute_force_is_cut_off_and_learns_nothing(http, partner_server, database):
    server = partner_server
    app = create_app(database, "flowers-brute")
    owner = sign_up_guest(http, server, app)
    real = http.post(server.url + "/rest/v1/rpc/get_share_code", headers=guest_headers(app, owner), json={}).json()
    attacker = sign_up_guest(http, server, app)
    url = server.url + "/rest/v1/rpc/pair_with_code"
    from_one = {"X-Forwarded-For": "198.51.100.66"}

    wrong = http.post(url, headers=guest_headers(app, attacker, **from_one), json={"p_code": "not-a-code"})
    unknown = http.post(url, headers=guest_headers(app, attacker, **from_one),
                        json={"p_code": "ZZZZZZ" if real != "ZZZZZZ" else "YYYYYY"})
    assert wrong.status_code == 200 and (wrong.status_code, wrong.content) == (unknown.status_code, unknown.content)

    # One user: 10 tries an hour, then 429 whatever the code, the real one included.
    statuses = [http.post(url, headers=guest_headers(app, attacker, **from_one), json={"p_code": f"G{i:05d}"}).status_code
                for i in range(200)]
    assert statuses.count(200) == 8 and statuses.count(429) == 192
    late = http.post(url, headers=guest_headers(app, attacker, **from_one), json={"p_code": real})
    assert late.status_code == 429 and late.headers["retry-after"]

    # One IP, many users: 30 tries an hour from the address, then 429 for every new guest too.
    ip = {"X-Forwarded-For": "198.51.100.77"}
    guessers = [sign_up_guest(http, server, app, **{"X-Forwarded-For": f"10.9.{i}.1"}) for i in range(40)]
    per_ip = [http.post(url, headers=guest_headers(app, g, **ip), json={"p_code": f"H{i:05d}"}).status_code
              for i, g in enumerate(guessers)]
    assert per_ip.count(200) == 30 and per_ip.count(429) == 10
    listed = http.post(server.url + "/rest/v1/rpc/list_partners", headers=guest_headers(app, owner), json={}).json()
    assert listed == []
