"""`forget` on the PostgreSQL store (`_pg_forget`), where the conformance suite leaves a
one-line break unseen: the text statistics it leaves behind and the state it counts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from phi.memory.store import PostgresStore, RowFilter
from tests.memory.conformance import CONFORMANCE_SPEC, T0, make_row, vec, w
from tests.postgres.schemas import fresh_schema

pytestmark = pytest.mark.anyio

KEPT = ["crows gather at dusk", "a crow and a raven share crows' calls", "tea at dusk"]


async def _scores(store: PostgresStore) -> dict[str, float]:
    hits = await store.text_search(["crows", "dusk"], RowFilter(), limit=10)
    rows = {r.row_id: r.content for r in await store.get_rows([h.row_id for h in hits])}
    return {rows[h.row_id]: round(h.score, 6) for h in hits}


async def test_after_forget_text_scores_are_those_of_a_store_that_never_held_the_rows(
    pg_store: PostgresStore,
) -> None:
    """BM25 reads the corpus size and length from statistics a forget must lower by
    exactly what it erased: every row, of every kind and namespace it reached."""
    gone = [
        make_row("crows " * 12, namespace="ns-gone", kind="note"),
        make_row("a long observation about crows and dusk " * 3, namespace="ns-gone",
                 kind="observation"),
        make_row("crows", namespace="ns-gone", kind="summary"),
        make_row("what alice said about dusk", namespace="ns-said", author="did:plc:alice",
                 kind="interaction"),
    ]  # fmt: skip
    kept = [make_row(text, namespace="ns-kept", at=i) for i, text in enumerate(KEPT)]
    await pg_store.write([w(r, vec(1, i, 0, 1)) for i, r in enumerate([*gone, *kept])], [])
    report = await pg_store.forget("ns-gone", author="did:plc:alice")
    assert report.rows == 4
    async with fresh_schema() as url:
        clean = PostgresStore(url)
        await clean.connect()
        try:
            await clean.bind_embedding(CONFORMANCE_SPEC)
            await clean.write(
                [w(make_row(text, namespace="ns-kept", at=i), vec(1, i, 0, 1))
                 for i, text in enumerate(KEPT)],
                [],
            )  # fmt: skip
            expected = await _scores(clean)
        finally:
            await clean.close()
    assert len(expected) == 3
    assert await _scores(pg_store) == expected


async def test_forget_counts_every_state_version_of_every_key_it_erased(
    pg_store: PostgresStore,
) -> None:
    await pg_store.write([w(make_row("a note", namespace="ns-x"), vec(1, 0, 0, 0))], [])
    for i in range(3):
        await pg_store.write_state("block", "user:x", f"v{i}", at=T0 + timedelta(minutes=i))
    await pg_store.write_state("summary", "user:x", "s", at=T0)
    await pg_store.write_state("block", "user:y", "kept", at=T0)
    report = await pg_store.forget(
        "ns-x", state=[("block", "user:x"), ("summary", "user:x"), ("block", "user:none")]
    )
    assert (report.rows, report.state) == (1, 4)
    assert await pg_store.state_keys("block") == ["user:y"]
