"""The SQLite store's scoped BM25: each namespace's terms are its own (`row_terms`)."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from phi.memory.store import RowFilter, SQLiteStore
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

pytestmark = pytest.mark.anyio

OWN = ("alice fixed the rust build", "bob baked some fresh bread", "alice likes rust and tea")
OTHERS = tuple(f"rust note {i} about rust" for i in range(40))
"""Five words each, like `OWN`: the average document length (the store's) stays put."""


async def _store(path: Path, namespaces: dict[str, tuple[str, ...]]) -> SQLiteStore:
    store = SQLiteStore(path)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    for namespace, texts in namespaces.items():
        rows = [make_row(t, namespace=namespace, at=i) for i, t in enumerate(texts)]
        await store.write([w(r, vec(1, 0, 0, i + 1)) for i, r in enumerate(rows)], [])
    return store


async def _scores(store: SQLiteStore, where: RowFilter) -> dict[str, float]:
    rows = {r.row_id: r.content for r in [r async for r in store.scan(where)]}
    hits = await store.text_search(["rust", "tea"], where, limit=10)
    return {rows[h.row_id]: round(h.score, 9) for h in hits if h.row_id in rows}


async def test_a_namespaces_text_scores_ignore_other_namespaces(tmp_path: Path) -> None:
    # Failed before row_terms: BM25 took "rust"'s document frequency and the row count
    # from the whole store, so forty rows of another person changed alice's scores.
    alone = await _store(tmp_path / "alone.db", {"ns-a": OWN})
    crowded = await _store(tmp_path / "crowded.db", {"ns-a": OWN, "ns-b": OTHERS})
    try:
        mine = RowFilter(namespaces=("ns-a",))
        assert await _scores(crowded, mine) == await _scores(alone, mine)
        assert set(await _scores(alone, mine)) == {OWN[0], OWN[2]}
        hits = await crowded.text_search(["rust"], RowFilter(namespaces=("ns-a", "ns-b")), limit=50)
        assert len(hits) == 2 + len(OTHERS)
    finally:
        await alone.close()
        await crowded.close()


async def test_one_namespace_scores_equal_the_shared_index(tmp_path: Path) -> None:
    """The namespace key token keeps documents as long as in `row_text`: same BM25."""
    store = await _store(tmp_path / "one.db", {"ns-a": OWN})
    try:
        scoped = await _scores(store, RowFilter(namespaces=("ns-a",)))
        unscoped = await _scores(store, RowFilter())
        assert scoped == unscoped
        assert len(scoped) == 2
    finally:
        await store.close()


async def test_forget_takes_a_namespaces_terms_along(tmp_path: Path) -> None:
    store = await _store(tmp_path / "f.db", {"ns-a": OWN, "ns-b": OTHERS})
    try:
        await store.forget("ns-b")
        assert await store.text_search(["rust"], RowFilter(namespaces=("ns-b",)), limit=5) == []
    finally:
        await store.close()
    conn = apsw.Connection(str(tmp_path / "f.db"))
    (docs,) = next(conn.execute("SELECT count(*) FROM row_terms_docsize"))
    assert docs == len(OWN)


async def test_a_store_made_before_row_terms_is_filled_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = await _store(path, {"ns-a": OWN, "ns-b": OTHERS})
    before = await _scores(store, RowFilter(namespaces=("ns-a",)))
    await store.close()
    conn = apsw.Connection(str(path))
    conn.execute("DROP TABLE row_terms")  # the store as migration 3 left it
    conn.execute("DELETE FROM phi_migrations WHERE name = 'm004_namespace_terms'")
    conn.close()
    reopened = SQLiteStore(path)
    await reopened.connect()
    try:
        assert await _scores(reopened, RowFilter(namespaces=("ns-a",))) == before
        assert len(before) == 2
    finally:
        await reopened.close()
