"""The clone is the whole project: nothing in it reads outside the repository, and the only
evaluation data it carries is LoCoMo's development split (with its licence and attribution).

A fresh clone of the public repository has no sibling folders: a path that climbs out of it
into the folder beside the checkout works on one machine and fails on every other. The
five other LoCoMo conversations are the held-out check: they must never enter the
repository, or tuning could see them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from typer.testing import CliRunner

from phi.bench.locomo import DEV_SPLIT
from phi.cli import app

ROOT: Final = Path(__file__).resolve().parent.parent
SKIPPED: Final = frozenset(
    {".git", ".venv", ".cache", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"}
    | {"node_modules", "__pycache__", "mutants"}
)
"""Tool caches and installs, not the project's files."""
DEV_CONVERSATIONS: Final = frozenset({"conv-26", "conv-30", "conv-41", "conv-42", "conv-43"})

# Spelled in pieces, so this file does not match itself.
_UP: Final = r"\.\." + "/"
OUTSIDE: Final = re.compile(
    _UP
    + r"shared\b"  # a relative path up and into the sibling folder
    + r"|[\"']"
    + "sha"
    + r"red[\"']\s*/"  # the same built with pathlib's `/`
    + r"|/work/"
    + "sha"
    + "red"  # its absolute path
)


def project_files() -> Iterator[Path]:
    """The repository's files: what git tracks or would add (ignored files are local
    output, such as a benchmark's rankings), or without git every file but tool caches."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        for name in sorted(set(filter(None, listed.split("\0")))):
            path = ROOT / name
            if path.is_file() and not SKIPPED.intersection(Path(name).parts):
                yield path
        return
    stack = [ROOT]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                if entry.name not in SKIPPED:
                    stack.append(entry)
            elif entry.is_file():
                yield entry


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # a binary file (a chart, a model fixture) names no path


def test_no_file_reads_outside_the_repository() -> None:
    found = []
    for path in project_files():
        text = _text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_the_pattern_catches_each_way_out() -> None:
    up = ".." + "/"
    for line in (
        f"phi bench locomo {up}shared/data/locomo/locomo-dev.json",
        'LOCOMO = Path(__file__).parents[3] / "sha' + 'red" / "data"',
        "open('/work/sha" + "red/data/locomo/README.md')",
    ):
        assert OUTSIDE.search(line), line
    assert not OUTSIDE.search("a memory shared by many processes")


def test_the_development_split_is_in_the_repository_with_its_licence() -> None:
    assert DEV_SPLIT == ROOT / "data" / "locomo" / "locomo-dev.json"
    folder = DEV_SPLIT.parent
    assert sorted(p.name for p in folder.iterdir()) == ["LICENSE", "README.md", "locomo-dev.json"]
    conversations = json.loads(DEV_SPLIT.read_text())
    assert {c["sample_id"] for c in conversations} == DEV_CONVERSATIONS
    licence = (folder / "LICENSE").read_text()
    assert "CC BY-NC 4.0" in licence and "Maharana" in licence
    assert "CC BY-NC 4.0" in (folder / "README.md").read_text()


def test_no_held_out_conversation_is_anywhere_in_the_repository() -> None:
    """Any LoCoMo-shaped data in the tree (a fixture, a copied file) is the dev split."""
    strays = {}
    for path in project_files():
        if path.suffix not in (".json", ".jsonl"):
            continue
        text = _text(path)
        if text is None or '"sample_id"' not in text:
            continue
        ids = set(re.findall(r'"sample_id":\s*"([^"]+)"', text))
        if ids - DEV_CONVERSATIONS:
            strays[str(path.relative_to(ROOT))] = sorted(ids - DEV_CONVERSATIONS)
    assert strays == {}


def test_phi_bench_locomo_reads_the_development_split_by_default() -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--sample", "conv-99"])
    assert result.exit_code == 2
    assert f"no conversation 'conv-99' in {str(DEV_SPLIT)!r}; have ['conv-26'," in result.output
