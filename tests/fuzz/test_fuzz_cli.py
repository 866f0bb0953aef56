"""Fuzz the command line in process (typer's `CliRunner`): a bad argument is one line of error
and exit 2, never a traceback, and the store is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from phi.cli import app
from phi.memory import MiniLMEmbedder

from .conftest import FUZZED, bad_dids, bad_namespaces, broken_text, fuzz_settings, snapshot_of


def _add(text: str = "a fuzzed note", *options: str) -> list[str]:
    return ["memory", "add", text, "--namespace", "agent-notes", *options]


bad_commands = st.one_of(
    st.builds(_add, broken_text()),
    st.builds(lambda n: ["memory", "add", "x", "--namespace", n], bad_namespaces),
    st.builds(lambda a: _add("x", "--author", a), bad_dids),
    st.builds(lambda t: _add("x", "--tag", t), broken_text()),
    st.builds(lambda s: _add("x", "--source", s), broken_text()),
    st.builds(lambda k: _add("x", "--kind", k), st.text(min_size=1, max_size=10)),
    st.builds(lambda q: ["memory", "search", q], broken_text()),
    st.builds(lambda n: ["memory", "search", "bees", "--namespace", n], bad_namespaces),
    st.builds(lambda r: ["memory", "show", r], st.one_of(st.text(max_size=20), broken_text())),
    st.builds(lambda h: ["memory", "preload", h], broken_text()),
)
"""Commands every one of which must be refused."""


def _invoke(db: Path, args: list[str]) -> Result:
    return CliRunner().invoke(app, [*args, "--db", str(db)])


def _is_one_line_error(result: Result) -> bool:
    lines = result.output.strip().splitlines()
    return (
        result.exit_code == 2
        and len(lines) == 1
        and "Traceback" not in result.output
        and isinstance(result.exception, SystemExit)
    )


@pytest.fixture(autouse=True)
def _no_rich_width(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wide terminal, so a long message stays on one line as it would in a shell.
    monkeypatch.setenv("COLUMNS", "400")


@fuzz_settings(max_examples=35)
@given(args=bad_commands)
def test_bad_arguments_are_one_line_errors(
    fuzz_db: Path, minilm: MiniLMEmbedder, args: list[str]
) -> None:
    before = snapshot_of(fuzz_db, minilm) if FUZZED["cli"] % 25 == 0 else None
    FUZZED["cli"] += 1
    result = _invoke(fuzz_db, args)
    assert _is_one_line_error(result), (args, result.exit_code, result.output)
    if before is not None:
        assert snapshot_of(fuzz_db, minilm) == before


@fuzz_settings(max_examples=10)
@given(query=st.text(min_size=1, max_size=30))
def test_any_search_is_answered_or_refused_in_one_line(fuzz_db: Path, query: str) -> None:
    FUZZED["cli"] += 1
    result = _invoke(fuzz_db, ["memory", "search", query])
    assert result.exit_code == 0 or _is_one_line_error(result), (query, result.output)


def test_the_store_is_unchanged(fuzz_db: Path, minilm: MiniLMEmbedder) -> None:
    assert len(snapshot_of(fuzz_db, minilm)) == 4
