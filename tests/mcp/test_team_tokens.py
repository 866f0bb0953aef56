"""Team tokens: named, read-only and multi-prefix grants; `written_by` on what a token writes;
the capture client's settings."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from mcp import Client
from phi.capture.remote_sink import RemoteTarget
from phi.cli import app
from phi.config import Settings, SettingsError
from phi.errors import InvalidInput
from phi.mcp import build_server
from phi.mcp._scope import ReadOnly, Scope
from phi.mcp.remote import TokenScope, load_tokens
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.private import InsecureFile
from tests.mcp.test_remote import client, result
from tests.memory.conftest import TinyEmbedder
from tests.postgres.schemas import fresh_schema

pytestmark = pytest.mark.anyio

TOKEN_A = "a" * 8 + "3f9c2e71b04d5a68c1e9f2d7"
TOKEN_B = "b" * 8 + "7d1e0c93a5b2f4e86d0c1a3b"
TOKEN_C = "c" * 8 + "1e0c93a5b2f4e86d0c1a3b7d"


def token_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tokens"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_a_token_file_mixes_the_old_lines_and_named_grants(tmp_path: Path) -> None:
    path = token_file(
        tmp_path,
        f"team-a- {TOKEN_A}\n"
        f"alice {TOKEN_B} rw:alice- ro:team- ro:shared.\n"
        f"ci {TOKEN_C} ro:*  # reads everything\n",
    )
    assert load_tokens(path) == [
        TokenScope(token=TOKEN_A, prefix="team-a-"),
        TokenScope(token=TOKEN_B, prefix="alice-", name="alice", also_read=("team-", "shared.")),
        TokenScope(token=TOKEN_C, prefix=None, name="ci", read_only=True),
    ]
    assert [t.writer for t in load_tokens(path)] == ["team-a-", "alice", "ci"]
    (only_reads,) = load_tokens(token_file(tmp_path, f"bot {TOKEN_A} ro:team- ro:alice-\n"))
    assert (only_reads.prefix, only_reads.read_only, only_reads.also_read) == (
        "team-",
        True,
        ("alice-",),
    )
    assert "token" not in repr(only_reads).replace("TokenScope", "")  # the secret stays out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f"a {TOKEN_A} rw:a- rw:b-", "a token has at most one 'rw:' grant, got 2"),
        (f"a {TOKEN_A} rw:* ro:b-", "a '*' grant covers every namespace; give it alone"),
        (f"a {TOKEN_A} wr:a-", "grant 'wr:a-' is not 'rw:PREFIX' or 'ro:PREFIX' (e.g. 'ro:team-')"),
        (f"a {TOKEN_A} ro:", "grant 'ro:': "),
        (f"a {TOKEN_A} ro:x\nb {TOKEN_B} rw:y\na {TOKEN_C} rw:z", "the name 'a' is given twice"),
    ],
)
def test_each_mistake_in_a_grant_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = token_file(tmp_path, line + "\n")
    with pytest.raises(InvalidInput) as caught:
        load_tokens(path)
    assert str(caught.value).startswith(f"{path}:")
    assert message in str(caught.value)


def test_a_scope_reads_more_than_it_writes() -> None:
    scope = Scope(prefix="alice-", also_read=("team-",))
    assert [scope.allows(n) for n in ("alice-x", "team-x", "teamwork", "bob-x")] == [
        True,
        True,
        False,
        False,
    ]
    assert scope.check_write("alice-x") == "alice-x"
    with pytest.raises(ReadOnly, match="namespace 'team-x' is read-only for this client"):
        scope.check_write("team-x")
    with pytest.raises(InvalidInput, match="outside this server's prefix 'alice-'") as caught:
        scope.check_write("bob-x")  # not even readable: not told it is read-only
    assert not isinstance(caught.value, ReadOnly)
    reader = Scope(prefix="alice-", read_only=True)
    assert reader.allows("alice-x") and not reader.writable("alice-x")
    with pytest.raises(ReadOnly):
        reader.check_write("alice-x")
    assert Scope(read_only=True).allows("anything") and not Scope(read_only=True).writable("x")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_writer_view_stamps_each_row_it_writes(tmp_path: Path, backend: str) -> None:
    async def check(location: str | Path) -> None:
        async with Memory.open(location, embedder=TinyEmbedder(), auto_upgrade=True) as memory:
            theirs = await memory.as_writer("alice").remember(
                NewRow(content="ship on friday", namespace="team")
            )
            mine = await memory.remember(NewRow(content="ship on monday", namespace="team"))
            again = await memory.as_writer("bob").remember(
                NewRow(content="ship on friday", namespace="team")
            )
            assert (theirs.written_by, mine.written_by, again.written_by) == (
                "alice",
                None,
                "alice",
            )
            assert (await memory.get(theirs.row_id)).written_by == "alice"
            assert (await memory.get(mine.row_id)).written_by is None
            assert theirs.to_json()["written_by"] == "alice"

    if backend == "sqlite":
        await check(tmp_path / "m.db")
    else:
        async with fresh_schema() as url:
            await check(url)


def test_the_capture_client_needs_a_url_and_a_token_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env
    for name in ("PHI_CAPTURE_URL", "PHI_CAPTURE_TOKEN", "PHI_CAPTURE_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert RemoteTarget.from_settings(Settings()) is None
    monkeypatch.setenv("PHI_CAPTURE_URL", "https://memory.example/mcp")
    with pytest.raises(SettingsError, match="PHI_CAPTURE_URL is set without a token"):
        RemoteTarget.from_settings(Settings())
    monkeypatch.setenv("PHI_CAPTURE_TOKEN", TOKEN_A)
    target = RemoteTarget.from_settings(Settings())
    assert target == RemoteTarget(url="https://memory.example/mcp", token=TOKEN_A)
    assert TOKEN_A not in repr(target)
    secret = tmp_path / "token"
    secret.write_text(TOKEN_B + "\n")
    secret.chmod(0o644)
    monkeypatch.setenv("PHI_CAPTURE_TOKEN_FILE", str(secret))
    with pytest.raises(SettingsError, match="keep one"):
        RemoteTarget.from_settings(Settings())
    monkeypatch.delenv("PHI_CAPTURE_TOKEN")
    with pytest.raises(InsecureFile, match="chmod 600"):
        RemoteTarget.from_settings(Settings())  # others may read it: refused
    secret.chmod(0o600)
    assert RemoteTarget.from_settings(Settings()) == RemoteTarget(
        url="https://memory.example/mcp", token=TOKEN_B
    )
    monkeypatch.setenv("PHI_CAPTURE_URL", "memory.example/mcp")
    with pytest.raises(SettingsError, match="is not an http\\(s\\) URL"):
        RemoteTarget.from_settings(Settings())
    monkeypatch.delenv("PHI_CAPTURE_URL")
    with pytest.raises(SettingsError, match="PHI_CAPTURE_URL is not"):
        RemoteTarget.from_settings(Settings())


async def test_over_http_a_read_only_token_is_refused_and_each_row_names_its_writer(
    tmp_path: Path, minilm: MiniLMEmbedder, serve_http: Callable[..., str]
) -> None:
    db = tmp_path / "remote.db"
    async with Memory.open(db, embedder=minilm) as memory:
        await memory.remember(NewRow(content="the team ships on Friday", namespace="team-plan"))
    tokens = token_file(
        tmp_path, f"alice {TOKEN_A} rw:alice- ro:team-\nreader {TOKEN_B} ro:alice-\n"
    )
    url = serve_http(db, "--token-file", str(tokens))
    async with client(url, TOKEN_A) as alice:
        failed, row = await result(alice, "remember", content="I ship", namespace="alice-notes")
        assert not failed
        assert row["written_by"] == "alice"
        failed, found = await result(alice, "recall", query="when does the team ship?")
        assert not failed
        assert {hit["namespace"] for hit in found["results"]} == {"team-plan", "alice-notes"}
        failed, message = await result(alice, "remember", content="x", namespace="team-plan")
        assert (failed, message) == (
            True,
            "Error executing tool remember: namespace 'team-plan' is read-only for this client"
            " (its token may read it, not write it); write with a token that has it read-write",
        )
    async with client(url, TOKEN_B) as reader:
        failed, message = await result(reader, "remember", content="x", namespace="alice-notes")
        assert failed and "'alice-notes' is read-only for this client" in message
        failed, message = await result(reader, "capture", session="s", kind="decision", content="x")
        assert failed and "read-only for this client" in message
        failed, found = await result(reader, "recall", query="I ship")
        assert not failed and found["results"][0]["written_by"] == "alice"
    args = ["memory", "history", row["row_id"], "--db", str(db)]
    shown = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(app, args))
    assert shown.exit_code == 0, shown.output
    assert "    written by alice" in shown.output.splitlines()


def _stop_event(transcript_path: str) -> str:
    return json.dumps(
        {
            "session_id": "s1",
            "hook_event_name": "SubagentStop",
            "transcript_path": transcript_path,
            "agent_transcript_path": transcript_path,
        }
    )


def _said(text: str) -> str:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": "assistant", "uuid": text, "message": message}) + "\n"


async def test_capture_event_reads_the_transcript_sent_never_a_path_on_the_server(
    tmp_path: Path, memory: Memory
) -> None:
    on_server = tmp_path / "server-file.jsonl"
    on_server.write_text(_said("the server's private words"))
    async with Client(build_server(memory.as_writer("laptop"))) as mcp:
        failed, out = await result(
            mcp, "capture_event", payload=_stop_event(str(on_server)), event="e1", namespace="dev"
        )
        assert not failed
        failed, out = await result(
            mcp,
            "capture_event",
            payload=_stop_event(str(on_server)),
            event="e2",
            namespace="dev",
            transcript=_said("what the laptop's agent said"),
        )
        assert not failed and len(out["row_ids"]) == 1, out
        failed, message = await result(mcp, "capture_event", payload="{}", event="e3")
        assert failed and "hook event refused" in message
    rows = await memory.recent(namespace="dev", limit=10)
    assert [(row.written_by, "what the laptop's agent said" in row.content) for row in rows] == [
        ("laptop", True)
    ]
