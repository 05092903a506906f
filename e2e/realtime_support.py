"""Helpers of the Realtime e2e files (test_realtime*.py): the official Python client's channels with everything they
received, raw WebSocket sockets in either framing (`vsn=1.0.0` objects, `vsn=2.0.0` arrays and binary frames), bounded
waits, the broadcast barrier that makes an absence provable, short-lived access tokens and REST writes.

Absence is only ever asserted after a positive control: an event that went through the same path and was committed
after the change that must not arrive. Within one table and one subscriber identity the server pushes a poll's
changes in log order, so a later visible row of the same table is a control; for anything else `barrier` sends two
broadcasts one after the other through the database: the second is only written once the first was received, so it is
in a later poll than anything committed before the first, and each poll is delivered completely before the next one
starts.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import logging
import re
import time
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

import httpx
import jwt
import pytest
import websockets
from supabase import AsyncClientOptions, acreate_client
from websockets.asyncio.client import connect as ws_connect

from conftest import HTTP_TIMEOUT, api_headers

WEBSOCKET_PATH = "/realtime/v1/websocket"
EVENT_TIMEOUT = 10.0  # seconds an expected event may take (the server polls every 100-500 ms)
TEST_TIMEOUT = 120.0  # seconds one async test body may take
COMMIT_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SUBSCRIBED_TO_POSTGRES = "Subscribed to PostgreSQL"

# Columns of the example tables (sql/examples), in attribute order, as `columns` of a change event lists them.
READINGS_COLUMNS = [
    {"name": "id", "type": "uuid"}, {"name": "app_id", "type": "uuid"}, {"name": "user_id", "type": "uuid"},
    {"name": "kind", "type": "text"}, {"name": "content", "type": "jsonb"}, {"name": "created_at", "type": "timestamptz"},
]


def run_async(coroutine, timeout: float = TEST_TIMEOUT):
    """Runs one test's coroutine on a fresh event loop, bounded by `timeout`."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


async def until(check: Callable[[], Any], what: str | Callable[[], str], timeout: float = EVENT_TIMEOUT):
    """Polls `check()` every 20 ms until it returns something truthy (returned), or fails after `timeout` seconds
    with `what` (a text, or a function giving one: what was received so far)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what() if callable(what) else what}")
        await asyncio.sleep(0.02)


# ---------------------------------------------------------------- frames the official client could not read

class _Unparsed(logging.Handler):
    """supabase-py validates every frame with pydantic and only logs (and drops) one that fails: a frame the app never
    sees. Every such log line is kept here; `no_dropped_frames` fails the test that caused one."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Unrecognized message format" in message:
            self.records.append(message[:2000])


UNPARSED = _Unparsed()
logging.getLogger("realtime._async.client").addHandler(UNPARSED)


@pytest.fixture(autouse=True)
def no_dropped_frames():
    """Fails the test if the official client dropped any frame of the server as unreadable."""
    before = len(UNPARSED.records)
    yield
    dropped = UNPARSED.records[before:]
    assert not dropped, f"supabase-py dropped {len(dropped)} frame(s) it could not parse: {dropped[:3]}"


# ---------------------------------------------------------------- the official client


