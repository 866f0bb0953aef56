"""The hook's fast path: the event handed to the resident process, importing almost nothing.

A host runs the hook command on every tool call, so what the hook process imports is what
the host waits for: a bare interpreter starts in tens of milliseconds, and `json`, `re`,
`dataclasses`, `phi.redact`... add as much again on a busy machine. When the resident
process (`phi.capture.resident`) is up, this module hands it the raw event instead, and the
resident does everything the full path would (check, redact, queue with fsync, answer);
this module imports only `os`, `time` and `_socket` (the C core of `socket`, without its
enums and selectors).

No event is lost or doubled. The hook gives the event its id here and sends it along; the
resident acknowledges (`queued`) only after the event is fsynced in the spool. Until that
acknowledgement the event is not the resident's: when the socket is missing, refused, cut,
or silent past `ACK_WAIT_S`, the caller falls back to the full path (`phi.capture._full`)
with the bytes already read and the same id, which queues the event and starts or nudges
the resident. If the resident did queue it (it died, or was slow, between its fsync and its
acknowledgement), the spool holds the event twice under one id, and storing it twice makes
the same rows once (`capture://<session>/<event>`), as a drainer killed mid-way does. The
resident also skips a request whose hook has already hung up (it fell back), which keeps
that window to the instant between its check and its fsync. After the acknowledgement a
failure only loses the answer, never the event.

Only the plain forms of the options take this path (`--host`, `--namespace`, `--budget`,
`--budget-tokens`, `--db`, `--spool`, each as `--opt VALUE` or `--opt=VALUE`); anything
else, and an event over `MAX_EVENT_BYTES`, goes the full way, which says what is wrong.

The wire format, over the resident's unix socket (the same socket, folder 0700, socket 0600,
peers of another user id refused):
- request: `hook1 <header bytes> <event bytes>\\n`, then the header (fields joined by NUL,
  which no argument, variable or path can hold: event id, host, `--namespace`,
  `$PHI_CAPTURE_PROJECT`, the hook's working folder, budget), then the event's bytes as read;
- replies: `queued <seconds>\\n` once the event is durable (how long an answer may still
  take), then `done <exit code> <stdout bytes> <stderr bytes>\\n` and those bytes; a refused
  event gets `done 1 0 <n>\\n` and its one-line error without `queued`.
"""

from __future__ import annotations

import _socket
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = [
    "ACK_WAIT_S",
    "MAX_EVENT_BYTES",
    "fast_options",
    "hand_over",
    "owned_privately",
    "resident_key",
    "socket_path",
]

MAX_EVENT_BYTES = 8 * 1024 * 1024
"""The largest event taken (the same as `phi.capture._check.MAX_EVENT_BYTES`, which a test
holds equal; importing it would import the checker)."""
ACK_WAIT_S = 1.0
"""How long the hook waits for the resident to say the event is queued. It takes a few
milliseconds when up; past this the hook queues the event itself (about 0.1-0.3 s more)."""
ANSWER_MARGIN_S = 0.5
"""Time allowed past the resident's own limit for an answer, for the reply to arrive."""
MAX_SOCKET_PATH = 100
"""A unix socket's path must fit `sun_path` (108 bytes on Linux, 104 on macOS)."""
MAX_REPLY_BYTES = 1 << 20
PROTOCOL = b"hook1"
_EMPTY_KEY = "e3b0c44298fc"
"""`resident_key(None)`: the first 12 hex digits of SHA-256 of nothing (a test checks it),
so a hook on the default store does not import `hashlib`."""
_VALUED = ("--host", "--namespace", "--budget", "--budget-tokens", "--db", "--spool")
_BUDGETS = (50, 20_000)


def resident_key(db: str | None) -> str:
    """The resident process's key for store `db`: one process per store."""
    if not db:
        return _EMPTY_KEY
    import hashlib

    return hashlib.sha256(db.encode()).hexdigest()[:12]


def default_spool_dir() -> str:
    """`$PHI_HOME/capture` (default `~/.phi/capture`), as `_run.default_spool_dir`."""
    home = os.path.expanduser(os.environ.get("PHI_HOME") or "~/.phi")
    return os.path.join(home, "capture")


def socket_path(spool_dir: str, db: str | None) -> str:
    """`<capture>/resident-<key>.sock`, or, when that path is too long for a socket, a 0700
    folder of this user's under the temporary folder."""
    key = resident_key(db)
    near = os.path.join(spool_dir, f"resident-{key}.sock")
    if len(os.fsencode(near)) <= MAX_SOCKET_PATH:
        return near
    import hashlib

    where = hashlib.sha256(os.fsencode(os.path.realpath(spool_dir))).hexdigest()[:16]
    return os.path.join(_temp_dir(), f"phi-{os.getuid()}", f"{where}-{key}.sock")


def _temp_dir() -> str:
    """The temporary folder as `tempfile.gettempdir` finds it on POSIX (`$TMPDIR`, `$TEMP`,
    `$TMP`, else `/tmp`), without importing `tempfile` (`shutil`, `random`, `re`...)."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        folder = os.environ.get(name)
        if folder and os.path.isdir(folder):
            return os.path.abspath(folder)
    return "/tmp"


def owned_privately(folder: str) -> bool:
    """Whether `folder` is a real folder of this user that no one else may enter: the
    socket's folder under the shared temporary folder could have been made by anyone, and
    a process of theirs listening in it would be heard as ours."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return False
    is_dir = (info.st_mode & 0o170000) == 0o040000
    return is_dir and info.st_uid == os.getuid() and not info.st_mode & 0o007


