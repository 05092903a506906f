"""Attack: the costliest request bodies the limits let through.

The RPC endpoint takes bodies up to 1 MiB. Each of the worst 1 MiB shapes (350,000 empty objects, 100,000 levels of
nesting, long escaped strings, 71,000 distinct keys, a 1 MiB number, …) sent to `rpc/get_quota` as a signed-in guest answers a
4xx or a normal answer, never a 5xx, and costs the server under 100 ms of CPU (utime + stime of the process, read
from /proc right before and after each request, on a server of its own that is otherwise idle; each body is sent 3
times and judged by its cheapest try). A body one byte over each route's limit (every JSON route) is a 413. Run with `-s` to see the
CPU figures of each body.
"""

from __future__ import annotations

import os

import httpx
import pytest

from support import assert_json_error, guest_headers, sign_up_guest

pytestmark = pytest.mark.attack  # from the attack run: a hole found and kept closed

MIB = 1024 * 1024
CPU_BUDGET_MS = 100.0
ATTEMPTS = 3  # each body is sent this many times; its cost is the cheapest try (the others may include unrelated work)
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
QUOTA = "/rest/v1/rpc/get_quota"


def fill(head: bytes, item: bytes, tail: bytes, sep: bytes = b"", size: int = MIB) -> bytes:
    """head + item (sep item)* + tail, as many items as fit in `size` bytes."""
    count = max(1, (size - len(head) - len(tail) + len(sep)) // (len(item) + len(sep)))
    body = head + sep.join([item] * count) + tail
    assert len(body) <= size
    return body


def many_keys(size: int = MIB) -> bytes:
    parts, used, index = [], 2, 0
    while True:
        part = b'"k%d":%d' % (index, index)
        if used + len(part) + 1 > size:
            break
        parts.append(part)
        used += len(part) + 1
        index += 1
    return b"{" + b",".join(parts) + b"}"


BODIES = {
    "top-level array of {}": fill(b"[", b"{}", b"]", b","),
    "object holding an array of {}": fill(b'{"a":[', b"{}", b"]}", b","),
    "100,000 nested arrays": b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "100,000 nested objects": b'{"a":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}",
    "escaped \\u00e9 string": fill(b'{"a":"', b"\\u00e9", b'"}'),
    "escaped surrogate-pair string": fill(b'{"a":"', b"\\ud83d\\ude00", b'"}'),
    "raw UTF-8 \u00e9 string": fill(b'{"a":"', "\u00e9".encode(), b'"}'),
    "string of short escapes": fill(b'{"a":"', b'\\n\\"\\\\', b'"}'),
    "1 MiB of k0..kN keys": many_keys(),
    "one key repeated": fill(b"{", b'"a":0', b"}", b","),
    "1 MiB number": fill(b'{"a":', b"9", b"}"),
    "1 MiB fraction with exponent": fill(b'{"a":0.', b"1", b"e999999}"),
    "array of numbers": fill(b'{"a":[', b"1.5e300", b"]}", b","),
    "whitespace": fill(b"{", b" ", b"}"),
    "many short strings": fill(b'{"a":[', b'"x"', b"]}", b","),
}


def cpu_ms(pid: int) -> float:
    """utime + stime of process `pid` (all its threads), in milliseconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()  # after "pid (comm)": fields 3… → index 0 is field 3
    return (int(fields[11]) + int(fields[12])) * 1000.0 / TICKS_PER_SECOND  # fields 14 and 15


@pytest.fixture(scope="module")
def body_server(start_server):
    srv = start_server("attack-bodies")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def body_guest(body_server, app):
    with httpx.Client(timeout=30) as client:
        guest = sign_up_guest(client, body_server, app)
        # Warm the catalog and the API-key cache, so the first measured body pays for neither.
        warm = client.post(body_server.url + QUOTA, headers=guest_headers(app, guest), json={})
        assert warm.status_code == 200, warm.text
    return guest


@pytest.mark.parametrize("name", list(BODIES))
def test_worst_one_mib_bodies_are_cheap(name, body_server, body_guest, app, http):
    body = BODIES[name]
    assert len(body) <= MIB
    headers = guest_headers(app, body_guest, **{"Content-Type": "application/json"})
    pid = body_server.proc.pid

    spent = []
    for _attempt in range(ATTEMPTS):
        before = cpu_ms(pid)
        response = http.post(body_server.url + QUOTA, headers=headers, content=body, timeout=30)
        spent.append(cpu_ms(pid) - before)
        summary = f"{name} ({len(body)} bytes): HTTP {response.status_code}"
        assert response.status_code < 500, f"{summary}: {response.text[:300]}"
        if response.status_code >= 400:
            assert response.status_code in (400, 404, 413), f"{summary}: {response.text[:300]}"
            assert_json_error(response, summary)
        assert body_server.proc.poll() is None, f"the server died on {name}:\n{body_server.log_tail()}"

    summary += f", {min(spent):.0f} ms of server CPU (each try: {', '.join(f'{ms:.0f}' for ms in spent)} ms)"
    print(summary)
    assert min(spent) < CPU_BUDGET_MS, f"{summary}; budget {CPU_BUDGET_MS:.0f} ms"


# Every JSON route and its limit, as the README lists them (Sources/GuestPassApp/HTTP/BodyLimits.swift holds them;
# BodyLimitsTests compares that file with the README).
LIMITS = [
    ("POST", QUOTA, MIB, True),
    ("POST", "/rest/v1/readings", MIB, True),
    ("POST", "/auth/v1/signup", 32 * 1024, False),
    ("PUT", "/auth/v1/user", 32 * 1024, True),
    ("POST", "/auth/v1/token?grant_type=refresh_token", 4 * 1024, False),
    ("POST", "/auth/v1/token?grant_type=id_token", 4 * 1024, False),
    ("POST", "/v1/account/merge", 4 * 1024, True),
    ("POST", "/v1/devicecheck/grant", 8 * 1024, True),
]


@pytest.mark.parametrize(("method", "path", "limit", "needs_guest"), LIMITS)
def test_one_byte_over_the_limit_is_413(method, path, limit, needs_guest, body_server, body_guest, app, http):
    headers = guest_headers(app, body_guest) if needs_guest else {"apikey": app.publishable_key}
    headers["Content-Type"] = "application/json"
    over = fill(b'{"a":"', b"x", b'"}', size=limit + 1)
    assert len(over) == limit + 1
    response = http.request(method, body_server.url + path, headers=headers, content=over, timeout=30)
    assert response.status_code == 413, f"{path}, {len(over)} bytes: {response.status_code} {response.text[:300]}"
    assert_json_error(response, path)
    # At the limit itself the body is read (and judged on its content, not its size).
    at_limit = fill(b'{"a":"', b"x", b'"}', size=limit)
    assert len(at_limit) == limit
    response = http.request(method, body_server.url + path, headers=headers, content=at_limit, timeout=30)
    assert response.status_code != 413 and response.status_code < 500, f"{path} at {limit} bytes: {response.status_code}"
