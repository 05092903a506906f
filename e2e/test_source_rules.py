"""Where code may say what: SQL text lives in the store (`Sources/GuestPassStore`: the server functions, the RPC and
table statement builders, the schema cache), never in GuestPassApp, the HTTP layer (`SQLPlacementTests` checks the
same rule literal by literal, multi-line strings included); SQLSTATE literals live only in `HTTP/APIError.swift`, the
one mapping."""

from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "Sources" / "GuestPassApp"
SQL_LITERAL = re.compile(r'"(SELECT|INSERT|UPDATE|DELETE|WITH|BEGIN|COMMIT|LISTEN|NOTIFY)\s[^"]*')


def test_no_file_of_the_http_layer_holds_sql_text():
    found = []
    for path in sorted(APP.rglob("*.swift")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if SQL_LITERAL.search(line) and not line.strip().startswith("//"):
                found.append(f"{path.relative_to(APP)}:{number}: {line.strip()[:100]}")
    assert not found, f"SQL text outside Sources/GuestPassStore: {found}"


def test_sqlstate_literals_only_in_the_error_mapping():
    sqlstate = re.compile(r'SQLState\("|"(?:[0-9][0-9A-Z]{4}|PT[0-9]{3})"')
    found = [
        f"{path.relative_to(APP)}:{number}"
        for path in sorted(APP.rglob("*.swift"))
        if path.name != "APIError.swift"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if sqlstate.search(line)
    ]
    assert not found, f"SQLSTATE literals outside HTTP/APIError.swift: {found}"


def test_the_scan_finds_what_it_looks_for():
    assert SQL_LITERAL.search('try connection.execute("SELECT 1")')
    assert not SQL_LITERAL.search('message: "Select a table"')