@dataclasses.dataclass
class ClientChannel:
    """One channel of supabase-py's `AsyncRealtimeChannel` and what it received."""

    client: Any  # supabase AsyncClient
    channel: Any  # AsyncRealtimeChannel
    topic: str
    changes: list[tuple[int, dict]] = dataclasses.field(default_factory=list)  # (binding index, payload)
    systems: list[dict] = dataclasses.field(default_factory=list)  # `system` messages with status ok
    states: list[tuple[str, str | None, float]] = dataclasses.field(default_factory=list)  # subscribe callback calls
    # (state, error text, time.time() when the client reported it)
    broadcasts: list[dict] = dataclasses.field(default_factory=list)

    @property
    def errors(self) -> list[dict]:
        """The error payloads the client reported (CHANNEL_ERROR with a JSON payload: `system` errors, join errors)."""
        found = []
        for state, error, _at in self.states:
            if state == "CHANNEL_ERROR" and error and error.startswith("{"):
                found.append(json.loads(error))
        return found

    @property
    def closed(self) -> bool:
        return any(state == "CLOSED" for state, _error, _at in self.states)

    def of(self, binding: int) -> list[dict]:
        """The change payloads delivered to binding `binding`."""
        return [payload for index, payload in self.changes if index == binding]

    def records(self, binding: int = 0) -> list[tuple[str, dict]]:
        """(type, record or old_record) of each change of `binding`, in order."""
        out = []
        for payload in self.of(binding):
            data = payload["data"]
            out.append((data["type"], data.get("record") if data["type"] != "DELETE" else data.get("old_record")))
        return out

    def describe(self) -> str:
        return (f"{self.topic}: changes={[(i, p['data']['type'], (p['data'].get('record') or p['data'].get('old_record') or {}).get('id')) for i, p in self.changes]} "
                f"systems={self.systems} states={self.states} broadcasts={self.broadcasts}")

    async def wait_change(self, match: Callable[[dict], bool], binding: int = 0, what: str = "a change",
                          timeout: float = EVENT_TIMEOUT) -> dict:
        def find():
            return next((p for p in self.of(binding) if match(p)), None)

        return await until(find, lambda: f"{what} on {self.describe()}", timeout)

    async def wait_broadcast(self, match: Callable[[dict], bool], what: str = "a broadcast",
                             timeout: float = EVENT_TIMEOUT) -> dict:
        return await until(lambda: next((b for b in self.broadcasts if match(b)), None),
                           lambda: f"{what} on {self.describe()}", timeout)

    async def round_trip(self) -> None:
        """A push answered by the server on this channel (presence untrack: always ok): everything this client sent
        before (an `access_token` push) has been handled when it returns."""
        answered: list[str] = []
        push = await self.channel.push("presence", {"event": "untrack", "payload": {}})
        push.receive("ok", lambda _: answered.append("ok")).receive("error", lambda r: answered.append(f"error {r}"))
        await until(lambda: answered, f"the reply to a presence push on {self.topic}")


def client_options(**realtime: Any) -> AsyncClientOptions:
    # No session persistence or auto refresh (its timer would outlive the test); the socket does not reconnect on its
    # own, so a close by the server stays visible.
    return AsyncClientOptions(auto_refresh_token=False, persist_session=False,
                              realtime={"auto_reconnect": False, **realtime})


async def open_client(server, app, token: str | None = None):
    """`acreate_client` as an app would, the realtime client holding `token` (else the API key: anon)."""
    client = await acreate_client(server.url, app.publishable_key, client_options())
    if token is not None:
        await client.realtime.set_auth(token)
    return client


def channel_params(*, ack: bool = False, self_: bool = False, presence_key: str = "", presence: bool = False) -> dict:
    return {"config": {"broadcast": {"ack": ack, "self": self_}, "presence": {"key": presence_key, "enabled": presence},
                       "private": False}}


