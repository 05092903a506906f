"""Must show 5: two `guestpass serve` processes on one database share the sign-up rate limit."""

from __future__ import annotations

import pytest

from conftest import api_headers

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
