"""Every surface on a PostgreSQL store chosen by `PHI_MEMORY_URL` alone: `phi memory add /
search / history / forget`, the MCP server (`phi mcp`'s in-process build) and `phi web`
(the ASGI app), each seeing what the others wrote."""

from __future__ import annotations

import json

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from mcp import Client
from phi.cli import app
from phi.cli._edge import open_memory
from phi.mcp import McpOptions, build_server
from phi.memory.store import PostgresStore
from phi.web import create_app
from tests.mcp.test_server import call, round_trip
from tests.postgres.schemas import fresh_schema_sync

NS = "agent-notes"
TOKEN = "s3cret"


def phi(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_cli_mcp_and_web_share_one_postgres_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    with fresh_schema_sync() as url:
        monkeypatch.setenv("PHI_MEMORY_URL", url)
        monkeypatch.setenv("PHI_WEB_TOKEN", TOKEN)
        code, out = phi("memory", "add", "Ada's favourite editor is vim", "-n", NS, "--json")
        assert code == 0, out
        old = json.loads(out)

        web = create_app(lambda: open_memory(None), token=TOKEN)
        with TestClient(web, base_url="http://127.0.0.1") as client:
            made = client.post(
                "/api/memory/rows",
                json={"content": "Ada now prefers helix", "namespace": NS,
                      "supersedes": old["row_id"]},
                headers={"Authorization": f"Bearer {TOKEN}"},
            )  # fmt: skip
            assert made.status_code == 201, made.text
            new = made.json()
            found = client.get("/api/memory/search", params={"q": "Ada editor", "namespace": NS})
            assert [h["row_id"] for h in found.json()["results"]] == [new["row_id"]]

        code, out = phi("memory", "history", old["row_id"], "--json")
        assert code == 0, out
        assert [(r["row_id"], r["status"]) for r in json.loads(out)] == [
            (old["row_id"], "superseded"), (new["row_id"], "active"),
        ]  # fmt: skip
        code, out = phi("memory", "search", "which editor?", "-n", NS, "--json")
        assert code == 0 and [h["row_id"] for h in json.loads(out)["results"]] == [new["row_id"]]

        async def over_mcp() -> None:
            async with open_memory(None) as memory:  # what `phi mcp` serves
                assert isinstance(memory.store, PostgresStore)
                server = build_server(memory, McpOptions(allow_forget=False))
                async with Client(server) as mcp:
                    await round_trip(mcp, "mcp-notes")
                    seen = await call(mcp, "recall", query="Ada's editor", namespaces=[NS])
                    assert [h["row_id"] for h in seen["results"]] == [new["row_id"]]

        anyio.run(over_mcp)

        code, out = phi("memory", "forget", NS, "--yes", "--json")
        assert code == 0, out
        assert (json.loads(out)["rows"], json.loads(out)["namespace"]) == (2, NS)
        code, out = phi("memory", "stats", "--json")
        assert code == 0 and json.loads(out)["rows"] == 2  # mcp-notes' two rows stay
        assert json.loads(out)["backend"] == "postgresql"
