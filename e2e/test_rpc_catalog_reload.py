"""Attack: a burst of calls to made-up RPC function names, to exhaust the database pool with catalog reloads.

The server caches the function catalog and reloads it when a request names an unknown function, at most once per
GUESTPASS_DB_CATALOG_RETRY_MS and single-flight (concurrent callers share one reload). On a server with a
2-connection pool, a 1 s acquire timeout and no pause between reloads (GUESTPASS_DB_CATALOG_RETRY_MS=0, so every
round reloads), rounds of 150 concurrent calls to distinct unknown names mixed with 30 concurrent `get_quota` calls
of a guest all answer: 404 PGRST202 for the unknown names, 200
for `get_quota`, and never 503.
The server also exposes a schema of 8,000 small functions, as a large app may have, so that one catalog query holds
a connection for tens of milliseconds: 150 of them (one per unknown name) queued on 2 connections would wait past
the 1 s acquire timeout and the burst would answer 503s; one shared reload per round does not.
Each round is sent "last byte last": every request goes out on its own connection but for the last byte of its body,
so the server has parsed them all and waits on their bodies; then the last bytes go out together.
"""

from __future__ import annotations

import collections
import json
import selectors
import socket
import time
import uuid

import pytest

from conftest import psql
from support import guest_headers, parse_raw_response, raw_request_bytes, sign_up_guest

pytestmark = pytest.mark.attack  # from the attack run: a hole found and kept closed

UNKNOWN_PER_ROUND = 150
VALID_PER_ROUND = 30
ROUNDS = 3
REQUEST_TIMEOUT = 20.0  # seconds a round may take to be answered
BULK_SCHEMA = "attack_catalog"
BULK_FUNCTIONS = 8000

BULK_SQL = f"""
create schema if not exists {BULK_SCHEMA};
do $$
begin
    for i in 1..{BULK_FUNCTIONS} loop
        execute format(
            'create or replace function {BULK_SCHEMA}.f%s(p_a text, p_b integer default 1) '
            'returns table (x integer, y text) language sql stable set search_path = '''' '
            'as $f$ select 1, p_a $f$', i);
    end loop;
end
$$;
revoke execute on all functions in schema {BULK_SCHEMA} from public;
"""


@pytest.fixture(scope="module")
def bulk_schema(database):
    """A schema of BULK_FUNCTIONS small functions nobody may run, exposed only by this module's server."""
    psql(database.super_url, BULK_SQL)
    return BULK_SCHEMA


@pytest.fixture(scope="module")
def small_pool_server(start_server, bulk_schema):
    srv = start_server(
        "attack-catalog", GUESTPASS_DB_POOL_SIZE="2", GUESTPASS_DB_ACQUIRE_TIMEOUT="1",
        GUESTPASS_DB_SCHEMAS=f"public,{bulk_schema}",
        # No pause between reloads: every round's unknown names reload the catalog (single-flight), without the test
        # waiting out the default second.
        GUESTPASS_DB_CATALOG_RETRY_MS="0",
    )
    try:
        yield srv
    finally:
        srv.stop()


def burst(srv, requests: list[bytes]) -> list:
    """Sends `requests` at the same moment, one connection each (all but the last byte first, then every last byte),
    and reads the answers (RawResponse; status None for a connection closed without one)."""
    sockets = []
    selector = selectors.DefaultSelector()
    try:
        for request in requests:
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=REQUEST_TIMEOUT)
            sock.sendall(request[:-1])
            sockets.append(sock)
        for sock, request in zip(sockets, requests):
            sock.sendall(request[-1:])
        received = [b""] * len(sockets)
        for index, sock in enumerate(sockets):
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, index)
        waiting = len(sockets)
        deadline = time.monotonic() + REQUEST_TIMEOUT
        while waiting and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                try:
                    chunk = key.fileobj.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    received[key.data] += chunk
                else:
                    selector.unregister(key.fileobj)
                    waiting -= 1
        assert waiting == 0, f"{waiting} of {len(requests)} requests unanswered after {REQUEST_TIMEOUT}s"
        return [parse_raw_response(answer) for answer in received]
    finally:
        selector.close()
        for sock in sockets:
            sock.close()


def test_unknown_function_burst_shares_one_catalog_reload(small_pool_server, app, http):
    srv = small_pool_server
    guest = sign_up_guest(http, srv, app)
    warm = http.post(srv.url + "/rest/v1/rpc/get_quota", headers=guest_headers(app, guest), json={})
    assert warm.status_code == 200, warm.text
    anon = [(b"apikey", app.publishable_key.encode()), (b"Authorization", f"Bearer {app.publishable_key}".encode())]
    signed_in = [(name.encode(), value.encode()) for name, value in guest_headers(app, guest).items()]

    tally = collections.Counter()
    failures = []
    for round_number in range(1, ROUNDS + 1):
        tag = uuid.uuid4().hex[:8]
        kinds, requests = [], []
        for index in range(UNKNOWN_PER_ROUND + VALID_PER_ROUND):
            # One valid call after every five unknown ones, so both kinds arrive all through the burst.
            if index % 6 == 5 and kinds.count("get_quota") < VALID_PER_ROUND:
                kinds.append("get_quota")
                requests.append(raw_request_bytes(srv, "POST", "/rest/v1/rpc/get_quota", signed_in, b"{}"))
            else:
                kinds.append("unknown")
                requests.append(raw_request_bytes(srv, "POST", f"/rest/v1/rpc/no_such_function_{tag}_{index}", anon, b"{}"))
        started = time.monotonic()
        answers = burst(srv, requests)
        took = time.monotonic() - started
        for kind, answer in zip(kinds, answers):
            tally[(kind, answer.status)] += 1
            code = None
            if answer.status != 200 and answer.body:
                code = json.loads(answer.body).get("code")
            expected = (404, "PGRST202") if kind == "unknown" else (200, None)
            if (answer.status, code) != expected:
                failures.append(f"round {round_number} {kind}: {answer.status} {code} {answer.body[:120]!r}")
        print(f"catalog stampede round {round_number}: {len(requests)} requests answered in {took:.2f}s")

    summary = ", ".join(f"{kind} {status}: {count}" for (kind, status), count in sorted(tally.items(), key=str))
    print(f"catalog stampede: {summary}")
    assert not failures, f"{len(failures)} unexpected answers ({summary}):\n" + "\n".join(failures[:20])
    assert tally[("unknown", 404)] == UNKNOWN_PER_ROUND * ROUNDS, summary
    assert tally[("get_quota", 200)] == VALID_PER_ROUND * ROUNDS, summary
    assert srv.proc.poll() is None, srv.log_tail()
