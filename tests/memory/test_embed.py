"""The default MiniLM embedder, run for real on onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from phi.memory import MiniLMEmbedder
from phi.memory.embed import Embedder

pytestmark = pytest.mark.anyio


async def test_vectors_are_unit_length_384_float32(minilm: MiniLMEmbedder) -> None:
    vectors = await minilm.embed(["hello", "a much longer sentence about crows and ravens " * 40])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert isinstance(minilm, Embedder)


async def test_similar_meaning_is_closer(minilm: MiniLMEmbedder) -> None:
    a, b, c = await minilm.embed(
        ["I love birds", "crows are my favourite birds", "the stock market fell"]
    )
    assert float(a @ b) > 0.6 > float(a @ c) + 0.4


async def test_batching_and_order_do_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [f"sentence number {i} " + "word " * (i % 17) for i in range(150)]
    together = await minilm.embed(texts)
    one = await minilm.embed([texts[77]])
    assert np.allclose(together[77], one[0], atol=1e-5)
    assert (await minilm.embed([])).shape == (0, 384)


async def test_the_model_waits_without_spinning(minilm: MiniLMEmbedder) -> None:
    # Spinning threads between batches burned half the embedder's CPU on a shared machine.
    await minilm.embed(["warm up"])
    session, _ = minilm._load()
    entry = session.get_session_options().get_session_config_entry(
        "session.intra_op.allow_spinning"
    )
    assert entry == "0"