def fast_options(argv: list[str]) -> dict[str, str] | None:
    """The options in `argv` if all are of the plain forms this path takes, else `None`."""
    found: dict[str, str] = {}
    at = 0
    while at < len(argv):
        arg = argv[at]
        name, eq, value = arg.partition("=")
        if name not in _VALUED:
            return None
        if not eq:
            at += 1
            if at == len(argv):
                return None
            value = argv[at]
        key = "--budget" if name == "--budget-tokens" else name
        if not value or value.startswith("-") or key in found:
            return None  # argparse's rules decide (and say what is wrong)
        found[key] = value
        at += 1
    budget = found.get("--budget", "1500")
    if not budget.isdigit() or not _BUDGETS[0] <= int(budget) <= _BUDGETS[1]:
        return None
    found["--budget"] = str(int(budget))
    return found


class _Fallback(Exception):
    """The resident did not take the event: the full path must."""


def hand_over(
    argv: list[str], stdin: BinaryIO, *, out: BinaryIO, err: BinaryIO
) -> tuple[int | None, bytes | None, str | None]:
    """Give the hook event on `stdin` to the resident process.

    Returns `(exit code, _, _)` when the resident took it (its answer written to `out`, a
    refusal to `err`); else `(None, head, event id)` for the full path: `head` is what was
    read of `stdin` already (`None`: nothing), the event's start, to be read before the
    rest; the event is to be queued under that id (`None`: a new one)."""
    options = fast_options(argv)
    if options is None:
        return None, None, None
    spool = options.get("--spool") or default_spool_dir()
    if not os.path.isabs(spool):
        return None, None, None  # relative to which folder? the full path's rules
    path = socket_path(spool, options.get("--db"))
    if not owned_privately(os.path.dirname(path)):
        return None, None, None
    data = stdin.read(MAX_EVENT_BYTES + 1)
    if len(data) > MAX_EVENT_BYTES:
        return None, data, None  # the full path reads the rest, and says how large it was
    event = os.urandom(12).hex()  # as `events.new_event_id`
    header = b"\0".join(
        os.fsencode(field)
        for field in (
            event,
            options.get("--host", "claude-code"),
            options.get("--namespace", ""),
            os.environ.get("PHI_CAPTURE_PROJECT", ""),
            os.getcwd(),
            options["--budget"],
        )
    )
    try:
        code, answer, said = _exchange(path, header, data)
    except (_Fallback, OSError, ValueError):
        return None, data, event
    if answer:
        out.write(answer)
        out.flush()
    if said:
        err.write(said)
        err.flush()
    return code, None, event


def _exchange(path: str, header: bytes, data: bytes) -> tuple[int, bytes, bytes]:
    """The resident's `done` reply; `_Fallback` (or an `OSError`) while it has not said
    `queued`; once it has, a failure is an empty answer with exit 0."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ACK_WAIT_S)
        sock.connect(path)
        sock.sendall(b"%s %d %d\n" % (PROTOCOL, len(header), len(data)) + header + data)
        reply = _Reply(sock, time.monotonic() + ACK_WAIT_S)
        line = reply.line()
        if line.startswith(b"queued "):
            reply.deadline = time.monotonic() + float(line[7:]) + ANSWER_MARGIN_S
            try:
                line = reply.line()
            except (_Fallback, OSError, ValueError):
                return 0, b"", b""  # queued: only the answer is lost
            return _done(reply, line, queued=True)
        return _done(reply, line, queued=False)
    finally:
        sock.close()  # at once: the resident skips a request whose hook hung up


def _done(reply: _Reply, line: bytes, *, queued: bool) -> tuple[int, bytes, bytes]:
    parts = line.split(b" ")
    if len(parts) != 4 or parts[0] != b"done":
        if queued:
            return 0, b"", b""
        raise _Fallback(f"unexpected reply {line[:40]!r}")
    code, n_out, n_err = (int(part) for part in parts[1:])
    try:
        body = reply.exactly(n_out + n_err)
    except (_Fallback, OSError, ValueError):
        if queued:
            return 0, b"", b""
        raise
    # Never an exit code a host reads as "block this" (Claude Code: 2), whatever came back.
    return (code if code in (0, 1) else 1), body[:n_out], body[n_out:]


class _Reply:
    """The resident's reply, read against a deadline."""

    def __init__(self, sock: _socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.buffer = sock, deadline, b""

    def _more(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0 or len(self.buffer) > MAX_REPLY_BYTES:
            raise _Fallback("no whole reply in time")
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise _Fallback("the resident process closed the connection")
        self.buffer += chunk

    def line(self) -> bytes:
        while b"\n" not in self.buffer:
            self._more()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def exactly(self, size: int) -> bytes:
        if size > MAX_REPLY_BYTES:
            raise _Fallback("reply too large")
        while len(self.buffer) < size:
            self._more()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data
