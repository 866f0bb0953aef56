"""The resident's side of the fast path (`phi.capture._intake`) at its edges: the request
line and header taken at exactly their limits and refused with the line the resident's log
shows, an event taken (checked, queued under the hook's id, in the namespace the hook would
have chosen), and a hook that hung up told from one that waits.

In process, on a real spool and real sockets (`test_fast.py` sends these requests from the
hook's side; `test_resident_fast.py` runs the whole exchange).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from phi.capture._fast import MAX_EVENT_BYTES
from phi.capture._intake import (
    MAX_HEADER_BYTES,
    HookRequest,
    hung_up,
    parse_head,
    parse_header,
    take,
)
from phi.capture._run import HookOptions, Refused
from phi.capture.hosts import host_named
from phi.capture.project import project_namespace
from phi.capture.spool import Spool, SpoolEntry
from phi.errors import InvalidInput

EVENT_ID = "0123456789abcdef01234567"
"""Every hex digit: an id is any 24 of them."""


# The request line.


def test_a_request_line_at_exactly_the_limits_is_taken() -> None:
    assert parse_head(b"hook1 %d %d" % (MAX_HEADER_BYTES, MAX_EVENT_BYTES)) == (
        MAX_HEADER_BYTES,
        MAX_EVENT_BYTES,
    )
    assert parse_head(b"hook1 0 0") == (0, 0)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            b"hook1 %d 0" % (MAX_HEADER_BYTES + 1),
            f"hook request sizes {MAX_HEADER_BYTES + 1} and 0",
        ),
        (b"hook1 0 %d" % (MAX_EVENT_BYTES + 1), f"hook request sizes 0 and {MAX_EVENT_BYTES + 1}"),
    ],
    ids=["header", "event"],
)
def test_a_request_one_byte_over_a_limit_is_refused(line: bytes, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as refused:
        parse_head(line)
    assert str(refused.value) == f"{says} are over the limits"


@pytest.mark.parametrize(
    "line",
    [b"hook1  1 2", b"hook1 1 2 ", b" hook1 1 2", b"hook1\t1\t2"],
    ids=["two-spaces", "trailing-space", "leading-space", "tabs"],
)
def test_a_request_line_is_split_on_single_spaces_only(line: bytes) -> None:
    with pytest.raises(ValueError, match=r"^not a hook request: "):
        parse_head(line)


def test_the_log_quotes_at_most_40_bytes_of_a_line_that_is_no_request() -> None:
    line = b"GET / HTTP/1.1 " + b"x" * 100
    with pytest.raises(ValueError, match=r"^not a hook request") as refused:
        parse_head(line)
    assert str(refused.value) == f"not a hook request: {line[:40]!r}"


# The header.


def header(event_id: str = EVENT_ID, budget: str = "1500", cwd: str = "/w") -> bytes:
    return "\0".join([event_id, "claude-code", "", "", cwd, budget]).encode()


def test_a_header_with_every_hex_digit_and_either_budget_bound_is_taken() -> None:
    for budget in (50, 20_000):
        request = parse_header(header(budget=str(budget)))
        assert request == HookRequest(
            event_id=EVENT_ID,
            host="claude-code",
            namespace=None,
            project=None,
            cwd="/w",
            budget_tokens=budget,
        )


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("event_id", "abc", "a hook request's event id is 24 hex digits"),
        ("event_id", EVENT_ID + "0", "a hook request's event id is 24 hex digits"),
        ("event_id", "g" * 24, "a hook request's event id is 24 hex digits"),
        ("event_id", EVENT_ID.upper(), "a hook request's event id is 24 hex digits"),
        ("budget", "49", "budget '49' is out of range 50-20000"),
        ("budget", "20001", "budget '20001' is out of range 50-20000"),
        ("cwd", "w", "a hook request's working folder is an absolute path"),
    ],
    ids=["short-id", "long-id", "not-hex", "upper-case", "budget-49", "budget-20001", "rel-cwd"],
)
def test_a_header_field_out_of_form_is_refused_in_one_line(
    field: str, value: str, says: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as refused:
        parse_header(header(**{field: value}))
    assert str(refused.value) == says


# Taking the event.


@pytest.fixture
def spool_dir(tmp_path: Path) -> Path:
    return tmp_path / "capture"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The hook's working folder: a project outside any repository."""
    folder = tmp_path / "proj-x"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def resident_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The resident's own environment names another project: only the hook's may count.
    monkeypatch.setenv("PHI_CAPTURE_PROJECT", "the-residents-own")


