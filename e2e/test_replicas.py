"""Three `guestpass serve` replicas on one database are as exact as one: device-idempotent sign-up, refresh rotation
and its reuse rule, the consume race and the welcome grant, with the requests spread over the replicas. Nothing is
kept in a replica's memory that another would need: every rule lives in PostgreSQL.

The topology is production's: the replicas reach the primary through PgBouncer in transaction pooling mode (as the
whole suite does, see conftest) and send their read-only RPC to a streaming read replica through a PgBouncer of its
own (GUESTPASS_DATABASE_READ_URL)."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import api_headers, new_device_secret
from support import create_app, guest_headers, refresh, sign_up_guest
from test_welcome_grant import WELCOME_CREDITS, credits_total, grant_app, standin  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def replicas(start_server, read_replica):
    return [
        start_server(f"replica-{name}", GUESTPASS_SIGNUP_BURST="1000", GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
                     GUESTPASS_REFRESH_REUSE_WINDOW="3", GUESTPASS_DATABASE_READ_URL=read_replica.read_url)
        for name in "abc"
    ]


def spread(calls):
    """Runs the calls at once (a barrier releases them together), each with a client of its own."""
    barrier = threading.Barrier(len(calls), timeout=10)

    def run(call):
        with httpx.Client(timeout=30) as client:
            barrier.wait()
            return call(client)

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def test_one_device_is_one_guest_across_replicas(replicas, database):
    app = create_app(database, "replicas-signup")
    device = new_device_secret()
    responses = spread([
        lambda client, server=replicas[i % 3]: client.post(
            server.url + "/auth/v1/signup", headers=api_headers(app), json={"data": {"device_id": device}})
        for i in range(30)
    ])
    assert [r.status_code for r in responses] == [200] * 30, [r.text for r in responses][:2]
    assert len({r.json()["user"]["id"] for r in responses}) == 1


def test_refresh_rotation_and_reuse_across_replicas(http, replicas, database):
    a, b, c = replicas
    app = create_app(database, "replicas-refresh")
    guest = sign_up_guest(http, a, app)
    rotated = refresh(http, b, app, guest.refresh_token)
    assert rotated.status_code == 200, rotated.text
    replayed = refresh(http, c, app, guest.refresh_token)  # the parent of the active token: the active session back
    assert replayed.status_code == 200 and replayed.json()["refresh_token"] == rotated.json()["refresh_token"]
    again = refresh(http, a, app, rotated.json()["refresh_token"])
    assert again.status_code == 200 and again.json()["refresh_token"] != rotated.json()["refresh_token"]


def test_the_consume_race_across_replicas(replicas, database, read_replica):
    app = create_app(database, "replicas-consume")
    with httpx.Client(timeout=30) as http:
        guest = sign_up_guest(http, replicas[0], app)
        read_replica.caught_up_with(database.super_url)  # get_quota is STABLE: the read replica answers it
        limit = http.post(replicas[0].url + "/rest/v1/rpc/get_quota", headers=guest_headers(app, guest), json={}).json()[
            "daily_limit"]
    responses = spread([
        lambda client, server=replicas[i % 3]: client.post(
            server.url + "/rest/v1/rpc/consume_quota", headers=guest_headers(app, guest), json={})
        for i in range(24)
    ])
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * limit + [429] * (24 - limit), statuses


def test_one_welcome_grant_per_phone_across_replicas(replicas, grant_app, standin, database):  # noqa: F811
    phone = f"phone-{uuid.uuid4().hex}"
    with httpx.Client(timeout=30) as http:
        guests = [sign_up_guest(http, replicas[i % 3], grant_app) for i in range(6)]
    tokens = [standin.token(phone) for _ in guests]
    responses = spread([
        lambda client, server=replicas[i % 3], guest=guests[i], token=tokens[i]: client.post(
            server.url + "/v1/devicecheck/grant", headers=guest_headers(grant_app, guest), json={"device_token": token})
        for i in range(6)
    ])
    assert [r.status_code for r in responses] == [200] * 6, [r.text[:200] for r in responses]
    assert sum(r.json()["granted"] for r in responses) == 1
    assert credits_total(database, [g.user_id for g in guests]) == WELCOME_CREDITS
