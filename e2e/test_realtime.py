"""Realtime (`/realtime/v1/websocket`) through the official Python client (supabase-py's `realtime` 2.34.1, `vsn=1.0.0`).

postgres_changes under row-level security: guests A and B of one app and C of another each receive exactly their own
readings' INSERT, UPDATE and DELETE (whole rows, the old row of an UPDATE and of a DELETE included) and nothing of the
others; an UPDATE that moves a row to another user reaches the new owner with only the old row's primary key and never
the old owner; two devices of one user each receive only their own `device_logs`; anon receives nothing from the
protected tables; columns a role cannot SELECT are cut from records and `columns`. Filters (`eq neq lt lte gt gte in`,
`not.`, comma-AND, quoted values) compare with the column's PostgreSQL type; an invalid binding gets a `system` error.
Identity: a refreshed token keeps the channel, another user's token switches it in place, an access token's `exp`
closes the channel within two seconds of it ("Token has expired N seconds ago"), an invalid token closes it, a signed
out session or a revoked device closes it within the session check (30 s). Broadcast (self, ack, per app, across two
replicas) and presence (state, diffs, leave on close, across two replicas) between two devices of one user. The socket
is refused before the upgrade, as HTTP in GoTrue's error shape.

Every absence is asserted after a positive control (see realtime_support).
"""

from __future__ import annotations

import json
import re
import time
import uuid

import httpx
import pytest
import websockets

from conftest import HTTP_TIMEOUT, new_device_secret, psql
from realtime_support import (
    COMMIT_TIMESTAMP, EVENT_TIMEOUT, READINGS_COLUMNS, RawSocket, Rest, barrier, channel_params, claims_of,
    client_options, client_saw, close_clients, forged_unsigned, join, no_dropped_frames, open_client, resign,
    run_async, same_row, second_device, sign_up, socket_url, until,
)
from support import create_app

no_dropped_frames = no_dropped_frames  # the autouse fixture (realtime_support)

PROBE_SCHEMA = "rt_e2e"

# A table of this module's own, in a schema only its servers expose: a column (`secret_note`) the subscriber's role
# may insert but not SELECT, an int8 for typed filters, per-user policies. No foreign key to public.users (other files
# list the references to users from the catalog).
PROBE_SQL = f"""
create schema if not exists {PROBE_SCHEMA};
grant usage on schema {PROBE_SCHEMA} to authenticated;
create table if not exists {PROBE_SCHEMA}.probe (
    id bigint generated always as identity primary key,
    app_id uuid not null default auth.app_id(),
    user_id uuid not null default auth.uid(),
    label text not null,
    secret_note text,
    n int8 not null default 0,
    created_at timestamptz not null default now()
);
alter table {PROBE_SCHEMA}.probe enable row level security;
alter table {PROBE_SCHEMA}.probe force row level security;
grant select (id, app_id, user_id, label, n, created_at) on {PROBE_SCHEMA}.probe to authenticated;
drop policy if exists probe_select_own on {PROBE_SCHEMA}.probe;
create policy probe_select_own on {PROBE_SCHEMA}.probe for select to authenticated
    using (user_id = (select auth.uid()) and app_id = (select auth.app_id()));
do $$ begin
    if not exists (select 1 from pg_publication_tables
                   where pubname = 'supabase_realtime' and schemaname = '{PROBE_SCHEMA}' and tablename = 'probe') then
        alter publication supabase_realtime add table {PROBE_SCHEMA}.probe;
    end if;
end $$;
select count(*) from guestpass_server.realtime_sync();
"""

SERVER_ENV = dict(
    GUESTPASS_TRUSTED_PROXY_HEADER="X-Forwarded-For", GUESTPASS_SIGNUP_BURST="1000",
    GUESTPASS_SIGNUP_RATE_PER_HOUR="100000", GUESTPASS_DB_SCHEMAS=f"public,{PROBE_SCHEMA}",
)


@pytest.fixture(scope="module")
def probe_table(database):
    psql(database.super_url, PROBE_SQL)
    return f"{PROBE_SCHEMA}.probe"


@pytest.fixture(scope="module")
def rt_server(start_server, probe_table, database):
    server = start_server("realtime-a", **SERVER_ENV)
    # The server installs the capture triggers of the publication's tables when it starts: wait for the probe's.
    deadline = time.monotonic() + 20
    while psql(database.super_url, f"select count(*) from pg_trigger where tgrelid = '{probe_table}'::regclass "
                                   "and not tgisinternal") == "0":
        assert time.monotonic() < deadline, "no capture trigger on the probe table 20 s after the server started"
        time.sleep(0.1)
    return server


@pytest.fixture(scope="module")
def rt_server_b(start_server, rt_server):
    """A second replica on the same database (broadcast and presence across replicas)."""
    return start_server("realtime-b", **SERVER_ENV)


@pytest.fixture(scope="module")
def apps(database):
    return create_app(database, "realtime-one"), create_app(database, "realtime-two")


_ips = iter(f"198.51.100.{n}" for n in range(10, 250))


