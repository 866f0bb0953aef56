"""The fast path's client (`phi.capture._fast`) at its edges: where it looks for the
resident's socket, which folder it trusts, the sizes and budgets it takes at exactly their
limits, what it sends when an option is left out, and how it reads a resident's reply (in
pieces, late, cut, malformed, flooding, too large).

Every case runs in this process (mutation testing credits only those) against a fake
resident on a real unix socket, as `test_fast.py` does; `test_resident_fast.py` runs the
real one. Each socket lives under a short folder of `/tmp` that is also `$TMPDIR`, so a
path too long for a socket falls back to a folder of the test's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phi.capture._fast import (
    ACK_WAIT_S,
    MAX_EVENT_BYTES,
    MAX_REPLY_BYTES,
    fast_options,
    hand_over,
    owned_privately,
    socket_path,
)
from phi.capture._intake import done_frame, parse_head, queued_frame
from tests.capture._sockets import short_tmpdir

EVENT = b'{"hook_event_name": "Stop", "session_id": "s1"}'
EMPTY_KEY = hashlib.sha256(b"").hexdigest()[:12]
NEAR_NAME = len(f"/resident-{EMPTY_KEY}.sock")
"""What `socket_path` adds to the capture folder when the socket lives there."""

Reply = Callable[[socket.socket], object]
Serve = Callable[..., list[tuple[bytes, bytes]]]


@pytest.fixture
def short(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private folder of `/tmp` that is `$TMPDIR` too, with this user's socket
    folder (`phi-<uid>`) in it: every socket path of a test fits `sun_path`."""
    with short_tmpdir(monkeypatch, prefix="phf") as folder:
        yield folder


@pytest.fixture
def spool(short: Path) -> Path:
    folder = short / "s"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def release() -> threading.Event:
    """Set at the end of a test: a fake that holds its connection open lets it go."""
    return threading.Event()


@pytest.fixture
def fake(spool: Path, release: threading.Event) -> Iterator[Serve]:
    """`fake(reply, at=path)`: a resident listening on `at` (default: the socket of `spool`
    and the default store) that reads one request and then runs `reply` on the connection;
    returns the requests it got (header, event)."""
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def serve(reply: Reply, at: str | None = None) -> list[tuple[bytes, bytes]]:
        path = at or socket_path(str(spool), None)
        got: list[tuple[bytes, bytes]] = []
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        Path(path).unlink(missing_ok=True)
        listener.bind(path)
        listener.listen()
        listeners.append(listener)

        def one() -> None:
            conn, _ = listener.accept()
            with conn:
                stream = conn.makefile("rb")
                header_size, event_size = parse_head(stream.readline().rstrip(b"\n"))
                got.append((stream.read(header_size), stream.read(event_size)))
                # The hook may hang up first: what it did then is what is under test.
                with contextlib.suppress(OSError):
                    reply(conn)

        thread = threading.Thread(target=one, daemon=True)
        thread.start()
        threads.append(thread)
        return got

    yield serve
    release.set()
    for thread in threads:
        thread.join(timeout=20)
    for listener in listeners:
        listener.close()


def over(
    argv: list[str], stdin: bytes = EVENT
) -> tuple[int | None, bytes, str | None, bytes, bytes]:
    """The fast path's outcome: exit code (`None`: the full path runs), the event as the
    full path would read it, the event id, and what reached stdout and stderr."""
    out, err, source = io.BytesIO(), io.BytesIO(), io.BytesIO(stdin)
    code, head, event = hand_over(argv, source, out=out, err=err)
    return code, (head or b"") + source.read(), event, out.getvalue(), err.getvalue()


def sends(*pieces: bytes, pause: float = 0.0) -> Reply:
    """A reply that sends `pieces` one after the other, `pause` seconds apart."""

    def reply(conn: socket.socket) -> None:
        for at, piece in enumerate(pieces):
            if at and pause:
                time.sleep(pause)
            conn.sendall(piece)

    return reply


# Where the socket is.


