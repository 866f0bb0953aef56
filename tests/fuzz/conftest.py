"""The fuzz suite's shared parts: reproducible hypothesis settings, strategies for bad input,
a seeded store, a snapshot to prove it unchanged, and a count of the inputs fuzzed.

Every run draws the same examples (`derandomize=True`, no example database), so CI is
reproducible; `max_examples` keeps the whole suite within about a minute on 2 cores.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Final

import anyio
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from phi.memory import Memory, MiniLMEmbedder, NewRow, Row, Turn, user_namespace

FUZZED: Counter[str] = Counter()
"""Inputs fuzzed per surface in this run, printed at the end of the session."""


def fuzz_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FUZZED:
        parts = ", ".join(f"{surface} {count}" for surface, count in sorted(FUZZED.items()))
        terminalreporter.write_line(f"inputs fuzzed: {sum(FUZZED.values())} ({parts})")


_NAMESPACE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:%-]{0,199}")
_DID: Final = re.compile(r"did:[a-z]+:[A-Za-z0-9._:%-]+")

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
"""Lone surrogates: what `\\ud800` in JSON or invalid UTF-8 in `argv` decode to."""


@st.composite
def broken_text(draw: st.DrawFn) -> str:
    """Text with at least one lone surrogate somewhere in it."""
    return draw(st.text(max_size=12)) + draw(surrogates) + draw(st.text(max_size=12))


bad_namespaces = st.one_of(
    st.text(max_size=24).filter(lambda s: not _NAMESPACE.fullmatch(s)),
    st.from_regex(_NAMESPACE, fullmatch=True).map(lambda s: s[:40] + "\n"),
    broken_text(),
)
"""Namespace names the store must refuse: empty, bad characters, a trailing newline..."""

bad_dids = st.one_of(
    st.text(max_size=24).filter(lambda s: not _DID.fullmatch(s)),
    st.from_regex(_DID, fullmatch=True).map(lambda s: s[:40] + "\n"),
    broken_text(),
)
"""Authors that are not a whole DID."""


async def _seed(db: Path, minilm: MiniLMEmbedder) -> None:
    async with Memory.open(db, embedder=minilm) as memory:
        ann = user_namespace("did:plc:ann")
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@ann.test", text="I keep bees on my roof in Lyon")],
                namespace=ann,
                author="did:plc:ann",
                source_uris=["at://did:plc:ann/app.bsky.feed.post/3kbees"],
            )
        )
        old = await memory.remember(
            NewRow(content="ann keeps bees", namespace=ann, kind="observation")
        )
        await memory.remember(
            NewRow(
                content="ann keeps bees and sells honey",
                namespace=ann,
                kind="observation",
                supersedes=old.row_id,
            )
        )
        await memory.remember(NewRow(content="the release is on friday", namespace="agent-notes"))


def seeded_store(directory: Path, minilm: MiniLMEmbedder) -> Path:
    """A small store of a person and some notes."""
    db = directory / "fuzz.db"
    anyio.run(_seed, db, minilm)
    return db


async def snapshot(memory: Memory) -> list[Row]:
    """Every row, superseded included: equal snapshots mean an unchanged store."""
    return [row async for row in memory.export()]


def snapshot_of(db: Path, minilm: MiniLMEmbedder) -> list[Row]:
    async def read() -> list[Row]:
        async with Memory.open(db, embedder=minilm) as memory:
            return await snapshot(memory)

    return anyio.run(read)


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Path:
    return seeded_store(tmp_path_factory.mktemp("fuzz"), minilm)