def next_ip() -> str:
    return next(_ips)


def binding_id(joined, index: int = 0) -> int:
    value = joined.channel.postgres_changes_callbacks[index].id
    assert isinstance(value, int) and value > 0, f"binding {index} has no usable id: {value!r}"
    return value


def check_event(payload: dict, joined, index: int, type_: str, table: str = "readings", schema: str = "public",
                columns=READINGS_COLUMNS) -> dict:
    """The shape of one postgres_changes payload as supabase-py and supabase-js read it; returns `data`."""
    data = payload["data"]
    all_ids = {binding_id(joined, i) for i in range(len(joined.channel.postgres_changes_callbacks))}
    assert binding_id(joined, index) in payload["ids"] and set(payload["ids"]) <= all_ids, payload["ids"]
    assert data["schema"] == schema and data["table"] == table and data["type"] == type_, data
    assert COMMIT_TIMESTAMP.match(data["commit_timestamp"]), data["commit_timestamp"]
    assert data["errors"] is None and data["columns"] == columns, data
    assert ("record" in data) == (type_ != "DELETE") and ("old_record" in data) == (type_ != "INSERT"), data
    return data


# ---------------------------------------------------------------- the socket, before the upgrade


def test_the_socket_is_refused_before_the_upgrade_in_gotrue_shape(rt_server, apps):
    app, _ = apps

    async def refused(url: str) -> tuple[int, dict | bytes]:
        with pytest.raises(websockets.exceptions.InvalidStatus) as caught:
            async with websockets.connect(url, open_timeout=10):
                pass
        response = caught.value.response
        try:
            return response.status_code, json.loads(response.body)
        except ValueError:
            return response.status_code, response.body

    async def body():
        cases = [
            (socket_url(rt_server, None, "1.0.0"), 401, "no_api_key"),
            (socket_url(rt_server, "sb_publishable_not-a-key-at-all", "1.0.0"), 401, "invalid_api_key"),
            (socket_url(rt_server, app.secret_key, "1.0.0"), 401, "secret_key_in_url"),
            (socket_url(rt_server, app.publishable_key, "3.0.0"), 400, "unsupported_vsn"),
            (socket_url(rt_server, app.publishable_key, ""), 400, "unsupported_vsn"),
        ]
        problems = []
        for url, status, code in cases:
            got_status, got = await refused(url)
            shown = url.replace(app.secret_key, "<secret>")
            if not (got_status == status and isinstance(got, dict) and got.get("code") == code
                    and isinstance(got.get("message"), str) and got["message"]):
                problems.append(f"{shown}: expected {status} {code}, got {got_status} {got!r}")
        assert not problems, "refused upgrades:\n" + "\n".join(problems)

        # Absent vsn is 1.0.0 (objects), and the path may end with a slash.
        for path in ("/realtime/v1/websocket", "/realtime/v1/websocket/"):
            socket = await RawSocket.open(rt_server, app.publishable_key, vsn=None, path=path)
            try:
                await socket.push("phoenix", "heartbeat", {}, ref="hb")
                reply = await socket.reply("hb")
                assert reply.payload == {"status": "ok", "response": {}} and not socket.framing_errors, socket.describe()
            finally:
                await socket.close()

    run_async(body())

    # Plain HTTP: 426 to a valid request that did not ask for an upgrade, 401 without a key.
    with httpx.Client(timeout=HTTP_TIMEOUT) as http:
        plain = http.get(socket_url(rt_server, app.publishable_key, "1.0.0").replace("ws://", "http://"))
        assert plain.status_code == 426 and plain.json()["code"] == "websocket_upgrade_required", plain.text
        anonymous = http.get(rt_server.url + "/realtime/v1/websocket")
        assert anonymous.status_code == 401 and anonymous.json()["code"] == "no_api_key", anonymous.text


# ---------------------------------------------------------------- postgres_changes under RLS