async def join(client, name: str, bindings=(), *, params: dict | None = None, presence_sync: Callable | None = None,
               expect: str = "ok") -> ClientChannel:
    """Subscribes a channel of `client` with `bindings` ((event, table, filter) or (event, table, filter, schema)).
    Waits for SUBSCRIBED, then, when there are bindings, for the `system` message: with `expect="ok"` it must be
    "Subscribed to PostgreSQL" (the bindings are live after it), with `expect="error"` a `system` error, with
    `expect="any"` either; with `expect="refused"` the join itself must be refused (the error reply)."""
    channel = client.channel(name, params)
    joined = ClientChannel(client=client, channel=channel, topic=f"realtime:{name}")
    for index, binding in enumerate(bindings):
        event, table, flt, *rest = binding
        channel.on_postgres_changes(
            event, callback=lambda payload, index=index: joined.changes.append((index, payload)), table=table,
            filter=flt, schema=rest[0] if rest else None)
    channel.on_system(lambda payload: joined.systems.append(payload.model_dump()))
    channel.on_broadcast("*", lambda payload: joined.broadcasts.append(dict(payload)))
    if presence_sync is not None:
        channel.on_presence_sync(presence_sync)
    await channel.subscribe(
        lambda state, error: joined.states.append((state.value, str(error) if error else None, time.time())))
    if expect == "refused":
        await until(lambda: joined.errors, lambda: f"the join refusal on {joined.describe()}")
        return joined
    assert joined.states and joined.states[0][0] == "SUBSCRIBED", f"not subscribed: {joined.describe()}"
    if bindings:
        if expect == "ok":
            await until(lambda: any(s["message"] == SUBSCRIBED_TO_POSTGRES for s in joined.systems) or joined.errors,
                        lambda: f"'{SUBSCRIBED_TO_POSTGRES}' on {joined.describe()}")
            assert not joined.errors, f"the bindings were refused: {joined.describe()}"
            system = next(s for s in joined.systems if s["message"] == SUBSCRIBED_TO_POSTGRES)
            assert system == {"channel": name, "extension": "postgres_changes", "message": SUBSCRIBED_TO_POSTGRES,
                              "status": "ok"}, system
        elif expect == "error":
            await until(lambda: joined.errors, lambda: f"a system error on {joined.describe()}")
        else:  # "any": either answer
            await until(lambda: joined.systems or joined.errors, lambda: f"a system message on {joined.describe()}")
    return joined


async def close_clients(*clients) -> None:
    for client in clients:
        try:
            await client.realtime.close()
        except Exception:  # noqa: BLE001 - already closed by the server
            pass


# ---------------------------------------------------------------- raw sockets


def socket_url(server, key: str | None, vsn: str | None = "2.0.0", path: str = WEBSOCKET_PATH, **extra: str) -> str:
    query = {}
    if key is not None:
        query["apikey"] = key
    if vsn is not None:
        query["vsn"] = vsn
    query.update(extra)
    return f"ws://127.0.0.1:{server.port}{path}" + (f"?{urlencode(query)}" if query else "")


@dataclasses.dataclass
class Frame:
    """One frame the server sent: a text message in the socket's framing, or binary bytes."""

    join_ref: str | None = None
    ref: str | None = None
    topic: str | None = None
    event: str | None = None
    payload: Any = None
    raw: str | bytes = ""

    @property
    def binary(self) -> bool:
        return isinstance(self.raw, bytes)


