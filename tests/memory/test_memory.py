"""The engine through its public API, with the real MiniLM embedder and a SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from phi.errors import EmbedderMismatch, InvalidInput, NamespaceNotFound, RowNotFound
from phi.memory import Kind, Memory, MiniLMEmbedder, NewRow, Turn, user_namespace
from tests.memory.conftest import TinyEmbedder

pytestmark = pytest.mark.anyio

ALICE = user_namespace("did:plc:alice")
BOB = user_namespace("did:plc:bob")


async def test_same_content_and_sources_twice_make_one_row(memory: Memory) -> None:
    first = await memory.remember(
        NewRow(content="likes rust", namespace=ALICE, kind="observation", source_uris=["at://a/1"])
    )
    again = await memory.remember(
        NewRow(content="likes rust", namespace=ALICE, kind="observation", source_uris=["at://a/1"])
    )
    other_source = await memory.remember(
        NewRow(content="likes rust", namespace=ALICE, kind="observation", source_uris=["at://a/2"])
    )
    assert again.row_id == first.row_id
    assert other_source.row_id != first.row_id
    rows = await memory.remember_many([NewRow(content="x y z", namespace=ALICE)] * 3)
    assert len({r.row_id for r in rows}) == 1
    assert (await memory.stats()).rows == 3


async def test_interaction_keeps_turns_and_trust(memory: Memory) -> None:
    row = await memory.remember(
        NewRow.interaction(
            [
                Turn(speaker="@alice.test", text="call me nate"),
                Turn(speaker="@phi.test", text="ok nate", by_phi=True),
            ],
            namespace=ALICE,
            author="did:plc:alice",
            source_uris=["at://did:plc:alice/app.bsky.feed.post/1"],
        )
    )
    assert row.content == "@alice.test: call me nate\n@phi.test: ok nate"
    assert (row.kind, row.trust) == ("interaction", "high")
    assert row.meta["turns"][1] == {"speaker": "@phi.test", "text": "ok nate", "by_phi": True}


async def test_temporal_edges_follow_threads_and_namespaces(memory: Memory) -> None:
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    a = await memory.remember(
        NewRow(content="first thing", namespace=ALICE, created_at=t0, thread="at://t/1")
    )
    b = await memory.remember(
        NewRow(content="unrelated aside", namespace=ALICE, created_at=t0 + timedelta(minutes=1))
    )
    c = await memory.remember(
        NewRow(
            content="second thing",
            namespace=ALICE,
            created_at=t0 + timedelta(minutes=2),
            thread="at://t/1",
        )
    )
    edges = {
        (n.row.row_id, n.edge.edge_type)
        for n in await memory.neighbors(c.row_id, types=["temporal"])
    }
    assert edges == {(a.row_id, "temporal"), (b.row_id, "temporal")}
    first = await memory.neighbors(a.row_id, types=["temporal"])
    assert {n.row.row_id for n in first} == {b.row_id, c.row_id}


async def test_reference_edges_link_rows_sharing_a_handle_or_url(memory: Memory) -> None:
    a = await memory.remember(
        NewRow(content="read https://example.com/essay today", namespace=ALICE)
    )
    await memory.remember(NewRow(content="the weather is nice", namespace=ALICE))
    c = await memory.remember(
        NewRow(content="@bob.test wrote https://example.com/essay.", namespace=ALICE)
    )
    linked = {
        n.row.row_id: n.edge.edge_type
        for n in await memory.neighbors(c.row_id, types=["reference"])
    }
    assert linked == {a.row_id: "reference"}


async def test_semantic_edges_link_near_neighbours_above_threshold(memory: Memory) -> None:
    a = await memory.remember(NewRow(content="alice loves crows and ravens", namespace=ALICE))
    await memory.remember(NewRow(content="quarterly tax filing deadline", namespace=ALICE))
    c = await memory.remember(NewRow(content="alice adores crows and ravens", namespace=ALICE))
    semantic = await memory.neighbors(c.row_id, types=["semantic"])
    assert [n.row.row_id for n in semantic] == [a.row_id]
    assert semantic[0].edge.weight > 0.6


async def test_search_finds_by_meaning_and_by_words(memory: Memory) -> None:
    await memory.remember(
        NewRow(content="alice adopted a rescue greyhound named Pixel", namespace=ALICE)
    )
    await memory.remember(NewRow(content="alice works as a nurse on night shifts", namespace=ALICE))
    await memory.remember(NewRow(content="alice is learning to play the cello", namespace=ALICE))
    by_meaning = await memory.search("what pet dog does she have?", namespace=ALICE, limit=1)
    assert "greyhound" in by_meaning[0].row.content
    by_word = await memory.search("Pixel", namespace=ALICE, limit=1)
    assert "Pixel" in by_word[0].row.content and by_word[0].matched_by in ("text", "both")
    assert by_word[0].age_seconds >= 0 and by_word[0].score > 0


async def test_deferred_rows_are_found_by_words_at_once_and_by_meaning_once_embedded(
    memory: Memory,
) -> None:
    rows = await memory.remember_many(
        [
            NewRow(content="alice adopted a rescue greyhound named Pixel", namespace=ALICE),
            NewRow(content="alice adores her greyhound Pixel", namespace=ALICE),
            NewRow(content="alice works as a nurse on night shifts", namespace=ALICE),
        ],
        defer_embedding=True,
    )
    assert await memory.unembedded(namespace=ALICE) == 3
    by_word = await memory.search("Pixel", namespace=ALICE, limit=3)
    assert sorted(h.row.row_id for h in by_word) == sorted(r.row_id for r in rows[:2])
    assert {h.matched_by for h in by_word} == {"text"}
    assert await memory.search("what pet dog does she have?", namespace=ALICE) == []
    assert await memory.embed_pending(batch=2) == 3
    assert await memory.unembedded(namespace=ALICE) == 0
    by_meaning = await memory.search("what pet dog does she have?", namespace=ALICE, limit=1)
    assert "greyhound" in by_meaning[0].row.content
    semantic = await memory.neighbors(rows[1].row_id, types=["semantic"])
    assert [n.row.row_id for n in semantic] == [rows[0].row_id]
    assert await memory.embed_pending() == 0


async def test_a_query_about_one_person_never_returns_anothers_rows(memory: Memory) -> None:
    # Shared references and near-identical text create edges across the two namespaces.
    await memory.remember(
        NewRow(
            content="loves https://birds.example and crows", namespace=ALICE, author="did:plc:alice"
        )
    )
    await memory.remember(
        NewRow(
            content="loves https://birds.example and crows!", namespace=BOB, author="did:plc:bob"
        )
    )
    await memory.remember(
        NewRow(content="bob's secret: he fears crows", namespace=BOB, author="did:plc:bob")
    )
    for query in ("crows", "birds.example", "secret fear"):
        found = await memory.search(query, namespace=ALICE, limit=50)
        assert found and {f.row.namespace for f in found} == {ALICE}
        window = await memory.preload(query, namespace=ALICE, budget_tokens=2000)
        assert "fears crows" not in window.text and BOB not in window.text
        assert "crows!" not in window.text


async def test_search_filters(memory: Memory) -> None:
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    old = await memory.remember(
        NewRow(content="likes tea", namespace=ALICE, kind="observation", created_at=t0)
    )
    new = await memory.remember(
        NewRow(
            content="likes coffee",
            namespace=ALICE,
            kind="observation",
            created_at=t0 + timedelta(days=30),
        )
    )
    note = await memory.remember(
        NewRow(content="likes hot drinks", namespace=ALICE, kind="note", author="did:plc:alice")
    )
    await memory.store.set_status([old.row_id], "superseded", at=t0 + timedelta(days=31))

    async def ids(**kw: Any) -> set[str]:
        return {
            f.row.row_id
            for f in await memory.search("drinks she likes", namespace=ALICE, limit=10, **kw)
        }

    assert await ids() == {new.row_id, note.row_id}
    assert await ids(status=None) == {old.row_id, new.row_id, note.row_id}
    assert await ids(status="superseded") == {old.row_id}
    assert await ids(kinds=["note"]) == {note.row_id}
    assert await ids(author="did:plc:alice") == {note.row_id}
    assert await ids(status=None, until=t0 + timedelta(days=1)) == {old.row_id}
    assert await ids(since=t0 + timedelta(days=1), kinds=["observation"]) == {new.row_id}


async def test_recency_prefers_the_fresher_of_equal_rows(memory: Memory) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    await memory.remember(
        NewRow(
            content="the project status is amber",
            namespace=ALICE,
            created_at=now - timedelta(days=400),
            source_uris=["a"],
        )
    )
    fresh = await memory.remember(
        NewRow(
            content="the project status is amber",
            namespace=ALICE,
            created_at=now - timedelta(days=1),
            source_uris=["b"],
        )
    )
    found = await memory.search("project status", namespace=ALICE, limit=2, now=now)
    assert found[0].row.row_id == fresh.row_id


async def test_preload_has_recent_relevant_and_connected_within_budget(memory: Memory) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(30):
        await memory.remember(
            NewRow(
                content=f"filler note number {i} about gardening",
                namespace=ALICE,
                created_at=t0 + timedelta(hours=i),
            )
        )
    target = await memory.remember(
        NewRow(content="alice is training for the Berlin marathon", namespace=ALICE, created_at=t0)
    )
    await memory.remember(
        NewRow(
            content="she runs every morning at six, for the race",
            namespace=ALICE,
            created_at=t0 + timedelta(seconds=1),
        )
    )
    window = await memory.preload("marathon training", namespace=ALICE, budget_tokens=400)
    assert window.tokens <= 400 and window.text
    relevant = {r.row.row_id for r in window.relevant}
    assert target.row_id in relevant
    # Recent holds the newest rows that are not already relevant, newest first.
    assert window.recent and not relevant & {r.row.row_id for r in window.recent}
    ages = [r.age_seconds for r in window.recent]
    assert ages == sorted(ages)
    assert window.connected
    assert "[RECENT MEMORY" in window.text and "[RELEVANT MEMORY" in window.text
    assert "verbatim" not in window.text and "medium trust" in window.text
    small = await memory.preload("marathon", namespace=ALICE, budget_tokens=60)
    assert small.tokens <= 60


async def test_bad_input_gets_a_clear_error_and_writes_nothing(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="empty content"):
        await memory.remember(NewRow(content="   ", namespace=ALICE))
    with pytest.raises(InvalidInput, match="invalid namespace"):
        await memory.remember(NewRow(content="x", namespace="has spaces"))
    with pytest.raises(InvalidInput, match="at most 3"):
        await memory.remember(NewRow(content="x", namespace=ALICE, tags=["a", "b", "c", "d"]))
    with pytest.raises(InvalidInput, match="no timezone"):
        await memory.remember(NewRow(content="x", namespace=ALICE, created_at=datetime(2025, 1, 1)))
    with pytest.raises(InvalidInput, match="over the limit"):
        await memory.remember(NewRow(content="x" * 20_001, namespace=ALICE))
    with pytest.raises(InvalidInput, match="empty content"):
        await memory.remember_many(
            [NewRow(content="fine", namespace=ALICE), NewRow(content="", namespace=ALICE)]
        )
    with pytest.raises(InvalidInput, match="empty query"):
        await memory.search(" ", namespace=ALICE)
    with pytest.raises(InvalidInput, match="not a DID"):
        user_namespace("alice.test")
    assert (await memory.stats()).rows == 0
    with pytest.raises(NamespaceNotFound, match="phi-users-did:plc:alice"):
        await memory.search("anything", namespace=ALICE)
    with pytest.raises(RowNotFound):
        await memory.get("no-such-row")


async def test_a_store_made_by_another_embedder_is_refused(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    async with Memory.open(tmp_path / "m.db", embedder=minilm) as memory:
        await memory.remember(NewRow(content="hello", namespace=ALICE))
    with pytest.raises(EmbedderMismatch, match=r"all-MiniLM-L6-v2.*tiny-letters"):
        async with Memory.open(tmp_path / "m.db", embedder=TinyEmbedder()):
            pass
    async with Memory.open(tmp_path / "m.db", embedder=minilm) as memory:
        assert (await memory.stats()).rows == 1


async def test_forget_erases_one_person_and_says_what(memory: Memory) -> None:
    await memory.remember(NewRow(content="alice likes tea", namespace=ALICE, kind="observation"))
    await memory.remember(
        NewRow.interaction([Turn(speaker="@alice.test", text="hi")], namespace=ALICE)
    )
    kept = await memory.remember(NewRow(content="bob likes tea", namespace=BOB))
    report = await memory.forget(ALICE)
    assert (report.rows, dict(report.kinds)) == (2, {"observation": 1, "interaction": 1})
    assert [n.namespace for n in await memory.namespaces()] == [BOB]
    assert (await memory.get(kept.row_id)).content == "bob likes tea"
    with pytest.raises(NamespaceNotFound):
        await memory.forget(ALICE)


async def test_export_yields_every_row_oldest_first(memory: Memory) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    for i in (2, 0, 1):
        await memory.remember(
            NewRow(content=f"row {i}", namespace=ALICE, created_at=t0 + timedelta(days=i))
        )
    assert [r.content async for r in memory.export(namespace=ALICE)] == ["row 0", "row 1", "row 2"]


async def test_superseding_keeps_the_old_belief_as_history(memory: Memory) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    first = await memory.remember(
        NewRow(
            content="prefers to be called nate",
            namespace=ALICE,
            kind="observation",
            source_uris=["at://a/1"],
            created_at=t0,
        )
    )
    second = await memory.remember(
        NewRow(
            content="prefers to be called nathan",
            namespace=ALICE,
            kind="observation",
            source_uris=["at://a/1", "at://a/2"],
            supersedes=first.row_id,
            created_at=t0 + timedelta(days=3),
        )
    )
    assert second.supersedes == first.row_id
    assert (await memory.get(first.row_id)).status == "superseded"
    assert [r.row_id for r in await memory.history(first.row_id)] == [first.row_id, second.row_id]
    assert [r.row_id for r in await memory.history(second.row_id)] == [first.row_id, second.row_id]
    linked = await memory.neighbors(second.row_id, types=["supersedes"])
    assert [(n.row.row_id, n.edge.src) for n in linked] == [(first.row_id, second.row_id)]
    found = await memory.search("what is his name?", namespace=ALICE, kinds=["observation"])
    assert [f.row.row_id for f in found] == [second.row_id]
    with pytest.raises(InvalidInput, match="already superseded"):
        await memory.remember(
            NewRow(
                content="called nat", namespace=ALICE, kind="observation", supersedes=first.row_id
            )
        )
    with pytest.raises(InvalidInput, match="its own namespace"):
        await memory.remember(
            NewRow(
                content="called nat", namespace=BOB, kind="observation", supersedes=second.row_id
            )
        )
    with pytest.raises(RowNotFound):
        await memory.remember(
            NewRow(content="called nat", namespace=ALICE, supersedes="no-such-row")
        )
    assert (await memory.stats()).rows == 2


async def test_search_says_how_many_rows_of_its_scope_wait_for_their_vector(
    memory: Memory,
) -> None:
    """A search never misses queued rows silently: it counts those of its own scope."""
    carol = user_namespace("did:plc:carol")
    await memory.remember_many(
        [
            NewRow(content="bob keeps bees on his roof", namespace=BOB),
            NewRow(content="carol rows on the river at dawn", namespace=carol),
        ]
    )
    await memory.remember_many(
        [
            NewRow(content="alice adopted a rescue greyhound named Pixel", namespace=ALICE),
            NewRow(content="alice walks Pixel every morning", namespace=ALICE),
            NewRow(content="alice has a greyhound", namespace=ALICE, kind="observation"),
            NewRow(content="bob sells the honey at the market", namespace=BOB),
        ],
        defer_embedding=True,
    )
    by_meaning = await memory.search("what pet dog does she have?", namespace=ALICE)
    assert (list(by_meaning), by_meaning.unembedded) == ([], 3)
    by_word = await memory.search("Pixel", namespace=ALICE)
    assert (len(by_word), by_word.unembedded) == (2, 3)

    async def waiting(**scope: Any) -> int:
        return (await memory.search("greyhound", **scope)).unembedded

    assert await waiting(namespace=ALICE, kinds=["observation"]) == 1
    assert await waiting(namespace=BOB) == 1
    assert await waiting(namespace=carol) == 0
    assert await waiting(namespace=[ALICE, BOB]) == 4
    assert await waiting() == 4
    assert await memory.embed_pending() == 4
    assert [await waiting(), await waiting(namespace=ALICE)] == [0, 0]
    found = await memory.search("what pet dog does she have?", namespace=ALICE, limit=1)
    assert "greyhound" in found[0].row.content and found.unembedded == 0
    assert found.to_json() == {"results": [found[0].to_json()], "unembedded": 0}


async def test_search_kinds_is_one_search_per_kind(memory: Memory) -> None:
    await memory.remember(NewRow(content="likes herons", namespace=ALICE, kind="observation"))
    await memory.remember(NewRow(content="herons fish at dawn", namespace=ALICE, kind="note"))
    limits: dict[Kind, int] = {"observation": 5, "note": 5, "summary": 1}
    found = await memory.search_kinds("herons", limits, namespace=ALICE)
    for kind, limit in limits.items():
        alone = await memory.search("herons", namespace=ALICE, kinds=[kind], limit=limit)
        assert [h.row for h in found[kind]] == [h.row for h in alone]
    assert [h.row.content for h in found["note"]] == ["herons fish at dawn"]
    with pytest.raises(NamespaceNotFound):
        await memory.search_kinds("herons", {"note": 1}, namespace="nobody-here")


async def test_state_is_versioned_key_value_text(memory: Memory) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    assert await memory.state.read("gate", "at://req/1") is None
    assert await memory.state.write("gate", "at://req/1", '{"status": "pending"}', at=at) == 1
    assert await memory.state.write("gate", "at://req/1", '{"status": "used"}', at=at) == 2
    entry = await memory.state.read("gate", "at://req/1")
    assert entry is not None and (entry.value, entry.version) == ('{"status": "used"}', 2)
    assert await memory.state.keys("gate") == ["at://req/1"]
    assert await memory.state.erase("gate", "at://req/1") == 2
    assert await memory.state.keys("gate") == []
    with pytest.raises(InvalidInput, match="empty state scope"):
        await memory.state.read(" ", "k")
    with pytest.raises(InvalidInput, match="has no timezone"):
        await memory.state.write("gate", "k", "v", at=datetime(2026, 1, 1))
