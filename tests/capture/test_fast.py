"""The fast path's client (`phi.capture._fast`) on its own: what it sends, when it falls back
with the event intact, and what it makes of a resident's replies. The resident here is a
fake on a real unix socket (its replies are what is under test); `test_resident_fast.py`
runs the real one."""

from __future__ import annotations

import hashlib
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phi.capture import MAX_EVENT_BYTES
from phi.capture._fast import (
    ACK_WAIT_S,
    fast_options,
    hand_over,
    resident_key,
    socket_path,
)
from phi.capture._fast import MAX_EVENT_BYTES as FAST_MAX_EVENT_BYTES
from phi.capture._intake import done_frame, parse_head, parse_header, queued_frame
from phi.capture.resident import Resident

EVENT = b'{"hook_event_name": "Stop", "session_id": "s1"}'
HOOK = "from phi.capture.__main__ import run; run()"


def test_the_fast_path_agrees_with_the_full_one_on_limits_and_places(tmp_path: Path) -> None:
    assert FAST_MAX_EVENT_BYTES == MAX_EVENT_BYTES
    assert resident_key(None) == hashlib.sha256(b"").hexdigest()[:12]
    assert resident_key("/x/m.db") == hashlib.sha256(b"/x/m.db").hexdigest()[:12]
    for spool in (tmp_path / "capture", tmp_path / ("deep" * 30) / "capture"):
        for db in (None, str(tmp_path / "m.db")):
            found = Resident(spool_dir=spool, db=db).socket_path
            assert socket_path(str(spool), db) == str(found)
            assert len(os.fsencode(found)) <= 100


@pytest.mark.parametrize(
    ("argv", "taken"),
    [
        ([], {"--budget": "1500"}),
        (["--host", "gemini-cli"], {"--host": "gemini-cli", "--budget": "1500"}),
        (["--namespace=dev", "--budget-tokens", "800"], {"--namespace": "dev", "--budget": "800"}),
        (
            ["--db", "/m.db", "--spool", "/s"],
            {"--db": "/m.db", "--spool": "/s", "--budget": "1500"},
        ),
        (["--wait"], None),
        (["--no-recall"], None),
        (["--drain"], None),
        (["--resident", "--lock-fd", "3"], None),
        (["--namespace"], None),
        (["--namespace", "--wait"], None),
        (["--budget", "10"], None),
        (["--budget", "x"], None),
        (["--budget", "900", "--budget-tokens", "700"], None),
        (["--nam", "dev"], None),
        (["extra"], None),
    ],
)
def test_only_plain_options_take_the_fast_path(
    argv: list[str], taken: dict[str, str] | None
) -> None:
    assert fast_options(argv) == taken


@pytest.fixture
def spool() -> Iterator[Path]:
    """A capture folder whose path is short enough for the resident's socket to sit in it:
    past `MAX_SOCKET_PATH` the socket moves to the temporary folder, as it would under
    pytest-xdist's deeper `tmp_path` (`.../popen-gw0/<test>/capture`)."""
    with tempfile.TemporaryDirectory(prefix="phi-") as base:
        folder = Path(base) / "capture"
        folder.mkdir(mode=0o700)
        yield folder


FakeReply = Callable[[socket.socket, bytes, bytes], object]


@pytest.fixture
def fake(spool: Path) -> Iterator[Callable[[FakeReply], list[tuple[bytes, bytes]]]]:
    """A resident that takes one request and replies with the given function; yields the
    requests it got (header, event)."""
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def serve(reply: FakeReply) -> list[tuple[bytes, bytes]]:
        got: list[tuple[bytes, bytes]] = []
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        Path(socket_path(str(spool), None)).unlink(missing_ok=True)
        listener.bind(socket_path(str(spool), None))
        listener.listen()
        listeners.append(listener)

        def one() -> None:
            conn, _ = listener.accept()
            with conn:
                stream = conn.makefile("rb")
                header_size, event_size = parse_head(stream.readline().rstrip(b"\n"))
                header, event = stream.read(header_size), stream.read(event_size)
                got.append((header, event))
                reply(conn, header, event)

        thread = threading.Thread(target=one, daemon=True)
        thread.start()
        threads.append(thread)
        return got

    yield serve
    for thread in threads:
        thread.join(timeout=10)
    for listener in listeners:
        listener.close()


def over(argv: list[str], stdin: bytes) -> tuple[int | None, bytes, str | None, bytes, bytes]:
    """The fast path's outcome, with the event as the full path would read it after."""
    out, err, source = io.BytesIO(), io.BytesIO(), io.BytesIO(stdin)
    code, head, event = hand_over(argv, source, out=out, err=err)
    return code, (head or b"") + source.read(), event, out.getvalue(), err.getvalue()


def test_with_no_resident_the_event_goes_back_whole(spool: Path) -> None:
    argv = ["--spool", str(spool)]
    code, rest, event, out, err = over(argv, EVENT)
    assert (code, rest, out, err) == (None, EVENT, b"", b"")
    assert event is not None and len(event) == 24 and set(event) <= set("0123456789abcdef")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(socket_path(str(spool), None))  # a process that died left its socket
    stale.close()
    assert over(argv, EVENT)[:2] == (None, EVENT)


