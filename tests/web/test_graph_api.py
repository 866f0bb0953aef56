"""`POST /api/memory/link` and `GET /api/memory/walk/{row_id}` over ASGI: the same names
and arguments as `Memory.link` / `Memory.walk`, `phi memory link | walk` and the MCP tools."""

from __future__ import annotations

import anyio
from fastapi.testclient import TestClient

from phi.memory import Memory, MiniLMEmbedder

from .conftest import TOKEN, Filled

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_link_then_walk_finds_the_effect(client: TestClient, filled: Filled) -> None:
    body = {"src": filled.alice_exchange, "dst": filled.new_observation, "edge_type": "causal"}
    made = client.post("/api/memory/link", json={**body, "weight": 0.5}, headers=AUTH)
    assert made.status_code == 201
    assert made.json() == {**body, "weight": 0.5}  # as `phi memory link --json` and MCP
    walked = client.get(
        f"/api/memory/walk/{filled.alice_exchange}", params={"depth": 1, "type": "causal"}
    )
    assert walked.status_code == 200
    out = walked.json()
    assert out["row_id"] == filled.alice_exchange
    assert [(s["depth"], s["via"], s["edge_type"], s["weight"]) for s in out["steps"]] == [
        (1, filled.alice_exchange, "causal", 0.5)
    ]
    assert out["steps"][0]["row"]["content"] == "alice now prefers zig over rust"
    # Times read the same on every surface (`phi.memory.serial`): ISO 8601 with `+00:00`.
    assert out["steps"][0]["row"]["created_at"].endswith("+00:00")
    # Two hops on every edge type reach the superseded belief through the new one.
    deeper = client.get(f"/api/memory/walk/{filled.alice_exchange}", params={"depth": 2}).json()
    reached = {s["row"]["row_id"]: s["depth"] for s in deeper["steps"]}
    assert reached[filled.new_observation] == 1 and filled.old_observation in reached
    assert filled.note not in reached  # another namespace is never walked into


def test_link_needs_the_token(
    client: TestClient, read_only_client: TestClient, filled: Filled
) -> None:
    body = {"src": filled.alice_exchange, "dst": filled.new_observation}
    assert client.post("/api/memory/link", json=body).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert client.post("/api/memory/link", json=body, headers=wrong).status_code == 401
    assert read_only_client.post("/api/memory/link", json=body, headers=AUTH).status_code == 403
    steps = client.get(f"/api/memory/walk/{filled.alice_exchange}", params={"type": "causal"})
    assert steps.json()["steps"] == []  # nothing was linked


def test_graph_errors_are_clear(client: TestClient, filled: Filled) -> None:
    across = client.post(
        "/api/memory/link", json={"src": filled.alice_exchange, "dst": filled.note}, headers=AUTH
    )
    assert across.status_code == 400
    assert "different namespaces" in across.json()["detail"]
    missing = client.post(
        "/api/memory/link", json={"src": "no-such-row", "dst": filled.note}, headers=AUTH
    )
    assert missing.status_code == 404
    assert missing.json() == {"detail": "no memory row with id 'no-such-row'"}
    bad_type = {"src": filled.alice_exchange, "dst": filled.new_observation, "edge_type": "x"}
    assert client.post("/api/memory/link", json=bad_type, headers=AUTH).status_code == 422
    heavy = {"src": filled.alice_exchange, "dst": filled.new_observation, "weight": 2}
    assert client.post("/api/memory/link", json=heavy, headers=AUTH).status_code == 422
    assert client.get("/api/memory/walk/no-such-row").status_code == 404
    too_deep = client.get(f"/api/memory/walk/{filled.note}", params={"depth": 4})
    assert too_deep.status_code == 422
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/memory/link", "/api/memory/walk/{row_id}"} <= set(paths)


def test_a_row_is_the_same_json_on_every_surface(
    client: TestClient, filled: Filled, minilm: MiniLMEmbedder
) -> None:
    async def library() -> list[dict[str, object]]:
        async with Memory.open(filled.db, embedder=minilm) as memory:
            chain = await memory.history(filled.old_observation)
            return [row.to_json() for row in chain]  # what the CLI and MCP print

    rows = anyio.run(library)
    assert client.get(f"/api/memory/rows/{filled.old_observation}").json() == rows[0]
    history = client.get(f"/api/memory/history/{filled.old_observation}").json()["history"]
    assert history == rows
    assert str(rows[0]["created_at"]).endswith("+00:00")
