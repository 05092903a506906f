"""Attack: the DeviceCheck welcome grant (`POST /v1/devicecheck/grant`) is given once per physical device.

Eight installs on one phone (eight guests, each with its own fresh token of one stand-in device) claiming at the same
moment get one grant between them: 10 credits in total, one Apple update, no claim left pending, no 5xx. One guest
firing eight claims at once is granted once. A token replayed in another base64 spelling is refused. An Apple
failure in the middle of a grant grants nothing and leaves nothing pending, and the retry grants once.
The DeviceCheck stand-in (`guestpass devicecheck-standin --latency-ms 50`) answers like Apple, slowly enough that
the claims really overlap.
"""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import StandIn, psql, run
from support import create_app, guest_headers, sign_up_guest

pytestmark = pytest.mark.attack  # from the attack run: a hole found and kept closed

TEAM_ID = "TEAM123456"
KEY_ID = "KEY1234567"
LATENCY_MS = 50
INSTALLS = 8
WELCOME_CREDITS = 10
CLAIM_TIMEOUT = 30.0  # seconds per claim request: the lease wait is 10 s


class DeviceCheckStandIn(StandIn):
    """A running `guestpass devicecheck-standin` and its control endpoints."""

    PROBE = "/_standin/devices/probe"

    def token(self, device: str) -> str:
        response = httpx.get(f"{self.url}/_standin/devices/{device}/token", timeout=5)
        assert response.status_code == 200, response.text
        return response.text.strip()

    def device(self, device: str) -> dict:
        response = httpx.get(f"{self.url}/_standin/devices/{device}", timeout=5)
        assert response.status_code == 200, response.text
        return response.json()

    def fail_next(self, status: int, path: str, count: int = 1) -> None:
        response = httpx.post(
            f"{self.url}/_standin/failures", json={"status": status, "count": count, "paths": [path]}, timeout=5
        )
        assert response.status_code < 300, response.text



@pytest.fixture(scope="module")
def standin(database):
    """The DeviceCheck stand-in, with a .p8 key of its own; stopped at teardown."""
    stand_in = DeviceCheckStandIn.start(
        database, "devicecheck-standin", "devicecheck-standin", "--team-id", TEAM_ID, "--key-id", KEY_ID,
        "--latency-ms", str(LATENCY_MS),
    )
    try:
        yield stand_in
    finally:
        stand_in.stop()


def create_grant_app(database, standin, name: str):
    """A new app, its DeviceCheck pointed at the stand-in (so the welcome grant answers as in production)."""
    app = create_app(database, name)
    run(
        [
            database.bin, "apps", "configure", "--app", app.app_id,
            "--devicecheck-team-id", TEAM_ID, "--devicecheck-key-id", KEY_ID,
            "--devicecheck-key-path", str(standin.key_file), "--devicecheck-base-url", standin.url,
        ],
        env={"DATABASE_URL": database.super_url},
    )
    return app


@pytest.fixture(scope="module")
def grant_app(database, standin):
    """An app of its own, its DeviceCheck pointed at the stand-in (nobody else's claims or lease)."""
    return create_grant_app(database, standin, "attack-welcome-grant")


def claim(client, server, app, guest, token):
    return client.post(
        server.url + "/v1/devicecheck/grant", headers=guest_headers(app, guest), json={"device_token": token},
        timeout=CLAIM_TIMEOUT,
    )


def claim_together(server, app, pairs):
    """Sends one claim per (guest, token) pair, all released at the same moment by a barrier."""
    barrier = threading.Barrier(len(pairs), timeout=10)
    limits = httpx.Limits(max_connections=len(pairs), max_keepalive_connections=len(pairs))
    with httpx.Client(limits=limits) as client:

        def one(pair):
            barrier.wait()
            return claim(client, server, app, *pair)

        with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
            return list(pool.map(one, pairs))


def credits_total(database, user_ids) -> int:
    ids = ",".join(f"'{user_id}'" for user_id in user_ids)
    return int(psql(database.super_url, f"select coalesce(sum(credits_balance), 0) from public.users where id in ({ids})"))


def pending_claims(database, user_ids) -> int:
    ids = ",".join(f"'{user_id}'" for user_id in user_ids)
    return int(
        psql(database.super_url, f"select count(*) from guestpass.devicecheck_claims where state = 'pending' and user_id in ({ids})")
    )


def describe(responses) -> list[str]:
    return [f"{response.status_code} {response.text[:200]}" for response in responses]


