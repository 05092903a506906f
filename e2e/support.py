"""Helpers several e2e files share: apps of their own, guests, guest-bearer headers, the official client, GoTrue's
error shape, refreshes and raw HTTP requests.

(The fixtures and the rest live in e2e/conftest.py.)
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
import time

from supabase import ClientOptions, create_client

from conftest import App, Database, api_headers, new_device_secret, run

RAW_TIMEOUT = 5.0  # seconds a raw request may take, end to end
VERSION = "2024-01-01"  # the X-Supabase-Api-Version the SDKs send; GoTrue echoes it on errors
TOKEN_PATH = "/auth/v1/token?grant_type=refresh_token"
VERSION_LINE = re.compile(r"^guestpass (\S+) \(commit ([0-9a-f]{7,40}|unknown)\)$")  # `guestpass --version`


def create_app(database: Database, name: str) -> App:
    """A new app of its own (fresh per-app sign-up bucket, default quota and DeviceCheck settings)."""
    created = run([database.bin, "apps", "create", "--name", name, "--json"], env={"DATABASE_URL": database.super_url})
    return App(**json.loads(created))


@dataclasses.dataclass
class Guest:
    user_id: str
    access_token: str
    refresh_token: str


def sign_up_guest(http, server, app: App, **headers: str) -> Guest:
    """A new guest of `app` (anonymous sign-up with a fresh device secret), or an AssertionError."""
    response = http.post(
        server.url + "/auth/v1/signup",
        headers=api_headers(app, **headers),
        json={"data": {"device_id": new_device_secret()}},
    )
    assert response.status_code == 200, f"sign-up failed: {response.status_code} {response.text}"
    body = response.json()
    return Guest(user_id=body["user"]["id"], access_token=body["access_token"], refresh_token=body["refresh_token"])


def bearer_headers(app: App, access_token: str, **extra: str) -> dict[str, str]:
    """The headers of a signed-in user: the publishable key and an access token."""
    return {"apikey": app.publishable_key, "Authorization": f"Bearer {access_token}", **extra}


def guest_headers(app: App, guest: Guest, **extra: str) -> dict[str, str]:
    """The headers of a signed-in guest: the publishable key and the guest's access token."""
    return bearer_headers(app, guest.access_token, **extra)


def assert_json_error(response, context: str = "") -> dict:
    """The response is an error in the documented shape: a JSON object with a non-empty string `code`."""
    where = f" ({context})" if context else ""
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON{where}: {response.status_code} {response.text[:300]!r}") from None
    assert isinstance(body, dict) and isinstance(body.get("code"), str) and body["code"], (
        f"error body has no code{where}: {response.status_code} {body!r}"[:500]
    )
    return body


@dataclasses.dataclass
class RawResponse:
    status: int | None  # None: the connection closed without an answer
    headers: dict[str, str]
    body: bytes


def raw_request_bytes(server, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> bytes:
    """One HTTP/1.1 request (`Connection: close`) with header bytes exactly as given."""
    lines = [f"{method} {target} HTTP/1.1".encode(), f"Host: 127.0.0.1:{server.port}".encode(), b"Connection: close"]
    lines += [name + b": " + value for name, value in headers]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(b"Content-Type: application/json")
        lines.append(f"Content-Length: {len(body)}".encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def raw_request(server, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> RawResponse:
    """Sends one HTTP/1.1 request with header bytes exactly as given (httpx refuses NUL and non-ASCII in headers),
    and reads the answer until the server closes the connection (`Connection: close`) or RAW_TIMEOUT passes."""
    request = raw_request_bytes(server, method, target, headers, body)
    deadline = time.monotonic() + RAW_TIMEOUT
    received = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=RAW_TIMEOUT) as sock:
        try:
            sock.sendall(request)
            while time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except (ConnectionResetError, BrokenPipeError):
            pass  # a refusal by the HTTP layer may reset the connection: judged below by what was received
        except socket.timeout:
            raise AssertionError(f"no answer within {RAW_TIMEOUT}s to {method} {target}; received {received[:200]!r}") from None
    return parse_raw_response(received)


def parse_raw_response(received: bytes) -> RawResponse:
    """The status, headers and (de-chunked) body of one HTTP/1.1 answer read until the connection closed."""
    if not received:
        return RawResponse(status=None, headers={}, body=b"")
    head, _, payload = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    status = int(status_line.split(b" ")[1])
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(b":")
        parsed[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    if parsed.get("transfer-encoding", "").lower() == "chunked":
        payload = _dechunk(payload)
    return RawResponse(status=status, headers=parsed, body=payload)


def _dechunk(payload: bytes) -> bytes:
    out = b""
    while payload:
        size_line, _, payload = payload.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out, payload = out + payload[:size], payload[size + 2 :]
    return out


def make_client(server, app):
    # No auto refresh: its timer thread would outlive the test.
    options = ClientOptions(auto_refresh_token=False, persist_session=False)
    return create_client(server.url, app.publishable_key, options)


def refresh(http, server, app, token, **headers):
    return http.post(server.url + TOKEN_PATH, headers=api_headers(app, **headers), json={"refresh_token": token})


def assert_error(response, status, code, echoed=True):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and isinstance(body["message"], str) and body["message"]
    assert response.headers["content-type"].startswith("application/json")
    if echoed:
        assert response.headers.get("x-supabase-api-version") == VERSION
    else:
        assert "x-supabase-api-version" not in response.headers


def guestpass_version(binary: str) -> tuple[str, str]:
    """`binary --version`: its version number and the commit it was built from (`unknown` outside a git checkout);
    the line's shape is asserted."""
    proc = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stderr == "", proc
    match = VERSION_LINE.fullmatch(proc.stdout.removesuffix("\n"))
    assert match, f"not `guestpass <version> (commit <hash>|unknown)`: {proc.stdout!r}"
    return match.group(1), match.group(2)
