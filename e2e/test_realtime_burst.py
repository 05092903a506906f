"""Realtime under a burst: many subscriber identities in the same polls (so in the same batched visibility check, one
transaction for up to 64 identities) each receive exactly their own rows' changes, each exactly once — concurrent
writers, counted, never timed.

Twelve guests of one app, each on its own socket subscribed to `public.readings` with `user_id=eq.<own id>` (the
batched, indexed path), four of them also unfiltered on a second socket (the policy alone decides), and a spy: guest 0
bound twice on one channel, to `user_id=eq.<guest 1>` (the filter passes, row-level security must not) and to its own
id (the control that proves the spy's polls were delivered). Four `psql` sessions of the table owner insert rows of
random guests, each row its own transaction, then update every row, then delete half of them (each phase concurrent).
Completion is an end-marker row per guest inserted after the writers finished (a later log position), never a sleep.

A batch that evaluated any identity with another's claims would hand a guest someone else's rows (the unfiltered
sockets, the spy); a poll delivered twice, or a row skipped by the index, shows in the counts.
"""

from __future__ import annotations

import asyncio
import collections
import random
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import psql
from realtime_support import RawSocket, changes_of_run, run_async, sign_up, until
from support import create_app

GUESTS = 12
UNFILTERED = 4  # guests 0..3 also have an unfiltered socket
ROWS = 240
WRITERS = 4
DELIVERY_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def burst_server(start_server):
    return start_server("burst", GUESTPASS_SIGNUP_BURST="1000", GUESTPASS_SIGNUP_RATE_PER_HOUR="100000")


@pytest.fixture(scope="module")
def guests(burst_server, database):
    app = create_app(database, "burst")

    async def make():
        return [await sign_up(burst_server, app) for _ in range(GUESTS)]

    return app, run_async(make())


def write_concurrently(super_url: str, statements: list[str]) -> None:
    """The statements spread over WRITERS concurrent psql sessions, each statement its own transaction."""
    shares = [statements[i::WRITERS] for i in range(WRITERS)]

    def write(share: list[str]) -> None:
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", super_url], input="\n".join(share) + "\n",
                       text=True, capture_output=True, timeout=120, check=True)

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(write, [s for s in shares if s]))


class Subscription:
    def __init__(self, name: str, socket: RawSocket, owner: int, binding_ids: dict[int, int]):
        self.name = name
        self.socket = socket
        self.owner = owner  # whose rows it must receive, and nobody else's
        self.binding_ids = binding_ids  # binding id → the guest its filter names (-1: no filter)

    def events(self, run: str) -> list[dict]:
        return changes_of_run(self.socket, run)


@pytest.mark.attack
def test_a_burst_reaches_each_identity_with_exactly_its_own_rows_once(burst_server, guests, database):
    app, sessions = guests
    super_url = database.super_url
    run = uuid.uuid4().hex[:12]
    rng = random.Random(run)
    users = [s["user"]["id"] for s in sessions]

    async def subscribe() -> list[Subscription]:
        subscriptions = []
        for owner, session in enumerate(sessions):
            shapes = [("filtered", [{"event": "*", "schema": "public", "table": "readings",
                                     "filter": f"user_id=eq.{users[owner]}"}], [owner])]
            if owner < UNFILTERED:
                shapes.append(("unfiltered", [{"event": "*", "schema": "public", "table": "readings"}], [-1]))
            if owner == 0:
                shapes.append(("spy", [
                    {"event": "*", "schema": "public", "table": "readings", "filter": f"user_id=eq.{users[1]}"},
                    {"event": "*", "schema": "public", "table": "readings", "filter": f"user_id=eq.{users[0]}"}], [1, 0]))
            for shape, bindings, named in shapes:
                socket = await RawSocket.open(burst_server, app.publishable_key, vsn="1.0.0", keepalive=True)
                _, reply, system = await socket.join("realtime:burst", bindings=bindings,
                                                     access_token=session["access_token"])
                assert reply.payload["status"] == "ok" and system.payload["status"] == "ok", socket.describe()
                ids = [b["id"] for b in reply.payload["response"]["postgres_changes"]]
                subscriptions.append(Subscription(f"guest {owner} {shape}", socket, owner, dict(zip(ids, named))))
        return subscriptions

    async def body():
        subscriptions = await subscribe()
        try:
            owners = [rng.randrange(GUESTS) for _ in range(ROWS)]
            row_ids = [str(uuid.uuid4()) for _ in range(ROWS)]
            inserts = [f"insert into public.readings (id, app_id, user_id, kind, content) values ('{row_ids[n]}', "
                       f"'{app.app_id}', '{users[owners[n]]}', 'palm', jsonb_build_object('run', '{run}', 'n', {n}));"
                       for n in range(ROWS)]
            await asyncio.to_thread(write_concurrently, super_url, inserts)
            updates = [f"update public.readings set kind = 'face' where id = '{row_ids[n]}';" for n in range(ROWS)]
            rng.shuffle(updates)
            deleted = set(rng.sample(range(ROWS), ROWS // 2))
            deletes = [f"delete from public.readings where id = '{row_ids[n]}';" for n in sorted(deleted)]
            await asyncio.to_thread(write_concurrently, super_url, updates)
            await asyncio.to_thread(write_concurrently, super_url, deletes)
            # The end markers: one row per guest, after every write above committed.
            await asyncio.to_thread(psql, super_url, "\n".join(
                f"insert into public.readings (app_id, user_id, kind, content) values ('{app.app_id}', '{user}', "
                f"'coffee', jsonb_build_object('run', '{run}', 'n', -1));" for user in users))

            def ended(s: Subscription) -> bool:
                return any(e["data"]["type"] == "INSERT" and e["data"]["record"]["content"]["n"] == -1 for e in s.events(run))

            await until(lambda: all(ended(s) for s in subscriptions), lambda: "end markers missing: " + "; ".join(
                f"{s.name}: {len(s.events(run))} events" for s in subscriptions if not ended(s)), timeout=DELIVERY_TIMEOUT)

            problems = []
            for s in subscriptions:
                got = collections.Counter()
                for event in s.events(run):
                    data = event["data"]
                    image = data.get("record") if data["type"] != "DELETE" else data["old_record"]
                    n = image["content"]["n"]
                    if n == -1:
                        continue
                    if owners[n] != s.owner or image["user_id"] != users[s.owner]:
                        problems.append(f"{s.name}: row {n} of guest {owners[n]}: {data}")
                    named = {s.binding_ids[i] for i in event["ids"]}
                    if not named <= {-1, s.owner}:
                        problems.append(f"{s.name}: row {n} under bindings {event['ids']} (filters on guests {named})")
                    got[(n, data["type"])] += 1
                expected = collections.Counter()
                for n in range(ROWS):
                    if owners[n] == s.owner:
                        expected[(n, "INSERT")] += 1
                        expected[(n, "UPDATE")] += 1
                        if n in deleted:
                            expected[(n, "DELETE")] += 1
                for key in expected.keys() | got.keys():
                    if got[key] != expected[key]:
                        problems.append(f"{s.name}: row {key[0]} {key[1]}: {got[key]} times, expected {expected[key]}")
                assert not s.socket.framing_errors and s.socket.close_code is None, s.socket.describe()
            assert not problems, f"run {run}: {len(problems)} problems:\n" + "\n".join(problems[:40])
            assert sum(len(s.events(run)) for s in subscriptions) > ROWS, "the check was vacuous"
        finally:
            for s in subscriptions:
                await s.socket.close()

    run_async(body(), timeout=240)
