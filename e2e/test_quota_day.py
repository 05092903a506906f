"""Attack: buying a second free allowance the same day by hopping timezones across the date line.

A fresh guest (daily allowance 3, no credits) uses its 3 free consumes, then moves to Pacific/Kiritimati (UTC+14),
Pacific/Pago_Pago (UTC-11), Etc/GMT-14, back to UTC: whichever local date that makes "today", `consume_quota` stays
429 PT429 until the day that started ends. The timezone changes only through `rpc("set_timezone")`: an unknown or
non-IANA name is a 400 22023, the column cannot be written by the client role, and there is no table route to try.
(At any UTC hour one of Kiritimati and Pago_Pago has another local date than UTC, so the hops would gain a day if
the quota day followed the current timezone's date.)
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from conftest import psql
from support import create_app, guest_headers, sign_up_guest

pytestmark = pytest.mark.attack  # from the attack run: a hole found and kept closed

DAILY_FREE = 3
HOPS = ["Pacific/Kiritimati", "Pacific/Pago_Pago", "Etc/GMT-14", "Pacific/Kiritimati", "Etc/GMT+12", "UTC"]


@pytest.fixture(scope="module")
def tz_app(database):
    """An app of its own: the default allowance (3 a day) and no welcome credits."""
    return create_app(database, "attack-timezone-hopping")


@pytest.fixture()
def guest(server, tz_app, http):
    now = datetime.now(timezone.utc)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    if midnight - now < timedelta(seconds=60):
        pytest.skip("too close to UTC midnight: the quota day would legitimately end during the test")
    return sign_up_guest(http, server, tz_app)


def rpc(http, server, app, guest, name, payload):
    return http.post(f"{server.url}/rest/v1/rpc/{name}", headers=guest_headers(app, guest), json=payload)


def assert_exhausted(response, context):
    assert response.status_code == 429, f"{context}: expected 429, got {response.status_code} {response.text}"
    body = response.json()
    assert body["code"] == "PT429", f"{context}: {body}"
    assert int(response.headers["retry-after"]) >= 1, f"{context}: {response.headers.get('retry-after')!r}"


def test_hopping_timezones_gives_no_second_allowance(server, tz_app, guest, database, http):
    for expected in range(DAILY_FREE - 1, -1, -1):
        used = rpc(http, server, tz_app, guest, "consume_quota", {})
        assert used.status_code == 200, used.text
        assert used.json()["quota_remaining"] == expected, used.text
    assert_exhausted(rpc(http, server, tz_app, guest, "consume_quota", {}), "4th consume in UTC")

    for zone in HOPS:
        moved = rpc(http, server, tz_app, guest, "set_timezone", {"p_timezone": zone})
        assert moved.status_code == 200, f"{zone}: {moved.status_code} {moved.text}"
        assert moved.json()["quota_remaining"] == 0, f"moving to {zone} must not refill the day: {moved.text}"
        quota = rpc(http, server, tz_app, guest, "get_quota", {})
        assert quota.status_code == 200 and quota.json()["quota_remaining"] == 0, f"{zone}: {quota.text}"
        assert_exhausted(rpc(http, server, tz_app, guest, "consume_quota", {}), f"consume after moving to {zone}")

    stored = psql(database.super_url, f"select timezone from public.users where id = '{guest.user_id}'")
    assert stored == HOPS[-1], stored
    charged = psql(
        database.super_url,
        f"select coalesce(sum(free_used), 0) from guestpass.daily_usage where user_id = '{guest.user_id}'",
    )
    assert int(charged) == DAILY_FREE, f"free consumes recorded across all days: {charged}"


def test_a_new_request_id_per_hop_gains_nothing_either(server, tz_app, guest, http):
    for attempt in range(DAILY_FREE):
        used = rpc(http, server, tz_app, guest, "consume_quota", {"p_request_id": f"r{attempt}"})
        assert used.status_code == 200, used.text
    for index, zone in enumerate(HOPS):
        assert rpc(http, server, tz_app, guest, "set_timezone", {"p_timezone": zone}).status_code == 200
        response = http.post(
            f"{server.url}/rest/v1/rpc/consume_quota",
            headers=guest_headers(tz_app, guest, **{"Idempotency-Key": f"hop-{index}"}),
            json={},
        )
        assert_exhausted(response, f"consume with a new Idempotency-Key after moving to {zone}")


def test_only_iana_names_and_only_through_set_timezone(server, tz_app, guest, database, http):
    for name in ("Mars/Olympus", "UTC-14", "<+14>-14", "posix/Pacific/Kiritimati", "right/UTC", "posixrules", "localtime",
                 "pacific/kiritimati", "", "Pacific/Kiritimati\n"):
        response = rpc(http, server, tz_app, guest, "set_timezone", {"p_timezone": name})
        assert response.status_code == 400, f"{name!r}: {response.status_code} {response.text}"
        assert response.json()["code"] == "22023", f"{name!r}: {response.text}"
    missing = rpc(http, server, tz_app, guest, "set_timezone", {"p_timezone": None})
    assert missing.status_code == 400 and missing.json()["code"] == "22023", missing.text

    # The table API cannot write the column directly, whatever the method: no grant (403 42501).
    headers = guest_headers(tz_app, guest)
    for method, status in (("PATCH", 403), ("POST", 403), ("PUT", 403)):
        response = http.request(
            method, f"{server.url}/rest/v1/users?id=eq.{guest.user_id}", headers=headers,
            json={"timezone": "Pacific/Kiritimati"},
        )
        assert response.status_code == status, f"{method} /rest/v1/users: {response.status_code} {response.text}"
        assert response.json()["code"] == "42501", response.text
    assert http.get(f"{server.url}/rest/v1/users?select=timezone", headers=headers).json() != [{"timezone": "Pacific/Kiritimati"}]
    # Nor may the client role write it through any function it can run: the column grant is gone.
    can_write = psql(
        database.super_url,
        "select has_column_privilege('authenticated', 'public.users', 'timezone', 'UPDATE')"
        " or has_column_privilege('anon', 'public.users', 'timezone', 'UPDATE')",
    )
    assert can_write == "f", "authenticated/anon must not be able to UPDATE users.timezone"
    stored = psql(database.super_url, f"select timezone from public.users where id = '{guest.user_id}'")
    assert stored == "UTC", stored