class RawSocket:
    """A WebSocket to /realtime/v1/websocket that records every frame the server sends (checking its framing) and
    the close code."""

    def __init__(self, ws, vsn: str, keepalive: bool = False):
        self.ws = ws
        self.vsn = vsn
        self.frames: list[Frame] = []
        self.framing_errors: list[str] = []
        self._ref = 0
        self.reader = asyncio.create_task(self._read())
        # The server closes a socket silent for 60 s; the SDKs send a heartbeat every 25 s.
        self.heartbeats = asyncio.create_task(self._heartbeat()) if keepalive else None

    @classmethod
    async def open(cls, server, key: str, vsn: str | None = "2.0.0", headers: dict[str, str] | None = None,
                   path: str = WEBSOCKET_PATH, keepalive: bool = False) -> "RawSocket":
        ws = await ws_connect(socket_url(server, key, vsn, path), additional_headers=headers, max_size=None,
                              open_timeout=10, ping_interval=None, close_timeout=5)
        return cls(ws, vsn or "1.0.0", keepalive)

    async def _heartbeat(self) -> None:
        try:
            while True:
                await asyncio.sleep(20)
                await self.push("phoenix", "heartbeat", {}, ref=f"keepalive-{self.next_ref()}")
        except (websockets.ConnectionClosed, asyncio.CancelledError):
            pass

    async def _read(self) -> None:
        try:
            async for data in self.ws:
                self.frames.append(self._decode(data))
        except websockets.ConnectionClosed:
            pass

    def _decode(self, data: str | bytes) -> Frame:
        if isinstance(data, bytes):
            return Frame(raw=data)
        try:
            document = json.loads(data)
        except ValueError:
            self.framing_errors.append(f"not JSON: {data[:200]!r}")
            return Frame(raw=data)
        if self.vsn == "2.0.0":
            if not (isinstance(document, list) and len(document) == 5):
                self.framing_errors.append(f"not a v2 array of 5: {data[:200]!r}")
                return Frame(raw=data)
            join_ref, ref, topic, event, payload = document
            return Frame(join_ref, ref, topic, event, payload, data)
        if not isinstance(document, dict) or not {"topic", "event", "payload", "ref"} <= document.keys():
            # supabase-py requires `ref` on every frame (null on pushes): without it pydantic drops the frame.
            self.framing_errors.append(f"not a v1 object with topic, event, payload and ref: {data[:200]!r}")
            return Frame(raw=data)
        return Frame(document.get("join_ref"), document["ref"], document["topic"], document["event"],
                     document["payload"], data)

    def next_ref(self) -> str:
        self._ref += 1
        return str(self._ref)

    def encode(self, join_ref: str | None, ref: str | None, topic: str, event: str, payload: Any) -> str:
        if self.vsn == "2.0.0":
            return json.dumps([join_ref, ref, topic, event, payload])
        return json.dumps({"topic": topic, "event": event, "payload": payload, "ref": ref, "join_ref": join_ref})

    async def push(self, topic: str, event: str, payload: Any, join_ref: str | None = None,
                   ref: str | None = "auto") -> str | None:
        """Sends one message; returns its ref (a fresh one unless given)."""
        if ref == "auto":
            ref = self.next_ref()
        await self.ws.send(self.encode(join_ref, ref, topic, event, payload))
        return ref

    async def send_raw(self, data: str | bytes) -> None:
        await self.ws.send(data)

    def describe(self, last: int = 12) -> str:
        shown = [f.raw[:300] if isinstance(f.raw, str) else f"<binary {f.raw[:60]!r}>" for f in self.frames[-last:]]
        return f"{len(self.frames)} frame(s), last: {shown}; close {self.close_code} {self.close_reason!r}"

    async def wait(self, match: Callable[[Frame], bool], what: str = "a frame", timeout: float = EVENT_TIMEOUT,
                   start: int = 0) -> Frame:
        return await until(lambda: next((f for f in self.frames[start:] if match(f)), None),
                           lambda: f"{what}: {self.describe()}", timeout)

    async def broadcast(self, topic: str, event: str, payload: Any, join_ref: str | None = None) -> str:
        """Pushes a broadcast `event` with `payload` on the joined `topic`; answers the push's ref."""
        return await self.push(topic, "broadcast", {"type": "broadcast", "event": event, "payload": payload},
                               join_ref=join_ref)

    async def wait_broadcast(self, event: str, what: str) -> Frame:
        """The first broadcast `event` received (waiting for it)."""
        return await self.wait(lambda f: f.event == "broadcast" and f.payload["event"] == event, what)

    async def reply(self, ref: str, topic: str | None = None, timeout: float = EVENT_TIMEOUT) -> Frame:
        return await self.wait(lambda f: f.event == "phx_reply" and f.ref == ref and (topic is None or f.topic == topic),
                               f"the reply to ref {ref}", timeout)

    async def join(self, topic: str, *, bindings: list[dict] | None = None, access_token: str | None = None,
                   config: dict | None = None, wait_system: bool = True) -> tuple[str, Frame, Frame | None]:
        """phx_join (supabase-js's payload shape); returns (join ref, reply, system message or None)."""
        payload_config = {"broadcast": {"ack": False, "self": False}, "presence": {"key": "", "enabled": False},
                          "postgres_changes": bindings or [], "private": False}
        payload_config.update(config or {})
        payload: dict[str, Any] = {"config": payload_config}
        if access_token is not None:
            payload["access_token"] = access_token
        ref = self.next_ref()
        start = len(self.frames)
        await self.push(topic, "phx_join", payload, join_ref=ref, ref=ref)
        reply = await self.reply(ref, topic)
        system = None
        if wait_system and bindings and reply.payload.get("status") == "ok":
            system = await self.wait(lambda f: f.event == "system" and f.topic == topic, f"the system message of {topic}",
                                     start=start)
        return ref, reply, system

    @property
    def close_code(self) -> int | None:
        return self.ws.close_code

    @property
    def close_reason(self) -> str | None:
        return self.ws.close_reason

    async def wait_closed(self, timeout: float = EVENT_TIMEOUT) -> tuple[int | None, str | None]:
        try:
            await asyncio.wait_for(asyncio.shield(self.reader), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"the server did not close the socket within {timeout:g} s: {self.describe()}") from None
        return self.close_code, self.close_reason

    async def close(self) -> None:
        try:
            await self.ws.close()
        except Exception:  # noqa: BLE001
            pass
        self.reader.cancel()
        if self.heartbeats is not None:
            self.heartbeats.cancel()

    async def __aenter__(self) -> "RawSocket":
        return self

    async def __aexit__(self, *_exc) -> None:
        await self.close()


