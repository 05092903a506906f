#!/usr/bin/env python3
"""The fan-out half of bench/realtime.sh: N Realtime subscribers, a writer at a fixed rate, delay from insert to client.

Run by bench/realtime_fanout.sh (sourced by bench/realtime.sh), which sets up the cluster, the server, the guests and
the pgbench scripts; this file measures. Two roles:

  realtime_fanout.py run ...       the orchestrator: for each scenario, starts the receiver processes, then per step
                                   runs pgbench at a fixed rate on the published table (public.readings) and on an
                                   unpublished copy, waits until every change arrived (bounded), and reads what the
                                   receivers saw, the server's and PostgreSQL's CPU (/proc) and the server's metrics;
                                   prints the table and writes the raw numbers (JSON, one delay per line) under /tmp.
  realtime_fanout.py receive ...   one receiver process (the orchestrator starts --procs of them): its share of the
                                   sockets, each joined to one channel with one postgres_changes binding; commands on
                                   stdin (phase, count, report, stop), one JSON line per answer on stdout.

Scenarios:
  per-user  every subscriber is its own guest, bound to INSERT on public.readings with user_id=eq.<own id>; the writer
            inserts readings of random subscribers: each change reaches exactly one socket.
  shared    every socket belongs to ONE guest, bound to INSERT on public.readings without a filter; the writer inserts
            that guest's readings: each change reaches every socket.

A delivery's delay is its arrival time (time.time() when the receiver's event loop reads the frame) minus
record.created_at, which the writer sets to clock_timestamp() in the INSERT: same machine, same clock; it includes the
writer's commit, the server's poll interval (100 ms), its RLS check, the frame's way through both event loops.

Every loop is bounded in count and time: connections (each within --connect-timeout), phases (pgbench -T, then at most
--drain-seconds for the last deliveries), and the receivers exit on their own after --max-seconds or when their stdin
closes (the orchestrator died). Sockets connect from 127.0.0.2, 127.0.0.3, … (--per-address sockets each: the server
admits 100 sockets per client address), to the server on 127.0.0.1: loopback only.
"""

import argparse
import array
import asyncio
import collections
import datetime
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request

TICKS = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------------------------------------- receiver

class Phase:
    """What the receiver saw since the last `phase` command."""

    def __init__(self, name):
        self.name = name
        self.delays = array.array("d")  # ms
        self.ids = collections.Counter()
        self.seen = collections.defaultdict(set)  # socket index → ids (a duplicate per socket is an error)
        self.duplicates = 0
        self.wrong_user = 0
        self.bad_messages = 0
        self.system_errors = []
        self.first = None
        self.last = None
        self.loop_lags = array.array("d")  # ms past a 50 ms sleep


