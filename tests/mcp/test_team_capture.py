"""Two laptops capture their sessions through one `phi mcp --http` server on PostgreSQL.

Each laptop runs the hook as Claude Code does (one process per event, its own PHI_HOME,
its own bearer token) and sends what it queued to the server, never to the database. One
laptop loses its link to the server mid-session: its events wait in its spool and arrive
in order once the link is back, none lost, none doubled; every row says which token wrote
it, and a read-only token's writes are refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from phi.capture.spool import Spool, SpoolEntry
from tests._child import URL, start_phi, stop
from tests.mcp._cut_link import CutLink
from tests.postgres.schemas import fresh_schema_sync

FIXTURES = Path(__file__).parents[1] / "capture" / "fixtures"
TOKEN_ALICE = "a1" * 4 + "5e0c93a5b2f4e86d0c1a3b7d"
TOKEN_BOB = "b2" * 4 + "0c93a5b2f4e86d0c1a3b7d1e"
TOKEN_CI = "c3" * 4 + "93a5b2f4e86d0c1a3b7d1e0c"
TOKENS = f"""# name token grants
alice {TOKEN_ALICE} rw:alice- ro:team-
bob {TOKEN_BOB} rw:bob-
ci {TOKEN_CI} ro:alice- ro:bob-
"""


@dataclass(frozen=True, kw_only=True)
class Laptop:
    """One developer's machine: a PHI_HOME, a token, a server URL."""

    home: Path
    env: dict[str, str]
    namespace: str
    wait: bool = True
    """`--wait` (the hook delivers before returning) or the default detached drainer."""

    @property
    def spool(self) -> Spool:
        return Spool(directory=self.home / "capture")

    def hook(self, event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        args = [sys.executable, "-m", "phi.capture", "--no-recall", "--namespace", self.namespace]
        done = subprocess.run(
            [*args, *(["--wait"] if self.wait else [])],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done

    def drain(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "phi.capture", "--drain"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
            check=True,
        )


def laptop(
    tmp_path: Path, name: str, url: str, *, token: str, namespace: str, wait: bool = True
) -> Laptop:
    home = tmp_path / name
    home.mkdir(mode=0o700)
    env = {**os.environ, "PHI_HOME": str(home), "PHI_CAPTURE_URL": url}
    if name == "bob":  # the token in a 0600 file, the other way to give it
        (home / "capture-token").write_text(token + "\n")
        (home / "capture-token").chmod(0o600)
        env["PHI_CAPTURE_TOKEN_FILE"] = str(home / "capture-token")
    else:
        env["PHI_CAPTURE_TOKEN"] = token
    return Laptop(home=home, env=env, namespace=namespace, wait=wait)


def session(laptop_dir: Path, session_id: str) -> list[dict[str, Any]]:
    """The recorded Claude Code session (`session-1.jsonl`) as this laptop's host fires it,
    its transcript a file on this laptop."""
    transcript = laptop_dir / "transcript.jsonl"
    transcript.write_text((FIXTURES / "transcript-1.jsonl").read_text())
    events = []
    for line in (FIXTURES / "session-1.jsonl").read_text().splitlines():
        event = json.loads(line)
        event["session_id"] = session_id
        event["transcript_path"] = str(transcript)
        events.append(event)
    return events


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`phi mcp --http` on a fresh PostgreSQL schema; yields its port's base URL and the
    database URL."""
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    tokens.chmod(0o600)
    env = {**os.environ, "PHI_HOME": str(tmp_path / "server-home")}
    with fresh_schema_sync() as db:
        process, base = start_phi(
            ["mcp", "--db", db, "--http", "--port", "0", "--token-file", str(tokens)],
            tmp_path / "server.log",
            says=f"MCP over streamable HTTP at {URL}/mcp",
            env=env,
        )
        try:
            yield base, db
        finally:
            stop(process)


Stored = tuple[str, str | None, str, str, str, str | None, str]
"""A row: namespace, written_by, session, event id, capture kind, tool_use_id, chunk."""


def stored(db: str) -> list[Stored]:
    """Every row, in the order they were stored."""

    async def read() -> list[Stored]:
        async with await psycopg.AsyncConnection.connect(db) as conn:
            cur = await conn.execute(
                "SELECT namespace, written_by, meta->>'session', meta->>'event',"
                " meta->>'capture', meta->>'tool_use_id', meta->>'chunk' FROM rows ORDER BY id"
            )
            return [tuple(r) for r in await cur.fetchall()]

    return anyio.run(read)


def what(rows: Sequence[Stored], namespace: str) -> list[tuple[str, str | None, str]]:
    """What `namespace`'s rows hold, in order: capture kind, tool_use_id and chunk."""
    return [(kind, tool, chunk) for ns, _, _, _, kind, tool, chunk in rows if ns == namespace]


def test_two_laptops_capture_through_one_server(tmp_path: Path, server: tuple[str, str]) -> None:
    base, db = server
    with CutLink(int(base.rsplit(":", 1)[1])) as link:
        alice = laptop(
            tmp_path,
            "alice",
            f"http://127.0.0.1:{link.port}/mcp",
            token=TOKEN_ALICE,
            namespace="alice-tidepool",
        )
        bob = laptop(
            tmp_path, "bob", f"{base}/mcp", token=TOKEN_BOB, namespace="tidepool", wait=False
        )
        hers, his = session(alice.home, "alice-s1"), session(bob.home, "bob-s1")
        for index, (her_event, his_event) in enumerate(zip(hers, his, strict=True)):
            if index == 3:
                link.cut()  # mid-session: alice's laptop loses the server
            if index == 8:
                assert alice.spool.pending() == 5  # all five kept, none delivered
                link.restore()
            done = alice.hook(her_event)
            if 3 <= index < 8:
                assert "queued for later" in done.stderr, done.stderr
            bob.hook(his_event)
        assert alice.spool.pending() == 0
        _settle(bob)
        _check_team_store(db, alice, hers, base)


def _check_team_store(db: str, alice: Laptop, hers: list[dict[str, Any]], base: str) -> None:
    rows = stored(db)
    for name, who in (("alice-tidepool", "alice"), ("bob-tidepool", "bob")):
        mine = [r for r in rows if r[0] == name]
        assert {r[1] for r in mine} == {who}, name  # each row names its token, no other
        assert {r[2] for r in mine} == {f"{who}-s1"}
    assert {r[0] for r in rows} == {"alice-tidepool", "bob-tidepool"}  # bob's placed
    # Nothing lost, nothing doubled, in order: both replayed the same recorded session, and
    # alice's, cut off for five events, holds what bob's (never cut) holds, in his order.
    assert what(rows, "alice-tidepool") == what(rows, "bob-tidepool")
    kinds = [kind for kind, _, _ in what(rows, "bob-tidepool")]
    assert kinds[0] == "turn"  # the prompt
    # The assistant's words reached the server from the transcript file on the laptop.
    assert kinds.count("turn") >= 2, kinds
    assert len({event for ns, _, _, event, *_ in rows if ns == "alice-tidepool"}) >= 9

    # Delivered again (a drainer killed after the server stored it): still one event.
    prompt_event = rows[[r[0] for r in rows].index("alice-tidepool")][3]
    entry = SpoolEntry(namespace="alice-tidepool", payload=json.dumps(hers[1]), event=prompt_event)
    alice.spool.append(entry)
    alice.drain()
    assert alice.spool.pending() == 0
    assert stored(db) == rows

    # A read-only token's write is refused by name, and set aside, not retried forever.
    ci = laptop(alice.home.parent, "ci", f"{base}/mcp", token=TOKEN_CI, namespace="alice-tidepool")
    ci.hook(hers[1])
    # alice may read the team's namespaces, not write them.
    team = Laptop(home=alice.home, env=alice.env, namespace="team-tidepool")
    team.hook(hers[1])
    assert stored(db) == rows
    for refused, namespace in ((ci, "alice-tidepool"), (team, "team-tidepool")):
        (line,) = refused.spool.rejects_path.read_text().splitlines()
        reason = json.loads(line)["reason"]
        assert reason == (
            "an event the store refused: the server refused the event: namespace"
            f" {namespace!r} is read-only for this client (its token may read it, not write"
            " it); write with a token that has it read-write"
        )
        assert refused.spool.pending() == 0


def _settle(laptop: Laptop) -> None:
    """Wait for the laptop's detached drainers, then drain what is left."""
    deadline = time.monotonic() + 240
    while laptop.spool.pending() and time.monotonic() < deadline:
        time.sleep(0.5)
    laptop.drain()
    assert laptop.spool.pending() == 0
