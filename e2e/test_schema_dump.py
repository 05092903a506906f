"""sql/schema.sql repeats no function body: each function's body is written once, in its repeatable file, and the dump
names that file and a digest of the live body (scripts/lib/schema_bodies.py, run by scripts/schema-dump). The test
command's `schema-dump --check` proves the dump current; these prove its pointers true and the rewriter strict."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_SQL = ROOT / "sql" / "schema.sql"
REWRITER = ROOT / "scripts" / "lib" / "schema_bodies.py"
POINTER = re.compile(r"^    AS \$\$ -- body in (sql/migrations/repeatable/[0-9a-z_]+\.sql), sha256 [0-9a-f]{16} \$\$;$")


def dumped_functions() -> list[tuple[str, str]]:
    """(qualified name, the AS line) of every function of sql/schema.sql."""
    found, current = [], None
    for line in SCHEMA_SQL.read_text().splitlines():
        if match := re.match(r"^CREATE FUNCTION (\w+\.\w+)\(", line):
            current = match.group(1)
        elif current and line.startswith("    AS "):
            found.append((current, line))
            current = None
    return found


def test_every_dumped_function_points_at_the_repeatable_file_that_defines_it():
    functions = dumped_functions()
    assert len(functions) > 90, "the dump lists the core's functions"
    for name, line in functions:
        match = POINTER.match(line)
        assert match, f"{name}: the dump holds a body, not a pointer: {line[:100]}"
        home = (ROOT / match.group(1)).read_text()
        schema, function = name.split(".")
        assert re.search(rf"create (?:or replace )?function {schema}\.{function}\(", home), f"{name} is not in {match.group(1)}"


def rewrite(tmp_path: Path, files: dict[str, str], dump: str) -> subprocess.CompletedProcess:
    repeatable = tmp_path / "sql" / "migrations" / "repeatable"
    repeatable.mkdir(parents=True)
    for name, text in files.items():
        (repeatable / name).write_text(text)
    return subprocess.run([sys.executable, str(REWRITER), str(repeatable)], input=dump, capture_output=True, text=True)


DUMP = """CREATE FUNCTION guestpass.f(p integer) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $_$ select $1 + 1 $_$;
"""


def test_the_rewriter_replaces_a_body_with_its_home_and_digest(tmp_path):
    done = rewrite(tmp_path, {"01_a.sql": "create or replace function guestpass.f(p integer) returns integer"}, DUMP)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == DUMP.splitlines()[:2]
    assert POINTER.match(lines[2]) and "01_a.sql" in lines[2] and "$1 + 1" not in done.stdout


def test_the_rewriter_refuses_a_function_with_no_home_or_two(tmp_path):
    nowhere = rewrite(tmp_path / "none", {"01_a.sql": "-- nothing"}, DUMP)
    assert nowhere.returncode == 1 and "guestpass.f: defined in no repeatable file" in nowhere.stderr
    twice = rewrite(
        tmp_path / "two",
        {"01_a.sql": "create function guestpass.f(p integer)", "02_b.sql": "create or replace function guestpass.f(p int)"},
        DUMP,
    )
    assert twice.returncode == 1 and "01_a.sql" in twice.stderr and "02_b.sql" in twice.stderr
