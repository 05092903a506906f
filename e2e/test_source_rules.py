"""Where code may say what: SQL text lives in the store (`Sources/GuestPassStore`: the server functions, the RPC and
table statement builders, the schema cache), never in GuestPassApp, the HTTP layer (`SQLPlacementTests` checks the
same rule literal by literal, multi-line strings included); SQLSTATE literals live only in `HTTP/APIError.swift`, the
one mapping; every module a target of `Package.swift` depends on is imported by one of its files."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "Sources" / "GuestPassApp"
IMPORT = re.compile(r"^(?:@\w+(?:\([^)]*\))? )*(?:(?:public|package|internal) )?import (?:\w+ )?(\w+)", re.M)
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


def test_every_dependency_of_a_target_is_imported_by_one_of_its_files():
    manifest = json.loads(
        subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    )
    unused = []
    for target in manifest["targets"]:
        if target["type"] == "system":
            continue
        folder = ROOT / (target.get("path") or ("Tests" if target["type"] == "test" else "Sources")) / (
            "" if target.get("path") else target["name"]
        )
        files = [folder / name for name in target["sources"]] if target.get("sources") else folder.rglob("*.swift")
        imported = {module for path in files for module in IMPORT.findall(path.read_text())}
        for dependency in target["dependencies"]:
            kind, details = next(iter(dependency.items()))
            name = details[0]
            if name not in imported:
                unused.append(f"{target['name']} → {name} ({kind})")
    assert not unused, f"dependencies no file of the target imports (drop them from Package.swift): {unused}"
