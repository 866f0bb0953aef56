"""`Memory.reembed` / `phi memory reembed`: a MiniLM store moved to an OpenAI-compatible
embedder served by llama.cpp (`xllamacpp.Server`, the bundled SmolLM2 GGUF), interrupted
and resumed; and `PHI_EMBEDDER=openai:MODEL` choosing that embedder for every surface."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.config import Settings, SettingsError
from phi.errors import EmbedderMismatch, EmbeddingFailed, InvalidInput
from phi.memory import Memory, MiniLMEmbedder, NewRow, ReembedProgress
from phi.memory.embed import OpenAIEmbedder, Vectors
from phi.memory.store import EmbeddingSpec
from tests.memory import test_openai_embedder as served
from tests.memory.conftest import TinyEmbedder
from tests.memory.test_openai_embedder import SMOLLM2_DIMENSIONS, LocalServer, embedder
from tests.postgres.schemas import fresh_schema

server = served.server
"""The llama.cpp server (`xllamacpp.Server`) serving the bundled SmolLM2's embeddings."""

pytestmark = pytest.mark.anyio

FACTS = [
    "the staging database moved to eu-west-2",
    "deploys run from the release branch on fridays",
    "alice owns the billing service",
    "the cache TTL is five minutes",
    "rotate the API keys every ninety days",
    "the on-call rota is in the ops wiki",
    "bob prefers rust for the ingest workers",
]


@dataclass(kw_only=True)
class Interrupted:
    """The new embedder, failing on its third call: a server that went away mid-move."""

    inner: OpenAIEmbedder
    calls: int = field(default=0, init=False)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.calls == 3:
            raise EmbeddingFailed("embedding server went away")
        return await self.inner.embed(texts)