def kind3(topic: str, event: str, payload: bytes, *, join_ref: str = "", ref: str = "", metadata: bytes = b"",
          encoding: int = 1) -> bytes:
    """A v2 binary user-broadcast push (kind 3), as supabase-js's serializer builds it: kind, the lengths of join_ref,
    ref, topic, event and metadata (one byte each), the payload encoding (1 JSON, 0 binary), the strings, the payload."""
    fields = [join_ref.encode(), ref.encode(), topic.encode(), event.encode(), metadata]
    return bytes([3, *(len(f) for f in fields), encoding]) + b"".join(fields) + payload


# ---------------------------------------------------------------- the barrier


async def barrier(server, app, observed: list[Callable[[str], bool]], topic: str = "realtime:barrier") -> None:
    """Sends two broadcasts one after the other on topic `realtime:barrier` of `app` through `server`, each waited for
    on every observer (`observed[i](marker)` is true once observer i received the broadcast carrying `marker`). When
    it returns, every change committed before the call has been delivered (or not) to each observer's socket: see the
    module's documentation. Each observer must have joined `realtime:barrier` on the socket it observes."""
    async with await RawSocket.open(server, app.publishable_key, vsn="2.0.0") as sender:
        join_ref, reply, _ = await sender.join(topic)
        assert reply.payload["status"] == "ok", reply.raw
        for _round in range(2):
            marker = uuid.uuid4().hex
            await sender.broadcast(topic, "barrier", {"marker": marker}, join_ref=join_ref)
            for index, seen in enumerate(observed):
                await until(lambda: seen(marker), f"barrier broadcast {marker} at observer {index}")


def client_saw(channel: ClientChannel) -> Callable[[str], bool]:
    return lambda marker: any(b.get("payload", {}).get("marker") == marker for b in channel.broadcasts)


def raw_saw(socket: RawSocket) -> Callable[[str], bool]:
    def seen(marker: str) -> bool:
        return any(f.event == "broadcast" and isinstance(f.payload, dict)
                   and f.payload.get("payload", {}).get("marker") == marker for f in socket.frames)

    return seen


# ---------------------------------------------------------------- tokens and writes


