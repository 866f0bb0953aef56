"""Durability and concurrency of the SQLite store, with real processes on a real file.

- kill -9 of a writer at a random moment, over several rounds: no acknowledged row is
  lost, and the rows, vector index and text index keep the same count;
- several processes writing and reading one store at once, some writing the same text at
  the same moment: one row per identity, every caller gets that row back, no error;
- several processes creating a fresh store at once: every one succeeds;
- kill -9 of a writer storing rows unembedded and of the embedder draining that queue:
  no acknowledged row lost, each row embedded or queued, a later embedder finishes.

The workers (`tests.durability._worker`) embed with a deterministic test embedder: the
embedder is not under test, and MiniLM's load in every process would cost seconds each.
Counts are chosen to keep the whole module well under a minute on 2 busy cores.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import apsw
import pytest
import sqlite_vec
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
KILL_ROUNDS = 8
PROCESSES = 4
ROWS_EACH = 12
CREATE_ROUNDS = 3
DEFERRED_ROUNDS = 4


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str


async def _spawn(mode: str, path: Path, name: str, n: int = 0) -> Process:
    return await anyio.open_process(
        [sys.executable, "-m", "tests.durability._worker", mode, str(path), name, str(n)],
        cwd=ROOT,
    )


async def _run_together(mode: str, path: Path, names: list[str], n: int = 0) -> list[Finished]:
    """Start the workers, release them at once, and collect what each printed."""
    procs = [await _spawn(mode, path, name, n) for name in names]
    results: list[Finished | None] = [None] * len(procs)

    async def finish(i: int, proc: Process) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = bytearray(), bytearray()

        async def drain(stream: anyio.abc.ByteReceiveStream, into: bytearray) -> None:
            async for chunk in stream:
                into += chunk

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, proc.stdout, out)
            tg.start_soon(drain, proc.stderr, err)
        results[i] = Finished(await proc.wait(), out.decode(), err.decode())

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for i, proc in enumerate(procs):
                tg.start_soon(finish, i, proc)
            for proc in procs:
                assert proc.stdin is not None
                await proc.stdin.send(b"go\n")
    return [r for r in results if r is not None]


def _counts(path: Path) -> tuple[int, int, int]:
    """Rows, vectors and text index entries, read straight from the file."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        assert next(conn.execute("PRAGMA integrity_check"))[0] == "ok"
        (rows,) = next(conn.execute("SELECT count(*) FROM rows"))
        (vectors,) = next(conn.execute("SELECT count(*) FROM row_vectors"))
        (text,) = next(conn.execute("SELECT count(*) FROM row_text_docsize"))
        return rows, vectors, text
    finally:
        conn.close()


