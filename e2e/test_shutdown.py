"""Graceful shutdown: on SIGTERM readiness turns 503 for the drain (`GUESTPASS_SHUTDOWN_DRAIN_MS`), the requests in
flight finish with their answers, and the process exits 0 within a bound."""

from __future__ import annotations

import signal
import threading
import time

import httpx

from conftest import psql
from support import create_app, guest_headers, sign_up_guest


def test_sigterm_drains_then_finishes_in_flight_requests(start_server, database):
    psql(database.super_url, """
        create or replace function public.slow_echo(p_ms integer) returns integer language sql volatile
            set search_path = '' as $$ select p_ms from (select pg_catalog.pg_sleep(p_ms / 1000.0)) as s $$;
        revoke all on function public.slow_echo(integer) from public;
        grant execute on function public.slow_echo(integer) to authenticated;
    """)
    server = start_server("shutdown", GUESTPASS_SHUTDOWN_DRAIN_MS="1500")
    app = create_app(database, "shutdown")
    with httpx.Client(timeout=30) as http:
        guest = sign_up_guest(http, server, app)
        assert http.get(server.url + "/health/ready").status_code == 200

    answers: list[int] = []

    def slow_call():
        with httpx.Client(timeout=30) as client:
            response = client.post(server.url + "/rest/v1/rpc/slow_echo", headers=guest_headers(app, guest),
                                   json={"p_ms": 4000})
            answers.append(response.status_code)

    threads = [threading.Thread(target=slow_call) for _ in range(8)]
    for thread in threads:
        thread.start()
    # The requests are in flight once PostgreSQL runs all eight (not after a guessed pause).
    in_flight = "select count(*) from pg_stat_activity where query like '%slow_echo%' and state = 'active' and pid <> pg_backend_pid()"
    deadline = time.monotonic() + 20
    while int(psql(database.super_url, in_flight)) < 8:
        assert time.monotonic() < deadline, "the eight slow calls never ran together"
        time.sleep(0.05)
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)

    readiness = []
    with httpx.Client(timeout=5) as probe:
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            try:
                readiness.append(probe.get(server.url + "/health/ready").status_code)
            except httpx.HTTPError:
                readiness.append(0)
            time.sleep(0.1)
    for thread in threads:
        thread.join(timeout=30)
    code = server.proc.wait(timeout=20)
    elapsed = time.monotonic() - started

    assert 503 in readiness and 200 not in readiness, readiness
    assert answers == [200] * 8, answers
    assert code == 0
    assert elapsed < 10, elapsed