def test_guests_receive_their_own_readings_changes_and_nobody_elses(rt_server, apps):
    app, other = apps

    async def body():
        a, b = await sign_up(rt_server, app), await sign_up(rt_server, app)
        c = await sign_up(rt_server, other)
        clients = [await open_client(rt_server, app, a["access_token"]), await open_client(rt_server, app, b["access_token"]),
                   await open_client(rt_server, other, c["access_token"])]
        try:
            ca, cb, cc = [await join(client, f"mine-{i}", [("*", "readings", None)]) for i, client in enumerate(clients)]
            ra, rb, rc = (Rest.guest(rt_server, app, a["access_token"]), Rest.guest(rt_server, app, b["access_token"]),
                          Rest.guest(rt_server, other, c["access_token"]))

            c1 = await rc.insert("readings", {"kind": "coffee", "content": {"who": "c"}})
            c1u = await rc.update("readings", c1["id"], {"content": {"who": "c", "v": 2}})
            await rc.delete("readings", c1["id"])
            b1 = await rb.insert("readings", {"kind": "face", "content": {"who": "b"}})
            b1u = await rb.update("readings", b1["id"], {"kind": "palm"})
            a1 = await ra.insert("readings", {"kind": "palm", "content": {"who": "a"}})
            a1u = await ra.update("readings", a1["id"], {"content": {"who": "a", "v": 2}})
            await ra.delete("readings", a1["id"])
            await rb.delete("readings", b1["id"])
            b2 = await rb.insert("readings", {"kind": "coffee"})  # B's control
            c2 = await rc.insert("readings", {"kind": "face"})  # C's control

            # A: its three changes, whole rows, in order; nothing of B's (same app) or C's (other app), which were
            # committed before A's DELETE, the control.
            await ca.wait_change(lambda p: p["data"]["type"] == "DELETE", what="A's DELETE")
            assert [t for t, _ in ca.records()] == ["INSERT", "UPDATE", "DELETE"], ca.describe()
            insert, update, delete = ca.of(0)
            assert same_row(check_event(insert, ca, 0, "INSERT")["record"], a1)
            data = check_event(update, ca, 0, "UPDATE")
            assert same_row(data["record"], a1u) and same_row(data["old_record"], a1), data
            assert same_row(check_event(delete, ca, 0, "DELETE")["old_record"], a1u), "a DELETE carries the whole old row"

            await cb.wait_change(lambda p: (p["data"].get("record") or {}).get("id") == b2["id"], what="B's control")
            assert [(t, r["id"]) for t, r in cb.records()] == [
                ("INSERT", b1["id"]), ("UPDATE", b1["id"]), ("DELETE", b1["id"]), ("INSERT", b2["id"])], cb.describe()
            assert same_row(cb.of(0)[1]["data"]["record"], b1u) and same_row(cb.of(0)[2]["data"]["old_record"], b1u)

            await cc.wait_change(lambda p: (p["data"].get("record") or {}).get("id") == c2["id"], what="C's control")
            assert [(t, r["id"]) for t, r in cc.records()] == [
                ("INSERT", c1["id"]), ("UPDATE", c1["id"]), ("DELETE", c1["id"]), ("INSERT", c2["id"])], cc.describe()
            assert same_row(cc.of(0)[2]["data"]["old_record"], c1u)
        finally:
            await close_clients(*clients)

    run_async(body())


def test_a_row_moved_to_another_user_reaches_only_the_new_owner_with_the_old_key_only(rt_server, apps):
    """The app's backend (secret key) moves B's reading to A: A can see the new row but could not see the old one, so
    it gets the UPDATE with `old_record` cut to the primary key; B could see only the old row and gets nothing."""
    app, _ = apps

    async def body():
        a, b = await sign_up(rt_server, app), await sign_up(rt_server, app)
        clients = [await open_client(rt_server, app, a["access_token"]), await open_client(rt_server, app, b["access_token"])]
        try:
            ca, cb = [await join(client, "moves", [("*", "readings", None)]) for client in clients]
            rb = Rest.guest(rt_server, app, b["access_token"])
            b1 = await rb.insert("readings", {"kind": "face", "content": {"secret": "b's"}})
            moved = await Rest.service(rt_server, app).update("readings", b1["id"], {"user_id": a["user"]["id"]})
            await Rest.guest(rt_server, app, a["access_token"]).delete("readings", b1["id"])
            b2 = await rb.insert("readings", {"kind": "palm"})  # B's control

            await ca.wait_change(lambda p: p["data"]["type"] == "DELETE", what="A's DELETE of the moved row")
            assert [t for t, _ in ca.records()] == ["UPDATE", "DELETE"], ca.describe()
            data = check_event(ca.of(0)[0], ca, 0, "UPDATE")
            assert same_row(data["record"], moved) and data["old_record"] == {"id": b1["id"]}, data
            assert same_row(check_event(ca.of(0)[1], ca, 0, "DELETE")["old_record"], moved)

            await cb.wait_change(lambda p: (p["data"].get("record") or {}).get("id") == b2["id"], what="B's control")
            assert [(t, r["id"]) for t, r in cb.records()] == [("INSERT", b1["id"]), ("INSERT", b2["id"])], cb.describe()
        finally:
            await close_clients(*clients)

    run_async(body())


