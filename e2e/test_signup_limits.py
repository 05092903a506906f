"""Must show 5: two `guestpass serve` processes on one database share the sign-up rate limit; many clients at once
get exactly the app's burst."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conftest import api_headers, psql
from support import create_app

BURST = 4
ATTEMPTS = 10


@pytest.fixture(scope="module")
def rate_limited_servers(start_server):
    env = {
        "GUESTPASS_SIGNUP_BURST": str(BURST),
        "GUESTPASS_SIGNUP_RATE_PER_HOUR": "1",
        "GUESTPASS_TRUSTED_PROXY_HEADER": "X-Forwarded-For",
    }
    servers = [start_server("limited-a", **env), start_server("limited-b", **env)]
    try:
        yield servers
    finally:
        for srv in servers:
            srv.stop()


def sign_up(http, server, app, ip):
    return http.post(
        server.url + "/auth/v1/signup",
        headers=api_headers(app, **{"X-Forwarded-For": ip, "X-Supabase-Api-Version": "2024-01-01"}),
        json={},
    )


def test_two_servers_share_the_signup_limit(rate_limited_servers, app, http):
    ip = "203.0.113.7"
    results = []  # (server index, response)
    for attempt in range(ATTEMPTS):
        index = attempt % 2
        results.append((index, sign_up(http, rate_limited_servers[index], app, ip)))

    statuses = [response.status_code for _, response in results]
    assert statuses.count(200) == BURST, statuses
    assert statuses.count(429) == ATTEMPTS - BURST, statuses
    # Both processes took part in the successes and in the refusals: one bucket, not one per process.
    assert {index for index, response in results if response.status_code == 200} == {0, 1}
    assert {index for index, response in results if response.status_code == 429} == {0, 1}
    for _, response in results:
        if response.status_code != 429:
            continue
        assert response.json()["code"] == "over_request_rate_limit"
        assert response.headers["x-sb-error-code"] == "over_request_rate_limit"
        assert response.headers["x-supabase-api-version"] == "2024-01-01"
        assert int(response.headers["retry-after"]) >= 1

    # Another client IP has its own bucket, on either process.
    for index, other_ip in ((0, "203.0.113.8"), (1, "198.51.100.23")):
        response = sign_up(http, rate_limited_servers[index], app, other_ip)
        assert response.status_code == 200, response.text
    # The rightmost X-Forwarded-For entry (the one the trusted proxy appended) is the client.
    spoofed = sign_up(http, rate_limited_servers[1], app, "192.0.2.99, " + ip)
    assert spoofed.status_code == 429


APP_BURST = 40
CLIENTS = 60


def test_concurrent_signups_from_many_clients_take_exactly_the_app_burst(start_server, database):
    """The per-app bucket is spread over shards (0024) so an app's sign-ups do not queue on one row: 60 clients at once,
    each from its own address, against a burst of 40 (5 shards of 8) get exactly 40 guests and 20 refusals (never a
    500: until 0029 a refused take kept its shard locked while trying the fullest, and two sign-ups draining the last
    tokens could deadlock); 60 more at once on the drained bucket are all refused."""
    server = start_server(
        "app-burst",
        GUESTPASS_APP_SIGNUP_BURST=str(APP_BURST),
        GUESTPASS_APP_SIGNUP_RATE_PER_HOUR="1",
        GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For",
    )
    app = create_app(database, "app-burst")
    clients = [httpx.Client(timeout=30) for _ in range(CLIENTS)]
    try:
        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            responses = list(
                pool.map(
                    lambda i: sign_up(clients[i], server, app, f"198.18.{200 + i // 250}.{1 + i % 250}"),
                    range(CLIENTS),
                )
            )
            # A second wave on the drained bucket: refused by the read before any write, every one of them.
            drained = list(
                pool.map(
                    lambda i: sign_up(clients[i], server, app, f"198.18.{210 + i // 250}.{1 + i % 250}"),
                    range(CLIENTS),
                )
            )
    finally:
        for client in clients:
            client.close()

    statuses = [response.status_code for response in responses]
    assert statuses.count(200) == APP_BURST, statuses
    assert statuses.count(429) == CLIENTS - APP_BURST, statuses
    for response in responses:
        if response.status_code == 429:
            assert response.json()["code"] == "over_request_rate_limit"
            assert int(response.headers["retry-after"]) >= 1
    assert [response.status_code for response in drained] == [429] * CLIENTS, [
        (response.status_code, response.text[:200]) for response in drained if response.status_code != 429
    ]
    guests = psql(database.super_url, f"select count(*) from public.users where app_id = '{app.app_id}'")
    assert int(guests) == APP_BURST
    shards = psql(
        database.super_url,
        f"select count(*) || ' ' || sum(round(tokens)) from guestpass.rate_limits where bucket like 'signup:app:{app.app_id}:%'",
    )
    assert shards == "5 0", shards
