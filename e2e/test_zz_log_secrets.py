"""Secrets never reach the logs: run last (the file name sorts last), after the whole suite, and read every line every
`guestpass serve` of the session wrote (JSON lines at debug level, conftest) for what the suite used: API keys,
access tokens, refresh tokens, device secrets, transfer and recovery codes. Also: every server line is one JSON
object, and the request lines carry the request id, route, status, duration and, once authenticated, the app.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import DEVICE_SECRETS

SECRET_PATTERNS = {
    "API key": re.compile(r"gp_(pub|sec)_[0-9a-f]{64}"),
    "refresh token": re.compile(r"gpr_[A-Za-z0-9_-]{30,}"),
    "JWT (access or identity token)": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"),
    "transfer code": re.compile(r"\b[2-9A-HJKMNP-Z]{5}-[2-9A-HJKMNP-Z]{5}\b"),
    "recovery code": re.compile(r"\b[2-9A-HJKMNP-Z]{4}(-[2-9A-HJKMNP-Z]{4}){4}\b"),
}


def test_the_request_id_is_echoed_and_logged(http, server):
    sent = http.get(server.url + "/health/live", headers={"X-Request-Id": "trace-abc.123_X"})
    assert sent.headers["x-request-id"] == "trace-abc.123_X"
    made_up = http.get(server.url + "/health/live", headers={"X-Request-Id": "no spaces allowed"})
    assert re.fullmatch(r"[0-9a-f]{32}", made_up.headers["x-request-id"]), "an unsafe id is replaced by the server's"
    assert '"request_id":"trace-abc.123_X"' in server.log_path.read_text(errors="replace")


def test_no_secret_in_any_server_log_line(database):
    logs = sorted(database.workdir.glob("*.log"))
    server_logs = [p for p in logs if "standin" not in p.name]
    assert server_logs, "the suite ran no server"
    found, lines, request_lines, with_app = [], 0, 0, 0
    secrets = {secret for secret in DEVICE_SECRETS} | {secret.upper() for secret in DEVICE_SECRETS}
    for path in logs:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name, pattern in SECRET_PATTERNS.items():
                if pattern.search(line):
                    found.append(f"{path.name}:{number}: {name}")
            if any(secret in line for secret in secrets):
                found.append(f"{path.name}:{number}: device secret")
            if path in server_logs and line.strip():
                lines += 1
                entry = json.loads(line)  # one JSON object per line
                assert {"time", "level", "message"} <= entry.keys(), line
                if entry["message"] == "request":
                    request_lines += 1
                    assert {"request_id", "route", "status", "duration_ms", "method"} <= entry.keys(), line
                    with_app += "app_id" in entry
    assert not found, found[:20]
    if len(DEVICE_SECRETS) < 50:
        pytest.skip("the volume checks need the whole suite to have run first")
    assert len(DEVICE_SECRETS) > 50 and lines > 500 and request_lines > 500, (len(DEVICE_SECRETS), lines, request_lines)
    assert with_app > request_lines / 2, "authenticated requests log their app"
