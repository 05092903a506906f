"""Realtime's `vsn=2.0.0` framing over raw WebSockets, as supabase-js (≥ 2.91) and supabase-swift speak it: text frames
are `[join_ref, ref, topic, event, payload]`, broadcasts may be binary (kind 3 from the client).

The join reply echoes every binding in the order sent with the client's own members (absent keys absent, `event` as
written, `schema` when sent) and a non-zero integer `id`, equal for equal bindings; then a `system` message; a change
is `[null,null,topic,"postgres_changes",{ids,data}]`. Heartbeats, `phx_leave` (ok, then `phx_close` with the join's
ref), a second join on a topic, join refusals, an invalid `access_token` push (`system` error, then `phx_close`); a
binary kind-3 broadcast reaches the other sockets of the topic and app (v2 and v1 alike) as a text broadcast, acked
when asked; a `system` error leaves the channel joined. Malformed frames close the socket (1007/1008) and the server
keeps serving the others; more than 100 messages a second close it (1008); the 101st channel is refused; a message
over 1 MiB closes the socket, a broadcast over 256 KiB is refused.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
import websockets
import websockets.asyncio.client

from realtime_support import (
    COMMIT_TIMESTAMP, READINGS_COLUMNS, RawSocket, Rest, forged_unsigned, kind3, run_async, sign_up, until,
)
from support import create_app

TOPIC = "realtime:v2-room"


@pytest.fixture(scope="module")
def v2_server(start_server):
    return start_server("realtime-v2", GUESTPASS_SIGNUP_BURST="1000", GUESTPASS_SIGNUP_RATE_PER_HOUR="100000")


@pytest.fixture(scope="module")
def v2_apps(database):
    return create_app(database, "realtime-v2-one"), create_app(database, "realtime-v2-two")


async def heartbeat_works(server, app) -> None:
    """A fresh socket is served: its heartbeat is answered."""
    async with await RawSocket.open(server, app.publishable_key) as socket:
        await socket.push("phoenix", "heartbeat", {}, ref="alive")
        assert (await socket.reply("alive")).payload == {"status": "ok", "response": {}}


def test_the_join_reply_echoes_bindings_verbatim_and_changes_come_as_arrays(v2_server, v2_apps):
    app, _ = v2_apps

    async def body():
        guest = await sign_up(v2_server, app)
        bindings = [
            {"event": "*", "schema": "public", "table": "readings", "filter": "kind=eq.palm"},
            {"event": "INSERT", "schema": "public", "table": "device_logs"},
            {"event": "delete", "table": "readings"},  # no schema, lower-case event: echoed as sent
            {"event": "*", "schema": "public", "table": "readings", "filter": "kind=eq.palm"},  # equal to the first
            {"event": "UPDATE", "schema": "public", "table": "readings", "filter": ""},
        ]
        async with await RawSocket.open(v2_server, app.publishable_key) as socket:
            join_ref, reply, system = await socket.join(TOPIC, bindings=bindings, access_token=guest["access_token"])
            assert json.loads(reply.raw)[:4] == [join_ref, join_ref, TOPIC, "phx_reply"], reply.raw
            assert reply.payload["status"] == "ok", reply.raw
            echoed = reply.payload["response"]["postgres_changes"]
            assert len(echoed) == len(bindings), reply.raw
            ids = []
            for sent, got in zip(bindings, echoed):
                binding_id = got["id"]
                assert type(binding_id) is int and 0 < binding_id < 2**31, reply.raw
                assert {k: v for k, v in got.items() if k != "id"} == sent, f"not echoed verbatim: {sent} -> {got}"
                ids.append(binding_id)
            assert ids[0] == ids[3], "equal bindings get equal ids"
            assert len({ids[0], ids[1], ids[2], ids[4]}) == 4, f"different bindings get different ids: {ids}"
            assert json.loads(system.raw) == [join_ref, None, TOPIC, "system", {
                "extension": "postgres_changes", "status": "ok", "message": "Subscribed to PostgreSQL",
                "channel": TOPIC.removeprefix("realtime:")}], system.raw

            # A join without bindings still carries the key (supabase-swift waits for it).
            _, bare, _ = await socket.join("realtime:v2-bare")
            assert bare.payload == {"status": "ok", "response": {"postgres_changes": []}}, bare.raw

            rest = Rest.guest(v2_server, app, guest["access_token"])
            palm = await rest.insert("readings", {"kind": "palm"})
            face = await rest.insert("readings", {"kind": "face"})
            await rest.update("readings", face["id"], {"kind": "coffee"})
            await rest.delete("readings", palm["id"])
            control = await rest.insert("readings", {"kind": "palm", "content": {"control": True}})
            await socket.wait(lambda f: f.event == "postgres_changes" and f.payload["data"].get("record", {}).get("id")
                              == control["id"], "the control insert")
            changes = [f for f in socket.frames if f.event == "postgres_changes"]
            for frame in changes:
                assert frame.join_ref is None and frame.ref is None and frame.topic == TOPIC, frame.raw
                assert json.loads(frame.raw)[:4] == [None, None, TOPIC, "postgres_changes"], frame.raw
            seen = [(f.payload["data"]["type"], (f.payload["data"].get("record") or f.payload["data"]["old_record"])["id"],
                     sorted(set(f.payload["ids"]))) for f in changes]
            assert seen == [
                ("INSERT", palm["id"], [ids[0]]),
                ("UPDATE", face["id"], [ids[4]]),
                ("DELETE", palm["id"], sorted({ids[0], ids[2]})),
                ("INSERT", control["id"], [ids[0]]),
            ], seen
            data = changes[0].payload["data"]
            assert data["columns"] == READINGS_COLUMNS and COMMIT_TIMESTAMP.match(data["commit_timestamp"]), data
            assert data["errors"] is None and data["record"]["kind"] == "palm" and "old_record" not in data, data
            assert not socket.framing_errors, socket.framing_errors

    run_async(body())


def test_a_filter_on_one_table_does_not_stop_another_tables_changes(v2_server, v2_apps):
    """One channel, a filtered binding on readings and an unfiltered one on device_logs (a common shape: supabase-js
    apps listen to several tables on one channel): the device_logs insert arrives."""
    app, _ = v2_apps

    async def body():
        guest = await sign_up(v2_server, app)
        async with await RawSocket.open(v2_server, app.publishable_key) as socket:
            topic = f"realtime:two-tables-{uuid.uuid4().hex[:6]}"
            _, reply, system = await socket.join(topic, access_token=guest["access_token"], bindings=[
                {"event": "*", "schema": "public", "table": "readings", "filter": "kind=eq.palm"},
                {"event": "INSERT", "schema": "public", "table": "device_logs"}])
            assert system.payload["status"] == "ok", system.raw
            log = await Rest.guest(v2_server, app, guest["access_token"]).insert("device_logs", {"message": "hello"})
            got = await socket.wait(lambda f: f.event in ("postgres_changes", "system") and f is not system,
                                    "the device_logs insert")
            assert got.event == "postgres_changes" and got.payload["data"]["record"]["id"] == log["id"], got.raw
            assert got.payload["ids"] == [reply.payload["response"]["postgres_changes"][1]["id"]], got.raw

    run_async(body())


def test_heartbeat_leave_rejoin_and_refusals(v2_server, v2_apps, database):
    app, other = v2_apps

    async def body():
        guest = await sign_up(v2_server, app)
        stranger = await sign_up(v2_server, other)
        async with await RawSocket.open(v2_server, app.publishable_key) as socket:
            await socket.push("phoenix", "heartbeat", {}, ref="26")
            beat = await socket.reply("26")
            assert json.loads(beat.raw) == [None, "26", "phoenix", "phx_reply", {"status": "ok", "response": {}}], beat.raw

            first_ref, reply, _ = await socket.join("realtime:leave-me")
            assert reply.payload["status"] == "ok"
            # A second join on the same topic closes the first channel (its join ref) before the new one is joined.
            second_ref, reply, _ = await socket.join("realtime:leave-me")
            assert reply.payload["status"] == "ok"
            closes = [json.loads(f.raw) for f in socket.frames if f.event == "phx_close"]
            assert closes == [[first_ref, first_ref, "realtime:leave-me", "phx_close", {}]], closes

            leave_ref = await socket.push("realtime:leave-me", "phx_leave", {}, join_ref=second_ref)
            left = await socket.reply(leave_ref)
            assert json.loads(left.raw) == [second_ref, leave_ref, "realtime:leave-me", "phx_reply",
                                            {"status": "ok", "response": {}}], left.raw
            closed = await socket.wait(lambda f: f.event == "phx_close" and f.join_ref == second_ref, "phx_close after leave")
            assert json.loads(closed.raw) == [second_ref, second_ref, "realtime:leave-me", "phx_close", {}], closed.raw

            # A push to a topic this socket has not joined (any more).
            ref = await socket.push("realtime:leave-me", "presence", {"event": "track", "payload": {}}, join_ref=second_ref)
            unmatched = await socket.reply(ref)
            assert unmatched.payload == {"status": "error", "response": {"reason": "unmatched topic"}}, unmatched.raw

            # Join refusals: `"<Code>: <message>"` reasons.
            refusals = [
                ("realtime:", {}, None, "TopicNameRequired: "),
                ("room-without-prefix", {}, None, "unmatched topic"),  # Phoenix: no channel matches the topic
                ("realtime:private-room", {"private": True}, None, "Unauthorized: "),
                ("realtime:bad-token", {}, forged_unsigned(guest["access_token"]), "InvalidJWTToken: "),
                ("realtime:foreign-token", {}, stranger["access_token"], "InvalidJWTToken: "),
            ]
            for topic, config, token, reason in refusals:
                join_ref, reply, _ = await socket.join(topic, config=config, access_token=token)
                assert json.loads(reply.raw)[:4] == [join_ref, join_ref, topic, "phx_reply"], reply.raw
                assert reply.payload["status"] == "error" and reply.payload["response"]["reason"].startswith(reason), reply.raw

            # An access_token push with the API key itself, null or an unknown event: ignored, the channel stays.
            join_ref, reply, _ = await socket.join("realtime:ignored", access_token=guest["access_token"])
            for payload in ({"access_token": app.publishable_key}, {"access_token": None}):
                await socket.push("realtime:ignored", "access_token", payload, join_ref=join_ref)
            await socket.push("realtime:ignored", "some_future_event", {"x": 1}, join_ref=join_ref)
            ref = await socket.push("realtime:ignored", "presence", {"event": "untrack", "payload": {}}, join_ref=join_ref)
            assert (await socket.reply(ref)).payload["status"] == "ok", socket.describe()
            assert not [f for f in socket.frames if f.topic == "realtime:ignored" and f.event in ("system", "phx_close")]

            # An invalid access_token push ends a joined channel: system error, then phx_close.
            join_ref, reply, _ = await socket.join("realtime:token", access_token=guest["access_token"],
                                                   bindings=[{"event": "*", "schema": "public", "table": "readings"}])
            assert reply.payload["status"] == "ok"
            start = len(socket.frames)
            await socket.push("realtime:token", "access_token", {"access_token": forged_unsigned(guest["access_token"])},
                              join_ref=join_ref)
            closed = await socket.wait(lambda f: f.event == "phx_close" and f.topic == "realtime:token", "phx_close", start=start)
            system = next(f for f in socket.frames[start:] if f.event == "system")
            assert json.loads(system.raw) == [join_ref, None, "realtime:token", "system", {
                "extension": "system", "status": "error", "message": "Invalid access token", "channel": "token"}], system.raw
            assert socket.frames.index(system) < socket.frames.index(closed)
            assert json.loads(closed.raw) == [join_ref, join_ref, "realtime:token", "phx_close", {}], closed.raw
            assert socket.close_code is None, "the socket stays open"

    run_async(body())


def test_a_system_error_leaves_the_channel_joined(v2_server, v2_apps):
    app, _ = v2_apps

    async def body():
        guest = await sign_up(v2_server, app)
        async with (
            await RawSocket.open(v2_server, app.publishable_key) as socket,
            await RawSocket.open(v2_server, app.publishable_key) as sender,
        ):
            topic = f"realtime:errs-{uuid.uuid4().hex[:6]}"
            join_ref, reply, system = await socket.join(topic, access_token=guest["access_token"], bindings=[
                {"event": "*", "schema": "public", "table": "readings", "filter": "id=eq.not-a-uuid"}])
            assert reply.payload["status"] == "ok", reply.raw
            assert system.payload["status"] == "error" and system.payload["extension"] == "postgres_changes", system.raw
            ref = await socket.push(topic, "presence", {"event": "untrack", "payload": {}}, join_ref=join_ref)
            assert (await socket.reply(ref)).payload["status"] == "ok", "still joined"
            sender_ref, _, _ = await sender.join(topic)
            await sender.broadcast(topic, "still", {}, join_ref=sender_ref)
            await socket.wait_broadcast("still", "a broadcast after the error")

    run_async(body())


def test_a_binary_broadcast_reaches_the_topic_as_text(v2_server, v2_apps):
    app, other = v2_apps

    async def body():
        topic = f"realtime:bin-{uuid.uuid4().hex[:6]}"
        async with (
            await RawSocket.open(v2_server, app.publishable_key) as sender,
            await RawSocket.open(v2_server, app.publishable_key) as v2,
            await RawSocket.open(v2_server, app.publishable_key, vsn="1.0.0") as v1,
            await RawSocket.open(v2_server, other.publishable_key) as foreign,
            await RawSocket.open(v2_server, other.publishable_key) as foreign_sender,
        ):
            join_ref, _, _ = await sender.join(topic, config={"broadcast": {"ack": True, "self": False}})
            v2_ref, _, _ = await v2.join(topic)
            await v1.join(topic)
            await foreign.join(topic)
            foreign_sender_ref, _, _ = await foreign_sender.join(topic)

            payload = {"x": 1, "name": "zoë", "nested": {"list": [1, 2.5, None, True]}}
            await sender.send_raw(kind3(topic, "cursor", json.dumps(payload).encode(), join_ref=join_ref, ref="77"))
            ack = await sender.reply("77")
            assert json.loads(ack.raw) == [join_ref, "77", topic, "phx_reply", {"status": "ok", "response": {}}], ack.raw
            got = await v2.wait(lambda f: f.event == "broadcast", "the broadcast on the v2 socket")
            assert not got.binary and json.loads(got.raw) == [None, None, topic, "broadcast", {
                "type": "broadcast", "event": "cursor", "payload": payload}], got.raw
            got = await v1.wait(lambda f: f.event == "broadcast", "the broadcast on the v1 socket")
            frame = json.loads(got.raw)
            frame.pop("join_ref", None)
            assert frame == {"topic": topic, "event": "broadcast", "ref": None,
                             "payload": {"type": "broadcast", "event": "cursor", "payload": payload}}, got.raw

            # A binary payload (encoding 0) is refused to the sender; the socket stays.
            await sender.send_raw(kind3(topic, "blob", b"\x00\x01\x02", join_ref=join_ref, ref="78", encoding=0))
            refused = await sender.reply("78")
            assert refused.payload["status"] == "error", refused.raw

            # Controls written after the broadcast was delivered: the sender never got its own (no `self`), the other
            # app's socket on the same topic name never got it, and nobody got the refused binary one.
            await v2.broadcast(topic, "after", {}, join_ref=v2_ref)
            await sender.wait_broadcast("after", "the control on the sender")
            await foreign_sender.broadcast(topic, "theirs", {}, join_ref=foreign_sender_ref)
            await foreign.wait_broadcast("theirs", "the other app's control")
            await v1.wait_broadcast("after", "the control on v1")
            assert [f.payload["event"] for f in sender.frames if f.event == "broadcast"] == ["after"], sender.describe()
            assert [f.payload["event"] for f in v1.frames if f.event == "broadcast"] == ["cursor", "after"], v1.describe()
            assert [f.payload["event"] for f in foreign.frames if f.event == "broadcast"] == ["theirs"], (
                f"another app's socket got this app's broadcast: {foreign.describe()}")
            for socket in [sender, v2, v1, foreign, foreign_sender]:
                assert not socket.framing_errors and socket.close_code is None, socket.describe()

    run_async(body())


def malformed_cases(app_topic: str):
    return [
        ("2.0.0", "not JSON", "{"),
        ("2.0.0", "an object on v2", json.dumps({"topic": "phoenix", "event": "heartbeat", "payload": {}, "ref": "1"})),
        ("2.0.0", "an array of 4", json.dumps([None, "1", "phoenix", "heartbeat"])),
        ("2.0.0", "a number as ref", json.dumps([None, 1, "phoenix", "heartbeat", {}])),
        ("2.0.0", "a number as topic", json.dumps([None, "1", 5, "heartbeat", {}])),
        ("2.0.0", "binary of kind 9", bytes([9, 0, 0, 0, 0, 0, 1])),
        ("2.0.0", "binary shorter than its header", bytes([3, 1])),
        ("2.0.0", "binary lengths past the end", bytes([3, 0, 0, 200, 1, 0, 1]) + b"realtime:x"),
        ("2.0.0", "binary with invalid JSON", kind3(app_topic, "e", b"{", join_ref="1")),
        ("2.0.0", "binary with an unknown encoding", kind3(app_topic, "e", b"{}", join_ref="1", encoding=7)),
        ("2.0.0", "binary with invalid UTF-8 topic", bytes([3, 0, 0, 2, 1, 0, 1]) + b"\xff\xfe" + b"e" + b"{}"),
        ("1.0.0", "an array on v1", json.dumps([None, "1", "phoenix", "heartbeat", {}])),
        ("1.0.0", "an object without payload", json.dumps({"topic": "phoenix", "event": "heartbeat", "ref": "1"})),
        ("1.0.0", "binary on v1", kind3(app_topic, "e", b"{}", join_ref="1")),
        ("1.0.0", "JSON nested past the depth limit", json.dumps({"topic": "phoenix", "event": "heartbeat", "ref": "1",
                                                                  "payload": json.loads("[" * 40 + "]" * 40)})),
    ]


def test_malformed_frames_close_the_socket_and_the_server_keeps_serving(v2_server, v2_apps):
    app, _ = v2_apps

    async def body():
        problems = []
        for vsn, name, frame in malformed_cases("realtime:bad"):
            socket = await RawSocket.open(v2_server, app.publishable_key, vsn=vsn)
            try:
                await socket.push("phoenix", "heartbeat", {}, ref="before")
                await socket.reply("before")
                await socket.send_raw(frame)
                code, reason = await socket.wait_closed()
                if code not in (1007, 1008):
                    problems.append(f"{vsn} {name}: closed with {code} {reason!r}")
            except AssertionError as error:
                problems.append(f"{vsn} {name}: {error}")
            finally:
                await socket.close()
        await heartbeat_works(v2_server, app)
        assert not problems, problems

    run_async(body())


def test_more_than_100_messages_a_second_close_the_socket(v2_server, v2_apps):
    app, _ = v2_apps

    async def body():
        async with await RawSocket.open(v2_server, app.publishable_key) as socket:
            for n in range(150):
                try:
                    await socket.push("phoenix", "heartbeat", {}, ref=f"hb{n}")
                except Exception:  # noqa: BLE001 - closed under us
                    break
            code, reason = await socket.wait_closed()
            assert code == 1008 and "Too many messages" in (reason or ""), (code, reason)
            answered = [f for f in socket.frames if f.event == "phx_reply"]
            assert len(answered) <= 100, f"{len(answered)} heartbeats answered"
        await heartbeat_works(v2_server, app)

    run_async(body())


def test_the_101st_channel_of_a_socket_is_refused(v2_server, v2_apps):
    app, _ = v2_apps

    async def body():
        async with await RawSocket.open(v2_server, app.publishable_key) as socket:
            refs = []
            for n in range(101):
                if n and n % 60 == 0:
                    # Stay under 100 messages a second (that limit is tested above): let the one-second window turn.
                    await socket.wait(lambda f, want=refs[-1]: f.ref == want, "the last join reply of the batch")
                    await asyncio.sleep(1.1)
                ref = socket.next_ref()
                await socket.push(f"realtime:many-{n}", "phx_join", {"config": {}}, join_ref=ref, ref=ref)
                refs.append(ref)
            replies = [await socket.reply(ref) for ref in refs]
            assert [r.payload["status"] for r in replies[:100]] == ["ok"] * 100, socket.describe()
            assert replies[100].payload == {"status": "error", "response": {
                "reason": "ChannelRateLimitReached: Too many channels"}}, replies[100].raw
            assert socket.close_code is None

    run_async(body())


def test_message_and_broadcast_size_limits(v2_server, v2_apps):
    app, _ = v2_apps

    async def body():
        topic = f"realtime:big-{uuid.uuid4().hex[:6]}"
        async with (
            await RawSocket.open(v2_server, app.publishable_key) as sender,
            await RawSocket.open(v2_server, app.publishable_key) as receiver,
        ):
            join_ref, _, _ = await sender.join(topic, config={"broadcast": {"ack": True, "self": False}})
            await receiver.join(topic)
            # 200 KiB: delivered.
            big = "x" * (200 * 1024)
            ref = await sender.broadcast(topic, "big", {"s": big}, join_ref=join_ref)
            assert (await sender.reply(ref)).payload["status"] == "ok"
            got = await receiver.wait(lambda f: f.event == "broadcast", "the 200 KiB broadcast")
            assert got.payload["payload"]["s"] == big
            # 300 KiB in a frame under 1 MiB: refused, the socket stays.
            ref = await sender.broadcast(topic, "huge", {"s": "y" * (300 * 1024)}, join_ref=join_ref)
            refused = await sender.reply(ref)
            assert refused.payload == {"status": "error", "response": {"reason": "payload_size_exceeded"}}, refused.raw[:300]
            # Over 1 MiB: the socket is closed.
            await sender.send_raw(json.dumps([join_ref, "big", topic, "broadcast",
                                              {"type": "broadcast", "event": "e", "payload": {"s": "z" * (1 << 20)}}]))
            code, reason = await sender.wait_closed()
            assert code == 1009, (code, reason)
        await heartbeat_works(v2_server, app)

    run_async(body())


def test_the_101st_socket_from_one_address_is_refused_before_the_upgrade(v2_server, v2_apps):
    """100 sockets per client address (per replica); once they are served the next upgrade is refused as HTTP 429 in
    GoTrue's shape. (A socket is counted when it is served, after its upgrade: one upgraded while the 100th is not yet
    counted is closed with 1008 instead, as `RealtimeHub.admit` says.)"""
    app, _ = v2_apps

    async def body():
        sockets = []
        try:
            for index in range(100):
                socket = await RawSocket.open(v2_server, app.publishable_key)
                sockets.append(socket)
                # An answered heartbeat: the socket is served, so counted.
                await socket.push("phoenix", "heartbeat", {}, ref=f"counted-{index}")
                await socket.reply(f"counted-{index}")
            with pytest.raises(websockets.exceptions.InvalidStatus) as caught:
                sockets.append(await RawSocket.open(v2_server, app.publishable_key))
            response = caught.value.response
            assert response.status_code == 429, (response.status_code, bytes(response.body))
            assert json.loads(response.body)["code"] == "too_many_connections", bytes(response.body)
        finally:
            for socket in sockets:
                await socket.close()
        # Closed sockets are counted out again.
        await until_served(v2_server, app)

    run_async(body())


async def until_served(server, app) -> None:
    async def attempt():
        try:
            await heartbeat_works(server, app)
            return True
        except websockets.exceptions.InvalidStatus:
            return False

    for _ in range(50):
        if await attempt():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("no socket accepted 5 s after the 100 were closed")


def test_a_select_column_subset_is_served_or_refused(v2_server, v2_apps):
    """`select` (supabase-py's `on_postgres_changes(select=…)`, supabase-js's binding `select`): the README says the
    join refuses it; serving it would send only those columns and the primary key. Subscribing ok and then sending
    every column is neither."""
    app, _ = v2_apps

    async def body():
        guest = await sign_up(v2_server, app)
        async with await RawSocket.open(v2_server, app.publishable_key) as socket:
            topic = f"realtime:select-{uuid.uuid4().hex[:6]}"
            _, reply, system = await socket.join(topic, access_token=guest["access_token"], bindings=[
                {"event": "INSERT", "schema": "public", "table": "readings", "select": ["kind"]}])
            if system.payload["status"] == "error":
                return
            row = await Rest.guest(v2_server, app, guest["access_token"]).insert("readings", {"kind": "palm"})
            got = await socket.wait(lambda f: f.event == "postgres_changes", "the insert")
            assert set(got.payload["data"]["record"]) == {"id", "kind"}, (
                f"system said {system.payload['message']!r} and the record has every column: {got.raw[:400]}")
            assert got.payload["data"]["record"]["id"] == row["id"]

    run_async(body())


def test_a_client_that_stops_reading_is_disconnected_not_buffered(v2_server, v2_apps):
    """A socket that stops reading while broadcasts pour in: the server queues at most 1,000 frames or 8 MiB for it,
    then closes it (1008) instead of growing; the sockets of the topic that read get every broadcast."""
    app, _ = v2_apps

    async def body():
        topic = f"realtime:slow-{uuid.uuid4().hex[:6]}"
        senders = [await RawSocket.open(v2_server, app.publishable_key) for _ in range(3)]
        reader = await RawSocket.open(v2_server, app.publishable_key)
        # The slow client: joins, then never reads again (websockets stops reading the TCP socket once its queue of
        # 4 messages is full, so the server's writes back up).
        slow = await websockets.asyncio.client.connect(
            f"ws://127.0.0.1:{v2_server.port}/realtime/v1/websocket?apikey={app.publishable_key}&vsn=2.0.0",
            max_size=None, max_queue=4, ping_interval=None)
        try:
            await slow.send(json.dumps(["1", "1", topic, "phx_join", {"config": {}}]))
            assert json.loads(await asyncio.wait_for(slow.recv(), 10))[4]["status"] == "ok"
            await reader.join(topic)
            refs = [(await sender.join(topic))[0] for sender in senders]
            # 100 KiB each, 20 a second per sender (3 senders: 6 MB/s, 360 in all, 36 MB): paced so that one poll's
            # batch stays well under a socket's 8 MiB queue (a reading socket keeps up), while the socket that does
            # not read falls behind by far more than its queue and the kernel's buffers hold.
            chunk = "s" * (100 * 1024)
            count = 0
            loop = asyncio.get_running_loop()
            for _ in range(120):
                round_started = loop.time()
                for sender, join_ref in zip(senders, refs):
                    await sender.broadcast(topic, "load", {"n": count, "s": chunk}, join_ref=join_ref)
                    count += 1
                # Pacing, not a wait for correctness: at least 50 ms a round, never catching up after a stall (a
                # catch-up burst would outrun a sender's 1 MiB broadcast bucket and be refused, rate_limited).
                await asyncio.sleep(max(0.0, round_started + 0.05 - loop.time()))

            def refused() -> int:  # broadcasts the server refused (its bucket, if this machine stalled a sender)
                return sum(f.event == "phx_reply" and (f.payload or {}).get("status") == "error"
                           for sender in senders for f in sender.frames)

            await until(lambda: sum(f.event == "broadcast" for f in reader.frames) == count - refused(),
                        lambda: f"all {count} broadcasts but {refused()} refused on the reading socket: "
                                f"{reader.describe(2)}", timeout=60)
            assert refused() < count // 10, f"{refused()} of {count} broadcasts refused: the load did not happen"
            # Now read the slow socket: what was queued, then the close.
            received = 0
            try:
                while True:
                    await asyncio.wait_for(slow.recv(), 10)
                    received += 1
            except websockets.ConnectionClosed:
                pass
            assert slow.close_code == 1008, (slow.close_code, slow.close_reason, received)
            assert received < count, f"the slow socket was sent all {count} broadcasts: nothing was bounded"
            for socket in [reader, *senders]:
                assert socket.close_code is None, socket.describe(2)
        finally:
            await slow.close()
            for socket in [reader, *senders]:
                await socket.close()

    run_async(body(), timeout=180)