def test_the_socket_is_in_the_capture_folder_named_by_the_store(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    db_key = hashlib.sha256(db.encode()).hexdigest()[:12]
    assert socket_path("/s", None) == f"/s/resident-{EMPTY_KEY}.sock"
    assert socket_path("/s", db) == f"/s/resident-{db_key}.sock"


def test_a_socket_path_of_exactly_100_bytes_stays_in_the_capture_folder(short: Path) -> None:
    fits = "/" + "a" * (100 - NEAR_NAME - 1)
    assert socket_path(fits, None) == f"{fits}/resident-{EMPTY_KEY}.sock"
    assert len(os.fsencode(socket_path(fits, None))) == 100
    for longer in (fits + "a", fits[:-1] + "é"):  # bytes count, not characters
        assert socket_path(longer, None).startswith(f"{short}/phi-{os.getuid()}/")


def test_a_long_capture_folder_gets_its_socket_in_a_folder_of_the_user_under_tmpdir(
    short: Path, tmp_path: Path
) -> None:
    real = tmp_path / ("deep" * 30) / "capture"
    real.mkdir(parents=True)
    linked = tmp_path / ("link" * 20)
    linked.symlink_to(real)
    db = "/x/m.db"
    where = hashlib.sha256(os.fsencode(str(real.resolve()))).hexdigest()[:16]
    key = hashlib.sha256(db.encode()).hexdigest()[:12]
    expected = f"{short}/phi-{os.getuid()}/{where}-{key}.sock"
    assert socket_path(str(real), db) == expected
    # The same folder through a link has the same resident.
    assert socket_path(str(linked), db) == expected


@pytest.mark.parametrize("name", ["TMPDIR", "TEMP", "TMP"])
def test_the_temporary_folder_is_the_first_of_tmpdir_temp_tmp_that_exists(
    name: str, short: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_spool = "/" + "d" * 120
    for each in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(each, raising=False)
    order = ["TMPDIR", "TEMP", "TMP"]
    for earlier in order[: order.index(name)]:
        monkeypatch.setenv(earlier, str(short / "missing"))  # named but absent: skipped
    chosen = short / name.lower()
    chosen.mkdir()
    monkeypatch.setenv(name, str(chosen))
    for later in order[order.index(name) + 1 :]:
        monkeypatch.setenv(later, str(short))
    path = socket_path(long_spool, None)
    assert os.path.dirname(path) == f"{chosen}/phi-{os.getuid()}"
    # A relative folder is taken from the working folder.
    monkeypatch.chdir(short)
    monkeypatch.setenv(name, name.lower())
    assert socket_path(long_spool, None) == path


def test_with_no_temporary_folder_named_the_socket_goes_under_slash_tmp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    path = socket_path("/" + "d" * 120, None)
    assert os.path.dirname(path) == f"/tmp/phi-{os.getuid()}"


def test_a_long_capture_folder_reaches_the_resident_in_the_users_temporary_folder(
    short: Path, fake: Serve
) -> None:
    long_spool = short / ("x" * 90)
    long_spool.mkdir(mode=0o700)
    path = socket_path(str(long_spool), None)
    assert path.startswith(f"{short}/phi-{os.getuid()}/")
    got = fake(sends(queued_frame(0) + done_frame(0, out="hi\n")), at=path)
    code, _, _, out, _ = over(["--spool", str(long_spool)])
    assert (code, out, len(got)) == (0, b"hi\n", 1)


@pytest.mark.parametrize(
    ("variable", "under"), [("PHI_HOME", "h"), ("HOME", "u/.phi")], ids=["phi-home", "home"]
)
def test_without_spool_the_resident_of_phi_home_is_used(
    variable: str, under: str, short: Path, fake: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PHI_HOME", raising=False)
    monkeypatch.setenv("HOME", str(short / "u"))
    if variable == "PHI_HOME":
        monkeypatch.setenv("PHI_HOME", str(short / "h"))
    capture = short / under / "capture"
    capture.mkdir(mode=0o700, parents=True)
    got = fake(sends(queued_frame(0) + done_frame(0)), at=socket_path(str(capture), None))
    assert over([])[0] == 0
    assert [sent for _, sent in got] == [EVENT]


def test_the_resident_of_the_store_named_by_db_is_used(spool: Path, fake: Serve) -> None:
    db = str(spool.parent / "m.db")
    assert socket_path(str(spool), db) != socket_path(str(spool), None)
    got = fake(sends(queued_frame(0) + done_frame(0)), at=socket_path(str(spool), db))
    assert over(["--spool", str(spool), "--db", db])[0] == 0
    assert len(got) == 1


# Which socket folder is trusted.


def test_a_missing_folder_is_not_trusted(tmp_path: Path) -> None:
    assert not owned_privately(str(tmp_path / "missing"))


@pytest.mark.parametrize("mode", [0o701, 0o702, 0o704, 0o705, 0o707])
def test_a_folder_others_may_use_is_not_trusted(mode: int, spool: Path, fake: Serve) -> None:
    got = fake(sends(queued_frame(0) + done_frame(0)))
    spool.chmod(mode)
    try:
        assert not owned_privately(str(spool))
        assert over(["--spool", str(spool)])[:2] == (None, EVENT)
    finally:
        spool.chmod(0o700)
    assert over(["--spool", str(spool)])[0] == 0  # the fake ends
    assert len(got) == 1


def test_a_private_folder_with_an_acl_mask_is_trusted(spool: Path) -> None:
    # `private_dir` keeps an ACL mask's search bit (0710): the resident's own folder.
    spool.chmod(0o710)
    assert owned_privately(str(spool))
    spool.chmod(0o700)
    assert owned_privately(str(spool))


# Sizes and budgets at their limits.


@pytest.mark.parametrize(("budget", "taken"), [("50", True), ("20000", True), ("49", False)])
def test_the_budget_bounds_are_inclusive(budget: str, taken: bool) -> None:
    found = fast_options(["--budget", budget])
    assert (found == {"--budget": budget}) is taken
    assert fast_options(["--budget-tokens=20001"]) is None


def test_an_event_of_exactly_the_limit_is_handed_over_whole(spool: Path, fake: Serve) -> None:
    event = b"{" + b" " * (MAX_EVENT_BYTES - 2) + b"}"
    got = fake(sends(queued_frame(0) + done_frame(0)))
    code, _, _, _, _ = over(["--spool", str(spool)], event)
    assert code == 0
    assert len(got) == 1 and got[0][1] == event


def test_an_event_over_the_limit_is_read_one_byte_past_it_and_no_further(spool: Path) -> None:
    source = io.BytesIO(b"x" * (MAX_EVENT_BYTES + 1000))
    code, head, event = hand_over(
        ["--spool", str(spool)], source, out=io.BytesIO(), err=io.BytesIO()
    )
    assert (code, event) == (None, None)
    assert head is not None and len(head) == MAX_EVENT_BYTES + 1
    assert source.tell() == MAX_EVENT_BYTES + 1  # the full path reads on from there


def test_options_left_out_are_sent_as_their_defaults(spool: Path, fake: Serve) -> None:
    got = fake(sends(queued_frame(0) + done_frame(0)))
    code, _, event, _, _ = over(["--spool", str(spool)])
    assert code == 0 and event is not None
    ((header, _),) = got
    assert header.split(b"\0") == [
        event.encode(),
        b"claude-code",
        b"",  # no --namespace
        b"",  # no $PHI_CAPTURE_PROJECT
        os.fsencode(os.getcwd()),
        b"1500",
    ]


# The resident's reply.


def test_a_reply_in_pieces_is_put_together(spool: Path, fake: Serve) -> None:
    fake(sends(b"que", b"ued 5.000\ndo", b"ne 0 5 3\nhel", b"lo", b"err", pause=0.1))
    code, _, _, out, err = over(["--spool", str(spool)])
    assert (code, out, err) == (0, b"hello", b"err")


@pytest.mark.parametrize(
    ("wait", "delay"), [(0.0, 0.1), (2.0, 1.3)], ids=["margin-past-zero", "past-ack-wait"]
)
def test_an_answer_is_awaited_as_long_as_the_resident_said_plus_a_margin(
    wait: float, delay: float, spool: Path, fake: Serve
) -> None:
    fake(sends(queued_frame(wait), done_frame(0, out="late\n"), pause=delay))
    code, _, _, out, _ = over(["--spool", str(spool)])
    assert (code, out) == (0, b"late\n")


def test_an_answer_later_than_promised_is_given_up_without_falling_back(
    spool: Path, fake: Serve, release: threading.Event
) -> None:
    def silent(conn: socket.socket) -> None:
        conn.sendall(queued_frame(0.2))
        release.wait(12)

    fake(silent)
    started = time.monotonic()
    code, _, _, out, err = over(["--spool", str(spool)])
    assert (code, out, err) == (0, b"", b"")  # queued: the event is not taken again
    assert time.monotonic() - started < 0.2 + 0.5 + 2


@pytest.mark.parametrize(
    "reply",
    [b"garbage\n", b"oops 0 0 0\n", b"done 0 10 0\nabc", b"done 0 0 0 \n", b"done 0 0\n"],
    ids=["garbage", "not-done", "cut-body", "trailing-space", "three-fields"],
)
def test_after_queued_a_bad_reply_only_loses_the_answer(
    reply: bytes, spool: Path, fake: Serve
) -> None:
    fake(sends(queued_frame(5) + reply))
    code, _, event, out, err = over(["--spool", str(spool)])
    assert (code, out, err) == (0, b"", b"") and event is not None


@pytest.mark.parametrize(
    "reply",
    [
        b"oops 0 0 0\n",
        b"done 0 0\n",
        b"done 0 0 0 \n",
        b"done  0 0 0\n",
        b"done\t0\t0\t0\n",
        b"done 0 0 x\n",
        b"done 0 5 0\nabc",
    ],
    ids=["not-done", "three-fields", "trailing-space", "two-spaces", "tabs", "not-a-number", "cut"],
)
def test_before_queued_a_reply_out_of_form_falls_back_with_the_event(
    reply: bytes, spool: Path, fake: Serve
) -> None:
    fake(sends(reply))
    code, rest, event, out, err = over(["--spool", str(spool)])
    assert (code, rest, out, err) == (None, EVENT, b"", b"")
    assert event is not None  # the full path queues it under the id it was sent with


def test_an_answer_of_exactly_the_reply_limit_is_passed_on(spool: Path, fake: Serve) -> None:
    answer = "a" * (MAX_REPLY_BYTES - 4)
    fake(sends(queued_frame(5) + done_frame(0, out=answer, err="warn")))
    code, _, _, out, err = over(["--spool", str(spool)])
    assert (code, out, err) == (0, answer.encode(), b"warn")


def test_an_answer_over_the_reply_limit_is_not_taken(spool: Path, fake: Serve) -> None:
    answer = "a" * (MAX_REPLY_BYTES - 3)
    fake(sends(done_frame(0, out=answer, err="warn")))  # not queued: the full path runs
    assert over(["--spool", str(spool)])[:2] == (None, EVENT)
    fake(sends(queued_frame(5) + done_frame(0, out=answer, err="warn")))
    assert over(["--spool", str(spool)])[0::3] == (0, b"")


def test_a_resident_flooding_the_hook_is_cut_off_at_the_reply_limit(
    spool: Path, fake: Serve, release: threading.Event
) -> None:
    def flood(conn: socket.socket) -> None:
        conn.sendall(queued_frame(30) + b"x" * (16 * MAX_REPLY_BYTES))
        release.wait(12)

    fake(flood)
    started = time.monotonic()
    code, _, _, out, err = over(["--spool", str(spool)])
    assert (code, out, err) == (0, b"", b"")
    assert time.monotonic() - started < 8  # not the 30 s the resident asked for


def test_a_resident_that_takes_nothing_is_given_up_on_after_the_ack_wait(
    spool: Path, release: threading.Event
) -> None:
    # Listening but never accepting: the event fills the socket's buffer and the send waits.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path(str(spool), None))
    listener.listen()
    closer = threading.Timer(10, listener.close)  # lets a send without a limit end
    closer.start()
    event = b"{" + b" " * (4 << 20) + b"}"
    started = time.monotonic()
    try:
        assert over(["--spool", str(spool)], event)[:2] == (None, event)
        assert ACK_WAIT_S <= time.monotonic() - started < ACK_WAIT_S + 3
    finally:
        closer.cancel()
        listener.close()
