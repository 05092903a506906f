"""Metrics: Prometheus text on a listener of its own (`GUESTPASS_METRICS_ADDRESS`, loopback), never on the API port:
requests by route template and status, latency histograms, the database pool's gauges, sign-ups and refreshes by
outcome, RPC calls (consumes) by function and status, rate-limit denials, database errors by SQLSTATE class, storage's
bytes, objects and backend calls."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from conftest import api_headers, free_port, psql
from support import create_app, guest_headers, refresh, sign_up_guest


@pytest.fixture(scope="module")
def metrics_server(start_server):
    port = free_port()
    server = start_server("metrics", GUESTPASS_METRICS_ADDRESS=f"127.0.0.1:{port}", GUESTPASS_SIGNUP_BURST="1000",
                          GUESTPASS_SIGNUP_RATE_PER_HOUR="100000")
    server.metrics_url = f"http://127.0.0.1:{port}/metrics"
    return server


def value(text: str, name: str, **labels: str) -> float:
    """The sample of `name` whose labels include `labels` (0 when absent)."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}(?:{{(.*)}})? ([0-9.e+-]+)$", line)
        if match and all(f'{k}="{v}"' in (match.group(1) or "") for k, v in labels.items()):
            total += float(match.group(2))
    return total


def test_metrics_count_what_the_service_did(http, metrics_server, database):
    server = metrics_server
    app = create_app(database, "metrics")
    guest = sign_up_guest(http, server, app)
    assert refresh(http, server, app, guest.refresh_token).status_code == 200
    for _ in range(5):  # 3 free, then 429s
        http.post(server.url + "/rest/v1/rpc/consume_quota", headers=guest_headers(app, guest), json={})
    http.post(server.url + "/rest/v1/rpc/add_reading", headers=guest_headers(app, guest), json={"p_kind": "nope"})

    text = httpx.get(server.metrics_url, timeout=5).text
    assert value(text, "guestpass_signups_total", outcome="created") >= 1
    assert value(text, "guestpass_refreshes_total", outcome="rotated") >= 1
    assert value(text, "guestpass_rpc_calls_total", function="consume_quota", status="200") == 3
    assert value(text, "guestpass_rpc_calls_total", function="consume_quota", status="429") == 2
    assert value(text, "guestpass_rate_limit_denials_total") >= 2
    assert value(text, "guestpass_database_errors_total", **{"class": "23"}) >= 1  # the check constraint
    assert value(text, "guestpass_db_pool_size") > 0 and value(text, "guestpass_db_pool_open_connections") >= 1
    assert value(text, "hb_requests", http_route="/auth/v1/signup", http_response_status_code="200") >= 1
    assert value(text, "hb_requests", http_route="/rest/v1/rpc/{function}", http_response_status_code="429") >= 2 or \
        value(text, "hb_requests", http_response_status_code="429") >= 2, "requests by route template and status"
    assert value(text, "http_server_request_duration_count", http_route="/auth/v1/signup") >= 1, "latency histograms"
    assert httpx.get(server.url + "/metrics", timeout=5).status_code == 404, "never on the API port"


def test_realtime_metrics_count_sockets_channels_and_changes(http, metrics_server, database):
    """A socket, a channel, a captured and a delivered change, and the polls show in the Realtime metrics."""
    from realtime_support import Rest, close_clients, join, open_client, run_async, sign_up

    server = metrics_server
    app = create_app(database, "metrics-realtime")
    before = httpx.get(server.metrics_url).text

    async def body():
        guest = await sign_up(server, app)
        client = await open_client(server, app, guest["access_token"])
        try:
            channel = await join(client, "metrics", [("INSERT", "readings", None)])
            row = await Rest.guest(server, app, guest["access_token"]).insert("readings", {"kind": "palm"})
            await channel.wait_change(lambda p: p["data"]["record"]["id"] == row["id"], what="the insert")
            during = httpx.get(server.metrics_url).text
            assert value(during, "guestpass_realtime_sockets") >= 1
            assert value(during, "guestpass_realtime_channels") >= 1
        finally:
            await close_clients(client)

    run_async(body())
    # The gauges come down when the socket is gone, and its channel is counted as ended with it.
    deadline = time.monotonic() + 10
    while True:
        after = httpx.get(server.metrics_url).text
        if value(after, "guestpass_realtime_sockets") == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert value(after, "guestpass_realtime_sockets") == 0
    assert value(after, "guestpass_realtime_channels") == 0
    assert value(after, "guestpass_realtime_channels_closed_total", reason="socket") >= 1
    for name in ("guestpass_realtime_changes_captured_total", "guestpass_realtime_changes_delivered_total"):
        assert value(after, name) > value(before, name), name
    assert value(after, "guestpass_realtime_poll_duration_seconds_count") > 0
    assert value(after, "guestpass_realtime_poll_lag_seconds_count") > 0


def test_storage_metrics_count_bytes_objects_and_backend_calls(http, start_server, database, tmp_path):
    """Storage: bytes in and out and objects by backend, each backend call timed, the sweep's deletions; no call
    counted as the store's failure when none failed."""
    port = free_port()
    server = start_server("metrics-storage", GUESTPASS_METRICS_ADDRESS=f"127.0.0.1:{port}", GUESTPASS_STORAGE_DIR=str(tmp_path / "storage"),
                          GUESTPASS_SIGNUP_BURST="1000", GUESTPASS_SIGNUP_RATE_PER_HOUR="100000")
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    app = create_app(database, "metrics-storage")
    admin = {"apikey": app.secret_key}
    assert http.post(server.url + "/storage/v1/bucket", headers=admin, json={"name": "m"}).status_code == 200
    for name in ("a", "b"):
        put = http.post(server.url + f"/storage/v1/object/m/{name}", headers={**admin, "Content-Type": "text/plain"}, content=b"x" * 1000)
        assert put.status_code == 200, put.text
    assert http.get(server.url + "/storage/v1/object/m/a", headers=admin).content == b"x" * 1000
    assert http.put(server.url + "/storage/v1/object/m/a", headers={**admin, "Content-Type": "text/plain"}, content=b"y").status_code == 200
    # The replaced version is due 30 s later (downloads in flight finish from it): aged here.
    psql(database.super_url, f"update guestpass.storage_sweep set not_before = now() - interval '1 second' where app_id = '{app.app_id}'")
    deadline = time.monotonic() + 10
    while True:
        text = httpx.get(metrics_url, timeout=5).text
        if value(text, "guestpass_storage_swept_total") >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert value(text, "guestpass_storage_bytes_total", direction="in", backend="file") == 2001
    assert value(text, "guestpass_storage_bytes_total", direction="out", backend="file") == 1000
    assert value(text, "guestpass_storage_objects_total", op="upload") == 3
    assert value(text, "guestpass_storage_backend_seconds_count", op="put", backend="file") == 3
    assert value(text, "guestpass_storage_backend_seconds_count", op="get", backend="file") == 1
    assert value(text, "guestpass_storage_swept_total") >= 1, "the replaced version's bytes were swept"
    assert value(text, "guestpass_storage_backend_errors_total") == 0