def claims_of(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def resign(database, token: str, **changes: Any) -> str:
    """`token`'s claims with `changes` (e.g. a short `exp`), signed with the session's signing key: the token the
    server would issue with another lifetime (GUESTPASS_JWT_EXPIRY cannot go below 60 s)."""
    header = jwt.get_unverified_header(token)
    claims = {**claims_of(token), **changes}
    key = Path(database.workdir / "jwt-signing-key.pem").read_bytes()
    return jwt.encode(claims, key, algorithm=header["alg"], headers={"kid": header["kid"]})


def forged_unsigned(token: str) -> str:
    """`token` with its signature replaced: a token the server must refuse."""
    head, body, _signature = token.split(".")
    return f"{head}.{body}." + base64.urlsafe_b64encode(b"\x00" * 64).rstrip(b"=").decode()


class Rest:
    """Table writes through /rest/v1 with fixed headers (a guest's token, or the secret key)."""

    def __init__(self, server, headers: dict[str, str]):
        self.server = server
        self.headers = headers

    @classmethod
    def guest(cls, server, app, token: str) -> "Rest":
        return cls(server, {"apikey": app.publishable_key, "Authorization": f"Bearer {token}"})

    @classmethod
    def service(cls, server, app) -> "Rest":
        return cls(server, {"apikey": app.secret_key, "Authorization": f"Bearer {app.secret_key}"})

    async def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
            return await http.request(method, f"{self.server.url}/rest/v1/{path}",
                                      headers={**self.headers, "Prefer": "return=representation"}, **kwargs)

    async def insert(self, table: str, row: dict) -> dict:
        response = await self.request("POST", table, json=row)
        assert response.status_code == 201, f"POST {table}: {response.status_code} {response.text}"
        return response.json()[0]

    async def update(self, table: str, row_id, changes: dict) -> dict:
        response = await self.request("PATCH", f"{table}?id=eq.{row_id}", json=changes)
        assert response.status_code == 200 and len(response.json()) == 1, f"PATCH {table}: {response.status_code} {response.text}"
        return response.json()[0]

    async def delete(self, table: str, row_id) -> dict:
        response = await self.request("DELETE", f"{table}?id=eq.{row_id}")
        assert response.status_code == 200 and len(response.json()) == 1, f"DELETE {table}: {response.status_code} {response.text}"
        return response.json()[0]


async def sign_up(server, app, ip: str | None = None, **data: Any) -> dict:
    """A new guest (anonymous sign-up with a fresh device secret); the session JSON."""
    from conftest import new_device_secret

    headers = api_headers(app, **({"X-Forwarded-For": ip} if ip else {}))
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        response = await http.post(server.url + "/auth/v1/signup", headers=headers,
                                   json={"data": {"device_id": new_device_secret(), **data}})
    assert response.status_code == 200, f"sign-up failed: {response.status_code} {response.text}"
    return response.json()


async def second_device(server, app, session: dict, ip: str) -> dict:
    """A second device of `session`'s user (a transfer code redeemed at sign-up); the new device's session JSON."""
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        made = await http.post(server.url + "/v1/devices/transfer-code",
                               headers={"apikey": app.publishable_key, "Authorization": f"Bearer {session['access_token']}"})
    assert made.status_code == 200, made.text
    moved = await sign_up(server, app, ip=ip, transfer_code=made.json()["code"])
    assert moved["user"]["id"] == session["user"]["id"]
    return moved


def changes_of_run(socket: RawSocket, run: str) -> list[dict]:
    """The `postgres_changes` payloads `socket` received for rows whose `content.run` is `run` (for a DELETE, the old
    record's), in arrival order: what one run of a test wrote, whatever else the socket saw."""
    out = []
    for frame in socket.frames:
        if frame.event != "postgres_changes":
            continue
        data = frame.payload["data"]
        image = data.get("record") if data["type"] != "DELETE" else data.get("old_record")
        if (image.get("content") or {}).get("run") == run:
            out.append(frame.payload)
    return out


def same_row(delivered: dict, expected: dict) -> bool:
    """A captured row image equals a row as the table API returned it (timestamps compared as instants)."""
    from datetime import datetime

    if delivered.keys() != expected.keys():
        return False
    for key, value in expected.items():
        got = delivered[key]
        if key.endswith("_at") and isinstance(value, str) and isinstance(got, str):
            if datetime.fromisoformat(got.replace("Z", "+00:00")) != datetime.fromisoformat(value.replace("Z", "+00:00")):
                return False
        elif got != value:
            return False
    return True