def test_two_devices_of_one_user_each_receive_only_their_own_device_logs(rt_server, apps):
    app, _ = apps

    async def body():
        one = await sign_up(rt_server, app, ip=next_ip())
        two = await second_device(rt_server, app, one, ip=next_ip())
        assert claims_of(one["access_token"])["device_id"] != claims_of(two["access_token"])["device_id"]
        clients = [await open_client(rt_server, app, one["access_token"]), await open_client(rt_server, app, two["access_token"])]
        try:
            c1, c2 = [await join(client, "logs", [("*", "device_logs", None)]) for client in clients]
            r1, r2 = Rest.guest(rt_server, app, one["access_token"]), Rest.guest(rt_server, app, two["access_token"])
            log1 = await r1.insert("device_logs", {"message": "one"})
            log1u = await r1.update("device_logs", log1["id"], {"level": "error"})
            log2 = await r2.insert("device_logs", {"message": "two"})
            await r2.delete("device_logs", log2["id"])
            log3 = await r1.insert("device_logs", {"message": "one again"})  # device one's control
            log4 = await r2.insert("device_logs", {"message": "two again"})  # device two's control

            await c1.wait_change(lambda p: (p["data"].get("record") or {}).get("id") == log3["id"], what="device one's control")
            await c2.wait_change(lambda p: (p["data"].get("record") or {}).get("id") == log4["id"], what="device two's control")
            assert [(t, r["id"]) for t, r in c1.records()] == [
                ("INSERT", log1["id"]), ("UPDATE", log1["id"]), ("INSERT", log3["id"])], c1.describe()
            assert same_row(c1.of(0)[1]["data"]["old_record"], log1) and same_row(c1.of(0)[1]["data"]["record"], log1u)
            assert [(t, r["id"]) for t, r in c2.records()] == [
                ("INSERT", log2["id"]), ("DELETE", log2["id"]), ("INSERT", log4["id"])], c2.describe()
            assert same_row(c2.of(0)[1]["data"]["old_record"], log2)
        finally:
            await close_clients(*clients)

    run_async(body())


def test_anon_receives_nothing_from_the_protected_tables(rt_server, apps):
    """The publishable key alone (the client's token until set_auth) is anon, which may not read readings,
    device_logs or reading_notes: the bindings may be refused with a system error or accepted, but nothing arrives."""
    app, _ = apps

    async def body():
        a = await sign_up(rt_server, app)
        anon_client = await open_client(rt_server, app)
        owner_client = await open_client(rt_server, app, a["access_token"])
        try:
            anon = await join(anon_client, "anon-tables", [("*", "readings", None), ("*", "device_logs", None),
                                                           ("*", "reading_notes", None)], expect="any")
            anon_barrier = await join(anon_client, "barrier")
            owner = await join(owner_client, "owner", [("*", "readings", None)])
            ra = Rest.guest(rt_server, app, a["access_token"])
            row = await ra.insert("readings", {"kind": "palm"})
            await ra.insert("reading_notes", {"reading_id": row["id"], "body": "a note"})
            await ra.insert("device_logs", {"message": "a line"})
            await owner.wait_change(lambda p: p["data"]["record"]["id"] == row["id"], what="the owner's insert")
            await barrier(rt_server, app, [client_saw(anon_barrier)])
            assert anon.changes == [], f"anon received rows: {anon.describe()}"
        finally:
            await close_clients(anon_client, owner_client)

    run_async(body())


def test_filters_compare_with_the_columns_type(rt_server, apps):
    app, _ = apps

    async def body():
        a = await sign_up(rt_server, app)
        client = await open_client(rt_server, app, a["access_token"])
        try:
            bindings = [
                ("INSERT", "readings", "kind=eq.palm"),  # 0
                ("INSERT", "readings", "kind=in.(face,coffee)"),  # 1
                ("INSERT", "readings", "kind=neq.palm"),  # 2
                ("INSERT", "readings", "kind=not.eq.palm"),  # 3
                ("*", "readings", "kind=not.in.(face,palm)"),  # 4
                ("INSERT", "readings", "kind=gte.face,kind=lte.palm"),  # 5: comma is AND
                ("INSERT", "readings", f"user_id=eq.{a['user']['id']}"),  # 6: every insert of A
                ("UPDATE", "readings", "kind=eq.palm"),  # 7
                ("INSERT", "readings", 'kind=eq."palm"'),  # 8: a quoted value (supabase-swift's spelling)
                ("INSERT", "readings", "created_at=lt.2000-01-01T00:00:00Z"),  # 9: a timestamptz, never true
                ("DELETE", "readings", "kind=in.(coffee)"),  # 10: evaluated on the old row
            ]
            joined = await join(client, "filters", bindings)
            ra = Rest.guest(rt_server, app, a["access_token"])
            palm = await ra.insert("readings", {"kind": "palm"})
            face = await ra.insert("readings", {"kind": "face"})
            coffee = await ra.insert("readings", {"kind": "coffee"})
            await ra.update("readings", palm["id"], {"content": {"edited": True}})
            await ra.delete("readings", coffee["id"])
            await ra.delete("readings", face["id"])
            end = await ra.insert("readings", {"kind": "face", "content": {"end": True}})
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == end["id"], binding=6, what="the control")

            def ids(index):
                return [(p["data"]["type"], (p["data"].get("record") or p["data"].get("old_record"))["id"])
                        for p in joined.of(index)]

            ins = lambda *rows: [("INSERT", r["id"]) for r in rows]  # noqa: E731
            assert ids(0) == ins(palm), joined.describe()
            assert ids(1) == ins(face, coffee, end)
            assert ids(2) == ins(face, coffee, end)
            assert ids(3) == ins(face, coffee, end)
            assert ids(4) == ins(coffee) + [("DELETE", coffee["id"])]
            assert ids(5) == ins(palm, face, end)
            assert ids(6) == ins(palm, face, coffee, end)
            assert ids(7) == [("UPDATE", palm["id"])]
            assert ids(8) == ins(palm)
            assert ids(9) == []
            assert ids(10) == [("DELETE", coffee["id"])]
            # One event per change, listing every binding it passed.
            first = next(p for i, p in joined.changes if p["data"].get("record", {}).get("id") == palm["id"])
            assert sorted(first["ids"]) == sorted({binding_id(joined, i) for i in (0, 5, 6, 8)}), first["ids"]
        finally:
            await close_clients(client)

    run_async(body())