async def test_a_minilm_store_moves_after_an_interruption(
    server: LocalServer, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    db = tmp_path / "move.db"
    smol = embedder(server)
    async with Memory.open(db, embedder=minilm) as memory:
        rows = await memory.remember_many([NewRow(content=f, namespace="ops") for f in FACTS])
        seen: list[ReembedProgress] = []
        with pytest.raises(EmbeddingFailed, match="went away"):
            await memory.reembed(Interrupted(inner=smol), batch_size=2, progress=seen.append)
        assert [(p.done, p.total) for p in seen] == [(2, 7), (4, 7)]
        # Still the old model, in this process and for the next: nothing half-moved.
        assert memory.embedder is minilm
        hits = await memory.search("where is the staging database?", namespace="ops")
        assert hits[0].row.row_id == rows[0].row_id
    async with Memory.open(db, embedder=minilm) as memory:
        assert (await memory.stats()).embedding == EmbeddingSpec(
            model="all-MiniLM-L6-v2", dimension=384
        )
        late = await memory.remember(NewRow(content="the VPN moved to wireguard", namespace="ops"))
        report = await memory.reembed(smol, batch_size=2)
        # The rerun embedded only what the first run left: 3 of the 7, and the late row.
        assert (report.previous, report.model, report.dimension) == (
            "all-MiniLM-L6-v2",
            "smollm2-135m",
            SMOLLM2_DIMENSIONS,
        )
        assert (report.rows, report.embedded) == (8, 4)
        assert memory.embedder is smol
        newer = await memory.remember(NewRow(content="backups run at 02:00 UTC", namespace="ops"))
        assert (await memory.stats()).embedding == EmbeddingSpec(
            model="smollm2-135m", dimension=SMOLLM2_DIMENSIONS
        )
    with pytest.raises(EmbedderMismatch, match="smollm2-135m"):
        async with Memory.open(db, embedder=minilm):
            pass
    async with Memory.open(db, embedder=smol) as memory:
        ids = [r.row_id for r in (*rows, late, newer)]
        stored = await memory.rows.get_vectors(ids)
        expected = await smol.embed([*FACTS, late.content, newer.content])
        assert np.allclose(np.stack([stored[i] for i in ids]), expected, atol=1e-4)
        with pytest.raises(InvalidInput, match="already uses 'smollm2-135m'"):
            await memory.reembed(smol)


async def test_settings_choose_the_openai_compatible_embedder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PHI_EMBEDDER", "openai:text-embedding-3-small")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    made = Settings(_env_file=None).make_embedder()
    assert made == OpenAIEmbedder(
        model="text-embedding-3-small", dimensions=1536, api_key="sk-test"
    )
    monkeypatch.setenv("PHI_EMBEDDER_KEY", "phi-key")
    monkeypatch.setenv("PHI_EMBEDDER_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PHI_EMBEDDER", "openai:my-gguf")
    monkeypatch.setenv("PHI_EMBEDDER_DIMENSIONS", "576")
    assert Settings(_env_file=None).make_embedder() == OpenAIEmbedder(
        model="my-gguf", dimensions=576, base_url="http://127.0.0.1:9/v1", api_key="phi-key"
    )
    monkeypatch.delenv("PHI_EMBEDDER_DIMENSIONS")
    with pytest.raises(SettingsError, match="PHI_EMBEDDER_DIMENSIONS"):
        Settings(_env_file=None).make_embedder()
    monkeypatch.setenv("PHI_EMBEDDER", "word2vec")
    with pytest.raises(SettingsError, match="unknown embedder 'word2vec'"):
        Settings(_env_file=None).make_embedder()
    monkeypatch.delenv("PHI_EMBEDDER")
    assert isinstance(Settings(_env_file=None).make_embedder(), MiniLMEmbedder)


def phi(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout if "--json" in args else result.output


def test_cli_reembed_then_every_command_uses_the_configured_model(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "cli.db")
    for fact in FACTS[:3]:
        assert phi("memory", "add", fact, "-n", "ops", "--db", db)[0] == 0
    monkeypatch.setenv("PHI_EMBEDDER_KEY", server.api_key)
    code, out = phi(
        "memory", "reembed", "--to", "openai:smollm2-135m", "--url", server.base_url,
        "--dimensions", str(SMOLLM2_DIMENSIONS), "--db", db, "--json",
    )  # fmt: skip
    assert code == 0, out
    assert json.loads(out) == {
        "model": "smollm2-135m",
        "dimension": SMOLLM2_DIMENSIONS,
        "previous": "all-MiniLM-L6-v2",
        "rows": 3,
        "embedded": 3,
        "seconds": json.loads(out)["seconds"],
    }
    # The configured embedder is still MiniLM: the store now refuses it, by name.
    code, out = phi("memory", "search", "staging database", "-n", "ops", "--db", db)
    assert code == 2 and "smollm2-135m" in out
    monkeypatch.setenv("PHI_EMBEDDER", "openai:smollm2-135m")
    monkeypatch.setenv("PHI_EMBEDDER_URL", server.base_url)
    monkeypatch.setenv("PHI_EMBEDDER_DIMENSIONS", str(SMOLLM2_DIMENSIONS))
    code, out = phi("memory", "search", "staging database", "-n", "ops", "--db", db, "--json")
    assert code == 0 and json.loads(out)["results"][0]["content"] == FACTS[0]
    code, out = phi("memory", "reembed", "--to", "openai:smollm2-135m", "--db", db)
    assert code == 2 and "already uses 'smollm2-135m'" in out
    monkeypatch.delenv("PHI_EMBEDDER_DIMENSIONS")
    code, out = phi("memory", "stats", "--db", db)
    assert code == 2 and "PHI_EMBEDDER_DIMENSIONS" in out


@asynccontextmanager
async def store_location(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "held.db")
        return
    async with fresh_schema() as url:
        yield url


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("new_dimension", [26, 13], ids=["same-dimension", "new-dimension"])
async def test_a_handle_held_across_a_reembed_cannot_write_old_model_vectors(
    backend: str, new_dimension: int, tmp_path: Path
) -> None:
    """Issue 23, finding 10: a store opened before another handle moved it to a new model
    kept writing old-model vectors beside the new ones (of the same dimension: silently).
    The store checks its recorded model inside each vector write's transaction."""
    old = TinyEmbedder()
    new = TinyEmbedder(name=f"tiny-letters-{new_dimension}", dimension=new_dimension)
    moved = rf"moved to 'tiny-letters-{new_dimension}' \({new_dimension}-d\).*reopen"
    async with store_location(backend, tmp_path) as url:
        async with Memory.open(url, embedder=old) as held:
            first = await held.remember(NewRow(content="crows at dawn", namespace="ops"))
            async with Memory.open(url, embedder=old) as other:
                await other.reembed(new)
            with pytest.raises(EmbedderMismatch, match=moved):
                await held.remember(NewRow(content="ravens at dusk", namespace="ops"))
            # A row without a vector may wait in the queue; its old-model vector may not.
            (queued,) = await held.remember_many(
                [NewRow(content="jays at noon", namespace="ops")], defer_embedding=True
            )
            with pytest.raises(EmbedderMismatch, match=moved):
                await held.embed_pending()
            assert (await held.stats()).rows == 2
        async with Memory.open(url, embedder=new) as reopened:
            assert await reopened.unembedded() == 1
            assert await reopened.embed_pending() == 1
            late = await reopened.remember(NewRow(content="ravens at dusk", namespace="ops"))
            ids = [first.row_id, queued.row_id, late.row_id]
            stored = await reopened.rows.get_vectors(ids)
            expected = await new.embed([first.content, queued.content, late.content])
            assert np.allclose(np.stack([stored[i] for i in ids]), expected, atol=1e-6)
