"""`phi memory ...` and `phi bench locomo` through the real CLI, on a real store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.memory import Memory, NewRow

ALICE = "phi-users-did:plc:alice"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def phi(*args: str, stdin: str | None = None) -> tuple[int, str]:
    """Exit code and output: standard output alone for `--json` (what a script parses)."""
    result = CliRunner().invoke(app, list(args), input=stdin)
    return result.exit_code, result.stdout if "--json" in args else result.output


def test_add_search_show_preload_stats_export_forget(db: str, tmp_path: Path) -> None:
    code, out = phi(
        "memory", "add", "alice adopted a greyhound named Pixel", "-n", ALICE, "--kind",
        "observation", "--tag", "pets", "--source", "at://x/1", "--db", db, "--json",
    )  # fmt: skip
    assert code == 0, out
    row = json.loads(out)
    assert (row["kind"], row["tags"], row["source_uris"]) == ("observation", ["pets"], ["at://x/1"])
    code, out = phi(
        "memory", "add", "-", "-n", ALICE, "--db", db, stdin="she also plays the cello\n"
    )
    assert code == 0 and "remembered" in out

    code, out = phi(
        "memory", "search", "what is her dog called?", "-n", ALICE, "--db", db, "--json"
    )
    found = json.loads(out)
    assert code == 0 and found["unembedded"] == 0, out
    hits = found["results"]
    assert hits[0]["row_id"] == row["row_id"] and hits[0]["score"] > 0
    assert {"score", "matched_by", "age_seconds", "namespace", "trust"} <= set(hits[0])
    code, out = phi("memory", "search", "greyhound", "-n", ALICE, "--db", db)
    assert code == 0 and "greyhound" in out and "observation" in out

    code, out = phi("memory", "show", row["row_id"], "--db", db, "--json")
    shown = json.loads(out)
    assert shown["content"] == "alice adopted a greyhound named Pixel"
    assert [n["edge_type"] for n in shown["neighbors"]] == ["temporal"]

    code, out = phi("memory", "preload", "pets", "-n", ALICE, "--budget-tokens", "200", "--db", db)
    assert code == 0 and "[RELEVANT MEMORY" in out and "greyhound" in out

    code, out = phi("memory", "stats", "--db", db, "--json")
    stats = json.loads(out)
    assert (stats["rows"], stats["embedding"]["model"]) == (2, "all-MiniLM-L6-v2")
    assert stats["by_namespace"][0]["kinds"] == {"observation": 1, "note": 1}

    export = tmp_path / "export.jsonl"
    code, out = phi("memory", "export", "-n", ALICE, "--output", str(export), "--db", db)
    assert code == 0 and "exported 2 rows" in out
    exported = [json.loads(line)["content"] for line in export.read_text().splitlines()]
    assert exported[0].startswith("alice")

    code, out = phi("memory", "forget", ALICE, "--db", db, stdin="y\n")
    assert code == 2 and "add --yes to confirm" in out  # no terminal to ask: nothing erased
    code, out = phi("memory", "forget", ALICE, "--yes", "--db", db)
    assert (
        code == 0
        and "erased phi-users-did:plc:alice: 2 rows (1 note, 1 observation) and 1 edge" in out
    )


def test_errors_are_one_line_with_exit_code_2(db: str, tmp_path: Path) -> None:
    assert phi("memory", "add", "a first row", "-n", ALICE, "--db", db)[0] == 0
    code, out = phi("memory", "add", "  ", "-n", ALICE, "--db", db)
    assert code == 2 and out.startswith("error: empty content") and out.count("\n") == 1
    code, out = phi("memory", "search", "x", "-n", "nobody", "--db", db)
    assert code == 2 and "namespace 'nobody' holds no rows" in out
    code, out = phi("memory", "show", "nope", "--db", db)
    assert code == 2 and "no memory row with id 'nope'" in out
    code, out = phi("memory", "add", "x", "-n", ALICE, "--kind", "gossip", "--db", db)
    assert code == 2 and "unknown kind 'gossip'" in out
    code, out = phi("memory", "search", "x", "--since", "yesterday", "--db", db)
    assert code == 2 and "--since 'yesterday' is not an ISO 8601" in out
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database at all" * 50)
    code, out = phi("memory", "stats", "--db", str(garbage))
    assert code == 2 and "is not a SQLite database" in out


def test_default_store_lives_under_phi_home(phi_home: Path) -> None:
    code, out = phi("memory", "add", "hello", "-n", "scratch")
    assert code == 0, out
    assert (phi_home / "memory.db").exists()


def test_bench_locomo_writes_rankings_and_prints_the_table(tmp_path: Path) -> None:
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I just adopted a greyhound called Pixel!"},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely. I went sailing on the lake."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister moved to Lisbon last week."},
    ]
    data = [{
        "sample_id": "tiny",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1": turns,
                         "session_1_date_time": "1:56 pm on 8 May, 2023"},
        "qa": [
            {"question": "What is the name of Ann's dog?", "answer": "Pixel",
             "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Ann's sister move?", "answer": "Lisbon",
             "evidence": ["D1:3", "D9:9"], "category": 1},
            {"question": "What did Bo not do?", "answer": "", "evidence": ["D1:2"], "category": 5},
        ],
    }]  # fmt: skip
    source = tmp_path / "tiny.json"
    source.write_text(json.dumps(data))
    out_file = tmp_path / "out.jsonl"
    code, out = phi("bench", "locomo", str(source), "--output", str(out_file))
    assert code == 0, out
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [q["category"] for q in lines] == [4, 1]
    # Finding W13 of the second newcomer walkthrough: every file phi writes is 0600.
    assert out_file.stat().st_mode & 0o777 == 0o600
    assert lines[0]["ranked"][0] == "D1:1" and lines[1]["ranked"][0] == "D1:3"
    assert lines[1]["evidence"] == ["D1:3"]
    assert set(lines[0]) == {
        "sample_id",
        "question",
        "category",
        "evidence",
        "ranked",
        "latency_ms",
    }
    assert "R@10" in out and "turns/s" in out and "p95" in out
    assert "conversation tiny (1 of 1) done: 3 turns, 2 questions so far" in out
    code, out = phi("bench", "locomo", str(source), "--json")
    assert code == 0, out
    summary = json.loads(out)
    assert (summary["questions"], summary["turns"], summary["recall"]["all"]["R@1"]) == (2, 3, 1.0)
    assert summary["recall"]["3"]["R@1"] is None  # no open-domain question: null, not NaN
    code, out = phi("bench", "locomo", str(source), "--sample", "conv-99")
    assert code == 2 and "no conversation 'conv-99'" in out


def test_bench_locomo_prints_peers_plots_and_reuses_kept_stores(tmp_path: Path) -> None:
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I just adopted a greyhound called Pixel!"},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely. I went sailing on the lake."},
    ]
    data = [{
        "sample_id": "tiny",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1": turns,
                         "session_1_date_time": "1:56 pm on 8 May, 2023"},
        "qa": [{"question": "What is the name of Ann's dog?", "answer": "Pixel",
                "evidence": ["D1:1"], "category": 4}],
    }]  # fmt: skip
    source = tmp_path / "tiny.json"
    source.write_text(json.dumps(data))
    chart, stores = tmp_path / "recall.png", tmp_path / "stores"
    args = ("bench", "locomo", str(source), "--stores", str(stores), "--plot", str(chart))
    code, out = phi(*args)
    assert code == 0, out
    assert "mem0 2.2.1 hybrid" in out and "0.524" in out and "engram-search" in out
    assert chart.read_bytes().startswith(b"\x89PNG")
    assert "2 turns in" in out
    code, out = phi(*args)
    # The kept store is reused, not filled again, and no rate is made up for it.
    assert code == 0 and "ingest: none (every conversation was in its kept store)" in out
    assert "nan turns/s" not in out
    code, out = phi("bench", "locomo", str(source), "--plot", str(tmp_path / "no" / "x.png"))
    assert code == 2 and "cannot write the chart" in out
    # Beside --json the chart is drawn too (it was silently dropped), and named in the JSON.
    second = tmp_path / "second.png"
    code, out = phi(*args[:-1], str(second), "--json")
    assert code == 0, out
    assert second.read_bytes().startswith(b"\x89PNG")
    assert json.loads(out)["plot"] == str(second)


def test_stats_shows_model_calls_and_tokens_per_pass(db: str) -> None:
    import anyio

    from phi.memory import Memory
    from phi.memory.store.base import ModelCallRecord

    async def log_calls() -> None:
        async with Memory.open(db) as memory:
            for outcome in ("ok", "ok", "failed"):
                await memory.store.log_model_call(
                    ModelCallRecord(
                        purpose="reconcile", model="test", requests=1, input_tokens=120,
                        output_tokens=8, outcome=outcome, called_at=datetime.now(UTC),
                    )
                )  # fmt: skip

    anyio.run(log_calls)
    code, out = phi("memory", "stats", "--db", db, "--json")
    assert code == 0, out
    assert json.loads(out)["model_usage"] == [
        {"purpose": "reconcile", "calls": 3, "requests": 3, "input_tokens": 360,
         "output_tokens": 24, "failures": 1}
    ]  # fmt: skip
    code, out = phi("memory", "stats", "--db", db)
    assert code == 0 and "reconcile" in out and "360" in out


def test_forget_says_what_it_erased_elsewhere_and_what_is_still_published(db: str) -> None:
    did = "did:plc:alice"
    published = "at://did:plc:phi/io.phi.cosmikCard/3k"

    async def seed() -> None:
        async with Memory.open(db) as memory:
            own = await memory.remember(
                NewRow(content="alice likes crows", namespace=ALICE, author=did)
            )
            await memory.remember(
                NewRow(
                    content="crows are clever",
                    namespace="phi-public",
                    meta={"derived_from": [own.row_id], "published_uris": [published]},
                )
            )

    anyio.run(seed)
    code, out = phi("memory", "forget", ALICE, "--yes", "--db", db)
    assert code == 0, out
    assert out.splitlines() == [
        "erased phi-users-did:plc:alice: 2 rows (2 note) and 0 edges",
        "  including rows derived from them elsewhere: 1 in phi-public",
        "  still on phi's PDS, published from erased rows; delete them yourself:",
        f"    {published}",
    ]


def test_a_mistyped_db_is_refused_not_created(db: str, tmp_path: Path) -> None:
    typo = tmp_path / "cli.bd"
    for words in (["stats"], ["search", "x"], ["export"], ["blocks", "list"], ["usage"]):
        code, out = phi("memory", *words, "--db", str(typo))
        assert code == 2 and out == (
            f"error: no memory store at {str(typo)!r} (check the path; `phi memory add … --db "
            "PATH` creates one)\n"
        ), (words, out)
    assert not typo.exists()
    code, out = phi("memory", "add", "hello", "-n", "scratch", "--db", db)
    assert code == 0 and out.startswith(f"note: created a new, empty memory store at {db}\n")
    code, out = phi("memory", "add", "again", "-n", "scratch", "--db", db)
    assert code == 0 and "created" not in out


def test_a_folder_is_not_a_store_and_export_needs_an_existing_folder(
    db: str, tmp_path: Path
) -> None:
    code, out = phi("memory", "stats", "--db", str(tmp_path))
    assert code == 2 and out == f"error: {str(tmp_path)!r} is a directory; give the path of a " \
        "memory store file\n"  # fmt: skip
    phi("memory", "add", "hello", "-n", "scratch", "--db", db)
    target = tmp_path / "missing" / "out.jsonl"
    code, out = phi("memory", "export", "-o", str(target), "--db", db)
    assert code == 2 and out == (
        f"error: cannot write {str(target)!r}: the folder {str(target.parent)!r} does not exist\n"
    )
    code, out = phi("memory", "export", "-o", str(tmp_path), "--db", db)
    assert code == 2 and "it is a folder" in out
    code, out = phi("memory", "export", "-o", str(tmp_path / "one.jsonl"), "--db", db)
    assert code == 0 and out.endswith("exported 1 row to " + str(tmp_path / "one.jsonl") + "\n")


def test_a_repeated_add_says_it_already_existed(db: str) -> None:
    first = phi("memory", "add", "likes rust", "-n", ALICE, "--db", db, "--json")
    again = phi("memory", "add", "likes rust", "-n", ALICE, "--db", db, "--json")
    assert json.loads(first[1])["existed"] is False
    assert json.loads(again[1])["existed"] is True
    assert json.loads(again[1])["row_id"] == json.loads(first[1])["row_id"]
    code, out = phi("memory", "add", "likes rust", "-n", ALICE, "--db", db)
    assert code == 0 and out.startswith("already remembered: ")


def test_sandbox_memory_is_reachable_from_every_memory_command(phi_home: Path) -> None:
    sandbox_db = str(phi_home / "sandbox-memory.db")
    assert phi("memory", "add", "alice likes crows", "-n", ALICE, "--db", sandbox_db)[0] == 0
    code, out = phi("memory", "stats", "--sandbox", "--json")
    assert code == 0 and json.loads(out)["location"] == sandbox_db
    code, out = phi("memory", "search", "crows", "--sandbox", "--json")
    assert code == 0 and json.loads(out)["results"][0]["content"] == "alice likes crows"
    code, out = phi("memory", "stats", "--sandbox", "--db", sandbox_db)
    assert code == 2 and "give --db or --sandbox, not both" in out
    assert not (phi_home / "memory.db").exists()


def test_erasing_asks_the_same_way_everywhere(db: str) -> None:
    phi("memory", "blocks", "append", "user:did:plc:alice", "likes crows", "--db", db)
    phi("memory", "add", "x", "-n", ALICE, "--db", db)
    for words in (["forget", ALICE], ["blocks", "forget", "did:plc:alice"]):
        code, out = phi("memory", *words, "--db", db)
        assert code == 2 and "for good; add --yes to confirm" in out, out
    code, out = phi("memory", "blocks", "forget", "did:plc:alice", "--yes", "--db", db)
    assert code == 0 and out == "erased 1 version of the block of did:plc:alice\n"


def test_search_notes_rows_of_its_scope_not_embedded_yet_until_embed(db: str) -> None:
    async def write() -> None:
        async with Memory.open(db) as memory:
            await memory.remember_many(
                [
                    NewRow(content="alice adopted a greyhound named Pixel", namespace=ALICE),
                    NewRow(content="alice walks Pixel at dawn", namespace=ALICE),
                    NewRow(content="bob keeps bees", namespace="phi-users-did:plc:bob"),
                ],
                defer_embedding=True,
            )

    anyio.run(write)
    code, out = phi("memory", "search", "what pet does she have?", "-n", ALICE, "--db", db)
    assert code == 0, out
    assert out.splitlines() == [
        "no matching memory",
        "note: 2 rows in this scope are not embedded yet: search by meaning cannot see them"
        " until the embedder catches up (`phi memory embed`); search by words finds them"
        " already",
    ]
    code, out = phi("memory", "search", "Pixel", "-n", ALICE, "--db", db, "--json")
    found = json.loads(out)
    assert (code, len(found["results"]), found["unembedded"]) == (0, 2, 2)
    code, out = phi("memory", "search", "bees", "--db", db, "--json")
    assert json.loads(out)["unembedded"] == 3

    code, out = phi("memory", "embed", "--db", db)
    assert (code, out) == (0, "embedded 3 rows; none waits for its vector now\n")
    assert json.loads(phi("memory", "embed", "--db", db, "--json")[1]) == {"embedded": 0}
    code, out = phi("memory", "search", "what pet does she have?", "-n", ALICE, "--db", db)
    assert code == 0 and "greyhound" in out and "not embedded" not in out
    code, out = phi("memory", "search", "Pixel", "-n", ALICE, "--db", db, "--json")
    assert json.loads(out)["unembedded"] == 0


def test_stats_shows_no_python_reprs_and_folds_long_namespaces(db: str) -> None:
    namespace = "phi-users-did:plc:" + "a" * 60 + "-the-end"
    code, out = phi("memory", "add", "a note", "-n", namespace, "--db", db)
    assert code == 0, out
    code, out = phi("memory", "stats", "--db", db)
    assert code == 0, out
    assert "embedding: all-MiniLM-L6-v2 (384-d)" in out
    assert "{" not in out and "'" not in out  # no dict or string reprs
    assert "…" not in out and "-the-end" in out  # folded, not cut


def test_show_prints_text_as_stored_and_no_python_reprs(db: str) -> None:
    """Finding W1/W2 of the second newcomer walkthrough: brackets in a row were read as
    rich markup (`see [pepper] and [/] here` showed as `see  and  here`, in the row and in
    its neighbours), and fields showed as `None`, `[]`, `{}`, `['code']`."""
    code, out = phi("memory", "add", "see [pepper] and [/] here", "-n", "scratch", "--db", db)
    assert code == 0, out
    code, out = phi(
        "memory", "add", "second [red]note[/red]", "-n", "scratch", "--tag", "code", "--db", db,
        "--json",
    )  # fmt: skip
    second = json.loads(out)["row_id"]
    code, out = phi("memory", "show", second, "--db", db)
    assert code == 0, out
    lines = out.splitlines()
    assert "content: second [red]note[/red]" in lines
    assert "tags: code" in lines
    assert "source_uris: none" in lines and "author: none" in lines and "meta: none" in lines
    assert "None" not in out and "[]" not in out and "'" not in out
    assert any(line.endswith(": see [pepper] and [/] here") for line in lines), out


def test_search_indents_every_line_of_a_hit(db: str) -> None:
    """Finding W3: the second line of a multi-line row (an interaction's turns) started at
    column 0, as if it were the next hit."""
    text = "@alice.test: call me nate\n@phi.test: ok nate!"
    assert phi("memory", "add", text, "-n", ALICE, "--db", db)[0] == 0
    code, out = phi("memory", "search", "nate", "-n", ALICE, "--db", db)
    assert code == 0, out
    lines = out.splitlines()
    assert "   @alice.test: call me nate" in lines and "   @phi.test: ok nate!" in lines, out


def test_walk_and_link_read_the_sandbox_memory(phi_home: Path) -> None:
    """Finding W4: the README says every `phi memory` command takes `--sandbox`; `walk`,
    `link` and `reembed` did not."""
    sandbox_db = str(phi_home / "sandbox-memory.db")
    ids = [
        json.loads(phi("memory", "add", text, "-n", ALICE, "--db", sandbox_db, "--json")[1])[
            "row_id"
        ]
        for text in ("alice has a crow", "the crow is called pepper")
    ]
    code, out = phi("memory", "link", ids[0], ids[1], "-t", "causal", "--sandbox")
    assert code == 0 and f"linked {ids[0]} -causal-> {ids[1]}" in out, out
    code, out = phi("memory", "walk", ids[0], "-t", "causal", "--sandbox", "--json")
    assert code == 0, out
    assert [s["row"]["row_id"] for s in json.loads(out)["steps"]] == [ids[1]]
    code, out = phi("memory", "reembed", "--to", "minilm", "--sandbox")  # the sandbox's store
    assert code == 2 and "the store already uses 'all-MiniLM-L6-v2'" in out, out
    assert not (phi_home / "memory.db").exists()
