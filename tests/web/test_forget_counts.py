"""`DELETE /api/memory/namespaces/{namespace}` on a store with edges, on both backends: the
counts it answers are exactly what went, and other namespaces keep their rows and edges.

Issue 24: the API test only checked the edge count against itself."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from phi.memory import Memory, MiniLMEmbedder, user_namespace
from phi.memory.model import BLOCK_SCOPE, Edge, EdgeType, Row, user_label
from phi.memory.store import RowWrite
from phi.memory.store.base import DERIVED_FROM
from phi.web import create_app
from tests.memory.conformance_rows import make_row
from tests.postgres.schemas import fresh_schema_sync

from .conftest import LOCAL, TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}
ALICE_DID, BOB_DID = "did:plc:alice", "did:plc:bob"
ALICE, BOB = user_namespace(ALICE_DID), user_namespace(BOB_DID)
PUBLIC = "phi-public"


@dataclass(frozen=True, kw_only=True)
class Graph:
    """Rows by a short name and every edge, as written."""

    rows: dict[str, Row]
    edges: list[Edge]


def _graph() -> Graph:
    """alice's namespace (3 rows, 3 edges among them), a public card derived from her
    observation (a `causal` edge into `phi-public`, and a `semantic` edge from another card
    to it), bob's namespace and two public cards of nobody, linked among themselves."""
    rows = {
        "a1": make_row("alice keeps bees", namespace=ALICE, kind="observation", at=1),
        "a2": make_row("alice sells honey", namespace=ALICE, kind="observation", at=2),
        "a3": make_row("alice asked about hives", namespace=ALICE, at=3),
        "b1": make_row("bob repairs bikes", namespace=BOB, kind="observation", at=1),
        "b2": make_row("bob rides to work", namespace=BOB, at=2),
        "x": make_row("bees pollinate orchards", namespace=PUBLIC, at=4),
        "y": make_row("orchards bloom in april", namespace=PUBLIC, at=5),
    }
    rows["card"] = make_row(
        "beekeepers sell honey locally",
        namespace=PUBLIC,
        author=ALICE_DID,
        meta={DERIVED_FROM: [rows["a1"].row_id]},
        at=6,
    )

    def edge(src: str, dst: str, edge_type: EdgeType) -> Edge:
        return Edge(src=rows[src].row_id, dst=rows[dst].row_id, edge_type=edge_type)

    edges = [
        edge("a1", "a2", "temporal"),
        edge("a2", "a3", "temporal"),
        edge("a1", "a3", "semantic"),
        edge("a1", "card", "causal"),
        edge("x", "card", "semantic"),
        edge("b1", "b2", "temporal"),
        edge("x", "y", "semantic"),
    ]
    return Graph(rows=rows, edges=edges)


ERASED = {"a1", "a2", "a3", "card"}
"""alice's rows and the card derived from her observation."""


async def _fill(location: str, minilm: MiniLMEmbedder, graph: Graph) -> None:
    async with Memory.open(location, embedder=minilm) as memory:
        rows = list(graph.rows.values())
        vectors = await minilm.embed([r.content for r in rows])
        await memory.rows.write(
            [RowWrite(row=r, vector=v) for r, v in zip(rows, vectors, strict=True)], graph.edges
        )
        for version in ("# alice\nkeeps bees", "# alice\nkeeps bees, sells honey"):
            await memory.state.write(BLOCK_SCOPE, user_label(ALICE_DID), version)
        await memory.state.write(BLOCK_SCOPE, user_label(BOB_DID), "# bob\nrepairs bikes")


async def _left(location: str, minilm: MiniLMEmbedder, graph: Graph) -> tuple[set[str], set[Edge]]:
    """The names of the rows still stored, and every edge still stored."""
    async with Memory.open(location, embedder=minilm) as memory:
        ids = [r.row_id for r in graph.rows.values()]
        stored = {r.row_id for r in await memory.rows.get_rows(ids)}
        edges = await memory.rows.edges(ids)
        assert await memory.state.read(BLOCK_SCOPE, user_label(ALICE_DID)) is None
        assert await memory.state.read(BLOCK_SCOPE, user_label(BOB_DID)) is not None
    names = {name for name, row in graph.rows.items() if row.row_id in stored}
    return names, {Edge(src=e.src, dst=e.dst, edge_type=e.edge_type) for e in edges}


@contextmanager
def _location(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    with fresh_schema_sync() as url:
        yield url


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_delete_answers_the_exact_counts_and_spares_other_namespaces(
    backend: str, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    graph = _graph()
    with _location(backend, tmp_path) as location:
        anyio.run(_fill, location, minilm, graph)
        app = create_app(lambda: Memory.open(location, embedder=minilm), token=TOKEN)
        with TestClient(app, base_url=LOCAL) as client:
            erased = client.delete(f"/api/memory/namespaces/{ALICE}", headers=AUTH)
            assert erased.status_code == 200, erased.text
            assert erased.json() == {
                "namespace": ALICE,
                "rows": 4,  # her three and the card derived from her observation
                "edges": 5,  # the three among hers, the causal one, the one into the card
                "kinds": {"observation": 2, "note": 2, "user block versions": 2},
            }
            again = client.delete(f"/api/memory/namespaces/{ALICE}", headers=AUTH)
            assert again.status_code == 404, again.text
        names, edges = anyio.run(_left, location, minilm, graph)
    assert names == set(graph.rows) - ERASED
    kept = {
        e for e in graph.edges if not {e.src, e.dst} & {graph.rows[name].row_id for name in ERASED}
    }
    assert edges == kept and len(kept) == 2
