"""The spool's records and its set-aside file, exactly: what a drainer reads back from the
bytes a crash may leave, what it keeps for the operator and says about it, and a drain into
a store that is busy.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import apsw
import pytest

from phi.capture import Spool, SpoolEntry
from phi.capture._record import Unreadable, decode_line, encode_entry
from phi.capture.spool import drain_into
from phi.errors import InvalidInput
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.store.sqlite import SQLiteStore

WHOLE = b'{"namespace": "ns", "payload": "{}", "event": "e1"}'
TORN = b'{"namespace": "ns", "pay'


def test_an_entry_is_one_line_that_starts_a_record() -> None:
    entry = SpoolEntry(namespace="ns", payload='{"a": "\u00e9"}', event="e1")
    line = encode_entry(entry)
    assert line == b'{"namespace": "ns", "payload": "{\\"a\\": \\"\\u00e9\\"}", "event": "e1"}\n'
    assert decode_line(line[:-1]) == [(len(line) - 1, entry)]


def test_the_records_of_one_line_and_where_each_ends() -> None:
    """A crash leaves a record cut short with the next one glued on; each part is read on
    its own, the torn ones as `Unreadable` with their exact bytes."""
    line = TORN + TORN + WHOLE
    whole = SpoolEntry(namespace="ns", payload="{}", event="e1")
    not_json = "not a spool record (Unterminated string starting at: line 1 column 21 (char 20))"
    assert decode_line(line) == [
        (len(TORN), Unreadable(raw=TORN, reason=not_json)),
        (2 * len(TORN), Unreadable(raw=TORN, reason=not_json)),
        (len(line), whole),
    ]
    # Garbage before the first record is a part of its own.
    assert decode_line(b"\x00\x00" + WHOLE) == [
        (
            2,
            Unreadable(
                raw=b"\x00\x00",
                reason="not a spool record (Expecting value: line 1 column 1 (char 0))",
            ),
        ),
        (2 + len(WHOLE), whole),
    ]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"[1]", "not a JSON object"),
        (b'{"namespace": "ns"}', "no namespace or payload"),
        (b'{"namespace": "ns", "payload": 5}', "no namespace or payload"),
        (b'{"namespace": 5, "payload": "p"}', "no namespace or payload"),
        (b'{"payload": "p"}', "no namespace or payload"),
        (b"\xff", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
    ],
)
def test_what_is_not_a_record(raw: bytes, reason: str) -> None:
    assert decode_line(raw) == [
        (len(raw), Unreadable(raw=raw, reason=f"not a spool record ({reason})"))
    ]


@pytest.mark.parametrize("event", [None, "", 5, "e7"])
def test_a_record_without_an_id_is_named_by_its_bytes(event: object) -> None:
    raw = json.dumps({"namespace": "ns", "payload": "p", "event": event}).encode()
    named = event if event == "e7" else hashlib.sha256(raw).hexdigest()[:24]
    assert decode_line(raw) == [(len(raw), SpoolEntry(namespace="ns", payload="p", event=named))]


def entry(n: int, *, event: str | None = None) -> SpoolEntry:
    if event is None:
        return SpoolEntry(namespace="ns", payload=json.dumps({"n": n}))
    return SpoolEntry(namespace="ns", payload=json.dumps({"n": n}), event=event)


def test_what_is_set_aside_is_kept_whole_and_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool = Spool(directory=tmp_path / "capture")
    spool.append(entry(0, event="e0"))
    refused = entry(1, event="e1")
    spool.append(refused)
    with spool.path.open("ab") as handle:
        handle.write(b"[1]\n" + TORN + TORN + encode_entry(entry(2, event="e2")))
    assert spool.rejected() == 0
    stored: list[str] = []

    async def store(item: SpoolEntry) -> bool:
        if item.event == "e1":
            raise InvalidInput("namespace 'Not A Namespace!' is refused")
        stored.append(item.event)
        return True

    err = io.StringIO()
    before = datetime.now(UTC)
    with spool.draining(wait_s=1):
        assert anyio.run(lambda: spool.drain(store, err=err)) == 2
    assert stored == ["e0", "e2"]
    assert spool.rejected() == 4
    rejects = [json.loads(line) for line in spool.rejects_path.read_text().splitlines()]
    unreadable = "an unreadable spool line: not a spool record"
    torn = f"{unreadable} (Unterminated string starting at: line 1 column 21 (char 20))"
    assert [(r["reason"], r["line"]) for r in rejects] == [
        (
            "an event the store refused: namespace 'Not A Namespace!' is refused",
            encode_entry(refused)[:-1].decode(),
        ),
        (f"{unreadable} (not a JSON object)", "[1]"),
        (torn, TORN.decode()),
        (torn, TORN.decode()),
    ]
    for record in rejects:
        at = datetime.fromisoformat(record["at"])
        assert at.utcoffset() == timedelta(0)
        assert before - timedelta(seconds=1) <= at <= datetime.now(UTC)
    where = spool.rejects_path
    size = len(encode_entry(refused)) - 1
    assert err.getvalue().splitlines() == [
        f"phi capture: set aside an event the store refused ({size} bytes; 1 kept in {where}):"
        " namespace 'Not A Namespace!' is refused",
        f"phi capture: set aside an unreadable spool line (3 bytes; 2 kept in {where}):"
        " not a spool record (not a JSON object)",
        f"phi capture: set aside an unreadable spool line ({len(TORN)} bytes; 3 kept in {where}):"
        " not a spool record (Unterminated string starting at: line 1 column 21 (char 20))",
        f"phi capture: set aside an unreadable spool line ({len(TORN)} bytes; 4 kept in {where}):"
        " not a spool record (Unterminated string starting at: line 1 column 21 (char 20))",
    ]
    assert capsys.readouterr().err == ""  # said where the caller asked, nowhere else
    assert (spool.pending(), spool.path.read_bytes()) == (0, b"")


def test_a_short_write_is_finished_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write may take fewer bytes than asked; the rest follows, each byte once."""
    spool = Spool(directory=tmp_path / "capture")
    real = os.write
    calls = []

    def short(fd: int, data: bytes) -> int:
        calls.append(len(data))
        assert len(calls) < 100, "append keeps writing"
        return real(fd, bytes(data[:10]))

    monkeypatch.setattr(os, "write", short)
    spool.append(entry(3, event="e3"))
    monkeypatch.undo()
    assert len(calls) > 1
    assert spool.path.read_bytes() == encode_entry(entry(3, event="e3"))