def queued(spool_dir: Path) -> list[SpoolEntry]:
    spool, found = Spool(directory=spool_dir), []

    async def keep(entry: SpoolEntry) -> bool:
        found.append(entry)
        return True

    with spool.draining(wait_s=0) as mine:
        assert mine
        anyio.run(spool.drain, keep)
    return found


def prompt(name: str = "UserPromptSubmit", **fields: object) -> bytes:
    return json.dumps(
        {"hook_event_name": name, "session_id": "s1", "prompt": "hi", **fields}
    ).encode()


def request(
    folder: Path,
    *,
    host: str = "claude-code",
    namespace: str | None = None,
    project: str | None = None,
) -> HookRequest:
    """How a hook in `folder` was called (by default no `--namespace`, no
    `$PHI_CAPTURE_PROJECT`)."""
    return HookRequest(
        event_id=EVENT_ID,
        host=host,
        namespace=namespace,
        project=project,
        cwd=str(folder),
        budget_tokens=800,
    )


def test_an_event_is_taken_as_the_hook_was_called_and_queued_under_its_id(
    spool_dir: Path, project: Path
) -> None:
    called = request(project, namespace="dev", host="gemini-cli")
    event, entry, options = take(called, prompt("BeforeAgent"), spool_dir=spool_dir, db="/x/m.db")
    assert options == HookOptions(
        spool_dir=spool_dir,
        db="/x/m.db",
        namespace="dev",
        budget_tokens=800,
        host=host_named("gemini-cli"),
        recall=True,
        event_id=EVENT_ID,
    )
    assert (event.name, entry.event, entry.namespace) == ("UserPromptSubmit", EVENT_ID, "dev")
    assert queued(spool_dir) == [entry]


def test_an_event_without_a_namespace_goes_to_the_project_the_hook_named(
    spool_dir: Path, project: Path
) -> None:
    _, entry, _ = take(request(project, project="team-x"), prompt(), spool_dir=spool_dir, db=None)
    assert entry.namespace == "team-x"
    assert [e.namespace for e in queued(spool_dir)] == ["team-x"]


def test_an_event_without_namespace_or_project_goes_to_the_hooks_folder(
    spool_dir: Path, project: Path
) -> None:
    # Not the resident's working folder, nor the project its own environment names.
    _, entry, _ = take(request(project), prompt(), spool_dir=spool_dir, db=None)
    assert entry.namespace == project_namespace(project)
    (sub := project / "sub").mkdir()
    _, entry, _ = take(request(project), prompt(cwd="sub"), spool_dir=spool_dir, db=None)
    assert entry.namespace == project_namespace(sub)  # an event's own folder is the hook's


def test_an_unknown_host_is_refused_with_the_list_of_hosts_and_nothing_queued(
    spool_dir: Path, project: Path
) -> None:
    with pytest.raises(InvalidInput) as unknown:
        host_named("nope")
    with pytest.raises(Refused) as refused:
        take(request(project, host="nope"), prompt(), spool_dir=spool_dir, db=None)
    assert str(refused.value) == str(unknown.value)
    assert "claude-code" in str(refused.value)
    assert queued(spool_dir) == []


def test_a_bad_event_is_refused_and_nothing_queued(spool_dir: Path, project: Path) -> None:
    with pytest.raises(Refused):
        take(request(project), b"not json", spool_dir=spool_dir, db=None)
    assert queued(spool_dir) == []


# Whether the hook is still there.


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the resident's end, non-blocking as anyio's; the hook's end)."""
    resident, hook = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    resident.setblocking(False)
    yield resident, hook
    resident.close()
    hook.close()


def test_a_hook_that_waits_has_not_hung_up(pair: tuple[socket.socket, socket.socket]) -> None:
    resident, hook = pair
    assert not hung_up(resident)
    hook.sendall(b"x")  # more than the request: still there, and the byte is left unread
    assert not hung_up(resident)
    assert resident.recv(2) == b"x"


def test_a_hook_that_closed_has_hung_up(pair: tuple[socket.socket, socket.socket]) -> None:
    resident, hook = pair
    hook.close()
    assert hung_up(resident)


def test_a_hook_whose_connection_was_reset_has_hung_up(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    resident, hook = pair
    resident.sendall(b"unread")
    hook.close()  # with bytes it never read: the resident's end is reset
    assert hung_up(resident)
