"""TESTING.md maps every rule to its tests: each test it names must exist, so the map cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cells() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in (ROOT / "TESTING.md").read_text().splitlines():
        if not line.startswith("| ") or line.startswith("| rule") or line.startswith("| ---"):
            continue
        parts = [part.strip() for part in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        assert len(parts) == 4, f"a row of TESTING.md must have 4 cells: {line}"
        rows.append(tuple(parts))
    return rows


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def swift_declares(name: str) -> bool:
    """A Swift test target, suite or test function of Tests/ (`Suite` or `Suite.test…`, a trailing `…` allowed)."""
    if (ROOT / "Tests" / name).is_dir():
        return True
    suite, _, member = name.partition(".")
    sources = "\n".join(path.read_text() for path in (ROOT / "Tests").rglob("*.swift"))
    if not re.search(rf"\b(struct|class|enum|extension) {re.escape(suite)}\b", sources):
        return False
    member = member.rstrip("…").split("(")[0]
    return not member or re.search(rf"func {re.escape(member)}", sources) is not None


def test_every_named_test_exists():
    rows = cells()
    assert len(rows) > 30, "the table was found"
    missing = []
    for rule, pgtap, swift, e2e in rows:
        missing += [f"pgTAP {n}" for n in names(pgtap) if not (ROOT / "sql" / "tests" / f"{n}.sql").exists()]
        missing += [f"Swift {n}" for n in names(swift) if re.fullmatch(r"[A-Z]\w*(\.\w+…?)?", n) and not swift_declares(n)]
        for entry in names(e2e):
            path = entry.split(" ")[0]
            if path.endswith(".py") and "/" not in path:
                path = f"e2e/{path}"
            if "/" in path and not (ROOT / path).exists():
                missing.append(f"file {path}")
    assert not missing, f"TESTING.md names tests that do not exist: {missing}"
