"""The app over a memory its owner keeps open (how `phi run` mounts it), over ASGI."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.web import create_app

pytestmark = pytest.mark.anyio


async def test_an_open_memory_is_served_and_left_open(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    async with Memory.open(tmp_path / "m.db", embedder=minilm) as memory:
        row = await memory.remember(NewRow(content="the garden needs water", namespace="notes"))
        app = create_app(memory=memory)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            found = (await client.get("/api/memory/search", params={"q": "garden"})).json()
            assert [hit["row_id"] for hit in found["results"]] == [row.row_id]
        assert (await memory.get(row.row_id)).content == "the garden needs water"


def test_exactly_one_memory_source() -> None:
    with pytest.raises(TypeError, match="exactly one"):
        create_app()
