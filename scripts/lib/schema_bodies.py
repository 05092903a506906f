#!/usr/bin/env python3
"""Replace each function body of a pg_dump --schema-only text with a pointer to its one home.

    pg_dump ... | python3 scripts/lib/schema_bodies.py sql/migrations/repeatable > sql/schema.sql

Every function's live body is written once, in its area's file under sql/migrations/repeatable (the rule of
README's "Migrations: versioned and repeatable"). A second verbatim copy in sql/schema.sql would be a second place
to read (and to grep into) for the same text, so the dump keeps each function's signature and attributes, as
PostgreSQL reports them, and replaces the body with the file that defines it and a digest of the body the database
holds: a changed body still changes sql/schema.sql, and `scripts/schema-dump --check` still fails until it is
regenerated.

Exits 1, naming it, when a dumped function is defined in no repeatable file or by more than one of them.
"""
import hashlib
import re
import sys
from pathlib import Path

DEFINITION = re.compile(r"create\s+(?:or\s+replace\s+)?(?:function|procedure)\s+([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)\s*\(",
                        re.IGNORECASE)
DUMPED = re.compile(r"^CREATE (?:FUNCTION|PROCEDURE) ([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)\(")
BODY_START = re.compile(r"^    AS (\$[A-Za-z_]*\$)(.*)$")


def homes(repeatable: Path) -> dict[str, set[str]]:
    """Qualified function name -> the repeatable files that define it (overloads share a name and a file)."""
    found: dict[str, set[str]] = {}
    for path in sorted(repeatable.glob("*.sql")):
        relative = path.as_posix()[path.as_posix().index("sql/migrations/"):]
        for name in DEFINITION.findall(path.read_text()):
            found.setdefault(name.lower(), set()).add(relative)
    return found


def rewrite(lines: list[str], found: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    out: list[str] = []
    problems: list[str] = []
    current = None
    index = 0
    while index < len(lines):
        line = lines[index]
        dumped = DUMPED.match(line)
        if dumped:
            current = dumped.group(1)
        start = BODY_START.match(line) if current else None
        if not start:
            out.append(line)
            index += 1
            continue
        tag, rest = start.groups()
        body_lines = [rest]
        while not body_lines[-1].endswith(tag + ";"):
            index += 1
            body_lines.append(lines[index])
        body = "\n".join(body_lines)[: -len(tag + ";")]
        files = found.get(current, set())
        if len(files) != 1:
            problems.append(f"{current}: defined in {sorted(files) or 'no repeatable file'}")
        digest = hashlib.sha256(body.encode()).hexdigest()[:16]
        out.append(f"    AS $$ -- body in {', '.join(sorted(files))}, sha256 {digest} $$;")
        current = None
        index += 1
    return out, problems


def main() -> int:
    found = homes(Path(sys.argv[1]).resolve())
    out, problems = rewrite(sys.stdin.read().split("\n"), found)
    if problems:
        for problem in problems:
            print(f"schema_bodies: {problem}", file=sys.stderr)
        return 1
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
