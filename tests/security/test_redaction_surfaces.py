"""Issue 23, finding 3, end to end: the corpus (`redaction_corpus.py`) goes in through every
surface that takes outside text (the `phi capture` hook and its spool, the MCP `remember` and
`capture` tools, the HTTP API, `phi memory import`, an agent run's prompt, tool calls,
activity and error), and none of it comes out of recall, `phi memory export`, the journal
(`phi runs`, its file) or /api/runs. Real parts: the SQLite file, MiniLM, the `phi` command,
loopback HTTP. Finding 4 and the prompt preview: `test_redaction_services.py`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart, models
from pydantic_ai.models.function import AgentInfo, FunctionModel
from typer.testing import CliRunner

from mcp import Client
from phi.capture import Spool
from phi.cli import app
from phi.mcp import build_server
from phi.memory import Memory, MiniLMEmbedder
from phi.runtime.journal import RunJournal
from phi.web import create_app

from .redaction_corpus import AWS_ID, CORPUS, GITHUB, HEALTH_SECRET, SECRETS

models.ALLOW_MODEL_REQUESTS = False

PHI = str(Path(sys.executable).parent / "phi")
LOCAL = "http://127.0.0.1"
TOKEN = "web-token-for-tests"
QUERIES = ("aws credentials", "github token", "private key", "password", "webhook url", "api key")


def leaked(text: str, extra: Iterable[str] = ()) -> list[str]:
    """The corpus secrets (and `extra` ones) found in `text`: must be none."""
    return [s for s in (*SECRETS, *extra) if s in text]


def groups(limit: int = 2500) -> list[str]:
    """The corpus texts packed into a few texts under `limit` characters each (a captured
    event keeps 4,000)."""
    packed, current = [], ""
    for form in CORPUS:
        if current and len(current) + len(form.text) + 2 > limit:
            packed.append(current)
            current = ""
        current = f"{current}\n\n{form.text}" if current else form.text
    return [*packed, current]


async def everything_recalled(memory: Memory) -> str:
    """Every row by export, and what recall answers to a few queries, as one text."""
    rows = [json.dumps(r.to_json()) async for r in memory.export(status=None)]
    found = [json.dumps(h.to_json()) for q in QUERIES for h in await memory.search(q, limit=20)]
    assert rows and found
    return "\n".join(rows + found)


def exported(db: Path) -> str:
    """`phi memory export` of `db`, as the command prints it."""
    done = subprocess.run(
        [PHI, "memory", "export", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") >= 3
    return done.stdout


# -- capture: the hook command and its spool -------------------------------------------


def _hook_events() -> list[str]:
    events = []
    for i, text in enumerate(groups()):
        if i % 2:
            event = {
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "cat ~/.config/secrets.env"},
                "tool_response": {"stdout": text, "stderr": "", "interrupted": False},
                "tool_use_id": f"toolu_{i}",
            }
        else:
            event = {"hook_event_name": "UserPromptSubmit", "prompt": text}
        events.append(json.dumps({**event, "session_id": "s-redact", "cwd": "/work/x"}))
    return events


def test_capture_queues_and_stores_no_secret(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    """Finding 3: an AWS key and a GitHub token in a tool's output were captured and came
    back from recall. Now the spool on disk holds markers, and so do the stored rows."""
    home, db = tmp_path / "home", tmp_path / "memory.db"
    env = {**os.environ, "PHI_HOME": str(home)}
    spool = Spool(directory=home / "capture")
    # Holding the drain lock keeps the hook's background drainer out while the queue is read.
    with spool.draining(wait_s=1) as mine:
        assert mine
        for payload in _hook_events():
            done = subprocess.run(
                [PHI, "capture", "--db", str(db)],
                input=payload,
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )
            assert (done.returncode, done.stderr) == (0, "")
        queued = spool.path.read_text()
    assert "[REDACTED:aws-access-key]" in queued
    assert leaked(queued) == []

    done = subprocess.run(
        [PHI, "capture", "--drain", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert spool.pending() == 0

    async def read() -> str:
        async with Memory.open(db, embedder=minilm) as memory:
            return await everything_recalled(memory)

    assert leaked(anyio.run(read)) == []
    assert leaked(exported(db)) == []


# -- MCP: remember and capture ---------------------------------------------------------


async def call(client: Client, tool: str, /, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    content: dict[str, Any] = result.structured_content
    return content


@pytest.mark.anyio
async def test_mcp_remember_and_capture_store_no_secret(memory: Memory, tmp_path: Path) -> None:
    async with Client(build_server(memory)) as client:
        for form in CORPUS:
            row = await call(client, "remember", content=form.text, namespace="agent-notes")
            assert leaked(json.dumps(row)) == []
        for text in groups():
            await call(
                client, "capture", session="s-mcp", kind="tool_result", content=text, tool="Bash"
            )
        answers = [
            json.dumps(await call(client, "recall", query=q, namespaces=["agent-notes"]))
            for q in QUERIES
        ]
        assert "[REDACTED:" in "".join(answers)
        assert leaked("\n".join(answers)) == []
    assert leaked(await everything_recalled(memory)) == []
    assert leaked(exported(tmp_path / "memory.db")) == []


# -- HTTP: the web API's write route ---------------------------------------------------


def test_the_http_api_stores_no_secret(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    db = tmp_path / "web.db"
    web = create_app(lambda: Memory.open(db, embedder=minilm), token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(web, base_url=LOCAL) as http:
        ids = []
        for form in CORPUS:
            answer = http.post(
                "/api/memory/rows",
                json={"content": form.text, "namespace": "web-notes", "source_uris": []},
                headers=auth,
            )
            assert answer.status_code == 201, answer.text
            assert leaked(answer.text) == []
            ids.append(answer.json()["row_id"])
        shown = [http.get(f"/api/memory/rows/{row_id}").text for row_id in ids]
        found = [http.get("/api/memory/search", params={"q": q, "limit": 50}).text for q in QUERIES]
    assert leaked("\n".join(shown + found)) == []
    assert leaked(exported(db)) == []


# -- import: an export an older phi wrote ----------------------------------------------


def test_importing_an_old_export_stores_no_secret(tmp_path: Path) -> None:
    """`phi memory import` writes rows past the ingest path; an export of a store kept
    before redaction holds secrets, and importing it must not bring them back."""
    base: dict[str, Any] = {
        "namespace": "agent-notes",
        "kind": "note",
        "status": "active",
        "trust": "medium",
        "tags": [],
        "author": None,
        "supersedes": None,
        "created_at": "2026-11-01T12:00:00+00:00",
        "updated_at": "2026-11-01T12:00:00+00:00",
    }
    lines = [
        json.dumps(
            {
                **base,
                "row_id": f"r{i:04d}",
                "content": form.text,
                "source_uris": [f"https://ops:opsFake1@logs.example/{i}?token={HEALTH_SECRET}"],
                "meta": {"turns": [{"speaker": "user", "text": form.text}]},
            }
        )
        for i, form in enumerate(CORPUS)
    ]
    old = tmp_path / "old-export.jsonl"
    old.write_text("\n".join(lines) + "\n")
    db = tmp_path / "imported.db"
    done = subprocess.run(
        [PHI, "memory", "import", str(old), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert leaked(exported(db), ("opsFake1", HEALTH_SECRET)) == []


# -- the journal: prompt, tool calls, activity, a failed run ---------------------------


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    del info
    if len(messages) == 1:
        return ModelResponse(
            parts=[ToolCallPart("fetch", {"query": f"login with {GITHUB}"}, tool_call_id="c1")]
        )
    return ModelResponse(parts=[TextPart(f"done; the key was {AWS_ID}")])


def _journalled(tmp_path: Path) -> RunJournal:
    """A journal holding one run whose prompt, tool call, result, output and activity lines
    carry the whole corpus, and one failed run whose error carries a secret."""
    journal = RunJournal.at_home(tmp_path / "home")
    corpus = "\n\n".join(form.text for form in CORPUS)
    agent = Agent(FunctionModel(_script), system_prompt=f"[TOOL OUTPUT]\n{corpus}")

    @agent.tool_plain
    def fetch(query: str) -> str:
        return f"results for {query}:\n{corpus}"

    async def runs() -> None:
        lines = [f"fetched: {form.text}" for form in CORPUS]
        await journal.run("musing", lambda: _output(agent), actions=lambda: lines)

        async def fails() -> str:
            raise RuntimeError(f"PDS said no to https://phi:{HEALTH_SECRET}@pds.example/")

        with pytest.raises(RuntimeError):
            await journal.run("notifications", fails)

    anyio.run(runs)
    return journal


async def _output(agent: Agent[None, str]) -> str:
    return (await agent.run("go")).output


def test_the_journal_keeps_and_shows_no_secret(
    tmp_path: Path, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 3: the journal kept the exact prompt with whatever it held."""
    journal = _journalled(tmp_path)
    secrets = (HEALTH_SECRET,)
    with sqlite3.connect(journal.path) as conn:  # what is on disk, not only what is shown
        stored = "\n".join(str(v) for row in conn.execute("SELECT * FROM runs") for v in row)
        stored += "\n".join(text for (text,) in conn.execute("SELECT text FROM prompts"))
    assert "[REDACTED:github-token]" in stored
    assert leaked(stored, secrets) == []

    monkeypatch.setenv("PHI_HOME", str(tmp_path / "home"))
    listed = CliRunner().invoke(app, ["runs", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    run_ids = [r["run_id"] for r in json.loads(listed.output)]
    assert len(run_ids) == 2
    shown = [CliRunner().invoke(app, ["runs", "show", "--json", r]).output for r in run_ids]
    shown.append(CliRunner().invoke(app, ["runs", "show", run_ids[1]]).output)
    assert "[REDACTED:aws-access-key]" in shown[0] or "[REDACTED:aws-access-key]" in shown[1]
    assert leaked(listed.output + "\n".join(shown), secrets) == []

    web = create_app(lambda: Memory.open(tmp_path / "m.db", embedder=minilm), journal=journal)
    with TestClient(web, base_url=LOCAL) as http:
        api = [http.get("/api/runs").text] + [http.get(f"/api/runs/{r}").text for r in run_ids]
    assert all('"run_id"' in page for page in api)
    assert leaked("\n".join(api), secrets) == []


def test_a_journal_kept_before_redaction_shows_no_secret(tmp_path: Path) -> None:
    """Runs journalled by an older phi are redacted when read."""
    journal = _journalled(tmp_path)
    with sqlite3.connect(journal.path) as conn:
        conn.execute("UPDATE runs SET output = ?", (f"replied with {GITHUB}",))
        conn.execute("UPDATE prompts SET text = ?", (f"you are phi\n{AWS_ID}",))
    records = anyio.run(lambda: journal.recent())
    shown = json.dumps([r.to_json() for r in records])
    assert "replied with [REDACTED:github-token]" in shown
    assert leaked(shown) == []
