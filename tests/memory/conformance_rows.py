"""Behaviour every `RowStore` backend shares (rows, edges, vectors, text, forget).

A backend's test module subclasses `RowStoreConformance` and provides a `store` fixture
yielding a connected, empty row store bound to the 4-dimensional `CONFORMANCE_SPEC`. Its
ledger has its own suite, `tests/memory/conformance_ledger.py`.

Among it: writes are idempotent upserts on `(namespace, content_hash)` that return the
stored row, and `forget` follows provenance (author, the person's own record URIs,
`derived_from` and `causal` links) and erases it all in one call. Concurrency across
processes is exercised per backend in `tests/durability/`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from phi.errors import EmbedderMismatch, NamespaceNotFound, RowNotFound, StoreError
from phi.memory.model import Edge, Row, content_hash, new_row_id
from phi.memory.store import EmbeddingSpec, RowFilter, RowStore, RowWrite, Store
from phi.memory.store.base import (
    DERIVED_FROM,
    PUBLISHED_URIS,
    ForgetReport,
    HybridQuery,
    gather_stepwise,
)

CONFORMANCE_SPEC = EmbeddingSpec(model="conformance-4d", dimension=4)
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def make_row(content: str, *, namespace: str = "ns-a", at: int = 0, **fields: Any) -> Row:
    kind = fields.pop("kind", "note")
    sources = tuple(fields.pop("source_uris", ()))
    return Row(
        row_id=fields.pop("row_id", new_row_id()),
        namespace=namespace,
        kind=kind,
        content=content,
        status=fields.pop("status", "active"),
        supersedes=fields.pop("supersedes", None),
        trust=fields.pop("trust", "medium"),
        tags=tuple(fields.pop("tags", ())),
        source_uris=sources,
        author=fields.pop("author", None),
        created_at=T0 + timedelta(days=at),
        updated_at=T0 + timedelta(days=at),
        meta=fields.pop("meta", {}),
        content_hash=content_hash(kind, content, sources),
    )


def vec(*values: float) -> np.ndarray[Any, np.dtype[np.float32]]:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def w(row: Row, vector: Any, refs: tuple[str, ...] = ()) -> RowWrite:
    return RowWrite(row=row, vector=vector, refs=refs)


# Imported after the helpers above, which it uses: moving a store to another model.
from tests.memory.conformance_reembed import ReembedConformance  # noqa: E402


@pytest.mark.anyio
class RowStoreConformance(ReembedConformance):
    async def test_rows_round_trip(self, store: RowStore) -> None:
        row = make_row(
            "likes rust",
            tags=("code",),
            source_uris=("at://x/1",),
            author="did:plc:a",
            meta={"thread": "t1", "n": 1},
        )
        await store.write([w(row, vec(1, 0, 0, 0))], [])
        assert await store.get_rows([row.row_id]) == [row]
        assert await store.get_rows(["missing"]) == []
        (back,) = (await store.get_vectors([row.row_id])).values()
        assert np.allclose(back, vec(1, 0, 0, 0))

    async def test_embedding_is_recorded_and_a_mismatch_refused(self, store: RowStore) -> None:
        assert await store.embedding() == CONFORMANCE_SPEC
        await store.bind_embedding(CONFORMANCE_SPEC)
        with pytest.raises(EmbedderMismatch, match="conformance-4d"):
            await store.bind_embedding(EmbeddingSpec(model="other", dimension=4))

    async def test_wrong_vector_size_is_refused_and_nothing_written(self, store: RowStore) -> None:
        good, bad = make_row("a"), make_row("b")
        with pytest.raises(StoreError, match="does not fit"):
            await store.write([w(good, vec(1, 0, 0, 0)), w(bad, np.ones(3, dtype=np.float32))], [])
        assert await store.count(RowFilter(statuses=None)) == 0

    async def test_write_is_atomic_when_an_edge_is_bad(self, store: RowStore) -> None:
        row = make_row("a")
        with pytest.raises(RowNotFound):
            await store.write(
                [w(row, vec(1, 0, 0, 0))], [Edge(src=row.row_id, dst="nope", edge_type="causal")]
            )
        assert await store.get_rows([row.row_id]) == []

    async def test_find_by_hash(self, store: RowStore) -> None:
        row = make_row("same", namespace="ns-a")
        await store.write([w(row, vec(1, 0, 0, 0))], [])
        found = await store.find_by_hash([("ns-a", row.content_hash), ("ns-a", "x")])
        assert found == {("ns-a", row.content_hash): row}
        assert await store.find_by_hash([("ns-b", row.content_hash)]) == {}

    async def test_write_is_an_idempotent_upsert_on_identity(self, store: RowStore) -> None:
        first = make_row("same text", source_uris=("at://x/1",), at=1)
        (stored,) = await store.write([w(first, vec(1, 0, 0, 0), ("alice.test",))], [])
        assert stored == first
        # Another writer made the same row (same namespace and content hash, its own id)
        # and links a new row to it: one row stays, the edge lands on it, no error.
        again = make_row("same text", source_uris=("at://x/1",), at=2)
        other = make_row("other text", at=3)
        assert again.content_hash == first.content_hash and again.row_id != first.row_id
        back = await store.write(
            [w(again, vec(0, 1, 0, 0), ("alice.test",)), w(other, vec(0, 0, 1, 0))],
            [Edge(src=again.row_id, dst=other.row_id, edge_type="temporal")],
        )
        assert back == [first, other]
        assert await store.get_rows([again.row_id]) == []
        assert await store.count(RowFilter(statuses=None)) == 2
        assert [(e.src, e.dst) for e in await store.edges([other.row_id])] == [
            (first.row_id, other.row_id)
        ]
        assert await store.ref_counts(["alice.test"]) == {"alice.test": 1}
        (kept,) = (await store.get_vectors([first.row_id])).values()
        assert np.allclose(kept, vec(1, 0, 0, 0))
        hits = await store.text_search(["same"], RowFilter(), limit=5)
        assert [h.row_id for h in hits] == [first.row_id]

    async def test_a_bulk_load_stores_what_ordinary_writes_store(self, store: RowStore) -> None:
        first, twin = make_row("crows remember faces"), make_row("crows remember faces")
        other = make_row("ravens remember crows", namespace="ns-b")

        Seen = tuple[list[tuple[str, float]], list[tuple[str, float]], list[tuple[str, str]]]

        async def seen() -> tuple[Seen, dict[str, int]]:
            near = await store.vector_search(vec(1, 1, 0, 0), RowFilter(), limit=5)
            text = await store.text_search(["crows", "faces"], RowFilter(), limit=5)
            edges = [(e.src, e.dst) for e in await store.edges([other.row_id])]
            scored = (
                [(h.row_id, round(h.score, 5)) for h in near],
                [(h.row_id, round(h.score, 5)) for h in text],
                edges,
            )
            return scored, await store.ref_counts(["alice.test"])

        async with store.bulk_load():
            back = await store.write(
                [
                    w(first, vec(1, 0, 0, 0), ("alice.test",)),
                    w(twin, vec(0, 1, 0, 0), ("alice.test",)),
                    w(other, vec(0, 0, 1, 0)),
                ],
                [Edge(src=twin.row_id, dst=other.row_id, edge_type="temporal")],
            )
            inside = await seen()
        assert back == [first, first, other]
        assert await seen() == inside
        (near, text, edges), refs = inside
        assert [i for i, _ in near] == [i for i, _ in text] == [first.row_id, other.row_id]
        assert (edges, refs) == ([(first.row_id, other.row_id)], {"alice.test": 1})

    async def test_a_store_holding_rows_keeps_the_ordinary_path(self, store: RowStore) -> None:
        await store.write([w(make_row("already here"), vec(1, 0, 0, 0))], [])
        async with store.bulk_load() as deferred:
            assert deferred is False
            await store.write([w(make_row("one more"), vec(0, 1, 0, 0))], [])
        assert await store.count(RowFilter()) == 2

    async def test_a_repeated_row_within_one_write_is_stored_once(self, store: RowStore) -> None:
        a, b = make_row("twice"), make_row("twice")
        back = await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(1, 0, 0, 0))], [])
        assert back == [a, a]
        assert await store.count(RowFilter(statuses=None)) == 1

    async def test_vector_search_filters_exactly(self, store: RowStore) -> None:
        rows = [
            make_row("a1", namespace="ns-a", kind="note", at=1),
            make_row("a2", namespace="ns-a", kind="observation", author="did:plc:x", at=2),
            make_row("a3", namespace="ns-a", kind="note", status="superseded", at=3),
            make_row("b1", namespace="ns-b", kind="note", at=4),
        ]
        vectors = [vec(1, 0, 0, 0), vec(1, 0.1, 0, 0), vec(1, 0.2, 0, 0), vec(1, 0, 0, 0.01)]
        await store.write([w(r, v) for r, v in zip(rows, vectors, strict=True)], [])
        q = vec(1, 0, 0, 0)

        async def ids(**f: Any) -> list[str]:
            hits = await store.vector_search(q, RowFilter(**f), limit=10)
            return [r.content for r in await store.get_rows([h.row_id for h in hits])]

        assert await ids(namespaces=("ns-a",)) == ["a1", "a2"]
        assert await ids(namespaces=("ns-a",), statuses=None) == ["a1", "a2", "a3"]
        assert await ids(namespaces=("ns-a", "ns-b")) == ["a1", "b1", "a2"]
        assert await ids(kinds=("observation",)) == ["a2"]
        assert await ids(author="did:plc:x") == ["a2"]
        assert await ids(since=T0 + timedelta(days=2), statuses=None) == ["b1", "a2", "a3"]
        assert await ids(until=T0 + timedelta(days=2)) == ["a1"]
        assert await ids(namespaces=("ns-c",)) == []
        hits = await store.vector_search(q, RowFilter(), limit=1)
        assert len(hits) == 1 and hits[0].score == pytest.approx(1.0, abs=1e-5)

    async def test_text_search_ranks_by_bm25_within_scope(self, store: RowStore) -> None:
        rows = [
            make_row("crows are clever birds", namespace="ns-a"),
            make_row("I adopted a crow, crows everywhere", namespace="ns-a"),
            make_row("stock markets", namespace="ns-a"),
            make_row("crows crows crows", namespace="ns-b"),
        ]
        await store.write([w(r, vec(1, 0, 0, i + 1)) for i, r in enumerate(rows)], [])
        hits = await store.text_search(["crows"], RowFilter(namespaces=("ns-a",)), limit=10)
        found = [r.content for r in await store.get_rows([h.row_id for h in hits])]
        assert set(found) == {"crows are clever birds", "I adopted a crow, crows everywhere"}
        assert all(h.score > 0 for h in hits)
        assert await store.text_search([], RowFilter(), limit=10) == []
        assert await store.text_search(['"quoted" (odd) AND'], RowFilter(), limit=10) == []

    async def test_latest_is_newest_first(self, store: RowStore) -> None:
        rows = [make_row(f"r{i}", at=i, meta={"thread": "t" if i % 2 else "u"}) for i in range(5)]
        await store.write([w(r, vec(1, 0, 0, i + 1)) for i, r in enumerate(rows)], [])
        latest = await store.latest(RowFilter(namespaces=("ns-a",)), limit=3)
        assert [r.content for r in latest] == ["r4", "r3", "r2"]
        in_thread = await store.latest(RowFilter(thread="t"), limit=5)
        assert [r.content for r in in_thread] == ["r3", "r1"]
        many = await store.latest_many(
            [RowFilter(thread="u"), RowFilter(namespaces=("x",))], limit=1
        )
        assert [[r.content for r in rows] for rows in many] == [["r4"], []]

    async def test_edges_both_directions_and_by_type(self, store: RowStore) -> None:
        a, b, c = make_row("a"), make_row("b"), make_row("c")
        await store.write(
            [w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0)), w(c, vec(0, 0, 1, 0))],
            [
                Edge(src=a.row_id, dst=b.row_id, edge_type="temporal"),
                Edge(src=c.row_id, dst=b.row_id, edge_type="semantic", weight=0.7),
            ],
        )
        edges = await store.edges([b.row_id])
        assert {(e.src, e.dst, e.edge_type) for e in edges} == {
            (a.row_id, b.row_id, "temporal"),
            (c.row_id, b.row_id, "semantic"),
        }
        assert [e.edge_type for e in await store.edges([b.row_id], types=["semantic"])] == [
            "semantic"
        ]
        await store.add_edges([Edge(src=c.row_id, dst=b.row_id, edge_type="semantic", weight=0.9)])
        (semantic,) = await store.edges([c.row_id], types=["semantic"])
        assert semantic.weight == pytest.approx(0.9)

    async def test_set_status_changes_what_filters_see(self, store: RowStore) -> None:
        row = make_row("old belief")
        await store.write([w(row, vec(1, 0, 0, 0))], [])
        await store.set_status([row.row_id], "superseded", at=T0 + timedelta(days=9))
        (back,) = await store.get_rows([row.row_id])
        assert back.status == "superseded" and back.updated_at == T0 + timedelta(days=9)
        assert await store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=5) == []
        assert await store.text_search(["belief"], RowFilter(), limit=5) == []
        with pytest.raises(RowNotFound):
            await store.set_status(["nope"], "active", at=T0)

    async def test_references(self, store: RowStore) -> None:
        a, b = make_row("a", at=1), make_row("b", at=2, namespace="ns-b")
        await store.write(
            [w(a, vec(1, 0, 0, 0), ("alice.test",)), w(b, vec(0, 1, 0, 0), ("alice.test", "x"))], []
        )
        assert await store.ref_counts(["alice.test", "x", "y"]) == {"alice.test": 2, "x": 1}
        assert await store.rows_with_ref("alice.test", RowFilter(), limit=5) == [b.row_id, a.row_id]
        assert await store.rows_with_ref(
            "alice.test", RowFilter(namespaces=("ns-a",)), limit=5
        ) == [a.row_id]

    async def test_namespaces_count_and_scan(self, store: RowStore) -> None:
        rows = [make_row(f"r{i}", namespace="ns-b" if i == 2 else "ns-a", at=i) for i in range(4)]
        await store.write([w(r, vec(1, 0, 0, i + 1)) for i, r in enumerate(rows)], [])
        infos = {n.namespace: n for n in await store.namespaces()}
        assert (infos["ns-a"].rows, infos["ns-b"].rows) == (3, 1)
        assert infos["ns-a"].last_created_at == T0 + timedelta(days=3)
        assert [n.namespace for n in await store.namespaces(prefix="ns-b")] == ["ns-b"]
        assert await store.count(RowFilter(namespaces=("ns-a",))) == 3
        scanned = [r.content async for r in store.scan(RowFilter(), batch_size=2)]
        assert scanned == ["r0", "r1", "r2", "r3"]

    async def test_forget_erases_a_namespace_and_nothing_else(self, store: RowStore) -> None:
        a1, a2, b1 = make_row("a1"), make_row("a2"), make_row("b1", namespace="ns-b")
        await store.write(
            [
                w(a1, vec(1, 0, 0, 0), ("r",)),
                w(a2, vec(0, 1, 0, 0)),
                w(b1, vec(0, 0, 1, 0), ("r",)),
            ],
            [
                Edge(src=a1.row_id, dst=a2.row_id, edge_type="temporal"),
                Edge(src=a1.row_id, dst=b1.row_id, edge_type="reference"),
            ],
        )
        report = await store.forget("ns-a")
        assert (report.rows, report.edges, dict(report.kinds)) == (2, 2, {"note": 2})
        assert await store.get_rows([a1.row_id, a2.row_id, b1.row_id]) == [b1]
        assert await store.edges([b1.row_id]) == []
        assert await store.ref_counts(["r"]) == {"r": 1}
        assert await store.text_search(["a1"], RowFilter(), limit=5) == []
        hits = await store.vector_search(vec(1, 0, 0, 0), RowFilter(statuses=None), limit=5)
        assert [h.row_id for h in hits] == [b1.row_id]
        with pytest.raises(NamespaceNotFound):
            await store.forget("ns-a")

    async def test_forget_follows_provenance_in_every_namespace(self, store: RowStore) -> None:
        did, person = "did:plc:alice", "phi-users-did:plc:alice"
        own = make_row("alice likes crows", namespace=person, author=did, kind="observation")
        card = make_row(
            "crows are clever", namespace="phi-public",
            meta={DERIVED_FROM: [own.row_id], PUBLISHED_URIS: ["at://did:plc:phi/io.phi.card/1"]},
        )  # fmt: skip
        card_of_card = make_row("corvids recap", namespace="phi-public")
        about = make_row("alice posted about crows", namespace="phi-episodic", author=did)
        archived = make_row(
            "a post", namespace="phi-observations",
            source_uris=(f"at://{did}/app.bsky.feed.post/1",),
        )  # fmt: skip
        kept = [
            make_row("a public note", namespace="phi-public"),
            make_row(
                "bob's post",
                namespace="phi-observations",
                source_uris=("at://did:plc:aliceson/app.bsky.feed.post/1",),
            ),
            make_row("bob likes tea", namespace="phi-episodic", author="did:plc:bob"),
        ]
        rows = [own, card, card_of_card, about, archived, *kept]
        await store.write(
            [w(r, vec(1, i, 0, 1)) for i, r in enumerate(rows)],
            [
                Edge(src=card.row_id, dst=card_of_card.row_id, edge_type="causal"),
                Edge(src=kept[0].row_id, dst=card.row_id, edge_type="semantic", weight=0.8),
            ],
        )
        report = await store.forget(person, author=did)
        assert (report.namespace, report.rows, report.edges, report.state) == (person, 5, 2, 0)
        assert dict(report.kinds) == {"observation": 1, "note": 4}
        assert dict(report.derived) == {
            "phi-episodic": 1, "phi-observations": 1, "phi-public": 2,
        }  # fmt: skip
        assert report.published == ("at://did:plc:phi/io.phi.card/1",)
        assert await store.get_rows([r.row_id for r in rows]) == kept
        hits = await store.vector_search(vec(1, 0, 0, 1), RowFilter(), limit=20)
        assert {h.row_id for h in hits} == {r.row_id for r in kept}
        assert await store.text_search(["crows", "alice"], RowFilter(), limit=20) == []

    async def test_stats(self, store: RowStore) -> None:
        await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
        stats = await store.stats()
        assert (stats.rows, stats.edges, stats.namespaces, stats.embedding) == (
            1,
            0,
            1,
            CONFORMANCE_SPEC,
        )

    async def test_exact_scores_for_chosen_rows(self, store: RowStore) -> None:
        a, b, c = make_row("crows and ravens"), make_row("just crows"), make_row("tax forms")
        await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0)), w(c, vec(1, 1, 0, 0))], [])
        dense = await store.vector_scores(vec(1, 0, 0, 0), [a.row_id, c.row_id, "missing"])
        assert dense == pytest.approx({a.row_id: 1.0, c.row_id: 2**-0.5}, abs=1e-5)
        text = await store.text_scores(["ravens", "crows"], [a.row_id, c.row_id], RowFilter())
        assert set(text) == {a.row_id} and text[a.row_id] > 0
        assert await store.text_scores([], [a.row_id], RowFilter()) == {}
        elsewhere = RowFilter(namespaces=("ns-b",))
        assert await store.text_scores(["crows"], [a.row_id, b.row_id], elsewhere) == {}

    async def test_hybrid_agrees_with_the_stepwise_definition(self, store: Store) -> None:
        rows = [
            make_row(
                f"turn {i} about {'crows' if i % 3 == 0 else 'tea'}",
                at=i,
                meta={"thread": f"talk-{i // 5}"} if i != 4 else {},
            )
            for i in range(9)
        ]
        other = make_row("crows elsewhere", namespace="ns-b")
        vectors = [vec(1, i / 9, (i % 3) / 3, 0.1) for i in range(9)]
        chain = [Edge(src=a.row_id, dst=b.row_id, edge_type="temporal") for a, b in pairwise(rows)]
        chain.append(Edge(src=rows[4].row_id, dst=other.row_id, edge_type="reference"))
        await store.write(
            [*(w(r, v) for r, v in zip(rows, vectors, strict=True)), w(other, vec(1, 0, 0, 0))],
            chain,
        )
        query = HybridQuery(
            vector=vec(1, 0.5, 0, 0.1), terms=("crows",), where=RowFilter(namespaces=("ns-a",)),
            candidates=2, graph_types=("temporal",), hops=2, seeds=lambda d, t: [d[0].row_id],
        )  # fmt: skip
        fast, slow = await store.hybrid(query), await gather_stepwise(store, query)
        assert (fast.from_dense, fast.from_text) == (slow.from_dense, slow.from_text)
        assert {h.row_id: round(h.score, 5) for h in fast.dense} == {
            h.row_id: round(h.score, 5) for h in slow.dense
        }
        assert {h.row_id: round(h.score, 5) for h in fast.text} == {
            h.row_id: round(h.score, 5) for h in slow.text
        }
        assert {k: sorted(v) for k, v in fast.adjacency.items()} == {
            k: sorted(v) for k, v in slow.adjacency.items()
        }
        assert fast.contents == slow.contents
        assert fast.threads == slow.threads
        assert fast.unembedded == slow.unembedded == 0
        by_id = {r.row_id: r.content for r in [*rows, other]}
        hit_ids = {h.row_id for h in [*fast.dense, *fast.text]}
        assert fast.contents == {i: by_id[i] for i in hit_ids}
        threads = {r.row_id: r.meta["thread"] for r in rows if "thread" in r.meta}
        assert fast.threads == {i: threads[i] for i in hit_ids if i in threads}
        assert len(set(fast.threads.values())) == 2
        assert len(fast.adjacency) == 5 and other.row_id not in fast.adjacency
        assert other.row_id not in {h.row_id for h in [*fast.dense, *fast.text]}

    async def test_a_row_without_a_vector_is_text_searchable_and_waits(self, store: Store) -> None:
        embedded, waiting = make_row("crows at dawn"), make_row("ravens at dusk", at=1)
        other = make_row("ravens elsewhere", namespace="ns-b", at=2)
        await store.write([w(embedded, vec(1, 0, 0, 0)), w(waiting, None), w(other, None)], [])
        ns_a = RowFilter(namespaces=("ns-a",))
        assert [h.row_id for h in await store.text_search(["ravens"], ns_a, limit=5)] == [
            waiting.row_id
        ]
        hits = await store.vector_search(vec(0, 1, 0, 0), ns_a, limit=5)
        assert [h.row_id for h in hits] == [embedded.row_id]
        assert await store.unembedded(limit=10) == [waiting, other]
        assert await store.unembedded(limit=1) == [waiting]
        assert await store.count_unembedded(ns_a) == 1
        assert await store.count_unembedded(RowFilter()) == 2
        query = HybridQuery(
            vector=vec(0, 1, 0, 0), terms=("ravens",), where=ns_a, candidates=5,
            graph_types=(), hops=0, seeds=lambda d, t: [],
        )  # fmt: skip
        # A recall says, with its signals, how many rows of its scope it cannot see by meaning.
        assert (await store.hybrid(query)).unembedded == 1
        assert (await gather_stepwise(store, query)).unembedded == 1
        link = Edge(src=embedded.row_id, dst=waiting.row_id, edge_type="semantic", weight=0.7)
        await store.add_vectors({waiting.row_id: vec(0, 1, 0, 0)}, [link])
        assert (await store.hybrid(query)).unembedded == 0
        hits = await store.vector_search(vec(0, 1, 0, 0), ns_a, limit=1)
        assert [(h.row_id, round(h.score, 5)) for h in hits] == [(waiting.row_id, 1.0)]
        assert await store.unembedded(limit=10) == [other]
        assert await store.count_unembedded(ns_a) == 0
        assert [
            (e.src, e.dst, e.edge_type, e.weight) for e in await store.edges([waiting.row_id])
        ] == [(embedded.row_id, waiting.row_id, "semantic", 0.7)]

    async def test_count_unembedded_is_the_filters_scope(self, store: Store) -> None:
        """What a search reports as out of its dense reach: queued rows its filter admits."""
        embedded = make_row("embedded note")
        waiting = [
            make_row("queued note", at=1),
            make_row("queued fact", kind="observation", author="did:plc:b", at=2),
            make_row("queued old fact", kind="observation", status="superseded", at=3),
            make_row("queued elsewhere", namespace="ns-b", at=4),
        ]
        await store.write([w(embedded, vec(1, 0, 0, 0)), *(w(r, None) for r in waiting)], [])
        day = timedelta(days=1)
        expected = [
            (RowFilter(), 3),
            (RowFilter(statuses=None), 4),
            (RowFilter(namespaces=("ns-a",)), 2),
            (RowFilter(namespaces=("ns-a",), statuses=None), 3),
            (RowFilter(namespaces=("ns-a", "ns-b")), 3),
            (RowFilter(namespaces=("ns-c",)), 0),
            (RowFilter(namespaces=("ns-a",), kinds=("observation",), statuses=None), 2),
            (RowFilter(author="did:plc:b"), 1),
            (RowFilter(namespaces=("ns-a",), since=T0 + 2 * day, statuses=None), 2),
            (RowFilter(namespaces=("ns-a",), until=T0 + 2 * day), 1),
        ]
        assert [(f, await store.count_unembedded(f)) for f, _ in expected] == expected
        await store.add_vectors({r.row_id: vec(0, 1, 0, 0) for r in waiting}, [])
        assert await store.count_unembedded(RowFilter(statuses=None)) == 0
        assert await store.count_unembedded(RowFilter(namespaces=("ns-a",))) == 0

    async def test_add_vectors_skips_erased_rows_and_keeps_a_first_vector(
        self, store: Store
    ) -> None:
        kept, erased = make_row("stays"), make_row("goes", namespace="ns-b")
        await store.write([w(kept, vec(1, 0, 0, 0)), w(erased, None)], [])
        await store.forget("ns-b")
        assert await store.unembedded(limit=10) == []
        link = Edge(src=kept.row_id, dst=erased.row_id, edge_type="semantic", weight=0.9)
        await store.add_vectors(
            {erased.row_id: vec(0, 1, 0, 0), kept.row_id: vec(0, 0, 1, 0)}, [link]
        )
        assert await store.get_vectors([kept.row_id, erased.row_id]) == {
            kept.row_id: pytest.approx(vec(1, 0, 0, 0))
        }
        assert await store.edges([kept.row_id]) == []

    async def test_a_vector_of_the_wrong_size_is_refused_for_a_queued_row(
        self, store: Store
    ) -> None:
        row = make_row("waits")
        await store.write([w(row, None)], [])
        with pytest.raises(StoreError, match="does not fit"):
            await store.add_vectors({row.row_id: np.ones(3, dtype=np.float32)}, [])
        assert await store.unembedded(limit=5) == [row]

    async def test_forget_counts_rows_edges_and_published_exactly_past_one_batch(
        self, store: RowStore
    ) -> None:
        """A report's counts are exact however many rows go (SQLite erases 500 at a time):
        every row, every edge touching one (once, even when it joins two batches), every
        published record."""
        n = 1201
        rows = [
            make_row(
                f"big {i}", namespace="ns-big", at=i, kind="note" if i % 2 == 0 else "observation",
                meta={PUBLISHED_URIS: [f"at://did:plc:phi/io.phi.card/{i}", "at://shared/1"]}
                if i in (0, 600, 1200) else {},
            )
            for i in range(n)
        ]  # fmt: skip
        kept = make_row("stays", namespace="ns-keep")
        chain = [Edge(src=a.row_id, dst=b.row_id, edge_type="temporal") for a, b in pairwise(rows)]
        links = [
            Edge(src=kept.row_id, dst=rows[0].row_id, edge_type="reference"),
            Edge(src=rows[-1].row_id, dst=kept.row_id, edge_type="reference"),
            Edge(src=rows[10].row_id, dst=rows[1100].row_id, edge_type="semantic", weight=0.7),
        ]
        await store.write(
            [w(r, vec(1, i, 0, 1)) for i, r in enumerate([*rows, kept])], [*chain, *links]
        )
        report = await store.forget("ns-big")
        assert report == ForgetReport(
            namespace="ns-big", rows=n, edges=(n - 1) + 3,
            kinds={"note": 601, "observation": 600},
            published=(
                "at://did:plc:phi/io.phi.card/0", "at://did:plc:phi/io.phi.card/1200",
                "at://did:plc:phi/io.phi.card/600", "at://shared/1",
            ),
        )  # fmt: skip
        assert await store.count(RowFilter(statuses=None)) == 1
        assert await store.edges([kept.row_id]) == []

    async def test_forget_of_a_person_takes_unsigned_rows_and_counts_each_namespace(
        self, store: RowStore
    ) -> None:
        """A person's namespace holds rows phi wrote about them (no author) beside their
        own: both go; rows derived elsewhere are counted per namespace, whatever their kind."""
        did, person = "did:plc:carol", "phi-users-did:plc:carol"
        noted = make_row("carol moved to Lisbon", namespace=person, kind="observation")
        said = make_row("I love the sea", namespace="phi-episodic", author=did, kind="interaction")
        card = make_row("people move", namespace="phi-public", meta={DERIVED_FROM: [noted.row_id]})
        recap = make_row(
            "moves this year", namespace="phi-public", kind="summary",
            meta={DERIVED_FROM: [noted.row_id]},
        )  # fmt: skip
        other = make_row("dave moved too", namespace="phi-public")
        await store.write(
            [w(r, vec(1, i, 1, 0)) for i, r in enumerate([noted, said, card, recap, other])], []
        )
        report = await store.forget(person, author=did)
        assert report == ForgetReport(
            namespace=person, rows=4, edges=0,
            kinds={"observation": 1, "interaction": 1, "note": 1, "summary": 1},
            derived={"phi-episodic": 1, "phi-public": 2},
        )  # fmt: skip
        assert await store.get_rows([r.row_id for r in (noted, said, card, recap, other)]) == [
            other
        ]

    async def test_forget_of_nothing_names_the_namespace(self, store: RowStore) -> None:
        await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
        with pytest.raises(NamespaceNotFound) as raised:
            await store.forget("ns-none", author="did:plc:nobody")
        assert raised.value.namespace == "ns-none"
        assert str(raised.value) == "namespace 'ns-none' holds no rows (see `phi memory stats`)"
        assert await store.count(RowFilter(statuses=None)) == 1

    async def test_edges_to_and_from_a_row_stored_under_an_existing_identity(
        self, store: RowStore
    ) -> None:
        """Another writer stored the same row first: every edge given for the new id, as
        source or as target, lands on the stored row; edges between other rows stay."""
        first, other = make_row("same text", at=1), make_row("other text", at=2)
        await store.write([w(first, vec(1, 0, 0, 0)), w(other, vec(0, 1, 0, 0))], [])
        again, third = make_row("same text", at=3), make_row("third text", at=4)
        back = await store.write(
            [w(third, vec(0, 0, 1, 0)), w(again, vec(1, 0, 0, 0))],
            [
                Edge(src=other.row_id, dst=again.row_id, edge_type="temporal"),
                Edge(src=again.row_id, dst=third.row_id, edge_type="reference"),
                Edge(src=other.row_id, dst=third.row_id, edge_type="semantic", weight=0.5),
            ],
        )
        assert back == [third, first]
        found = await store.edges([first.row_id, third.row_id])
        assert {(e.src, e.dst, e.edge_type) for e in found} == {
            (other.row_id, first.row_id, "temporal"),
            (first.row_id, third.row_id, "reference"),
            (other.row_id, third.row_id, "semantic"),
        }

    async def test_a_write_retires_the_rows_it_supersedes(self, store: RowStore) -> None:
        older, old = make_row("v0", at=0), make_row("v1", at=1)
        await store.write([w(older, vec(1, 0, 0, 0)), w(old, vec(1, 1, 0, 0))], [])
        new = make_row("v2", at=2, supersedes=old.row_id)
        moment = T0 + timedelta(days=5)
        await store.write([w(new, vec(1, 0, 1, 0))], [], superseded=[old.row_id], at=moment)
        older_back, old_back = await store.get_rows([older.row_id, old.row_id])
        assert (old_back.status, old_back.updated_at) == ("superseded", moment)
        assert (older_back.status, older_back.updated_at) == ("active", older.updated_at)
        hits = await store.vector_search(vec(1, 1, 0, 0), RowFilter(), limit=5)
        assert old.row_id not in {h.row_id for h in hits} and len(hits) == 2
        # No time given: now.
        newest = make_row("v3", at=3, supersedes=new.row_id)
        before = datetime.now(UTC)
        await store.write([w(newest, vec(0, 1, 1, 0))], [], superseded=[new.row_id])
        after = datetime.now(UTC)
        (new_back,) = await store.get_rows([new.row_id])
        assert new_back.status == "superseded"
        assert before - timedelta(milliseconds=1) <= new_back.updated_at
        assert new_back.updated_at <= after + timedelta(milliseconds=1)