@pytest.mark.parametrize(("binding", "message"), [
    (("*", "readings", "id=eq.not-a-uuid"), r"invalid input syntax for type uuid"),
    (("*", "readings", "nope=eq.1"), r"invalid column for filter nope"),
    (("*", "readings", "kind=like.p%"), r"like"),
    (("*", "readings", "kind=eq"), r"[Ii]nvalid filter"),
    (("*", "no_such_table", None), r"does not exist"),
    (("*", "bouquets", None), r"not in the supabase_realtime publication"),
    (("*", "probe", "secret_note=eq.x", PROBE_SCHEMA), r"invalid column for filter secret_note"),
], ids=["bad-uuid", "unknown-column", "unknown-operator", "no-operator", "unknown-table", "unpublished-table",
        "unreadable-column"])
def test_an_invalid_binding_gets_a_system_error(rt_server, apps, binding, message):
    app, _ = apps

    async def body():
        a = await sign_up(rt_server, app)
        client = await open_client(rt_server, app, a["access_token"])
        try:
            joined = await join(client, "invalid", [binding], expect="error")
            error = joined.errors[0]
            assert error["extension"] == "postgres_changes" and error["status"] == "error" and error["channel"] == "invalid"
            assert error["message"].startswith("Unable to subscribe to changes with given parameters."), error
            assert re.search(message, error["message"]), error
        finally:
            await close_clients(client)

    run_async(body())


def test_columns_the_role_cannot_select_are_cut(rt_server, apps, database, probe_table):
    app, _ = apps
    visible_columns = [{"name": "id", "type": "int8"}, {"name": "app_id", "type": "uuid"}, {"name": "user_id", "type": "uuid"},
                       {"name": "label", "type": "text"}, {"name": "n", "type": "int8"},
                       {"name": "created_at", "type": "timestamptz"}]

    def write(sql: str) -> str:
        return psql(database.super_url, sql)

    async def body():
        a, b = await sign_up(rt_server, app), await sign_up(rt_server, app)
        owner = f"'{app.app_id}', '{a['user']['id']}'"
        client = await open_client(rt_server, app, a["access_token"])
        try:
            joined = await join(client, "probe", [("*", "probe", None, PROBE_SCHEMA),
                                                  ("INSERT", "probe", "n=gt.9", PROBE_SCHEMA),
                                                  ("INSERT", "probe", "n=in.(9,100)", PROBE_SCHEMA)])
            ten = write(f"insert into {probe_table} (app_id, user_id, label, secret_note, n) values ({owner}, 'ten', 'hush', 10) returning id")
            nine = write(f"insert into {probe_table} (app_id, user_id, label, secret_note, n) values ({owner}, 'nine', 'hush', 9) returning id")
            write(f"insert into {probe_table} (app_id, user_id, label, n) values ('{app.app_id}', '{b['user']['id']}', 'b', 50)")
            write(f"update {probe_table} set label = 'TEN', secret_note = 'still hush' where id = {ten}")
            write(f"delete from {probe_table} where id = {nine}")
            end = write(f"insert into {probe_table} (app_id, user_id, label, n) values ({owner}, 'end', 100) returning id")
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == int(end), binding=1, what="the control")

            kinds = [(p["data"]["type"], (p["data"].get("record") or p["data"].get("old_record"))["label"]) for p in joined.of(0)]
            assert kinds == [("INSERT", "ten"), ("INSERT", "nine"), ("UPDATE", "TEN"), ("DELETE", "nine"),
                             ("INSERT", "end")], joined.describe()
            for payload in joined.of(0):
                data = check_event(payload, joined, 0, payload["data"]["type"], table="probe", schema=PROBE_SCHEMA,
                                   columns=visible_columns)
                for image in (data.get("record"), data.get("old_record")):
                    if image is not None:
                        assert set(image) == {c["name"] for c in visible_columns}, f"secret_note not cut: {image}"
            update = joined.of(0)[2]["data"]
            assert update["old_record"]["label"] == "ten" and update["record"]["n"] == 10
            # n is an int8: 10 > 9 as numbers (as text "10" < "9").
            assert [p["data"]["record"]["label"] for p in joined.of(1)] == ["ten", "end"]
            assert [p["data"]["record"]["label"] for p in joined.of(2)] == ["nine", "end"]
        finally:
            await close_clients(client)

    run_async(body())


