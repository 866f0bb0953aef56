"""Every API route through FastAPI's test client, errors included."""

from __future__ import annotations

import anyio
from fastapi.testclient import TestClient

from phi.memory import Memory, MiniLMEmbedder, NewRow, user_namespace

from .conftest import THREAD, TOKEN, Filled

CAROL = user_namespace("did:plc:carol")

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_health_and_openapi(client: TestClient) -> None:
    health = client.get("/health").json()
    assert health == {"status": "ok", "rows": 6, "namespaces": 4, "writable": True}
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        "/health",
        "/api/memory/search",
        "/api/memory/rows/{row_id}",
        "/api/memory/history/{row_id}",
        "/api/memory/neighbors/{row_id}",
        "/api/users/{did_or_handle}",
        "/api/memory/graph",
        "/api/memory/rows",
        "/api/memory/namespaces/{namespace}",
    } <= set(paths)


def test_search(client: TestClient, filled: Filled) -> None:
    found = client.get("/api/memory/search", params={"q": "what language does alice like?"})
    assert found.status_code == 200
    results = found.json()["results"]
    assert results[0]["row_id"] == filled.new_observation
    assert {"score", "matched_by", "age_seconds", "trust", "source_uris"} <= set(results[0])
    assert filled.old_observation not in {r["row_id"] for r in results}
    scoped = client.get(
        "/api/memory/search",
        params={"q": "release", "namespace": "agent-notes", "include_superseded": "true"},
    ).json()["results"]
    assert [r["row_id"] for r in scoped] == [filled.note]


def test_search_says_how_many_rows_of_its_scope_are_not_embedded_yet(
    client: TestClient, filled: Filled, minilm: MiniLMEmbedder
) -> None:
    async def queue() -> None:
        async with Memory.open(filled.db, embedder=minilm) as memory:
            await memory.remember_many(
                [
                    NewRow(content="the launch moved to monday", namespace="agent-notes"),
                    NewRow(content="carol repots her tomatoes", namespace=CAROL),
                ],
                defer_embedding=True,
            )

    def unembedded(**params: str) -> tuple[int, set[str]]:
        found = client.get("/api/memory/search", params={"q": "launch", **params}).json()
        return found["unembedded"], {r["content"] for r in found["results"]}

    assert unembedded(namespace="agent-notes") == (0, {"the release is on friday"})
    anyio.run(queue)
    # Found by its word at once, and counted as not embedded yet.
    assert unembedded(namespace="agent-notes") == (
        1,
        {"the release is on friday", "the launch moved to monday"},
    )
    assert unembedded(namespace=CAROL)[0] == 1
    assert unembedded(namespace=user_namespace("did:plc:bob"))[0] == 0
    assert unembedded()[0] == 2


def test_search_errors(client: TestClient) -> None:
    assert client.get("/api/memory/search").status_code == 422
    assert client.get("/api/memory/search", params={"q": ""}).status_code == 422
    blank = client.get("/api/memory/search", params={"q": "   "})
    assert blank.status_code == 400
    assert "empty query" in blank.json()["detail"]
    assert client.get("/api/memory/search", params={"q": "x", "limit": 0}).status_code == 422
    assert client.get("/api/memory/search", params={"q": "x", "kind": "bogus"}).status_code == 422
    missing = client.get("/api/memory/search", params={"q": "x", "namespace": "nobody-here"})
    assert missing.status_code == 404
    bad = client.get("/api/memory/search", params={"q": "x", "namespace": "/etc"})
    assert bad.status_code == 400


def test_rows_history_and_neighbors(client: TestClient, filled: Filled) -> None:
    row = client.get(f"/api/memory/rows/{filled.note}").json()
    assert row["content"] == "the release is on friday"
    chain = client.get(f"/api/memory/history/{filled.old_observation}").json()["history"]
    assert [(r["row_id"], r["status"]) for r in chain] == [
        (filled.old_observation, "superseded"),
        (filled.new_observation, "active"),
    ]
    linked = client.get(f"/api/memory/neighbors/{filled.new_observation}").json()
    assert filled.old_observation in {n["row"]["row_id"] for n in linked}
    for route in ("rows", "history", "neighbors"):
        missing = client.get(f"/api/memory/{route}/no-such-row")
        assert missing.status_code == 404
        assert missing.json() == {"detail": "no memory row with id 'no-such-row'"}


