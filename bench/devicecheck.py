"""Load driver of bench/devicecheck.sh (standard library only): welcome grants against the DeviceCheck stand-in.

  devicecheck.py throughput URL STANDIN KEY CONNECTIONS SECONDS   new devices, one guest each, for SECONDS
  devicecheck.py reinstalls URL STANDIN KEY CONNECTIONS SECONDS   second guests on devices already granted
  devicecheck.py burst URL STANDIN KEY COUNT                       COUNT new devices claimed at the same moment
Prints one line of JSON: counts by outcome, elapsed seconds, latencies (ms) and the device ids granted.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import urllib.parse
import uuid


def request(base: str, method: str, path: str, headers: dict[str, str], body: dict | None = None) -> tuple[int, dict | str]:
    parts = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        data = json.dumps(body).encode() if body is not None else None
        connection.request(method, path, body=data, headers={**headers, **({"Content-Type": "application/json"} if data else {})})
        response = connection.getresponse()
        text = response.read().decode()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text
    finally:
        connection.close()


def guest(url: str, key: str) -> str:
    status, body = request(url, "POST", "/auth/v1/signup", {"apikey": key}, {"data": {"device_id": str(uuid.uuid4())}})
    assert status == 200, (status, body)
    return body["access_token"]


def device_token(standin: str, device: str) -> str:
    status, body = request(standin, "GET", f"/_standin/devices/{device}/token", {})
    assert status == 200, (status, body)
    return body.strip()


def claim(url: str, key: str, access: str, token: str) -> tuple[str, float]:
    started = time.monotonic()
    status, body = request(url, "POST", "/v1/devicecheck/grant", {"apikey": key, "Authorization": f"Bearer {access}"},
                           {"device_token": token})
    elapsed = (time.monotonic() - started) * 1000
    if status == 200:
        return ("granted" if body.get("granted") else "refused"), elapsed
    code = body.get("code", "?") if isinstance(body, dict) else "?"
    return f"{status}:{code}", elapsed


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run_clients(count: int, work) -> dict:
    """Runs `work(index, record)` on `count` threads; `record(outcome, ms, device)` collects results."""
    lock = threading.Lock()
    outcomes: dict[str, int] = {}
    latencies: list[float] = []
    granted: list[str] = []

    def record(outcome: str, ms: float, device: str) -> None:
        with lock:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            latencies.append(ms)
            if outcome == "granted":
                granted.append(device)

    started = time.monotonic()
    threads = [threading.Thread(target=work, args=(index, record)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    elapsed = time.monotonic() - started
    return {
        "outcomes": outcomes, "elapsed_s": round(elapsed, 3), "claims": len(latencies),
        "p50_ms": round(percentile(latencies, 50), 1), "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies, default=0), 1), "granted_devices": granted,
    }


def main() -> None:
    mode, url, standin, key = sys.argv[1:5]
    if mode in ("throughput", "reinstalls"):
        clients, seconds = int(sys.argv[5]), float(sys.argv[6])
        deadline = time.monotonic() + seconds
        reinstall_devices: list[str] = []
        if mode == "reinstalls":
            # One device per client, granted once before the clock starts.
            for index in range(clients):
                device = f"granted-{index}-{uuid.uuid4().hex[:8]}"
                outcome, _ = claim(url, key, guest(url, key), device_token(standin, device))
                assert outcome == "granted", outcome
                reinstall_devices.append(device)

        def work(index: int, record) -> None:
            while time.monotonic() < deadline:
                device = reinstall_devices[index] if reinstall_devices else f"new-{uuid.uuid4().hex}"
                access, token = guest(url, key), device_token(standin, device)  # not timed: a launch's own work
                outcome, ms = claim(url, key, access, token)
                record(outcome, ms, device)

        result = run_clients(clients, work)
        result["elapsed_s"] = seconds
    else:
        count = int(sys.argv[5])
        prepared = [(guest(url, key), f"burst-{uuid.uuid4().hex}") for _ in range(count)]
        prepared = [(access, device, device_token(standin, device)) for access, device in prepared]
        gate = threading.Barrier(count, timeout=60)

        def work(index: int, record) -> None:
            access, device, token = prepared[index]
            gate.wait()
            outcome, ms = claim(url, key, access, token)
            record(outcome, ms, device)

        result = run_clients(count, work)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