def test_a_policy_that_raises_for_one_subscriber_costs_only_that_subscriber(rt_server, apps, database):
    """A table whose SELECT policy raises for guest B only (a uuid cast to int, at run time): B's channel is told with
    a `system` error, A's keeps receiving (Supabase's realtime#2093: one raising policy stopped everyone)."""
    app, _ = apps

    async def body():
        a, b = await sign_up(rt_server, app), await sign_up(rt_server, app)
        table = f"{PROBE_SCHEMA}.fragile_{uuid.uuid4().hex[:8]}"
        psql(database.super_url, f"""
            create table {table} (id bigint generated always as identity primary key, app_id uuid not null,
                                  user_id uuid not null, label text not null);
            alter table {table} enable row level security;
            grant select on {table} to authenticated;
            create policy fragile on {table} for select to authenticated using (
                app_id = (select auth.app_id())
                and (case when (select auth.uid()) = '{b['user']['id']}' then (user_id::text)::int else 1 end) = 1);
            alter publication supabase_realtime add table {table};
            select count(*) from guestpass_server.realtime_sync();
        """)
        name = table.split(".")[1]
        clients = [await open_client(rt_server, app, a["access_token"]), await open_client(rt_server, app, b["access_token"])]
        try:
            ca, cb = [await join(client, "fragile", [("*", name, None, PROBE_SCHEMA)]) for client in clients]
            inserted = psql(database.super_url, f"insert into {table} (app_id, user_id, label) values "
                                                f"('{app.app_id}', '{a['user']['id']}', 'for everyone in the app') returning id")
            await ca.wait_change(lambda p: p["data"]["record"]["id"] == int(inserted), what="A's change")
            await until(lambda: cb.errors, lambda: f"B's system error: {cb.describe()}")
            assert cb.errors[0]["extension"] == "postgres_changes" and cb.errors[0]["status"] == "error", cb.describe()
            assert cb.changes == []
        finally:
            await close_clients(*clients)
            psql(database.super_url, f"alter publication supabase_realtime drop table {table}; drop table {table}")

    run_async(body())


# ---------------------------------------------------------------- identity: refresh, switch, expiry, revocation


def test_a_refreshed_token_keeps_the_subscription(rt_server, apps, database):
    """The whole client: sign_in_anonymously hands the token to the realtime client, refresh_session hands it the
    new one (an `access_token` push on the joined channel); changes keep arriving. Then a short-lived token replaced
    in place by a long one before its `exp`: the channel outlives the short token."""
    app, _ = apps

    async def body():
        client = await __import__("supabase").acreate_client(rt_server.url, app.publishable_key, client_options())
        try:
            session = (await client.auth.sign_in_anonymously({"options": {"data": {"device_id": new_device_secret()}}})).session
            await until(lambda: client.realtime.access_token == session.access_token, "the SIGNED_IN token in realtime")
            joined = await join(client, "refresh", [("*", "readings", None)])
            first = (await client.table("readings").insert({"kind": "palm"}).execute()).data[0]
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == first["id"], what="the first insert")

            refreshed = (await client.auth.refresh_session()).session
            assert refreshed.access_token != session.access_token
            await until(lambda: client.realtime.access_token == refreshed.access_token, "the TOKEN_REFRESHED token in realtime")
            await joined.round_trip()
            second = (await client.table("readings").insert({"kind": "face"}).execute()).data[0]
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == second["id"], what="the insert after the refresh")

            expiry = int(time.time()) + 3
            await client.realtime.set_auth(resign(database, refreshed.access_token, exp=expiry))
            await joined.round_trip()
            await client.realtime.set_auth(refreshed.access_token)
            await joined.round_trip()
            await until(lambda: time.time() > expiry + 2.5, "the short token's expiry to pass", timeout=10)
            third = (await client.table("readings").insert({"kind": "coffee"}).execute()).data[0]
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == third["id"], what="the insert after the short token's exp")
            assert not joined.errors and not joined.closed, joined.describe()
        finally:
            await close_clients(client)

    run_async(body())


def test_another_users_token_switches_the_identity_in_place(rt_server, apps):
    app, _ = apps

    async def body():
        a, b = await sign_up(rt_server, app), await sign_up(rt_server, app)
        client = await open_client(rt_server, app, a["access_token"])
        try:
            joined = await join(client, "switch", [("*", "readings", None)])
            ra, rb = Rest.guest(rt_server, app, a["access_token"]), Rest.guest(rt_server, app, b["access_token"])
            a0 = await ra.insert("readings", {"kind": "palm"})
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == a0["id"], what="A's row as A")

            await client.realtime.set_auth(b["access_token"])
            await joined.round_trip()
            b1 = await rb.insert("readings", {"kind": "face"})
            a1 = await ra.insert("readings", {"kind": "face"})
            b2 = await rb.insert("readings", {"kind": "coffee"})
            await joined.wait_change(lambda p: p["data"]["record"]["id"] == b2["id"], what="B's control")
            assert [r["id"] for _, r in joined.records()] == [a0["id"], b1["id"], b2["id"]], (
                f"after set_auth(B) the channel sees B's rows and not A's ({a1['id']}): {joined.describe()}")
            assert not joined.errors and not joined.closed
        finally:
            await close_clients(client)

    run_async(body())