async def receiver_main(args):
    import websockets  # from the bench venv (bench/realtime_fanout.sh)

    with open(args.subscribers) as f:
        everyone = json.load(f)
    mine = everyone[args.first:args.first + args.count]
    deadline = time.monotonic() + args.max_seconds
    loop = asyncio.get_running_loop()
    out = sys.stdout
    state = {"phase": Phase("connect"), "closed": 0, "close_reasons": collections.Counter(), "stopping": False}
    sockets = {}  # index → websocket

    def emit(obj):
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        out.flush()

    def parse_ts(text):
        # PostgreSQL's jsonb timestamptz: 2026-11-25T09:38:32.123456+00:00 (fromisoformat reads it, 3.11+)
        return datetime.datetime.fromisoformat(text).timestamp()

    async def reader(index, ws, user_id):
        try:
            async for message in ws:
                now = time.time()
                try:
                    msg = json.loads(message)
                except ValueError:
                    state["phase"].bad_messages += 1
                    continue
                event = msg.get("event")
                phase = state["phase"]
                if event == "postgres_changes":
                    record = msg["payload"]["data"]["record"]
                    rid = record["id"]
                    phase.delays.append((now - parse_ts(record["created_at"])) * 1000.0)
                    phase.ids[rid] += 1
                    seen = phase.seen[index]
                    if rid in seen:
                        phase.duplicates += 1
                    seen.add(rid)
                    if record.get("user_id") != user_id:
                        phase.wrong_user += 1
                    if phase.first is None:
                        phase.first = now
                    phase.last = now
                elif event == "system" and msg.get("payload", {}).get("status") != "ok":
                    if len(phase.system_errors) < 20:
                        phase.system_errors.append(f"socket {index}: {json.dumps(msg['payload'])[:300]}")
                elif event in ("phx_error", "phx_close"):
                    if len(phase.system_errors) < 20:
                        phase.system_errors.append(f"socket {index}: {event} {json.dumps(msg.get('payload'))[:300]}")
        except websockets.ConnectionClosed:
            pass
        except Exception as error:  # noqa: BLE001 — counted and reported, never silent
            state["close_reasons"][f"reader error {type(error).__name__}: {error}"[:200]] += 1
        if not state["stopping"]:
            state["closed"] += 1
            code = getattr(ws, "close_code", None)
            reason = getattr(ws, "close_reason", None)
            state["close_reasons"][f"{code} {reason}"] += 1

    heartbeat_tasks = []
    refs = iter(range(1, 1 << 62))

    async def heartbeat(ws):
        # Phoenix's heartbeat every --heartbeat seconds (the server closes a socket silent for 60 s), the sockets'
        # first ones spread over the interval.
        await asyncio.sleep(random.uniform(0.2, 1.0) * args.heartbeat)
        while True:
            try:
                await ws.send(json.dumps({"topic": "phoenix", "event": "heartbeat", "payload": {}, "ref": str(next(refs))}))
            except Exception:  # noqa: BLE001 — a closed socket is counted by its reader
                return
            await asyncio.sleep(args.heartbeat)

    async def open_one(index, sub, semaphore):
        k = args.first + index  # global index: the source address
        address = f"127.0.0.{2 + k // args.per_address}"
        topic = f"realtime:bench-{k}"
        binding = {"event": "INSERT", "schema": "public", "table": "readings"}
        if sub.get("filter"):
            binding["filter"] = sub["filter"]
        join = {"topic": topic, "event": "phx_join", "ref": "1", "join_ref": "1",
                "payload": {"config": {"broadcast": {"ack": False, "self": False}, "presence": {"key": ""},
                                       "postgres_changes": [binding], "private": False},
                            "access_token": sub["token"]}}
        async with semaphore:
            ws = await websockets.connect(
                args.url, open_timeout=args.connect_timeout, close_timeout=2, ping_interval=None, compression=None,
                max_queue=None, local_addr=(address, 0))
            try:
                await ws.send(json.dumps(join))
                replied = subscribed = False
                end = time.monotonic() + args.connect_timeout
                while not (replied and subscribed):
                    left = end - time.monotonic()
                    if left <= 0:
                        raise TimeoutError("no join reply and 'Subscribed to PostgreSQL' in time")
                    msg = json.loads(await asyncio.wait_for(ws.recv(), left))
                    if msg.get("event") == "phx_reply" and msg.get("ref") == "1":
                        if msg["payload"].get("status") != "ok":
                            raise RuntimeError(f"join refused: {json.dumps(msg['payload'])[:300]}")
                        replied = True
                    elif msg.get("event") == "system":
                        if msg["payload"].get("status") != "ok":
                            raise RuntimeError(f"subscription refused: {json.dumps(msg['payload'])[:300]}")
                        subscribed = True
            except BaseException:
                await ws.close()
                raise
        sockets[index] = ws
        heartbeat_tasks.append(asyncio.create_task(heartbeat(ws)))
        return asyncio.create_task(reader(index, ws, sub["user_id"]))

    started = time.monotonic()
    semaphore = asyncio.Semaphore(args.connect_concurrency)
    results = await asyncio.gather(*(open_one(i, sub, semaphore) for i, sub in enumerate(mine)), return_exceptions=True)
    readers = [r for r in results if isinstance(r, asyncio.Task)]
    failures = [f"{type(r).__name__}: {r}"[:300] for r in results if not isinstance(r, asyncio.Task)]
    emit({"ready": len(readers), "failed": len(failures), "failures": failures[:10],
          "seconds": round(time.monotonic() - started, 2)})

    async def loop_lag():
        # How late the event loop runs a 50 ms timer: time the client itself adds to every delivery.
        while True:
            t0 = time.monotonic()
            await asyncio.sleep(0.05)
            state["phase"].loop_lags.append((time.monotonic() - t0 - 0.05) * 1000.0)

    background = [asyncio.create_task(loop_lag())]

    def percentile(values, q):
        if not values:
            return None
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    def report():
        phase = state["phase"]
        t = os.times()
        return {"phase": phase.name, "count": len(phase.delays), "delays": [round(d, 2) for d in phase.delays],
                "ids": dict(phase.ids), "duplicates": phase.duplicates, "wrong_user": phase.wrong_user,
                "bad_messages": phase.bad_messages, "system_errors": phase.system_errors,
                "first": phase.first, "last": phase.last, "open": len(readers) - state["closed"],
                "closed": state["closed"], "close_reasons": dict(state["close_reasons"]),
                "cpu_seconds": t.user + t.system,
                "loop_lag_p99_ms": percentile(phase.loop_lags, 0.99), "loop_lag_max_ms": max(phase.loop_lags, default=None)}

    # Commands, one per line on stdin.
    reader_stream = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader_stream), sys.stdin)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            line = await asyncio.wait_for(reader_stream.readline(), left)
        except asyncio.TimeoutError:
            break
        if not line:
            break  # the orchestrator is gone
        command, _, argument = line.decode().strip().partition(" ")
        if command == "phase":
            state["phase"] = Phase(argument)
            emit({"phase": argument})
        elif command == "count":
            emit({"count": len(state["phase"].delays), "open": len(readers) - state["closed"]})
        elif command == "report":
            emit(report())
        elif command == "stop":
            break
    state["stopping"] = True
    for task in background + heartbeat_tasks:
        task.cancel()
    await asyncio.wait([asyncio.create_task(ws.close()) for ws in sockets.values()] or [asyncio.sleep(0)], timeout=10)
    for task in readers:
        task.cancel()
    emit({"stopped": True})


