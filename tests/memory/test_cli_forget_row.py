"""`phi memory forget --row ID` through the real CLI, on a real store."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.errors import RowNotFound
from phi.memory import Memory, NewRow, Row

NS = "proj-api"


def phi(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout if "--json" in args else result.output


def _seed(db: str) -> tuple[Row, Row, Row]:
    async def go() -> tuple[Row, Row, Row]:
        async with Memory.open(db) as memory:
            old = await memory.remember(NewRow(content="pin httpx to 0.27", namespace=NS))
            new = await memory.remember(
                NewRow(content="pin httpx to 0.28", namespace=NS, supersedes=old.row_id)
            )
            fact = await memory.remember(
                NewRow(
                    content="the api pins httpx 0.28",
                    namespace=NS,
                    kind="observation",
                    source_uris=[f"phi-memory:{new.row_id}"],
                    meta={"learned_by": "extract"},
                )
            )
            return old, new, fact

    return anyio.run(go)


async def _statuses(db: str, rows: list[Row]) -> list[str]:
    async with Memory.open(db) as memory:
        return [r.status for r in await memory.rows.get_rows([r.row_id for r in rows])]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def test_forget_row_prints_what_went_and_what_is_current_again(db: str) -> None:
    old, new, fact = _seed(db)
    code, out = phi("memory", "forget", "--row", new.row_id, "--db", db)
    # No terminal to ask: refused, nothing erased.
    assert code == 2 and "add --yes to confirm" in out
    assert anyio.run(_statuses, db, [old, new, fact]) == ["superseded", "active", "active"]
    code, out = phi("memory", "forget", "--row", new.row_id, "--yes", "--db", db)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith(f"erased row {new.row_id}: 2 rows (")
    assert sorted(lines[0].split("(")[1].split(")")[0].split(", ")) == ["1 note", "1 observation"]
    assert lines[1:] == [
        "  made from it alone:",
        f"    {fact.row_id}",
        "  current again (it had superseded them):",
        f"    {old.row_id}",
    ]
    assert anyio.run(_statuses, db, [old, new, fact]) == ["active"]


def test_forget_row_as_json_and_its_errors(db: str) -> None:
    old, new, fact = _seed(db)
    code, out = phi("memory", "forget", "--row", fact.row_id, "--yes", "--db", db, "--json")
    assert code == 0, out
    report = json.loads(out)
    assert {k: v for k, v in report.items() if k != "edges"} == {
        "row_id": fact.row_id,
        "rows": 1,
        "kinds": {"observation": 1},
        "erased": [fact.row_id],
        "derived": [],
        "reinstated": [],
        "published": [],
    }
    assert isinstance(report["edges"], int)
    code, out = phi("memory", "forget", "--row", fact.row_id, "--yes", "--db", db)
    assert (code, out) == (2, f"error: {RowNotFound(fact.row_id)}\n")
    code, out = phi("memory", "forget", NS, "--row", new.row_id, "--yes", "--db", db)
    assert code == 2 and "give a namespace or --row ID, not both" in out
    code, out = phi("memory", "forget", "--yes", "--db", db)
    assert code == 2 and "give the namespace to erase, or --row ID for one row" in out
    assert anyio.run(_statuses, db, [old, new]) == ["superseded", "active"]
