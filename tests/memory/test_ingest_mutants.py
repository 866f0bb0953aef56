"""The write path, exactly: which rows a write makes or reuses, which edges it links, which
errors it raises, on a real SQLite file.

The embedder is scripted (real code, vectors the test chooses): which rows are near, and
how near, is then exact, so a missing edge, an extra one or a weight that is off fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phi.errors import InvalidInput, RowNotFound
from phi.memory import Memory, NewRow
from phi.memory.embed import Vectors
from phi.memory.ingest import IngestPolicy, embed_pending, extract_refs
from phi.memory.model import EdgeType, utc_now
from phi.memory.store import RowFilter, SQLiteStore

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 6, 1, tzinfo=UTC)
HALF = (0.5, 0.5, 0.5, 0.5)
"""Exactly 0.5 from each axis e1..e4 (cosine), and exactly 1.0 from itself."""


def axis(i: int) -> tuple[float, ...]:
    return tuple(1.0 if j == i else 0.0 for j in range(8))


@dataclass
class ScriptedEmbedder:
    """Each text's vector is the test's choice; an unscripted text gets an axis of its own
    (orthogonal to every scripted vector and to the other unscripted texts). Records what
    it was asked to embed."""

    vectors: dict[str, tuple[float, ...]] = field(default_factory=dict)
    name: str = "scripted-40d"
    dimension: int = 40
    asked: list[list[str]] = field(default_factory=list)
    _free: dict[str, int] = field(default_factory=dict)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.asked.append(list(texts))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            scripted = self.vectors.get(text)
            if scripted is None:
                out[i, 8 + self._free.setdefault(text, len(self._free))] = 1.0
            else:
                out[i, : len(scripted)] = scripted
                out[i] /= np.linalg.norm(out[i])
        return out


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def new(content: str, minute: float, **fields: Any) -> NewRow:
    fields.setdefault("namespace", "ns-a")
    return NewRow(content=content, created_at=at(minute), **fields)


def open_memory(tmp_path: Path, embedder: ScriptedEmbedder, **policy: Any) -> Memory:
    return Memory.open(tmp_path / "m.db", embedder=embedder, ingest_policy=IngestPolicy(**policy))


async def edges(memory: Memory, edge_type: EdgeType) -> set[tuple[str, str, float]]:
    """Every edge of one type as (src content, dst content, weight)."""
    rows = {r.row_id: r.content async for r in memory.store.scan(RowFilter(statuses=None))}
    found = await memory.store.edges(list(rows), types=[edge_type])
    return {(rows[e.src], rows[e.dst], e.weight) for e in found}


# -- references ----------------------------------------------------------------------------


def test_references_are_found_trimmed_lowered_and_once() -> None:
    text = (
        "read at://did:plc:ann/app.bsky.feed.post/1, then https://ex.example/a?b=1. "
        "@Ann.Example.COM! said did:web:ann.example; mail bob@mail.example "
        "again https://ex.example/a?b=1 and @ann.example.com, see https://ex.example/Case/Kept"
    )
    assert extract_refs(text) == [
        "at://did:plc:ann/app.bsky.feed.post/1",
        "https://ex.example/a?b=1",
        "https://ex.example/Case/Kept",
        "did:plc:ann",
        "did:web:ann.example",
        "ann.example.com",
    ]
    assert extract_refs("nothing to see here") == []


# -- validation ----------------------------------------------------------------------------

BAD_ROWS: list[tuple[dict[str, Any], str]] = [
    (
        {"kind": "memo"},
        "unknown kind 'memo'; expected one of interaction, observation, exploration_note,"
        " summary, note",
    ),
    ({"trust": "certain"}, "unknown trust 'certain'; expected one of high, medium, low, lowest"),
    ({"content": " \n\t"}, "empty content for namespace 'ns-a'; nothing to remember"),
    (
        {"content": "x" * 20_001},
        "content of 20001 characters is over the limit of 20000; split it into several rows",
    ),
    ({"tags": ["a", "b", "c", "d"]}, "4 tags given; a row takes at most 3"),
    ({"tags": ["a", " "]}, "a tag is empty"),
    (
        {"created_at": datetime(2025, 1, 1)},
        "timestamp '2025-01-01T00:00:00' has no timezone; pass an aware datetime",
    ),
]


@pytest.mark.parametrize(("change", "message"), BAD_ROWS)
async def test_a_bad_row_is_refused_in_one_line_and_nothing_is_written(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    embedder = ScriptedEmbedder()
    async with open_memory(tmp_path, embedder) as memory:
        good = NewRow(content="fine", namespace="ns-a")
        bad = NewRow(**{"content": "hello", "namespace": "ns-a", **change})
        with pytest.raises(InvalidInput) as raised:
            await memory.remember_many([good, bad])
        assert str(raised.value) == message
        assert (await memory.stats()).rows == 0
        assert embedder.asked == []


async def test_rows_at_the_limits_are_kept_whole(tmp_path: Path) -> None:
    async with open_memory(tmp_path, ScriptedEmbedder()) as memory:
        long = await memory.remember(
            NewRow(content="y" * 20_000, namespace="ns-a", tags=["a", "b", "c"])
        )
        assert (len(long.content), long.tags) == (20_000, ("a", "b", "c"))


# -- the row a write makes ----------------------------------------------------------------


async def test_a_new_row_carries_what_was_given_and_the_write_time(tmp_path: Path) -> None:
    async with open_memory(tmp_path, ScriptedEmbedder()) as memory:
        before = utc_now()
        given = await memory.remember(
            NewRow(
                content="ann likes herons",
                namespace="ns-a",
                kind="summary",
                tags=["birds"],
                source_uris=["at://b/1", "at://a/1", "at://b/1"],
                author="did:plc:ann",
                created_at=datetime(2025, 1, 1, 12, tzinfo=UTC) + timedelta(hours=0),
                thread="at://t/1",
                meta={"from": "test"},
            )
        )
        after = utc_now()
        assert (given.kind, given.trust, given.status, given.supersedes) == (
            "summary", "low", "active", None,
        )  # fmt: skip
        assert given.tags == ("birds",)
        assert given.source_uris == ("at://b/1", "at://a/1")
        assert given.author == "did:plc:ann"
        assert given.meta == {"from": "test", "thread": "at://t/1"}
        assert given.created_at == datetime(2025, 1, 1, 12, tzinfo=UTC)
        assert before <= given.updated_at <= after
        assert await memory.get(given.row_id) == given
        trusted = await memory.remember(NewRow(content="x", namespace="ns-a", trust="high"))
        assert trusted.trust == "high"
        # No time given: it happened when it was written.
        assert trusted.created_at == trusted.updated_at and before <= trusted.created_at


async def test_a_repeated_write_returns_the_stored_row_and_embeds_nothing(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder()
    async with open_memory(tmp_path, embedder) as memory:
        first = await memory.remember(new("herons fish", 0, source_uris=["at://a/1"]))
        again = await memory.remember(new("herons fish", 5, source_uris=["at://a/1", "at://a/1"]))
        assert again == first
        assert embedder.asked == [["herons fish"]]
        batch = await memory.remember_many(
            [new("owls hunt", 1), new("herons fish", 2, source_uris=["at://a/1"]),
             new("owls hunt", 3), new("herons fish", 4, namespace="ns-b")]
        )  # fmt: skip
        assert batch[0] == batch[2] and batch[1] == first
        assert batch[3].namespace == "ns-b" and batch[3].row_id != first.row_id
        assert embedder.asked[1:] == [["owls hunt", "herons fish"]]
        assert (await memory.stats()).rows == 3


class StaleLookup(SQLiteStore):
    """Another process stores a row between the write path's lookup and its write: the
    lookup here sees nothing, as it would have a moment earlier."""

    async def find_by_hash(self, keys: Sequence[tuple[str, str]]) -> dict[Any, Any]:
        return {}


async def test_a_row_stored_since_the_lookup_is_the_one_returned(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder()
    async with Memory(store=StaleLookup(tmp_path / "m.db"), embedder=embedder) as memory:
        first = await memory.remember(new("herons fish", 0))
        again, other = await memory.remember_many([new("herons fish", 1), new("owls hunt", 2)])
        assert (again, other.content) == (first, "owls hunt")
        assert (await memory.stats()).rows == 2
        assert (first.content, "owls hunt", 1.0) in await edges(memory, "temporal")


async def test_secrets_are_redacted_before_a_row_is_identified_or_stored(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder()
    async with open_memory(tmp_path, embedder) as memory:
        row = await memory.remember(
            NewRow(
                content="deploy with AKIAIOSFODNN7EXAMPLE",
                namespace="ns-a",
                tags=["aws AKIAIOSFODNN7EXAMPLE"],
                source_uris=["https://ci.example/run?token=abc123secretvalue"],
                meta={"api_key": "sk-live-zzzz", "note": "again AKIAIOSFODNN7EXAMPLE"},
            )
        )
        assert row.content == "deploy with [REDACTED:aws-access-key]"
        assert row.tags == ("aws [REDACTED:aws-access-key]",)
        assert row.source_uris == ("https://ci.example/run?token=[REDACTED:token]",)
        assert row.meta == {
            "api_key": "[REDACTED:api-key]",
            "note": "again [REDACTED:aws-access-key]",
        }
        assert await memory.get(row.row_id) == row
        assert embedder.asked == [["deploy with [REDACTED:aws-access-key]"]]
        # Another key in the same text is the same row: the identity is the redacted text.
        first = await memory.remember(new("ssh in with AKIAIOSFODNN7EXAMPLE", 0))
        second = await memory.remember(new("ssh in with AKIAI44QH8DHBEXAMPLE", 1))
        assert second == first and first.content == "ssh in with [REDACTED:aws-access-key]"


# -- superseding --------------------------------------------------------------------------


async def test_superseding_retires_the_old_row_at_the_write_time(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder()
    async with open_memory(tmp_path, embedder) as memory:
        old = await memory.remember(new("called nate", 0, kind="observation"))
        other = await memory.remember(new("likes tea", 1, namespace="ns-b"))
        unrelated, newer = await memory.remember_many(
            [new("likes coffee", 2, namespace="ns-b"),
             new("called nathan", 3, kind="observation", supersedes=old.row_id)]
        )  # fmt: skip
        assert newer.supersedes == old.row_id
        retired = await memory.get(old.row_id)
        assert retired.status == "superseded" and retired.updated_at == newer.updated_at
        assert (await memory.get(other.row_id)).status == "active"
        assert await edges(memory, "supersedes") == {("called nathan", "called nate", 1.0)}
        assert unrelated.supersedes is None


async def test_superseding_with_a_row_already_stored_needs_no_embedding(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder()
    async with open_memory(tmp_path, embedder) as memory:
        old = await memory.remember(new("called nate", 0))
        kept = await memory.remember(new("called nathan", 1))
        asked = len(embedder.asked)
        again = await memory.remember(new("called nathan", 2, supersedes=old.row_id))
        assert again == kept
        assert (await memory.get(old.row_id)).status == "superseded"
        assert await edges(memory, "supersedes") == {("called nathan", "called nate", 1.0)}
        assert all(texts == [] for texts in embedder.asked[asked:])


async def test_a_row_that_is_its_own_predecessor_changes_nothing(tmp_path: Path) -> None:
    """Two writers made the same correction: the second one's row is the first one's."""
    embedder = ScriptedEmbedder()
    async with open_memory(tmp_path, embedder) as memory:
        old = await memory.remember(new("called nate", 0))
        same = await memory.remember(new("called nate", 1, supersedes=old.row_id))
        assert same == old and (await memory.get(old.row_id)).status == "active"
        assert await edges(memory, "supersedes") == set()
        assert embedder.asked == [["called nate"]]
        # Still when that row has been corrected since.
        newer = await memory.remember(new("called nathan", 2, supersedes=old.row_id))
        assert await memory.remember(new("called nate", 3, supersedes=old.row_id)) == (
            await memory.get(old.row_id)
        )
        assert (await memory.get(newer.row_id)).status == "active"


async def test_superseding_the_wrong_row_is_refused_by_name(tmp_path: Path) -> None:
    async with open_memory(tmp_path, ScriptedEmbedder()) as memory:
        old = await memory.remember(new("called nate", 0))
        newer = await memory.remember(new("called nathan", 1, supersedes=old.row_id))
        mine = await memory.remember(new("likes tea", 2, namespace="ns-b"))
        with pytest.raises(RowNotFound) as missing:
            await memory.remember(new("called nat", 3, supersedes="no-such-row"))
        assert str(missing.value) == "no memory row with id 'no-such-row'"
        with pytest.raises(InvalidInput) as twice:
            await memory.remember(new("called nat", 3, supersedes=old.row_id))
        assert str(twice.value) == (
            f"row {old.row_id!r} is already superseded; supersede the newest row of its history"
        )
        with pytest.raises(InvalidInput) as elsewhere:
            await memory.remember_many(
                [new("likes cocoa", 3, namespace="ns-b", supersedes=mine.row_id),
                 new("called nat", 3, namespace="ns-b", supersedes=newer.row_id)]
            )  # fmt: skip
        assert str(elsewhere.value) == (
            f"row {newer.row_id!r} is in namespace 'ns-a', not 'ns-b';"
            " a row can only supersede a row of its own namespace"
        )
        assert (await memory.stats()).rows == 3
        assert (await memory.get(mine.row_id)).status == "active"


# -- temporal edges -----------------------------------------------------------------------


async def test_temporal_edges_link_the_previous_row_of_thread_and_namespace(
    tmp_path: Path,
) -> None:
    async with open_memory(tmp_path, ScriptedEmbedder(), semantic_neighbours=0) as memory:
        await memory.remember_many([new("a", 0, thread="T"), new("b", 1), new("c", 2, thread="T")])
        assert await edges(memory, "temporal") == {
            ("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 1.0),
        }  # fmt: skip
        await memory.remember(new("d", 3, thread="T"))  # one edge: c is both predecessors
        await memory.remember(new("e", -5))  # before everything: nothing precedes it
        await memory.remember(new("f", 1, thread="T"))  # as old as b: b counts as before
        await memory.remember(new("z", 9, namespace="ns-b", thread="T"))
        await memory.remember_many([new("g", 10, thread="U"), new("h", 11, thread="U")])
        assert await edges(memory, "temporal") == {
            ("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 1.0), ("c", "d", 1.0),
            ("a", "f", 1.0), ("b", "f", 1.0), ("d", "g", 1.0), ("g", "h", 1.0),
        }  # fmt: skip


async def test_a_superseded_row_still_precedes_and_the_boundary_is_the_instant(
    tmp_path: Path,
) -> None:
    async with open_memory(tmp_path, ScriptedEmbedder(), semantic_neighbours=0) as memory:
        _, b = await memory.remember_many([new("a", 0), new("b", 2)])
        await memory.remember(new("c", 1, supersedes=b.row_id))  # b is history now
        await memory.remember(new("d", 3))  # b is still what came before it
        instant = T0 + timedelta(minutes=10)
        await memory.remember_many(
            [
                NewRow(content="x", namespace="ns-b", created_at=instant),
                NewRow(
                    content="y", namespace="ns-b", created_at=instant + timedelta(microseconds=1)
                ),
            ]
        )
        # As old as x and a microsecond older than y: x came before it, y did not.
        await memory.remember(NewRow(content="w", namespace="ns-b", created_at=instant))
        assert await edges(memory, "temporal") == {
            ("a", "b", 1.0), ("a", "c", 1.0), ("b", "d", 1.0), ("x", "y", 1.0), ("x", "w", 1.0),
        }  # fmt: skip


# -- semantic edges -----------------------------------------------------------------------


async def test_semantic_edges_take_the_nearest_rows_above_the_threshold(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder(
        {"a": axis(0), "b": HALF, "c": (1, 1, 0, 0), "d": axis(5), "n": HALF, "m": HALF}
    )
    async with open_memory(
        tmp_path, embedder, semantic_neighbours=2, semantic_threshold=0.5
    ) as memory:
        await memory.remember_many([new("a", 0), new("b", 1), new("c", 2), new("d", 3)])
        assert await edges(memory, "semantic") == {
            ("a", "b", 0.5), ("a", "c", 0.7071), ("b", "c", 0.7071),
        }  # fmt: skip
        await memory.remember(new("n", 4))  # b 1.0, c 0.7071, a 0.5: the nearest two
        await memory.remember(new("m", 5, namespace="ns-b"))  # no neighbour in its namespace
        assert await edges(memory, "semantic") == {
            ("a", "b", 0.5), ("a", "c", 0.7071), ("b", "c", 0.7071),
            ("b", "n", 1.0), ("c", "n", 0.7071),
        }  # fmt: skip


async def test_semantic_edges_within_one_batch(tmp_path: Path) -> None:
    one = axis(0)
    embedder = ScriptedEmbedder({"p": one, "q": one, "s": one, "r": one, "t": one, "u": HALF})
    async with open_memory(
        tmp_path, embedder, semantic_neighbours=3, semantic_threshold=0.5
    ) as memory:
        await memory.remember_many(
            [new("p", 0), new("q", 1), new("s", 2, namespace="ns-b"),
             new("r", 3, status="superseded"), new("t", 4), new("u", 5)]
        )  # fmt: skip
        assert await edges(memory, "semantic") == {
            ("p", "q", 1.0), ("p", "r", 1.0), ("q", "r", 1.0),
            ("p", "t", 1.0), ("q", "t", 1.0),
            ("p", "u", 0.5), ("q", "u", 0.5), ("t", "u", 0.5),
        }  # fmt: skip


async def test_one_neighbour_is_the_nearest_of_the_stored_and_the_batch(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder({"a": axis(0), "b": (1, 1, 0, 0), "c": axis(0)})
    async with open_memory(
        tmp_path, embedder, semantic_neighbours=1, semantic_threshold=0.5
    ) as memory:
        await memory.remember(new("a", 0))
        await memory.remember_many([new("b", 1), new("c", 2)])
        # c: a (stored, 1.0) beats b (same batch, 0.7071).
        assert await edges(memory, "semantic") == {("a", "b", 0.7071), ("a", "c", 1.0)}


async def test_no_semantic_edges_when_none_are_wanted(tmp_path: Path) -> None:
    embedder = ScriptedEmbedder({"p": axis(0), "q": axis(0)})
    async with open_memory(tmp_path, embedder, semantic_neighbours=0) as memory:
        await memory.remember(new("p", 0))
        await memory.remember_many([new("q", 1), new("q2", 2)])
        assert await edges(memory, "semantic") == set()


async def test_deferred_rows_get_their_vectors_and_semantic_edges_later(tmp_path: Path) -> None:
    one = axis(0)
    embedder = ScriptedEmbedder({"p": one, "q": one, "r": one})
    async with open_memory(
        tmp_path, embedder, semantic_neighbours=3, semantic_threshold=0.5
    ) as memory:
        await memory.remember(new("p", 0))
        await memory.remember_many([new("q", 1), new("r", 2)], defer_embedding=True)
        assert embedder.asked == [["p"]]
        assert await edges(memory, "semantic") == set()
        assert await edges(memory, "temporal") == {("p", "q", 1.0), ("q", "r", 1.0)}
        assert await memory.unembedded() == 2
        policy = memory.ingest_policy
        assert await embed_pending(memory.store, embedder, policy=policy, batch=1) == 1
        assert await embed_pending(memory.store, embedder, policy=policy, batch=5) == 1
        assert await embed_pending(memory.store, embedder, policy=policy) == 0
        assert embedder.asked == [["p"], ["q"], ["r"]]
        assert await memory.unembedded() == 0
        assert await edges(memory, "semantic") == {
            ("p", "q", 1.0), ("p", "r", 1.0), ("q", "r", 1.0),
        }  # fmt: skip
        hits = await memory.store.vector_search(
            np.array(axis(0) + (0.0,) * 32, dtype=np.float32), RowFilter(), limit=5
        )
        assert len(hits) == 3


# -- reference edges ----------------------------------------------------------------------


async def test_reference_edges_link_the_newest_rows_sharing_a_reference(tmp_path: Path) -> None:
    async with open_memory(
        tmp_path, ScriptedEmbedder(), semantic_neighbours=0, reference_links=2,
        reference_max_rows=4, ignore_refs=frozenset({"phi.test"}),
    ) as memory:  # fmt: skip
        for i, text in enumerate(["r1 @ann.test @phi.test", "r2 @ann.test", "r3 @ann.test"]):
            await memory.remember(new(text, i))
        await memory.remember(new("r4 @ann.test and @phi.test", 3))
        await memory.remember(new("r5 @ann.test", 4))  # four rows mention her: too common
        assert await edges(memory, "reference") == {
            ("r1 @ann.test @phi.test", "r2 @ann.test", 1.0),
            ("r1 @ann.test @phi.test", "r3 @ann.test", 1.0),
            ("r2 @ann.test", "r3 @ann.test", 1.0),
            ("r2 @ann.test", "r4 @ann.test and @phi.test", 1.0),
            ("r3 @ann.test", "r4 @ann.test and @phi.test", 1.0),
        }
        assert await memory.store.ref_counts(["ann.test", "phi.test"]) == {"ann.test": 5}


async def test_reference_edges_within_a_batch_and_with_stored_rows(tmp_path: Path) -> None:
    async with open_memory(
        tmp_path, ScriptedEmbedder(), semantic_neighbours=0, reference_links=2,
        reference_max_rows=4,
    ) as memory:  # fmt: skip
        await memory.remember(new("s https://z.example", 0))
        await memory.remember_many(
            [new(f"b{i} https://y.example and https://z.example", i + 1) for i in range(5)]
        )
        y = {(f"b{a} https://y.example and https://z.example",
              f"b{b} https://y.example and https://z.example", 1.0)
             for a, b in [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]}  # fmt: skip
        z_from_stored = {
            ("s https://z.example", f"b{b} https://y.example and https://z.example", 1.0)
            for b in (0, 1)
        }
        # z: the stored row, then the batch's own (the same pairs as y's). At four
        # mentions a reference is too common: b3 links only by y, b4 by neither.
        assert await edges(memory, "reference") == y | z_from_stored


async def test_authors_and_sources_are_references_too(tmp_path: Path) -> None:
    async with open_memory(tmp_path, ScriptedEmbedder(), semantic_neighbours=0) as memory:
        await memory.remember(new("one", 0, author="did:plc:ann", source_uris=["note:17"]))
        await memory.remember(new("two", 1, author="did:plc:ann"))
        await memory.remember(new("three", 2, source_uris=["note:17"]))
        await memory.remember(new("four", 3, source_uris=["see https://q.example/x"]))
        await memory.remember(new("five https://q.example/x", 4))
        await memory.remember(new("six @ann.test", 5, source_uris=["note:17"]))
        assert await edges(memory, "reference") == {
            ("one", "two", 1.0), ("one", "three", 1.0), ("four", "five https://q.example/x", 1.0),
            ("one", "six @ann.test", 1.0), ("three", "six @ann.test", 1.0),
        }  # fmt: skip
        assert await memory.store.ref_counts(
            ["did:plc:ann", "note:17", "https://q.example/x", "see https://q.example/x", "ann.test"]
        ) == {"did:plc:ann": 2, "note:17": 3, "https://q.example/x": 2, "ann.test": 1}


async def test_a_batch_tops_its_own_links_up_with_the_newest_stored_rows(tmp_path: Path) -> None:
    async with open_memory(
        tmp_path, ScriptedEmbedder(), semantic_neighbours=0, reference_links=2
    ) as memory:
        for i in range(3):
            await memory.remember(new(f"z{i} https://z.example", i))
        await memory.remember_many([new(f"c{i} https://z.example", 3 + i) for i in range(2)])
        assert await edges(memory, "reference") == {
            (f"{a} https://z.example", f"{b} https://z.example", 1.0)
            for a, b in [("z0", "z1"), ("z0", "z2"), ("z1", "z2"),
                         ("z2", "c0"), ("z1", "c0"), ("z2", "c1"), ("c0", "c1")]
        }  # fmt: skip


async def test_a_too_common_reference_skips_only_itself(tmp_path: Path) -> None:
    async with open_memory(
        tmp_path, ScriptedEmbedder(), semantic_neighbours=0, reference_links=1,
        reference_max_rows=2,
    ) as memory:  # fmt: skip
        await memory.remember_many(
            [new("s1 https://common.example", 0), new("s2 https://common.example", 1)]
        )
        await memory.remember(new("s3 @ann.test", 2))
        await memory.remember(new("r https://common.example and @ann.test", 3))
        assert await edges(memory, "reference") == {
            ("s1 https://common.example", "s2 https://common.example", 1.0),
            ("s3 @ann.test", "r https://common.example and @ann.test", 1.0),
        }


async def test_no_reference_edges_when_none_are_wanted(tmp_path: Path) -> None:
    async with open_memory(
        tmp_path, ScriptedEmbedder(), semantic_neighbours=0, reference_links=0
    ) as memory:
        await memory.remember(new("a @ann.test", 0))
        await memory.remember_many([new("b @ann.test", 1), new("c @ann.test", 2)])
        assert await edges(memory, "reference") == set()
