"""Fuzz the MCP tools' arguments through the SDK's in-process client: every bad argument is
a tool error naming the problem (never an unexpected exception), and the store is unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given
from hypothesis import strategies as st

from mcp import Client
from phi.mcp import McpOptions, build_server
from phi.memory import Memory, MiniLMEmbedder

from .conftest import FUZZED, bad_dids, bad_namespaces, broken_text, fuzz_settings, snapshot_of

Call = tuple[str, dict[str, Any]]

ok = st.text(min_size=1, max_size=20).filter(str.strip)
"""Well-formed, non-blank text (hypothesis leaves surrogates out of `text()` by default)."""

bad_calls: st.SearchStrategy[Call] = st.one_of(
    st.builds(lambda c: ("remember", {"content": c, "namespace": "agent-notes"}), broken_text()),
    st.builds(lambda n: ("remember", {"content": "x", "namespace": n}), bad_namespaces),
    st.builds(
        lambda a: ("remember", {"content": "x", "namespace": "agent-notes", "author": a}),
        bad_dids,
    ),
    st.builds(
        lambda t: ("remember", {"content": "x", "namespace": "agent-notes", "tags": [t]}),
        broken_text(),
    ),
    st.builds(
        lambda u: ("remember", {"content": "x", "namespace": "agent-notes", "source_uris": [u]}),
        broken_text(),
    ),
    st.builds(
        lambda s: ("remember", {"content": "x", "namespace": "agent-notes", "supersedes": s}),
        st.one_of(st.text(max_size=20), broken_text()),
    ),
    st.builds(lambda q: ("recall", {"query": q}), broken_text()),
    st.builds(lambda n: ("recall", {"query": "bees", "namespaces": [n]}), bad_namespaces),
    st.builds(lambda p: ("recall", {"query": "bees", "person": p}), bad_dids),
    st.builds(lambda h: ("preload", {"hint": h}), broken_text()),
    st.builds(lambda n: ("preload", {"hint": "bees", "namespaces": [n]}), bad_namespaces),
    st.builds(lambda r: ("history", {"row_id": r}), st.one_of(st.text(max_size=20), broken_text())),
    st.builds(
        lambda r: ("neighbors", {"row_id": r}), st.one_of(st.text(max_size=20), broken_text())
    ),
    st.builds(
        lambda s, c: ("capture", {"session": s, "kind": "decision", "content": c}),
        st.one_of(ok, broken_text()),
        broken_text(),
    ),
    st.builds(
        lambda n: ("capture", {"session": "s", "kind": "decision", "content": "x", "namespace": n}),
        bad_namespaces,
    ),
    st.builds(
        lambda n: ("forget", {"namespace": n, "confirm": n}),
        st.one_of(bad_namespaces, st.just("nobody-here")),
    ),
)
"""Calls every one of which must be refused."""

reads: st.SearchStrategy[Call] = st.one_of(
    st.builds(lambda q: ("recall", {"query": q}), st.text(max_size=30)),
    st.builds(lambda h: ("preload", {"hint": h}), st.text(max_size=30)),
)
"""Arbitrary reads: answered or refused by name, never a crash, never a write."""


@asynccontextmanager
async def _session(db: Path, minilm: MiniLMEmbedder, prefix: str | None) -> AsyncIterator[Client]:
    options = McpOptions(namespace_prefix=prefix, allow_forget=True)
    async with (
        Memory.open(db, embedder=minilm) as memory,
        Client(build_server(memory, options)) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as running:
        yield running


@pytest.fixture(scope="module", params=[None, "agent-"], ids=["whole-store", "prefix"])
def client(
    request: pytest.FixtureRequest, portal: BlockingPortal, fuzz_db: Path, minilm: MiniLMEmbedder
) -> Iterator[Client]:
    with portal.wrap_async_context_manager(_session(fuzz_db, minilm, request.param)) as opened:
        yield opened


def _call(portal: BlockingPortal, client: Client, call: Call) -> tuple[bool, str]:
    tool, arguments = call
    result = portal.call(client.call_tool, tool, arguments)
    text = " ".join(getattr(part, "text", "") for part in result.content)
    return result.is_error, text


def _crashes(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Exceptions the MCP server did not expect: the SDK logs each one."""
    return [r.getMessage() for r in caplog.records if "unexpected exception" in r.getMessage()]


@fuzz_settings(max_examples=100)
@given(call=bad_calls)
def test_bad_arguments_are_refused_by_name(
    portal: BlockingPortal,
    client: Client,
    fuzz_db: Path,
    minilm: MiniLMEmbedder,
    caplog: pytest.LogCaptureFixture,
    call: Call,
) -> None:
    before = snapshot_of(fuzz_db, minilm) if FUZZED["mcp"] % 40 == 0 else None
    FUZZED["mcp"] += 1
    caplog.clear()
    is_error, message = _call(portal, client, call)
    assert is_error, (call, message)
    assert message.strip() and "Traceback" not in message, (call, message)
    assert not _crashes(caplog), (call, _crashes(caplog))
    if before is not None:
        assert snapshot_of(fuzz_db, minilm) == before


@fuzz_settings(max_examples=60)
@given(call=reads)
def test_arbitrary_reads_never_crash(
    portal: BlockingPortal, client: Client, caplog: pytest.LogCaptureFixture, call: Call
) -> None:
    FUZZED["mcp"] += 1
    caplog.clear()
    is_error, message = _call(portal, client, call)
    assert not _crashes(caplog), (call, _crashes(caplog))
    if is_error:
        assert message.strip() and "Traceback" not in message, (call, message)


def test_the_store_is_unchanged(fuzz_db: Path, minilm: MiniLMEmbedder) -> None:
    """Runs after the fuzzing above (file order): the seeded rows, and nothing else."""
    rows = snapshot_of(fuzz_db, minilm)
    assert [(row.namespace, row.kind, row.status) for row in rows] == [
        ("phi-users-did:plc:ann", "interaction", "active"),
        ("phi-users-did:plc:ann", "observation", "superseded"),
        ("phi-users-did:plc:ann", "observation", "active"),
        ("agent-notes", "note", "active"),
    ]
