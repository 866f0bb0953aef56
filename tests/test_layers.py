"""Imports go one way: the memory engine depends on nothing else in phi but its errors."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parent.parent / "src" / "phi"
ALLOWED_FOR_MEMORY = {"phi.errors"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_memory_imports_nothing_else_from_phi() -> None:
    offenders = {}
    for path in (SRC / "memory").rglob("*.py"):
        bad = {
            m
            for m in imported_modules(path)
            if m.startswith("phi.")
            and not m.startswith("phi.memory")
            and m not in ALLOWED_FOR_MEMORY
        }
        if bad:
            offenders[str(path.relative_to(SRC))] = sorted(bad)
    assert offenders == {}


def test_nothing_imports_the_cli() -> None:
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "cli" not in p.parts and any(m.startswith("phi.cli") for m in imported_modules(p))
    ]
    assert offenders == []
