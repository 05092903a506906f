"""Realtime joins for bench/cpu.sh: CONCURRENCY sockets, each joining a channel with one postgres_changes binding on
public.readings filtered to its user's rows (user_id=eq.<sub>), waiting for the join's ok and the 'Subscribed to
PostgreSQL' system message, then leaving it (phx_leave, its reply), over and over for SECONDS (bounded: every wait has a
10 s deadline). One join is that whole cycle. A socket starts a cycle at most every 25 ms: it sends two messages a cycle,
and the server closes a socket past 100 messages per second (RealtimeSocketLimits), so the load comes from many sockets.
Prints one line:
    JOIN_RESULT joins=N seconds=S failures=F p50_us=… p99_us=…
Usage: python cpu_join.py WS_URL TOKENS_FILE SECONDS CONCURRENCY  (WS_URL: ws://…/realtime/v1/websocket?apikey=…&vsn=1.0.0;
TOKENS_FILE: bench/lib.sh's tokens.lua). Needs websockets (the repository's .venv has it).
"""
import asyncio
import base64
import json
import re
import sys
import time

import websockets


def user_of(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"]


async def reply(ws, ref, deadline):
    """Waits for the phx_reply to `ref` (and, for a join, the system message); raises on a refusal."""
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), max(0.001, deadline - time.monotonic())))
        if msg.get("event") == "phx_reply" and msg.get("ref") == ref:
            if msg["payload"].get("status") != "ok":
                raise RuntimeError(f"refused: {json.dumps(msg['payload'])[:300]}")
            return


async def system_ok(ws, deadline):
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), max(0.001, deadline - time.monotonic())))
        if msg.get("event") == "system":
            if msg["payload"].get("status") != "ok":
                raise RuntimeError(f"subscription refused: {json.dumps(msg['payload'])[:300]}")
            return


async def main():
    url, tokens_file, seconds, concurrency = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    tokens = re.findall(r'"([^"]+)"', open(tokens_file).read())
    end = time.monotonic() + seconds
    latencies, failures = [], []

    async def worker(index):
        token = tokens[index % len(tokens)]
        binding = {"event": "*", "schema": "public", "table": "readings", "filter": f"user_id=eq.{user_of(token)}"}
        async with websockets.connect(url, open_timeout=10, close_timeout=2, ping_interval=None, compression=None) as ws:
            n = 0
            while time.monotonic() < end:
                n += 1
                topic = f"realtime:cpu-{index}-{n}"
                join_ref = str(2 * n)
                started = time.monotonic()
                deadline = started + 10
                try:
                    await ws.send(json.dumps({
                        "topic": topic, "event": "phx_join", "ref": join_ref, "join_ref": join_ref,
                        "payload": {"config": {"broadcast": {"ack": False, "self": False}, "presence": {"key": ""},
                                               "postgres_changes": [binding], "private": False},
                                    "access_token": token}}))
                    await reply(ws, join_ref, deadline)
                    await system_ok(ws, deadline)
                    leave_ref = str(2 * n + 1)
                    await ws.send(json.dumps({"topic": topic, "event": "phx_leave", "ref": leave_ref, "join_ref": join_ref,
                                              "payload": {}}))
                    await reply(ws, leave_ref, deadline)
                except Exception as error:  # noqa: BLE001 — counted and reported; the measurement is then invalid
                    failures.append(f"{type(error).__name__}: {error}"[:300])
                    return
                latencies.append(time.monotonic() - started)
                await asyncio.sleep(max(0.0, started + 0.025 - time.monotonic()))

    started = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    elapsed = time.monotonic() - started
    latencies.sort()
    pick = lambda q: int(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e6) if latencies else 0
    print(f"JOIN_RESULT joins={len(latencies)} seconds={elapsed:.3f} failures={len(failures)} "
          f"p50_us={pick(0.5)} p99_us={pick(0.99)}")
    for failure in failures[:5]:
        print(f"JOIN_FAILURE {failure}", file=sys.stderr)


asyncio.run(main())
