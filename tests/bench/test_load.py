"""`bench/load.py`: its accounting of acknowledged writes, its report, and one tiny run of
the whole bench (a `phi mcp --http` server on the tests' PostgreSQL, two MCP clients)."""

from __future__ import annotations

import argparse
import random
from collections import Counter

import pytest
from bench.load import (
    MARKER,
    Call,
    audit,
    bench,
    latencies,
    markdown,
    note_text,
    parse,
    per_call,
    percentile,
)

from tests.postgres.schemas import server_url


def test_every_note_carries_its_marker_and_only_it() -> None:
    rng = random.Random(3)
    marker = "lm-0123abcd-2-32-17-5"
    assert MARKER.findall(note_text(rng, marker)) == [marker]
    assert MARKER.findall("no marker [lm-xyz-1] [lm-0123abcd]") == []


def test_the_audit_counts_lost_doubled_and_stray_writes() -> None:
    acked = {"a", "b", "c"}
    failed = {"x", "y"}
    stored = Counter({"a": 1, "b": 2, "x": 1, "z": 1})
    found = audit(acked, failed, stored)
    assert (found.acked, found.lost, found.doubled) == (3, 1, 1)
    assert (found.unacked_present, found.strangers) == (1, 1)
    clean = audit({"a"}, set(), Counter({"a": 1}))
    assert (clean.lost, clean.doubled, clean.unacked_present, clean.strangers) == (0, 0, 0, 0)


def test_latencies_take_answered_calls_of_one_tool() -> None:
    calls = [Call("recall", float(ms)) for ms in range(1, 101)]
    calls += [Call("recall", 5000.0, "tool error: boom"), Call("remember", 7.0)]
    assert latencies(calls, "recall") == {"n": 100, "p50": 51.0, "p95": 95.0, "p99": 99.0}
    assert latencies(calls, "remember")["p99"] == 7.0
    assert latencies([], "recall") == {"n": 0, "p50": None, "p95": None, "p99": None}
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0


def test_the_table_shows_cpu_per_call_and_the_audit() -> None:
    cell = {
        "servers": 2,
        "clients": 8,
        "seconds": 10.0,
        "calls_per_s": 50.0,
        "recall_per_s": 40.0,
        "remember_per_s": 10.0,
        "recall_ms": {"n": 400, "p50": 20.0, "p95": 40.4, "p99": 60.0},
        "remember_ms": {"n": 0, "p50": None, "p95": None, "p99": None},
        "errors": 0,
        "audit": {"acked": 1234, "lost": 0, "doubled": 0},
        "cores": {"server_loop": 0.5, "server_workers": 1.0, "postgres": 0.25, "clients": 0.1},
        "sessions": {"open_mean": 3.0, "busy_mean": 0.5, "busy_max": 4},
    }
    # 500 calls in 10 s; the loop's 5 CPU seconds are 10 ms a call.
    assert per_call(cell) == {
        "server_loop": 10.0,
        "server_workers": 20.0,
        "postgres": 5.0,
        "clients": 2.0,
    }
    head, rule, row = markdown([cell]).splitlines()
    assert head.count("|") == rule.count("|") == row.count("|")
    assert row == (
        "| 2 | 8 | 50.0 (40.0 + 10.0) | 20 / 40 / 60 | - | 0 | 1,234 (0 / 0)"
        " | 10.0 / 20.0 / 5.0 / 2.0 | 1.85 | 3.0 / 0.50 (4) |"
    )


def test_bad_arguments_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["--db", "sqlite:///x"],
        ["--db", "postgresql://x/y", "--clients", "8,zero"],
        ["--db", "postgresql://x/y", "--servers", "0"],
        ["--db", "postgresql://x/y", "--duration", "0"],
        ["--db", "postgresql://x/y", "--pool-max", "0"],
    ):
        with pytest.raises(SystemExit) as exited:
            parse(argv)
        assert exited.value.code == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith("load.py: error: ")
    args = parse(["--db", "postgresql://x/y", "--clients", "2,3"])
    assert (args.servers, args.clients, args.duration) == ([1, 2, 4], [2, 3], 20.0)


@pytest.mark.anyio
async def test_a_tiny_run_answers_every_call_and_keeps_every_write_once() -> None:
    args = argparse.Namespace(
        db=server_url(),
        servers=[1],
        clients=[3],
        duration=1.5,
        seed_rows=2,
        pool_max=None,
        keep=False,
        json=None,
    )
    (cell,) = (await bench(args))["cells"]
    assert (cell["servers"], cell["clients"], cell["errors"]) == (1, 3, 0)
    assert cell["recall_ms"]["n"] > 0 and cell["calls_per_s"] > 0
    written = cell["remember_ms"]["n"]
    assert cell["audit"] == {
        "acked": written,
        "lost": 0,
        "doubled": 0,
        "unacked_present": 0,
        "strangers": 0,
    }
    assert cell["cores"]["server_workers"] > 0, "the server's CPU is read from /proc"
    assert cell["sessions"]["open_max"] >= 1, "pg_stat_activity shows the server's pool"