def test_an_event_over_the_limit_goes_back_whole_unsent(
    spool: Path, fake: Callable[[FakeReply], list[tuple[bytes, bytes]]]
) -> None:
    huge = b" " * MAX_EVENT_BYTES + EVENT
    code, rest, event, _, _ = over(["--spool", str(spool)], huge)
    assert (code, event) == (None, None)
    assert rest == huge
    # The full path reads it from its start, and says how large it was.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from phi.capture.__main__ import run; run()",
            "--spool",
            str(spool),
        ],
        input=huge,
        capture_output=True,
        check=False,
    )
    size = len(huge)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode() == (
        f"phi capture: hook event of {size} bytes is over the limit of {MAX_EVENT_BYTES};"
        " not captured\n"
    )


def test_a_socket_folder_others_may_enter_is_not_trusted(
    spool: Path, fake: Callable[[FakeReply], list[tuple[bytes, bytes]]]
) -> None:
    got = fake(lambda conn, _h, _e: conn.sendall(queued_frame(0) + done_frame(0)))
    assert Path(socket_path(str(spool), None)).parent == spool
    spool.chmod(0o755)
    try:
        assert over(["--spool", str(spool)], EVENT)[:2] == (None, EVENT)
    finally:
        spool.chmod(0o700)
    assert over(["--spool", str(spool)], EVENT)[0] == 0  # now it is taken: the fake ends
    assert len(got) == 1


def test_what_is_sent_names_the_event_and_how_the_hook_was_called(
    spool: Path,
    fake: Callable[[FakeReply], list[tuple[bytes, bytes]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    got = fake(lambda conn, _h, _e: conn.sendall(queued_frame(0) + done_frame(0)))
    monkeypatch.setenv("PHI_CAPTURE_PROJECT", "proj")
    argv = ["--spool", str(spool), "--namespace", "dev", "--host=gemini-cli"]
    code, _, event, out, err = over(argv, EVENT)
    assert (code, out, err) == (0, b"", b"")
    ((header, sent),) = got
    request = parse_header(header)
    assert sent == EVENT
    assert (request.event_id, request.host, request.namespace) == (event, "gemini-cli", "dev")
    assert (request.project, request.cwd, request.budget_tokens) == ("proj", os.getcwd(), 1500)


def test_the_answer_and_the_refusal_are_passed_on(
    spool: Path, fake: Callable[[FakeReply], list[tuple[bytes, bytes]]]
) -> None:
    fake(lambda conn, _h, _e: conn.sendall(queued_frame(1) + done_frame(0, out="context\n")))
    code, _, _, out, err = over(["--spool", str(spool)], EVENT)
    assert (code, out, err) == (0, b"context\n", b"")
    fake(lambda conn, _h, _e: conn.sendall(done_frame(1, err="phi capture: bad\n")))
    code, _, _, out, err = over(["--spool", str(spool)], EVENT)
    assert (code, out, err) == (1, b"", b"phi capture: bad\n")


def test_no_reply_makes_the_hook_exit_2(
    spool: Path, fake: Callable[[FakeReply], list[tuple[bytes, bytes]]]
) -> None:
    # Claude Code reads a hook's exit 2 as "block this": whatever a process on the socket says.
    fake(lambda conn, _h, _e: conn.sendall(done_frame(2, err="x\n")))
    assert over(["--spool", str(spool)], EVENT)[0] == 1


def test_a_cut_before_queued_falls_back_and_after_it_does_not(
    spool: Path, fake: Callable[[FakeReply], list[tuple[bytes, bytes]]]
) -> None:
    fake(lambda conn, _h, _e: None)  # closed without a word: not the resident's
    code, rest, event, _, _ = over(["--spool", str(spool)], EVENT)
    assert (code, rest) == (None, EVENT) and event is not None
    fake(lambda conn, _h, _e: conn.sendall(b"garbage\n"))
    assert over(["--spool", str(spool)], EVENT)[:2] == (None, EVENT)
    fake(lambda conn, _h, _e: conn.sendall(queued_frame(5)))  # then gone: the event is queued
    code, _, _, out, err = over(["--spool", str(spool)], EVENT)
    assert (code, out, err) == (0, b"", b"")


def test_a_silent_resident_is_given_up_on_after_the_ack_wait(
    spool: Path, fake: Callable[[FakeReply], list[tuple[bytes, bytes]]]
) -> None:
    release = threading.Event()
    fake(lambda conn, _h, _e: release.wait(30))
    started = time.monotonic()
    try:
        assert over(["--spool", str(spool)], EVENT)[:2] == (None, EVENT)
    finally:
        release.set()
    assert ACK_WAIT_S <= time.monotonic() - started < ACK_WAIT_S + 2


@pytest.mark.parametrize(
    "line",
    [b"hook1 1 2 3", b"hook2 1 2", b"hook1 -1 2", b"hook1 70000 2", b"hook1 1 99999999", b"{}"],
)
def test_a_request_line_out_of_form_is_refused(line: bytes) -> None:
    with pytest.raises(ValueError, match=r"not a hook request|over the limits"):
        parse_head(line)


@pytest.mark.parametrize(
    ("header", "says"),
    [
        (b"a\0b", "6 fields"),
        (b"xyz\0claude-code\0\0\0/\0" + b"1500", "24 hex digits"),
        (b"0" * 24 + b"\0claude-code\0\0\0/\0" + b"49", "out of range"),
        (b"0" * 24 + b"\0claude-code\0\0\0rel\0" + b"1500", "absolute path"),
    ],
)
def test_a_header_out_of_form_is_refused(header: bytes, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_header(header)
