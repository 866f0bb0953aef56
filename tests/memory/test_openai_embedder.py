"""`OpenAIEmbedder` against a real OpenAI-compatible server: llama.cpp (`xllamacpp.Server`)
serving `/v1/embeddings` from the bundled SmolLM2 GGUF. Checks the plumbing, not quality."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phi.errors import EmbedderMismatch, EmbeddingFailed
from phi.llm.local import smollm2_path
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.memory.embed import OpenAIEmbedder

pytestmark = pytest.mark.anyio

SMOLLM2_DIMENSIONS = 576


@dataclass(frozen=True)
class LocalServer:
    base_url: str
    api_key: str
    handle: Any


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_path())
    params.embedding = True
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    params.n_ctx = 512
    params.offline = True
    params.verbosity = -1
    params.ui = False
    params.n_threads_http = 1
    params.port = 0
    key = secrets.token_urlsafe(24)
    params.api_keys = [key]
    handle = xllamacpp.Server(params)
    yield LocalServer(base_url=f"{handle.listening_address}/v1", api_key=key, handle=handle)
    del handle


def embedder(server: LocalServer, **changes: Any) -> OpenAIEmbedder:
    base = OpenAIEmbedder(
        model="smollm2-135m",
        dimensions=SMOLLM2_DIMENSIONS,
        base_url=server.base_url,
        api_key=server.api_key,
        batch_size=2,
    )
    return replace(base, **changes)


async def test_vectors_come_back_in_order_and_normalised(server: LocalServer) -> None:
    texts = ["the deploy failed", "the deploy failed", "a recipe for bread", "rust borrow checker"]
    vectors = await embedder(server).embed(texts)
    assert vectors.shape == (4, SMOLLM2_DIMENSIONS)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[1], atol=1e-5)  # batches of 2: order kept
    assert not np.allclose(vectors[1], vectors[2])
    assert (await embedder(server).embed([])).shape == (0, SMOLLM2_DIMENSIONS)


async def test_a_store_made_with_it_remembers_and_refuses_another_model(
    server: LocalServer, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    db = tmp_path / "smol.db"
    async with Memory.open(db, embedder=embedder(server)) as memory:
        row = await memory.remember(
            NewRow(content="the staging database moved to eu-west-2", namespace="ops")
        )
        found = await memory.search("where is the staging database?", namespace="ops")
        assert [hit.row.row_id for hit in found] == [row.row_id]
        assert (await memory.stats()).embedding.model == "smollm2-135m"  # type: ignore[union-attr]
    with pytest.raises(EmbedderMismatch, match="smollm2-135m"):
        async with Memory.open(db, embedder=minilm):
            pass


async def test_server_problems_are_clear_errors(server: LocalServer) -> None:
    with pytest.raises(EmbeddingFailed, match="returned 576-d vectors, not 384-d"):
        await embedder(server, dimensions=384).embed(["x"])
    with pytest.raises(EmbeddingFailed, match="answered 401"):
        await embedder(server, api_key="wrong").embed(["x"])
    with pytest.raises(EmbeddingFailed, match="unreachable"):
        await embedder(server, base_url="http://127.0.0.1:9/v1").embed(["x"])
