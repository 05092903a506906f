"""GUESTPASS_DATABASE_READ_URL: read-only RPC (GET, and STABLE or IMMUTABLE functions by POST) runs on a streaming
replica; every write runs on the primary. The replica is a real one on loopback (`scripts/pg-cluster replica`:
pg_basebackup -R of the test cluster), reached through a PgBouncer of its own like the primary. Pausing its WAL
replay freezes what it can answer, which shows which database answered each call."""

from __future__ import annotations

import pytest

from conftest import free_port, psql, with_port
from support import create_app, guest_headers, sign_up_guest


@pytest.fixture(scope="module")
def split_server(start_server, read_replica):
    return start_server(
        "read-replica", GUESTPASS_DATABASE_READ_URL=read_replica.read_url, GUESTPASS_SIGNUP_BURST="1000",
        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
    )


def quota_remaining(http, server, app, guest, method: str) -> int:
    url = server.url + "/rest/v1/rpc/get_quota"
    headers = guest_headers(app, guest)
    response = http.get(url, headers=headers) if method == "GET" else http.post(url, headers=headers, json={})
    assert response.status_code == 200, response.text
    return response.json()["quota_remaining"]


def readings_on(url: str, user_id: str) -> int:
    return int(psql(url, f"select count(*) from public.readings where user_id = '{user_id}'"))


def test_reads_go_to_the_replica_and_writes_to_the_primary(http, split_server, read_replica, database):
    app = create_app(database, "read-replica")
    guest = sign_up_guest(http, split_server, app)
    read_replica.caught_up_with(database.super_url)
    before = quota_remaining(http, split_server, app, guest, "GET")
    assert before > 2

    psql(read_replica.super_url, "select pg_wal_replay_pause()")
    try:
        # Writes succeed while the replica is frozen, so they ran on the primary: the replica refuses every write
        # (25006), and it cannot have seen them.
        consumed = http.post(split_server.url + "/rest/v1/rpc/consume_quota", headers=guest_headers(app, guest), json={})
        assert consumed.status_code == 200, consumed.text
        added = http.post(
            split_server.url + "/rest/v1/rpc/add_reading", headers=guest_headers(app, guest), json={"p_kind": "palm"})
        assert added.status_code == 200, added.text
        assert readings_on(database.super_url, guest.user_id) == 1
        assert readings_on(read_replica.super_url, guest.user_id) == 0

        # Reads answer what the frozen replica holds: GET, and a STABLE function called by POST.
        assert quota_remaining(http, split_server, app, guest, "GET") == before
        assert quota_remaining(http, split_server, app, guest, "POST") == before
        counted = http.post(split_server.url + "/rest/v1/rpc/count_readings", headers=guest_headers(app, guest), json={})
        assert counted.status_code == 200 and counted.json() == 0, counted.text
        # The primary has moved on: two units used (the consume, and the reading's charge).
        on_primary = psql(
            database.super_url,
            "select (guestpass.quota_state(id, guestpass.clock())->>'quota_remaining')::int from public.users "
            f"where id = '{guest.user_id}'",
        )
        assert int(on_primary) == before - 2
    finally:
        psql(read_replica.super_url, "select pg_wal_replay_resume()")

    read_replica.caught_up_with(database.super_url)
    assert quota_remaining(http, split_server, app, guest, "GET") == before - 2
    counted = http.get(split_server.url + "/rest/v1/rpc/count_readings", headers=guest_headers(app, guest))
    assert counted.status_code == 200 and counted.json() == 1, counted.text


def test_a_write_by_get_is_refused_as_on_the_primary(http, split_server, start_server, read_replica, database):
    """GET runs read-only wherever it runs (PostgREST's rule): a volatile function called by GET is refused the same
    way with and without a replica, and nothing is written."""
    app = create_app(database, "read-replica-get-write")
    plain = start_server("read-replica-none", GUESTPASS_SIGNUP_BURST="1000", GUESTPASS_SIGNUP_RATE_PER_HOUR="100000")
    answers = []
    for server in (plain, split_server):
        guest = sign_up_guest(http, server, app)
        read_replica.caught_up_with(database.super_url)
        response = http.get(server.url + "/rest/v1/rpc/add_reading?p_kind=palm", headers=guest_headers(app, guest))
        answers.append((response.status_code, response.json().get("code")))
        assert readings_on(database.super_url, guest.user_id) == 0
    assert answers[0] == answers[1] and 400 <= answers[0][0] < 500, answers


def test_reads_fall_back_to_the_primary_when_the_replica_is_unreachable(http, start_server, database):
    """A read replica that cannot be reached (here: nothing listens at its address) costs no read: read-only calls run
    on the primary instead, and answer the primary's current values."""
    login = database.serve_environment["DATABASE_URL"]
    unreachable = with_port(login, free_port())
    server = start_server(
        "read-replica-unreachable", GUESTPASS_DATABASE_READ_URL=unreachable, GUESTPASS_SIGNUP_BURST="1000",
        GUESTPASS_SIGNUP_RATE_PER_HOUR="100000",
    )
    app = create_app(database, "read-replica-unreachable")
    guest = sign_up_guest(http, server, app)
    before = quota_remaining(http, server, app, guest, "GET")
    consumed = http.post(server.url + "/rest/v1/rpc/consume_quota", headers=guest_headers(app, guest), json={})
    assert consumed.status_code == 200, consumed.text
    assert quota_remaining(http, server, app, guest, "GET") == before - 1
    assert quota_remaining(http, server, app, guest, "POST") == before - 1
    # A call's own error is still its answer, not a reason to retry elsewhere.
    wrong = http.get(server.url + "/rest/v1/rpc/get_quota?p_user_id=00000000-0000-4000-8000-000000000000",
                     headers=guest_headers(app, guest))
    assert wrong.status_code == 403 and wrong.json()["code"] == "42501", wrong.text