def _row_ids(path: Path) -> set[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {i for (i,) in conn.execute("SELECT row_id FROM rows")}
    finally:
        conn.close()


async def test_kill_9_of_a_writer_loses_no_acknowledged_row(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    rng = random.Random(20261123)
    acked: set[str] = set()
    for round_ in range(KILL_ROUNDS):
        proc = await _spawn("writer", path, f"w{round_}")
        assert proc.stdin is not None and proc.stdout is not None
        await proc.stdin.send(b"go\n")
        lines = BufferedByteReceiveStream(proc.stdout)
        # Kill at a random moment: after a random number of acknowledged batches, plus a
        # random fraction of a batch's time, so the kill lands anywhere in a write.
        wanted = rng.randint(1, 12)
        with anyio.fail_after(60):
            for _ in range(wanted):
                line = (await lines.receive_until(b"\n", 1 << 16)).decode()
                assert line.startswith("ack "), line
                acked.update(line.split()[1:])
        await anyio.sleep(rng.uniform(0, 0.05))
        os.kill(proc.pid, signal.SIGKILL)
        # Acknowledgements already in the pipe when the process died count too.
        try:
            while True:
                line = (await lines.receive_until(b"\n", 1 << 16)).decode()
                acked.update(line.split()[1:])
        except (anyio.EndOfStream, anyio.IncompleteRead):
            pass
        assert await proc.wait() == -signal.SIGKILL
        await proc.aclose()
        missing = acked - _row_ids(path)
        assert not missing, f"round {round_}: {len(missing)} acknowledged rows lost"
        rows, vectors, text = _counts(path)
        assert rows == vectors == text, (round_, rows, vectors, text)
    print(f"kill -9: {KILL_ROUNDS} rounds, {len(acked)} acknowledged rows, {rows} rows stored")
    assert len(acked) >= KILL_ROUNDS * 4


def _queue_counts(path: Path) -> tuple[int, int, int, int, int]:
    """Rows, vectors, queued rows, and entries of both text indexes, read from the file."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        assert next(conn.execute("PRAGMA integrity_check"))[0] == "ok"
        return tuple(
            next(conn.execute(f"SELECT count(*) FROM {table}"))[0]
            for table in ("rows", "row_vectors", "embed_queue", "row_text_docsize",
                          "row_terms_docsize")
        )  # fmt: skip
    finally:
        conn.close()


async def test_kill_9_of_a_deferred_writer_and_its_embedder_loses_nothing(
    tmp_path: Path,
) -> None:
    """Rows written unembedded and an embedder draining the queue, both killed at random
    moments: every acknowledged row is stored, each row is embedded or queued (never both
    nor neither), and a later embedder finishes the queue."""
    path = tmp_path / "queued.db"
    rng = random.Random(20261124)
    acked: set[str] = set()
    for round_ in range(DEFERRED_ROUNDS):
        writer = await _spawn("deferred", path, f"d{round_}")
        embedder = await _spawn("embedder", path, f"e{round_}")
        for proc in (writer, embedder):
            assert proc.stdin is not None
            await proc.stdin.send(b"go\n")
        assert writer.stdout is not None
        lines = BufferedByteReceiveStream(writer.stdout)
        with anyio.fail_after(60):
            for _ in range(rng.randint(2, 12)):
                line = (await lines.receive_until(b"\n", 1 << 16)).decode()
                assert line.startswith("ack "), line
                acked.update(line.split()[1:])
        await anyio.sleep(rng.uniform(0, 0.05))
        for proc in (embedder, writer) if round_ % 2 else (writer, embedder):
            os.kill(proc.pid, signal.SIGKILL)
        try:
            while True:
                acked.update((await lines.receive_until(b"\n", 1 << 16)).decode().split()[1:])
        except (anyio.EndOfStream, anyio.IncompleteRead):
            pass
        for proc in (writer, embedder):
            assert await proc.wait() == -signal.SIGKILL
            await proc.aclose()
        missing = acked - _row_ids(path)
        assert not missing, f"round {round_}: {len(missing)} acknowledged rows lost"
        rows, vectors, queued, text, terms = _queue_counts(path)
        assert rows == text == terms == vectors + queued, (round_, rows, vectors, queued)
    (finished,) = await _run_together("drain", path, ["drain"])
    assert (finished.returncode, finished.stderr) == (0, ""), finished.stderr
    assert json.loads(finished.stdout.strip().splitlines()[-1]) == {"embedded": queued}
    rows, vectors, queued_after, text, terms = _queue_counts(path)
    assert (vectors, queued_after, text, terms) == (rows, 0, rows, rows)
    print(f"kill -9, deferred: {len(acked)} acknowledged, {queued} were queued at the end")


async def test_processes_writing_and_reading_one_store_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    names = [f"p{i}" for i in range(PROCESSES)]
    finished = await _run_together("mixed", path, names, ROWS_EACH)
    for result in finished:
        assert (result.returncode, result.stderr) == (0, ""), result.stderr
    reports = [json.loads(r.stdout.strip().splitlines()[-1]) for r in finished]
    shared_texts = {text for report in reports for text in report["shared"]}
    assert len(shared_texts) == (ROWS_EACH + 1) // 2
    for text in shared_texts:
        # Every process got the same row back for the same text.
        assert len({report["shared"][text] for report in reports}) == 1, text
    own = {row_id for report in reports for row_id in report["own"]}
    assert len(own) == PROCESSES * ROWS_EACH
    stored = _row_ids(path)
    assert own <= stored
    assert len(stored) == PROCESSES * ROWS_EACH + len(shared_texts)
    assert all(report["reads"] == 2 * ROWS_EACH for report in reports)
    rows, vectors, text = _counts(path)
    assert rows == vectors == text == len(stored)
    print(f"concurrent: {PROCESSES} processes, {rows} rows, {len(shared_texts)} shared")


async def test_processes_creating_a_fresh_store_at_once(tmp_path: Path) -> None:
    for round_ in range(CREATE_ROUNDS):
        path = tmp_path / f"fresh-{round_}.db"
        finished = await _run_together("create", path, [f"c{i}" for i in range(3)])
        for result in finished:
            assert (result.returncode, result.stderr) == (0, ""), result.stderr
        reports = [json.loads(r.stdout.strip().splitlines()[-1]) for r in finished]
        assert len({report["shared"] for report in reports}) == 1
        assert _row_ids(path) == {r["shared"] for r in reports} | {r["own"] for r in reports}
        assert _counts(path) == (4, 4, 4)
