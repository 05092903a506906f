"""Secrets never reach the logs: after the whole session (pytest_sessionfinish in conftest, so no test has to run
last), every line every `guestpass serve` of the session wrote (JSON lines at debug level) is read for what the suite
used: API keys, access tokens, refresh tokens, device secrets, transfer and recovery codes, and the email tests'
passwords, mailed link tokens, one-time codes and SMTP password. Also: every server line is
one JSON object, and the request lines carry the request id, route, status, duration and, once authenticated, the app.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SECRET_PATTERNS = {
    "API key": re.compile(r"gp_(pub|sec)_[0-9a-f]{64}"),
    "refresh token": re.compile(r"gpr_[A-Za-z0-9_-]{30,}"),
    "JWT (access or identity token)": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"),
    "transfer code": re.compile(r"\b[2-9A-HJKMNP-Z]{5}-[2-9A-HJKMNP-Z]{5}\b"),
    "recovery code": re.compile(r"\b[2-9A-HJKMNP-Z]{4}(-[2-9A-HJKMNP-Z]{4}){4}\b"),
    # A key as Swift prints a byte array (a struct holding one described whole, e.g. a service logged at start).
    "key bytes": re.compile(r"[Kk]ey: \[(\d{1,3}, ){15,}\d{1,3}\]"),
}


def audit(workdir: Path, device_secrets: set[str], whole_suite: bool, codes: set[str] = frozenset()) -> list[str]:
    """The problems found in the logs of `workdir` (empty: none). `device_secrets`: every secret the suite used, looked
    for as text; `codes`: one-time codes, looked for as whole numbers (not inside a timestamp, a duration or an id).
    `whole_suite`: the session ran every test file, so the logs must also be plentiful (a handful of lines proves
    nothing)."""
    code_pattern = (
        re.compile(r"(?<![0-9A-Za-z.:_-])(" + "|".join(sorted(map(re.escape, codes))) + r")(?![0-9A-Za-z])") if codes else None
    )
    # The mail catcher's own output is the mailbox (codes are meant to be there); every other log is audited.
    logs = [path for path in sorted(workdir.glob("*.log")) if "mail-catcher" not in path.name]
    server_logs = [p for p in logs if "standin" not in p.name]
    problems: list[str] = []
    lines, request_lines, with_app = 0, 0, 0
    secrets = set(device_secrets) | {secret.upper() for secret in device_secrets}
    for path in logs:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name, pattern in SECRET_PATTERNS.items():
                if pattern.search(line):
                    problems.append(f"{path.name}:{number}: {name}")
            if any(secret in line for secret in secrets):
                problems.append(f"{path.name}:{number}: a secret the suite used (device secret, password, link token)")
            if code_pattern and code_pattern.search(line):
                problems.append(f"{path.name}:{number}: a mailed one-time code")
            if path in server_logs and line.strip():
                lines += 1
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    problems.append(f"{path.name}:{number}: not one JSON object")
                    continue
                if not {"time", "level", "message"} <= entry.keys():
                    problems.append(f"{path.name}:{number}: lacks time, level or message")
                if entry.get("message") == "request":
                    request_lines += 1
                    if not {"request_id", "route", "status", "duration_ms", "method"} <= entry.keys():
                        problems.append(f"{path.name}:{number}: a request line without its fields")
                    with_app += "app_id" in entry
    if whole_suite:
        if not (len(device_secrets) > 50 and lines > 500 and request_lines > 500):
            problems.append(f"too little was logged to audit: {len(device_secrets)} secrets, {lines} lines, {request_lines} requests")
        elif with_app <= request_lines / 2:
            problems.append("authenticated requests must log their app")
    return problems