def test_a_token_expiring_while_subscribed_closes_the_channel_within_two_seconds(rt_server, apps, database):
    """The guest's own token re-signed with an `exp` 4 s ahead (the server's GUESTPASS_JWT_EXPIRY cannot go below
    60 s): a `system` error "Token has expired N seconds ago", then `phx_close`, within 2.5 s of `exp`."""
    app, _ = apps

    async def body():
        a = await sign_up(rt_server, app)
        expiry = int(time.time()) + 4
        client = await open_client(rt_server, app, resign(database, a["access_token"], exp=expiry))
        try:
            joined = await join(client, "expiring", [("*", "readings", None)])
            await until(lambda: joined.closed, lambda: f"the close at exp: {joined.describe()}", timeout=15)
            closed_at = next(at for state, _, at in joined.states if state == "CLOSED")
            errors = joined.errors
            assert errors and errors[0]["extension"] == "system" and errors[0]["channel"] == "expiring", joined.describe()
            assert re.fullmatch(r"Token has expired \d+ seconds ago", errors[0]["message"]), errors
            assert [s for s, _, _ in joined.states][-2:] == ["CHANNEL_ERROR", "CLOSED"], "the system error, then phx_close"
            assert expiry - 0.05 <= closed_at <= expiry + 2.5, f"closed {closed_at - expiry:+.2f} s from exp"
        finally:
            await close_clients(client)

    run_async(body())


def test_invalid_tokens_are_refused_at_join_and_close_a_joined_channel(rt_server, apps, database):
    app, other = apps

    async def body():
        a, c = await sign_up(rt_server, app), await sign_up(rt_server, other)
        refusals = [
            (forged_unsigned(a["access_token"]), "InvalidJWTToken: Invalid access token"),
            (resign(database, a["access_token"], exp=int(time.time()) - 120), "InvalidJWTToken: Token has expired"),
            (c["access_token"], "InvalidJWTToken: The access token belongs to another app"),
        ]
        for token, reason in refusals:
            client = await open_client(rt_server, app, token)
            try:
                joined = await join(client, "refused", [("*", "readings", None)], expect="refused")
                assert joined.errors[0]["reason"].startswith(reason), joined.describe()
            finally:
                await close_clients(client)

        client = await open_client(rt_server, app, a["access_token"])
        try:
            joined = await join(client, "then-invalid", [("*", "readings", None)])
            await client.realtime.set_auth(forged_unsigned(a["access_token"]))
            await until(lambda: joined.closed, lambda: f"the close: {joined.describe()}")
            assert joined.errors[0]["extension"] == "system" and joined.errors[0]["message"] == "Invalid access token", joined.describe()
        finally:
            await close_clients(client)

    run_async(body())


def test_signing_out_or_revoking_the_device_closes_the_channel_within_the_session_check(rt_server, apps):
    """Slow by design: the server re-checks sessions every 30 s (RealtimeSocketLimits.sessionCheckInterval, not
    configurable); both cases run at once, bounded by 40 s."""
    app, _ = apps

    async def body():
        leaving = await sign_up(rt_server, app, ip=next_ip())
        device_one = await sign_up(rt_server, app, ip=next_ip())
        device_two = await second_device(rt_server, app, device_one, ip=next_ip())
        clients = [await open_client(rt_server, app, leaving["access_token"]),
                   await open_client(rt_server, app, device_one["access_token"]),
                   await open_client(rt_server, app, device_two["access_token"])]
        try:
            signed_out, revoked, kept = [await join(client, "session", [("*", "readings", None)]) for client in clients]
            async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
                logout = await http.post(rt_server.url + "/auth/v1/logout", headers={
                    "apikey": app.publishable_key, "Authorization": f"Bearer {leaving['access_token']}"})
                assert logout.status_code == 204, logout.text
                revoke = await http.post(rt_server.url + "/rest/v1/rpc/revoke_device", headers={
                    "apikey": app.publishable_key, "Authorization": f"Bearer {device_two['access_token']}"},
                    json={"p_device_id": claims_of(device_one["access_token"])["device_id"]})
                assert revoke.status_code == 200 and revoke.json() is True, revoke.text
            ended = time.time()
            await until(lambda: signed_out.closed and revoked.closed,
                        lambda: f"both closes: {signed_out.describe()} / {revoked.describe()}", timeout=40)
            for joined in (signed_out, revoked):
                assert joined.errors and joined.errors[0]["extension"] == "system", joined.describe()
                assert joined.errors[0]["message"] == "Session has ended", joined.errors
                assert next(at for s, _, at in joined.states if s == "CLOSED") - ended <= 32
            # The user's other device keeps its channel.
            row = await Rest.guest(rt_server, app, device_two["access_token"]).insert("device_logs", {"message": "still here"})
            assert not kept.closed and not kept.errors, kept.describe()
            assert row["message"] == "still here"
        finally:
            await close_clients(*clients)

    run_async(body(), timeout=90)


# ---------------------------------------------------------------- broadcast and presence


