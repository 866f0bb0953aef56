"""The activity page and its API over the run journal: list, one run in full, clear 404s,
and the token rule of every other read."""

from __future__ import annotations

from pathlib import Path

import anyio
from fastapi.testclient import TestClient
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from phi.memory import Memory, MiniLMEmbedder
from phi.runtime.journal import RunJournal
from phi.web import create_app

LOCAL = "http://127.0.0.1"


def _journal(tmp_path: Path) -> RunJournal:
    journal = RunJournal(path=tmp_path / "runs.db")
    agent = Agent(TestModel(custom_output_text="quiet"), system_prompt="you are phi")

    @agent.tool_plain
    def like_post(uri: str) -> str:
        return f"liked {uri}"

    async def one() -> None:
        await journal.run("notifications", lambda: _output(agent))

    anyio.run(one)
    return journal


async def _output(agent: Agent[None, str]) -> str:
    return (await agent.run("go")).output


def test_runs_are_listed_and_shown(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    journal = _journal(tmp_path)
    app = create_app(lambda: Memory.open(tmp_path / "m.db", embedder=minilm), journal=journal)
    with TestClient(app, base_url=LOCAL) as http:
        (summary,) = http.get("/api/runs").json()
        assert (summary["entry"], summary["outcome"], summary["output"]) == (
            "notifications",
            "ok",
            "quiet",
        )
        assert summary["tools"] == ["like_post"]
        run = http.get(f"/api/runs/{summary['run_id'][:5]}").json()
        assert run["system_prompt"] == "you are phi"
        assert run["tool_calls"][0]["tool"] == "like_post"
        assert run["tool_calls"][0]["result"].startswith("liked ")
        missing = http.get("/api/runs/nope")
        assert missing.status_code == 404 and "no run with id 'nope'" in missing.json()["detail"]
        page = http.get("/activity")
        assert page.status_code == 200 and "/static/activity.js" in page.text
        assert http.get("/static/activity.js").status_code == 200


def test_without_a_journal_the_api_says_so(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    app = create_app(lambda: Memory.open(tmp_path / "m.db", embedder=minilm))
    with TestClient(app, base_url=LOCAL) as http:
        answer = http.get("/api/runs")
    assert (
        answer.status_code == 404 and answer.json()["detail"] == "this server keeps no run journal"
    )


def test_runs_need_the_token_when_reads_do(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    journal = _journal(tmp_path)
    app = create_app(
        lambda: Memory.open(tmp_path / "m.db", embedder=minilm),
        journal=journal,
        token="t0ken",
        token_for_reads=True,
    )
    with TestClient(app, base_url=LOCAL) as http:
        assert http.get("/api/runs").status_code == 401
        ok = http.get("/api/runs", headers={"Authorization": "Bearer t0ken"})
    assert ok.status_code == 200 and len(ok.json()) == 1
