"""Behaviour every store shares as an `EmbeddingSwap`: moving to another embedding model
(`stage_vectors`, `unstaged`, `count_unstaged`, `swap_embedding`): mixed into
`RowStoreConformance`, so every backend runs it with the same `store` fixture."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from phi.errors import EmbedderMismatch, StoreError
from phi.memory.store import EmbeddingSpec, RowFilter, Store
from tests.memory.conformance_rows import CONFORMANCE_SPEC, make_row, vec, w

NEW_SPEC = EmbeddingSpec(model="conformance-3d", dimension=3)


def vec3(*values: float) -> npt.NDArray[np.float32]:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.anyio
class ReembedConformance:
    async def test_staging_changes_nothing_until_the_swap(self, store: Store) -> None:
        a, b = make_row("crows"), make_row("ravens", status="superseded")
        await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0))], [])
        assert [r.row_id for r in await store.unstaged(NEW_SPEC, limit=10)] == [a.row_id, b.row_id]
        await store.stage_vectors(NEW_SPEC, {a.row_id: vec3(0, 0, 1), "gone": vec3(1, 0, 0)})
        assert [r.row_id for r in await store.unstaged(NEW_SPEC, limit=10)] == [b.row_id]
        assert await store.count_unstaged(NEW_SPEC) == 1
        # The live store is untouched: old model, old vectors, old searches.
        assert await store.embedding() == CONFORMANCE_SPEC
        (back,) = (await store.get_vectors([a.row_id])).values()
        assert np.allclose(back, vec(1, 0, 0, 0))
        hits = await store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=5)
        assert [h.row_id for h in hits] == [a.row_id]

    async def test_swap_replaces_every_vector_and_the_model_at_once(self, store: Store) -> None:
        a, b = make_row("crows"), make_row("ravens", status="superseded", author="did:plc:b")
        await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0))], [])
        await store.stage_vectors(NEW_SPEC, {a.row_id: vec3(0, 0, 1)})
        assert await store.swap_embedding(NEW_SPEC, {b.row_id: vec3(0, 1, 0)}) == 0
        assert await store.embedding() == NEW_SPEC
        assert (await store.stats()).embedding == NEW_SPEC
        vectors = await store.get_vectors([a.row_id, b.row_id])
        assert np.allclose(vectors[a.row_id], vec3(0, 0, 1))
        assert np.allclose(vectors[b.row_id], vec3(0, 1, 0))
        # Filters still see each row's status and author through the new vectors.
        active = await store.vector_search(vec3(0, 1, 0), RowFilter(), limit=5)
        assert [h.row_id for h in active] == [a.row_id]
        by_author = RowFilter(statuses=None, author="did:plc:b")
        assert [h.row_id for h in await store.vector_search(vec3(0, 1, 0), by_author, limit=5)] == [
            b.row_id
        ]
        with pytest.raises(StoreError, match="3-d"):
            await store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=5)
        with pytest.raises(EmbedderMismatch, match="conformance-3d"):
            await store.bind_embedding(CONFORMANCE_SPEC)
        # Writes now take vectors of the new model; nothing is left staged.
        c = make_row("jays")
        await store.write([w(c, vec3(1, 0, 0))], [])
        assert await store.count_unstaged(NEW_SPEC) == 3

    async def test_swap_waits_for_rows_written_meanwhile(self, store: Store) -> None:
        a = make_row("crows")
        await store.write([w(a, vec(1, 0, 0, 0))], [])
        await store.stage_vectors(NEW_SPEC, {a.row_id: vec3(0, 0, 1)})
        late = make_row("written during the move")
        await store.write([w(late, vec(0, 0, 1, 0))], [])
        assert await store.swap_embedding(NEW_SPEC, {}) == 1
        assert await store.embedding() == CONFORMANCE_SPEC  # nothing moved
        assert [r.row_id for r in await store.unstaged(NEW_SPEC, limit=5)] == [late.row_id]
        assert await store.swap_embedding(NEW_SPEC, {late.row_id: vec3(1, 0, 0)}) == 0
        assert await store.embedding() == NEW_SPEC

    async def test_a_queued_row_leaves_the_queue_with_the_move(self, store: Store) -> None:
        """A row waiting for its vector gets one from the move: nothing waits after it."""
        a, queued = make_row("crows"), make_row("ravens", namespace="ns-b")
        await store.write([w(a, vec(1, 0, 0, 0)), w(queued, None)], [])
        assert await store.count_unembedded(RowFilter()) == 1
        vectors = {a.row_id: vec3(0, 0, 1), queued.row_id: vec3(0, 1, 0)}
        assert await store.swap_embedding(NEW_SPEC, vectors) == 0
        assert await store.count_unembedded(RowFilter(namespaces=("ns-b",))) == 0
        assert await store.unembedded(limit=5) == []
        hits = await store.vector_search(vec3(0, 1, 0), RowFilter(), limit=1)
        assert [h.row_id for h in hits] == [queued.row_id]

    async def test_staging_for_another_model_starts_over(self, store: Store) -> None:
        a, b = make_row("crows"), make_row("ravens")
        await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0))], [])
        await store.stage_vectors(NEW_SPEC, {a.row_id: vec3(0, 0, 1)})
        other = EmbeddingSpec(model="other-3d", dimension=3)
        await store.stage_vectors(other, {b.row_id: vec3(0, 1, 0)})
        assert await store.count_unstaged(other) == 1
        assert await store.count_unstaged(NEW_SPEC) == 2

    async def test_a_forgotten_rows_staged_vector_goes_with_it(self, store: Store) -> None:
        a, b = make_row("crows"), make_row("secret", namespace="phi-users-did:plc:x")
        await store.write([w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0))], [])
        await store.stage_vectors(NEW_SPEC, {a.row_id: vec3(0, 0, 1), b.row_id: vec3(0, 1, 0)})
        await store.forget("phi-users-did:plc:x")
        assert await store.count_unstaged(NEW_SPEC) == 0
        assert await store.swap_embedding(NEW_SPEC, {}) == 0
        assert list(await store.get_vectors([a.row_id, b.row_id])) == [a.row_id]