def test_eight_installs_on_one_phone_get_one_grant(server, grant_app, standin, database, http):
    phone = f"phone-{uuid.uuid4().hex}"
    guests = [sign_up_guest(http, server, grant_app) for _ in range(INSTALLS)]
    tokens = [standin.token(phone) for _ in guests]
    assert len(set(tokens)) == INSTALLS, "every install must present a token of its own"

    responses = claim_together(server, grant_app, list(zip(guests, tokens)))
    seen = describe(responses)

    assert all(response.status_code < 500 for response in responses), f"a claim failed on the server side: {seen}"
    assert all(response.status_code == 200 for response in responses), f"every claim must be answered: {seen}"
    bodies = [response.json() for response in responses]
    granted = [body for body in bodies if body["granted"]]
    assert len(granted) == 1, f"one phone must get exactly one welcome grant, got {len(granted)}: {seen}"
    assert granted[0]["credits_granted"] == WELCOME_CREDITS and granted[0]["credits_balance"] == WELCOME_CREDITS, seen
    for body in bodies:
        if not body["granted"]:
            assert body["credits_granted"] == 0 and isinstance(body["reason"], str) and body["reason"], body

    user_ids = [guest.user_id for guest in guests]
    ids = ",".join(f"'{user_id}'" for user_id in user_ids)
    raced = int(psql(
        database.super_url,
        f"select count(*) from guestpass.devicecheck_claims where user_id in ({ids}) and lease_taken_at is not null",
    ))
    print(f"{raced} of {INSTALLS} claims saw bit0 unset before any was granted")
    assert raced >= 2, f"the claims did not overlap ({raced} saw bit0 unset): the race was not exercised"
    assert credits_total(database, user_ids) == WELCOME_CREDITS, f"credits across the {INSTALLS} installs: {seen}"
    assert pending_claims(database, user_ids) == 0, "every claim must be closed (granted, refused or failed)"
    device = standin.device(phone)
    assert device["bit0"] is True and device["updates"] == 1, f"Apple must be updated exactly once: {device}"


def test_one_guest_claiming_eight_times_at_once_is_granted_once(server, grant_app, standin, database, http):
    phone = f"phone-{uuid.uuid4().hex}"
    guest = sign_up_guest(http, server, grant_app)
    pairs = [(guest, standin.token(phone)) for _ in range(INSTALLS)]

    responses = claim_together(server, grant_app, pairs)
    seen = describe(responses)

    assert all(response.status_code < 500 for response in responses), seen
    granted = [response for response in responses if response.status_code == 200 and response.json()["granted"]]
    assert len(granted) == 1, f"one grant for one guest: {seen}"
    for response in responses:
        if response.status_code != 200:
            assert response.status_code == 409 and response.json()["code"] == "grant_in_progress", seen
    assert credits_total(database, [guest.user_id]) == WELCOME_CREDITS
    assert pending_claims(database, [guest.user_id]) == 0
    assert standin.device(phone)["updates"] == 1


def test_a_token_replayed_in_another_spelling_is_refused(server, grant_app, standin, database, http):
    # A device id whose tokens need two bytes of base64 padding ("<id>:<24-char nonce>" is 1 byte over a multiple
    # of 3), so the same bytes can also be sent with one "=" or none.
    phone = "p" * 7 + uuid.uuid4().hex  # 39 + 1 + 24 = 64 bytes → "==" padding
    first, second = sign_up_guest(http, server, grant_app), sign_up_guest(http, server, grant_app)
    token = standin.token(phone)
    assert token.endswith("=="), token

    answered = claim(http, server, grant_app, first, token)
    assert answered.status_code == 200 and answered.json()["granted"] is True, answered.text
    for spelling in (token, token.rstrip("="), token[:-1]):
        replayed = claim(http, server, grant_app, second, spelling)
        assert replayed.status_code == 400, f"{spelling!r}: {replayed.status_code} {replayed.text}"
        assert replayed.json()["code"] == "device_token_reused", replayed.text
    assert credits_total(database, [first.user_id, second.user_id]) == WELCOME_CREDITS
    assert standin.device(phone)["updates"] == 1


def test_an_apple_failure_mid_grant_grants_nothing_and_the_retry_grants_once(server, grant_app, standin, database, http):
    phone = f"phone-{uuid.uuid4().hex}"
    guest = sign_up_guest(http, server, grant_app)

    standin.fail_next(503, "update_two_bits")
    failed = claim(http, server, grant_app, guest, standin.token(phone))
    assert failed.status_code == 503, failed.text
    assert failed.json()["code"] == "devicecheck_unavailable" and int(failed.headers["retry-after"]) >= 1
    assert credits_total(database, [guest.user_id]) == 0, "a failed grant gives nothing"
    assert pending_claims(database, [guest.user_id]) == 0, "the update certainly did not land: the claim is closed"
    assert standin.device(phone)["updates"] == 0

    retried = claim(http, server, grant_app, guest, standin.token(phone))
    assert retried.status_code == 200 and retried.json()["granted"] is True, retried.text
    again = claim(http, server, grant_app, guest, standin.token(phone))
    assert again.status_code == 200 and again.json()["granted"] is False, again.text
    assert credits_total(database, [guest.user_id]) == WELCOME_CREDITS
    assert pending_claims(database, [guest.user_id]) == 0
    assert standin.device(phone)["updates"] == 1