@pytest.mark.anyio
async def test_a_busy_store_stops_the_drain_and_the_events_wait(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """The events wait in the queue, in order, and are stored once under their own ids."""
    db = tmp_path / "memory.db"
    spool = Spool(directory=tmp_path / "capture")
    prompts = [
        SpoolEntry(
            namespace="dev",
            payload=json.dumps(
                {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": f"p{n}"}
            ),
            event=f"event-{n}",
        )
        for n in range(3)
    ]
    async with Memory(store=SQLiteStore(db, busy_timeout=0.2), embedder=minilm) as memory:
        spool.append(prompts[0])
        with spool.draining(wait_s=1):
            assert await drain_into(memory, spool, err=io.StringIO()) == 1
        spool.append(prompts[1])
        spool.append(prompts[2])
        holder = apsw.Connection(str(db))
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        err = io.StringIO()
        try:
            with spool.draining(wait_s=1):
                assert await drain_into(memory, spool, err=err) == 0
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert err.getvalue() == (
            f"phi capture: 2 event(s) queued for later: the store {str(db)!r} stayed locked by"
            " another process for over 0.2 s; try again when it is less busy\n"
        )
        assert spool.pending() == 2
        with spool.draining(wait_s=1):
            assert await drain_into(memory, spool, err=err) == 2
        # Stored again after a crash (the offset lost): the same event makes no new row.
        spool.append(prompts[2])
        with spool.draining(wait_s=1):
            assert await drain_into(memory, spool, err=err) == 1
        rows = [r async for r in memory.export()]
    assert [(r.content, r.meta["event"]) for r in rows] == [
        (f"user: p{n}", f"event-{n}") for n in range(3)
    ]
    assert [r.source_uris for r in rows] == [(f"capture://s/event-{n}",) for n in range(3)]


def test_the_drain_lock_waits_its_time_and_is_taken_when_released(tmp_path: Path) -> None:
    """A second drainer waits up to `wait_s` for the lock (not less, and without busy
    failing), takes it when the first lets go within that time, and is kept out when not."""
    import threading
    import time

    spool = Spool(directory=tmp_path)
    with spool.draining(wait_s=0) as first:
        assert first is True
        started = time.monotonic()
        with spool.draining(wait_s=0.3) as second:
            waited = time.monotonic() - started
        assert second is False
        assert 0.3 <= waited < 2.0

    outcome: list[tuple[bool, float]] = []
    held = threading.Event()

    def wait_for_it() -> None:
        held.wait()
        started = time.monotonic()
        with spool.draining(wait_s=5) as taken:
            outcome.append((taken, time.monotonic() - started))

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    with spool.draining(wait_s=0) as first:
        assert first is True
        held.set()
        time.sleep(0.3)
    waiter.join(timeout=10)
    [(taken, waited)] = outcome
    assert taken is True
    assert 0.2 <= waited < 2.0
    # Released again: the next drainer takes it at once.
    with spool.draining(wait_s=0) as again:
        assert again is True