def test_user_by_did_sees_only_that_person(client: TestClient, filled: Filled) -> None:
    user = client.get("/api/users/did:plc:alice").json()
    assert user["label"] == "@alice.test"
    assert [o["row_id"] for o in user["observations"]] == [filled.new_observation]
    (observation,) = user["observations"]
    assert observation["source_uris"] == [THREAD]
    assert [h["content"] for h in observation["history"]] == ["alice likes rust"]
    assert [r["row_id"] for r in user["recent"]] == [filled.alice_exchange]
    assert user["kinds"] == {"interaction": 1, "observation": 2}
    assert user["block"] == "# alice\nwrites parsers"
    everything = [*user["observations"], *user["recent"]]
    assert {r["namespace"] for r in everything} == {"phi-users-did:plc:alice"}
    bob = client.get("/api/users/did:plc:bob").json()
    assert bob["observations"] == []
    assert bob["block"] is None
    assert all("alice likes" not in r["content"] for r in bob["recent"])


def test_user_by_handle(client: TestClient) -> None:
    assert client.get("/api/users/@alice.test").json()["did"] == "did:plc:alice"
    assert client.get("/api/users/bob.test").json()["did"] == "did:plc:bob"
    unknown = client.get("/api/users/nobody.test")
    assert unknown.status_code == 404
    assert "pass their DID" in unknown.json()["detail"]
    assert client.get("/api/users/not-a-handle").status_code == 400
    assert client.get("/api/users/did:plc:").status_code == 400
    assert client.get("/api/users/did:plc:stranger").status_code == 404


def test_graph(client: TestClient) -> None:
    graph = client.get("/api/memory/graph").json()
    assert graph["phi"] == {"x": 0.0, "y": 0.0}
    people = {p["did"]: p for p in graph["people"]}
    assert set(people) == {"did:plc:alice", "did:plc:bob", "did:plc:carol"}
    assert people["did:plc:alice"]["basis"] == "observations"
    assert people["did:plc:alice"]["observations"] == 1
    assert people["did:plc:bob"]["basis"] == "all_rows"
    assert all(-1 <= p["x"] <= 1 and -1 <= p["y"] <= 1 for p in people.values())
    assert [(e["source"], e["target"], e["refs"]) for e in graph["edges"]] == [
        ("did:plc:alice", "did:plc:bob", [THREAD])
    ]
    assert sum(c["size"] for c in graph["clusters"]) == 3


def test_writes_need_the_token(client: TestClient, read_only_client: TestClient) -> None:
    body = {"content": "ship it on monday", "namespace": "agent-notes"}
    assert client.post("/api/memory/rows", json=body).status_code == 401
    wrong = client.post("/api/memory/rows", json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    created = client.post("/api/memory/rows", json=body, headers=AUTH)
    assert created.status_code == 201
    assert created.json()["content"] == "ship it on monday"
    bad = client.post("/api/memory/rows", json={**body, "kind": "nonsense"}, headers=AUTH)
    assert bad.status_code == 422
    assert client.delete("/api/memory/namespaces/agent-notes").status_code == 401
    erased = client.delete("/api/memory/namespaces/agent-notes", headers=AUTH)
    assert erased.json() == {
        "namespace": "agent-notes",
        "rows": 2,
        "edges": erased.json()["edges"],
        "kinds": {"note": 2},
    }
    assert (
        client.get("/api/memory/search", params={"q": "x", "namespace": "agent-notes"}).status_code
        == 404
    )
    read_only = read_only_client.post("/api/memory/rows", json=body, headers=AUTH)
    assert read_only.status_code == 403
    assert read_only_client.get("/health").json()["writable"] is False


def test_page_and_static_files(client: TestClient) -> None:
    page = client.get("/memory")
    assert page.status_code == 200
    assert '<svg id="graph"' in page.text
    assert client.get("/static/memory.js").status_code == 200
    assert client.get("/", follow_redirects=False).headers["location"] == "/memory"