def test_broadcast_between_two_devices_of_one_user(rt_server, rt_server_b, apps):
    app, other = apps

    async def body():
        one = await sign_up(rt_server, app, ip=next_ip())
        two = await second_device(rt_server, app, one, ip=next_ip())
        stranger = await sign_up(rt_server, other)
        room = f"room-{uuid.uuid4().hex[:8]}"
        c1 = await open_client(rt_server, app, one["access_token"])
        c2 = await open_client(rt_server, app, two["access_token"])
        c3 = await open_client(rt_server_b, app, two["access_token"])  # device two again, on the other replica
        cx = await open_client(rt_server, other, stranger["access_token"])
        cy = await open_client(rt_server_b, other, stranger["access_token"])
        try:
            d1, d2, d3 = [await join(client, room) for client in (c1, c2, c3)]
            x, y = await join(cx, room), await join(cy, room)

            await d1.channel.send_broadcast("cursor", {"x": 1, "y": [2, 3]})
            got = await d2.wait_broadcast(lambda b: b["event"] == "cursor", "the cursor on device two")
            # (supabase-py's BroadcastPayload keeps event, payload and meta; the raw frames are checked in test_realtime_v2.)
            assert got == {"event": "cursor", "payload": {"x": 1, "y": [2, 3]}}, got
            await d3.wait_broadcast(lambda b: b["event"] == "cursor", "the cursor on the other replica")
            await d2.channel.send_broadcast("pong", {})  # written after the cursor was delivered
            await d1.wait_broadcast(lambda b: b["event"] == "pong", "the pong on device one")
            assert [b["event"] for b in d1.broadcasts] == ["pong"], f"the sender got its own broadcast: {d1.describe()}"
            await y.channel.send_broadcast("theirs", {})  # the other app, same topic name
            await x.wait_broadcast(lambda b: b["event"] == "theirs", "the other app's own broadcast")
            assert [b["event"] for b in x.broadcasts] == ["theirs"], f"another app's broadcast leaked: {x.describe()}"
            await d1.channel.send_broadcast("last", {})
            await d2.wait_broadcast(lambda b: b["event"] == "last", "the control on device two")
            await d3.wait_broadcast(lambda b: b["event"] == "last", "the control on the other replica")
            assert [b["event"] for b in d2.broadcasts] == ["cursor", "last"], d2.describe()
            assert [b["event"] for b in d3.broadcasts] == ["cursor", "pong", "last"], d3.describe()

            # self: the sender receives its own; ack: the push is answered ok.
            loop = await join(c1, f"{room}-self", params=channel_params(self_=True, ack=True))
            answered: list = []
            push = await loop.channel.push("broadcast", {"type": "broadcast", "event": "echo", "payload": {"n": 1}})
            push.receive("ok", lambda r: answered.append(("ok", r))).receive("error", lambda r: answered.append(("error", r)))
            await loop.wait_broadcast(lambda b: b["event"] == "echo", "the sender's own broadcast (self)")
            await until(lambda: answered, "the ack")
            assert answered[0][0] == "ok", answered
        finally:
            await close_clients(c1, c2, c3, cx, cy)

    run_async(body())


def test_presence_between_two_devices_across_replicas(rt_server, rt_server_b, apps):
    app, _ = apps

    async def body():
        one = await sign_up(rt_server, app, ip=next_ip())
        two = await second_device(rt_server, app, one, ip=next_ip())
        room = f"presence-{uuid.uuid4().hex[:8]}"
        c1 = await open_client(rt_server, app, one["access_token"])
        c2 = await open_client(rt_server_b, app, two["access_token"])
        try:
            d1 = await join(c1, room, params=channel_params(presence=True, presence_key="device-one"), presence_sync=lambda: None)
            await d1.channel.track({"status": "online"})
            await until(lambda: "device-one" in d1.channel.presence_state(), lambda: f"d1's own join: {d1.channel.presence_state()}")

            d2 = await join(c2, room, params=channel_params(presence=True, presence_key="device-two"), presence_sync=lambda: None)
            state = await until(lambda: d2.channel.presence_state().get("device-one"),
                                lambda: f"device one in the presence_state on the other replica: {d2.channel.presence_state()}")
            assert len(state) == 1 and state[0]["status"] == "online" and state[0]["presence_ref"], state

            await d2.channel.track({"status": "away"})
            theirs = await until(lambda: d1.channel.presence_state().get("device-two"),
                                 lambda: f"device two's join on device one: {d1.channel.presence_state()}")
            assert theirs[0]["status"] == "away", theirs

            await d1.channel.untrack()
            await until(lambda: "device-one" not in d2.channel.presence_state(),
                        lambda: f"device one's leave on device two: {d2.channel.presence_state()}")
            await c2.realtime.close()  # the socket goes: its presence leaves
            await until(lambda: "device-two" not in d1.channel.presence_state(),
                        lambda: f"device two's leave on close: {d1.channel.presence_state()}")
        finally:
            await close_clients(c1, c2)

    run_async(body())