# ------------------------------------------------------------------------------------------------------ orchestrator

def proc_ticks(pid, with_children=False):
    """utime + stime (+ cutime + cstime) of a process, in clock ticks; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    # fields[0] is the state (field 3): utime..cstime are fields 14..17
    ticks = int(fields[11]) + int(fields[12])
    if with_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks


def machine_ticks():
    """The whole machine's CPU from /proc/stat: (busy, steal) ticks summed over every CPU."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal, steal


def children_seconds():
    """CPU of this process's waited-for children (pgbench, psql; not the receivers, which are still running)."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pg_ticks(postmaster):
    """The cluster's CPU: the postmaster with its reaped children, plus its live children."""
    total = proc_ticks(postmaster, with_children=True)
    try:
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True, timeout=10).stdout.split()
    except subprocess.SubprocessError:
        children = []
    return total + sum(proc_ticks(int(c)) for c in children)


def percentile(values, q):
    if not values:
        return None
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def metrics(url):
    """The server's Prometheus text → {name{labels}: value} for the realtime series."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("guestpass_realtime"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
    return values


def metric_delta(before, after, name):
    return after.get(name, 0.0) - before.get(name, 0.0)


class Receiver:
    """One receiver process and its pipe."""

    def __init__(self, args, first, count, subscribers_file):
        command = [sys.executable, os.path.abspath(__file__), "receive", "--url", args.ws_url,
                   "--subscribers", subscribers_file, "--first", str(first), "--count", str(count),
                   "--per-address", str(args.per_address), "--max-seconds", str(args.receiver_max_seconds),
                   "--connect-timeout", str(args.connect_timeout), "--connect-concurrency", str(args.connect_concurrency),
                   "--heartbeat", str(args.heartbeat)]
        self.count = count
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read(self, timeout):
        """One JSON line within timeout seconds."""
        import select
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError(f"receiver {self.process.pid} said nothing in {timeout} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"receiver {self.process.pid} exited (status {self.process.poll()})")
        return json.loads(line)

    def ask(self, line, timeout=30):
        self.send(line)
        return self.read(timeout)

    def close(self):
        if self.process.poll() is None:
            try:
                self.ask("stop", timeout=20)
            except Exception:  # noqa: BLE001
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def psql(args, sql):
    result = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", args.owner_url, "-c", sql],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"psql failed: {result.stderr.strip()}")
    return result.stdout.strip()


def pgbench(args, label, script, phase, rate=None, seconds=None, clients=None):
    """pgbench on one script → its figures; output kept in the raw directory."""
    seconds = seconds or args.seconds
    clients = clients or args.writer_clients
    command = ["pgbench", "-n", "-c", str(clients), "-j", "1", "-T", str(seconds), "-D", f"phase={phase}",
               "-f", script]
    if rate:
        command += ["-R", str(rate)]
    command += [args.owner_url]
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    elapsed = time.time() - started
    with open(os.path.join(args.raw_dir, f"pgbench-{label}.out"), "w") as f:
        f.write(" ".join(command[:-1]) + " <owner url>\n" + result.stdout + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"pgbench {label} failed: {result.stderr.strip()[-500:]}")
    out = result.stdout

    def grab(pattern, cast=float, default=None):
        m = re.search(pattern, out, re.M)
        return cast(m.group(1)) if m else default

    return {"command": " ".join(command[:-1]), "tps": grab(r"^tps = ([0-9.]+)"),
            "transactions": grab(r"^number of transactions actually processed: (\d+)", int, 0),
            "failed": grab(r"^number of failed transactions: (\d+)", int, 0),
            "latency_ms": grab(r"^latency average = ([0-9.]+) ms"),
            "latency_stddev_ms": grab(r"^latency stddev = ([0-9.]+) ms"),
            "schedule_lag_ms": grab(r"^rate limit schedule lag: avg ([0-9.]+)"),
            "started": started, "seconds": elapsed}


def run_phase(args, receivers, scenario, phase_number, label, rate, seconds, fan, drain_seconds=None):
    """One measured write: pgbench on the published table at `rate` (None: as fast as it goes) while the receivers
    listen, then the last deliveries (bounded), then what everyone saw."""
    for r in receivers:
        answer = r.ask(f"phase {label}")
        assert answer.get("phase") == label, answer
    m0 = metrics(args.metrics_url)
    srv0, pg0 = proc_ticks(args.server_pid), pg_ticks(args.postmaster_pid)
    (busy0, steal0), tools0, self0 = machine_ticks(), children_seconds(), sum(os.times()[:2])
    rcv0 = [proc_ticks(r.process.pid) for r in receivers]
    t0 = time.time()
    bench = pgbench(args, f"{scenario}-{label}-published", args.scripts[scenario]["published"], phase_number,
                    rate=rate, seconds=seconds, clients=None if rate else args.burst_clients)
    written_ids = psql(args, f"select id from public.readings where (content->>'phase')::int = {phase_number}").split()
    expected = len(written_ids) * fan
    # The last changes: wait (bounded) until every expected delivery arrived or nothing moved for a while.
    drain_end = time.time() + (drain_seconds or args.drain_seconds)
    got, last_change, previous = 0, time.time(), -1
    while time.time() < drain_end:
        got = sum(r.ask("count")["count"] for r in receivers)
        if got >= expected:
            break
        if got != previous:
            previous, last_change = got, time.time()
        elif time.time() - last_change > 5:
            break
        time.sleep(0.2)
    time.sleep(0.3)  # anything still on its way (a duplicate would show up here)
    t1 = time.time()
    srv1, pg1 = proc_ticks(args.server_pid), pg_ticks(args.postmaster_pid)
    rcv1 = [proc_ticks(r.process.pid) for r in receivers]
    (busy1, steal1), tools1, self1 = machine_ticks(), children_seconds(), sum(os.times()[:2])
    m1 = metrics(args.metrics_url)
    reports = [r.ask("report", timeout=60) for r in receivers]

    delays = sorted(d for rep in reports for d in rep["delays"])
    ids = collections.Counter()
    for rep in reports:
        ids.update(rep["ids"])
    written = set(written_ids)
    missing = sum(max(0, fan - ids.get(i, 0)) for i in written)
    extra = sum(max(0, c - fan) for i, c in ids.items() if i in written) + sum(c for i, c in ids.items() if i not in written)
    firsts = [rep["first"] for rep in reports if rep["first"]]
    lasts = [rep["last"] for rep in reports if rep["last"]]
    span = (max(lasts) - min(firsts)) if firsts and lasts else 0.0
    wall = t1 - t0
    with open(os.path.join(args.raw_dir, f"delays-{scenario}-{label}.txt"), "w") as f:
        f.write("\n".join(f"{d:.2f}" for d in delays) + ("\n" if delays else ""))
    return {
        "scenario": scenario, "label": label, "rate": rate, "seconds": seconds, "fan": fan,
        "written": len(written_ids), "expected": expected, "delivered": len(delays), "missing": missing,
        "extra": extra, "duplicates_per_socket": sum(rep["duplicates"] for rep in reports),
        "wrong_user": sum(rep["wrong_user"] for rep in reports),
        "bad_messages": sum(rep["bad_messages"] for rep in reports),
        "system_errors": [e for rep in reports for e in rep["system_errors"]][:20],
        "sockets_open": sum(rep["open"] for rep in reports), "sockets_closed": sum(rep["closed"] for rep in reports),
        "close_reasons": [rep["close_reasons"] for rep in reports],
        "delivered_per_s": len(delays) / span if span > 0 else 0.0, "delivery_span_s": span,
        "written_per_s": len(written_ids) / bench["seconds"] if bench["seconds"] else 0.0,
        "p50_ms": percentile(delays, 0.50), "p95_ms": percentile(delays, 0.95), "p99_ms": percentile(delays, 0.99),
        "max_ms": delays[-1] if delays else None, "min_ms": delays[0] if delays else None,
        "server_cpu_pct": (srv1 - srv0) / TICKS / wall * 100, "pg_cpu_pct": (pg1 - pg0) / TICKS / wall * 100,
        "writer_tools_cpu_pct": ((tools1 - tools0) + (self1 - self0)) / wall * 100,
        # Everything else the machine ran meanwhile (other users of a shared machine), and the hypervisor's steal.
        "others_cpu_pct": ((busy1 - busy0) - (srv1 - srv0) - (pg1 - pg0) - sum(b - a for a, b in zip(rcv0, rcv1))) / TICKS
        / wall * 100 - ((tools1 - tools0) + (self1 - self0)) / wall * 100,
        "steal_cpu_pct": (steal1 - steal0) / TICKS / wall * 100,
        "receiver_cpu_pct": [(b - a) / TICKS / wall * 100 for a, b in zip(rcv0, rcv1)],
        "receiver_loop_lag_p99_ms": [rep["loop_lag_p99_ms"] for rep in reports],
        "receiver_loop_lag_max_ms": [rep["loop_lag_max_ms"] for rep in reports],
        "wall_s": wall, "writer": bench,
        "metrics": {k: metric_delta(m0, m1, k) for k in sorted(set(m0) | set(m1)) if k.endswith("_total")
                    or k.endswith("_sum") or k.endswith("_count")},
        "metrics_after": m1,
    }


def verdict_ok(step, target_ms):
    return step["missing"] == 0 and step["extra"] == 0 and step["p99_ms"] is not None and step["p99_ms"] <= target_ms


def run_scenario(args, scenario, subscribers_file, n, fan, rate, raw):
    per_proc = math.ceil(n / args.procs)
    receivers = []
    try:
        for p in range(args.procs):
            first = p * per_proc
            count = min(per_proc, n - first)
            if count > 0:
                receivers.append(Receiver(args, first, count, subscribers_file))
        log(f"{scenario}: {n} sockets over {len(receivers)} receiver processes")
        ready = [r.read(timeout=args.connect_timeout * (per_proc / args.connect_concurrency + 2) + 60) for r in receivers]
        connected = sum(x["ready"] for x in ready)
        failures = [f for x in ready for f in x["failures"]]
        log(f"{scenario}: {connected} of {n} subscribed in {max(x['seconds'] for x in ready):.1f} s")
        if connected != n:
            raise RuntimeError(f"{scenario}: only {connected} of {n} sockets subscribed: {failures[:3]}")
        time.sleep(1)  # the last joins' bindings are in the hub; let the feed settle
        steps = []
        current = rate
        for attempt in range(args.max_steps):
            args.phase_counter += 1
            label = f"r{current:g}"
            log(f"{scenario}: writing {current:g} readings/s for {args.seconds} s (pgbench -R {current:g}), {n} subscribers")
            step = run_phase(args, receivers, scenario, args.phase_counter, label, current, args.seconds, fan)
            log(f"{scenario} @ {current:g}/s: {step['delivered']} of {step['expected']} delivered, "
                f"p50 {fmt(step['p50_ms'])} p99 {fmt(step['p99_ms'])} max {fmt(step['max_ms'])} ms, "
                f"server CPU {step['server_cpu_pct']:.0f}%")
            # The yardstick: the same INSERT at the same rate into the unpublished copy (no capture, no fan-out).
            args.phase_counter += 1
            step["unpublished"] = pgbench(args, f"{scenario}-{label}-unpublished", args.scripts[scenario]["unpublished"],
                                          args.phase_counter, rate=current, seconds=args.seconds)
            steps.append(step)
            raw["steps"].append(step)
            if verdict_ok(step, args.target_ms) or attempt == args.max_steps - 1:
                break
            current = max(round(current / 2, 2), 0.5)
            if step["sockets_open"] < n:
                log(f"{scenario}: {n - step['sockets_open']} sockets were closed by the server: not retried")
                break
            log(f"{scenario}: p99 above {args.target_ms} ms or deliveries missing at {step['rate']:g}/s: halving the rate")
        if args.burst_seconds > 0 and scenario in args.burst_scenarios:
            # As fast as the writer goes, unpublished then published, with the subscribers listening.
            args.phase_counter += 1
            unpublished = pgbench(args, f"{scenario}-burst-unpublished", args.scripts[scenario]["unpublished"],
                                  args.phase_counter, seconds=args.burst_seconds, clients=args.burst_clients)
            args.phase_counter += 1
            log(f"{scenario}: burst, pgbench -c{args.burst_clients} unthrottled for {args.burst_seconds} s")
            # A backlog is expected here (the writer outruns the fan-out): up to a minute more to deliver it.
            burst = run_phase(args, receivers, scenario, args.phase_counter, "burst", None, args.burst_seconds, fan,
                              drain_seconds=max(args.drain_seconds, 60))
            burst["unpublished"] = unpublished
            log(f"{scenario} burst: {burst['written']} written ({burst['written_per_s']:.0f}/s), "
                f"{burst['delivered']} delivered, p99 {fmt(burst['p99_ms'])} ms")
            steps.append(burst)
            raw["steps"].append(burst)
        return steps
    finally:
        for r in receivers:
            r.close()


def fmt(v, digits=0):
    return "-" if v is None else f"{v:.{digits}f}"


def log(text):
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def summary(args, raw):
    lines = []
    p = lines.append
    p("")
    p(f"==== Realtime fan-out: {args.subscribers} subscribers, release build, {os.cpu_count()} CPUs, loopback, "
      f"{args.procs} receiver processes (python websockets), writer pgbench -c{args.writer_clients} as the owner")
    p(f"  delay = arrival at the client - record.created_at (clock_timestamp() in the INSERT); server polls every 100 ms; "
      f"load {raw['load_before']} -> {raw['load_after']}")
    head = (f"  {'scenario':<9} {'rate/s':>6} {'written':>7} {'delivered':>9} {'deliv/s':>8} {'lost':>4} {'extra':>5} "
            f"{'p50 ms':>6} {'p95 ms':>6} {'p99 ms':>6} {'max ms':>6} {'server':>6} {'pg':>5} {'clients':>9} {'lag':>4} {'other':>5} "
            f"| {'writer tps':>7} {'unpub':>7} {'ratio':>5} | {'lat ms':>6} {'unpub':>6} {'ratio':>5}")
    p(head)
    for s in raw["steps"]:
        rate = "max" if s["rate"] is None else f"{s['rate']:g}"
        pub, unp = s["writer"], s.get("unpublished") or {}
        tps_ratio = (pub["tps"] / unp["tps"]) if unp.get("tps") else None
        lat_ratio = (pub["latency_ms"] / unp["latency_ms"]) if unp.get("latency_ms") else None
        clients = "+".join(f"{c:.0f}" for c in s["receiver_cpu_pct"]) + "%"
        lag = max((x for x in s["receiver_loop_lag_p99_ms"] if x is not None), default=None)
        p(f"  {s['scenario']:<9} {rate:>6} {s['written']:>7} {s['delivered']:>9} {s['delivered_per_s']:>8.1f} "
          f"{s['missing']:>4} {s['extra']:>5} {fmt(s['p50_ms']):>6} {fmt(s['p95_ms']):>6} {fmt(s['p99_ms']):>6} "
          f"{fmt(s['max_ms']):>6} {s['server_cpu_pct']:>5.0f}% {s['pg_cpu_pct']:>4.0f}% {clients:>9} {fmt(lag):>4} {max(0.0, s['others_cpu_pct']):>4.0f}% "
          f"| {fmt(pub['tps'], 1):>10} {fmt(unp.get('tps'), 1):>7} {fmt(tps_ratio, 2):>5} "
          f"| {fmt(pub['latency_ms'], 2):>6} {fmt(unp.get('latency_ms'), 2):>6} {fmt(lat_ratio, 2):>5}")
    p("  (lost/extra: deliveries missing or beyond one per subscriber that may see the row; CPU in % of one core over "
      "the write and its drain; clients = each receiver process; lag = p99 ms by which a receiver's event loop ran a "
      "timer late (what the client adds); other = CPU of everything else on the machine meanwhile (a shared "
      "machine's other users, approximate; the machine has " + str(os.cpu_count()) + " CPUs = " + str(100 * os.cpu_count()) + "%); ratios published/unpublished, same rate, same run; rate max = pgbench "
      f"-c{args.burst_clients} unthrottled)")
    for s in raw["steps"]:
        notes = []
        dropped = s["metrics"].get("guestpass_realtime_changes_dropped_total", 0)
        if dropped:
            notes.append(f"server metric changes_dropped_total +{dropped:.0f}")
        if s["sockets_closed"]:
            notes.append(f"{s['sockets_closed']} sockets closed by the server: {s['close_reasons']}")
        if s["duplicates_per_socket"] or s["wrong_user"] or s["bad_messages"]:
            notes.append(f"{s['duplicates_per_socket']} duplicates, {s['wrong_user']} another user's rows, "
                         f"{s['bad_messages']} unparsable frames")
        if s["system_errors"]:
            notes.append(f"system errors: {s['system_errors'][:3]}")
        if s["writer"]["failed"] or (s.get("unpublished") or {}).get("failed"):
            notes.append("pgbench transactions failed")
        lag = max((x for x in s["receiver_loop_lag_max_ms"] if x is not None), default=None)
        if lag is not None and lag > 50:
            notes.append(f"a receiver's event loop ran up to {lag:.0f} ms late (p99 "
                         f"{max(x for x in s['receiver_loop_lag_p99_ms'] if x is not None):.0f} ms) with the receivers at "
                         f"{'+'.join(f'{c:.0f}' for c in s['receiver_cpu_pct'])}% CPU and other processes at "
                         f"{s['others_cpu_pct']:.0f}%: the client adds delay")
        if notes:
            rate = "max" if s["rate"] is None else f"{s['rate']:g}/s"
            p(f"  ! {s['scenario']} @ {rate}: " + "; ".join(notes))
    for scenario, rate in (("per-user", args.rate), ("shared", args.shared_rate)):
        steps = [s for s in raw["steps"] if s["scenario"] == scenario and s["rate"] is not None]
        if not steps:
            continue
        first = steps[0]
        ok = [s for s in steps if verdict_ok(s, args.target_ms)]
        if verdict_ok(first, args.target_ms):
            p(f"  {scenario}: p99 {fmt(first['p99_ms'])} ms at {rate:g} changes/s x {first['fan']} "
              f"= {first['delivered_per_s']:.0f} deliveries/s: target p99 <= {args.target_ms:g} ms met")
        elif ok:
            p(f"  {scenario}: target p99 <= {args.target_ms:g} ms NOT met at {rate:g} changes/s (p99 {fmt(first['p99_ms'])} ms, "
              f"{first['missing']} lost); met at {ok[0]['rate']:g} changes/s = {ok[0]['delivered_per_s']:.0f} deliveries/s")
        else:
            tried = ", ".join(f"{s['rate']:g}/s: p99 {fmt(s['p99_ms'])} ms" for s in steps)
            p(f"  {scenario}: target p99 <= {args.target_ms:g} ms NOT met at any rate tried ({tried})")
    for s in raw["steps"]:
        if s["rate"] is None and s.get("unpublished", {}).get("tps"):
            p(f"  {s['scenario']} burst: the writer reached {s['writer']['tps']:.0f} tx/s with capture and "
              f"{s['sockets_open']} sockets listening, {s['unpublished']['tps']:.0f} tx/s unpublished "
              f"(ratio {s['writer']['tps'] / s['unpublished']['tps']:.2f}, the server using {s['server_cpu_pct']:.0f}% of a "
              f"core meanwhile); {s['delivered_per_s']:.0f} changes/s delivered "
              f"(p99 {fmt(s['p99_ms'])} ms): " + ("the fan-out kept up" if s['p99_ms'] is not None and s['p99_ms'] <= args.target_ms
                                                   else "the fan-out's ceiling at this fan-in, the rest queued in the log"))
    p(f"  raw numbers: {args.raw_dir}/results.json (and one delay per line in delays-*.txt)")
    p("====")
    return "\n".join(lines)


def orchestrator_main(args):
    with open(args.users) as f:
        users = json.load(f)
    if len(users) < args.subscribers:
        raise SystemExit(f"{len(users)} users for {args.subscribers} subscribers")
    os.makedirs(args.raw_dir, exist_ok=True)
    args.scripts = {"per-user": {"published": args.per_user_published, "unpublished": args.per_user_unpublished},
                    "shared": {"published": args.shared_published, "unpublished": args.shared_unpublished}}
    args.phase_counter = 0
    args.burst_scenarios = {"per-user"}
    raw = {"settings": {k: (sorted(v) if isinstance(v, set) else v) for k, v in vars(args).items()
                        if k not in ("scripts", "owner_url")},
           "load_before": " ".join(open("/proc/loadavg").read().split()[:3]), "steps": []}
    # Per-user: subscriber i is guest i, bound to its own rows.
    per_user = [{"token": u["token"], "user_id": u["user_id"], "filter": f"user_id=eq.{u['user_id']}"}
                for u in users[:args.subscribers]]
    with open(os.path.join(args.work_dir, "subscribers-per-user.json"), "w") as f:
        json.dump(per_user, f)
    # Shared: every socket is guest 1 (whose readings the shared script writes), no filter.
    shared = [{"token": users[0]["token"], "user_id": users[0]["user_id"], "filter": None}] * args.subscribers
    with open(os.path.join(args.work_dir, "subscribers-shared.json"), "w") as f:
        json.dump(shared, f)
    try:
        if "per-user" in args.scenarios:
            run_scenario(args, "per-user", os.path.join(args.work_dir, "subscribers-per-user.json"), args.subscribers, 1,
                         args.rate, raw)
        if "shared" in args.scenarios:
            run_scenario(args, "shared", os.path.join(args.work_dir, "subscribers-shared.json"), args.subscribers,
                         args.subscribers, args.shared_rate, raw)
    finally:
        raw["load_after"] = " ".join(open("/proc/loadavg").read().split()[:3])
        with open(os.path.join(args.raw_dir, "results.json"), "w") as f:
            json.dump(raw, f, indent=1)
    text = summary(args, raw)
    print(text, file=sys.stderr)
    with open(os.path.join(args.raw_dir, "summary.txt"), "w") as f:
        f.write(text + "\n")
    # Exit status: 1 when a measurement is invalid (changes lost or duplicated, sockets closed, writer failures); a
    # p99 above the target is reported, not an error.
    invalid = [s for s in raw["steps"] if s["missing"] or s["extra"] or s["duplicates_per_socket"] or s["wrong_user"]
               or s["writer"]["failed"] or s["sockets_closed"]]
    if invalid:
        log("invalid: " + ", ".join(f"{s['scenario']}@{s['label']}" for s in invalid) + " lost, duplicated or misdelivered "
            "changes, closed sockets or failed writes (see above)")
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    r = sub.add_parser("receive", help="one receiver process (started by run)")
    r.add_argument("--url", required=True)
    r.add_argument("--subscribers", required=True, help="JSON list of {token, user_id, filter}")
    r.add_argument("--first", type=int, required=True)
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--per-address", type=int, default=50)
    r.add_argument("--max-seconds", type=float, default=1800)
    r.add_argument("--connect-timeout", type=float, default=20)
    r.add_argument("--connect-concurrency", type=int, default=20)
    r.add_argument("--heartbeat", type=float, default=25)

    o = sub.add_parser("run", help="the measurement")
    o.add_argument("--ws-url", required=True, help="ws://127.0.0.1:PORT/realtime/v1/websocket?apikey=…&vsn=1.0.0")
    o.add_argument("--metrics-url", required=True)
    o.add_argument("--owner-url", required=True, help="the table owner's connection URL (pgbench, psql)")
    o.add_argument("--server-pid", type=int, required=True)
    o.add_argument("--postmaster-pid", type=int, required=True)
    o.add_argument("--users", required=True, help="JSON list of {token, user_id}")
    o.add_argument("--per-user-published", required=True)
    o.add_argument("--per-user-unpublished", required=True)
    o.add_argument("--shared-published", required=True)
    o.add_argument("--shared-unpublished", required=True)
    o.add_argument("--scenarios", default="per-user,shared")
    o.add_argument("--subscribers", type=int, default=1000)
    o.add_argument("--rate", type=float, default=100)
    o.add_argument("--shared-rate", type=float, default=10)
    o.add_argument("--seconds", type=int, default=30)
    o.add_argument("--burst-seconds", type=int, default=10)
    o.add_argument("--burst-clients", type=int, default=8)
    o.add_argument("--writer-clients", type=int, default=4)
    o.add_argument("--procs", type=int, default=2)
    o.add_argument("--per-address", type=int, default=50)
    o.add_argument("--target-ms", type=float, default=250)
    o.add_argument("--max-steps", type=int, default=4)
    o.add_argument("--drain-seconds", type=float, default=20)
    o.add_argument("--connect-timeout", type=float, default=20)
    o.add_argument("--connect-concurrency", type=int, default=20)
    o.add_argument("--heartbeat", type=float, default=25)
    o.add_argument("--receiver-max-seconds", type=float, default=1800)
    o.add_argument("--raw-dir", required=True, help="where the raw numbers are kept")
    o.add_argument("--work-dir", required=True, help="where the subscribers' tokens go (removed by the caller)")

    args = parser.parse_args()
    if args.command == "receive":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the orchestrator stops it (stdin), or its deadline
        asyncio.run(receiver_main(args))
        return 0
    args.scenarios = set(args.scenarios.split(","))
    return orchestrator_main(args)


if __name__ == "__main__":
    sys.exit(main())
