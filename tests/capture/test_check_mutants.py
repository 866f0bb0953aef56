"""The hook's first look at an event, in process: each refusal's exact line and its bounds.

The subprocess tests (`test_bad_input.py`) show a host what it sees; these pin the same
contract where a mutation test can credit them: the one line a host shows its user
(`phi capture: <message>`, exit 1), the size limit to the byte and the nesting limit to the
level.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from phi.capture import BAD_EVENT_EXIT, MAX_EVENT_BYTES, CheckedEvent, HookOptions, check_event
from phi.capture import run_hook as hook
from phi.capture._check import MAX_NESTING, read_event
from phi.errors import InvalidInput


def refused(stdin: bytes, tmp_path: Path) -> str:
    """What the hook says about `stdin` (it must refuse it, queue nothing and print nothing)."""
    out, err = io.StringIO(), io.StringIO()
    options = HookOptions(spool_dir=tmp_path / "capture")
    assert hook(io.BytesIO(stdin), options, out=out, err=err) == BAD_EVENT_EXIT == 1
    assert out.getvalue() == ""
    assert not options.spool_dir.exists()
    return err.getvalue()


def event(**fields: object) -> str:
    return json.dumps({"hook_event_name": "Stop", "session_id": "s", **fields})


def nested(levels: int, *, opener: str = "[", closer: str = "]") -> str:
    """An event whose deepest value sits `levels` arrays (or objects) deep, the event itself
    the first of them."""
    inner = opener * (levels - 1) + ("1" if opener == '{"a": ' else "") + closer * (levels - 1)
    return '{"hook_event_name": "Stop", "session_id": "s", "deep": ' + inner + "}"


@pytest.mark.parametrize(
    ("stdin", "line"),
    [
        (b"", "hook event is empty; the host sends one JSON object on stdin"),
        (b" \n\t", "hook event is empty; the host sends one JSON object on stdin"),
        (
            b"not json",
            "hook event is not JSON: Expecting value: line 1 column 1 (char 0)",
        ),
        (b'["Stop"]', "hook event must be a JSON object, not list"),
        (b'"Stop"', "hook event must be a JSON object, not str"),
        (
            b'{"hook_event_name": "Begin", "session_id": "s"}',
            "unknown hook_event_name 'Begin'; expected one of Notification, PostToolUse, "
            "PostToolUseFailure, PreCompact, PreToolUse, SessionEnd, SessionStart, Stop, "
            "SubagentStop, UserPromptSubmit",
        ),
        (
            b'{"session_id": "s"}',
            "unknown hook_event_name None; expected one of Notification, PostToolUse, "
            "PostToolUseFailure, PreCompact, PreToolUse, SessionEnd, SessionStart, Stop, "
            "SubagentStop, UserPromptSubmit",
        ),
        (b'{"hook_event_name": "Stop"}', "hook event has no session_id"),
        (
            b'{"hook_event_name": "Stop", "session_id": null}',
            "hook event has no session_id",
        ),
        (
            b'{"hook_event_name": "Stop", "session_id": 7}',
            "session_id must be a string, not int",
        ),
        (
            b'{"hook_event_name": "Stop", "session_id": " \\u200b\\t"}',
            "hook event has a blank session_id ' \\u200b\\t'",
        ),
        (
            b'{"hook_event_name": "Stop", "session_id": ""}',
            "hook event has a blank session_id ''",
        ),
        (
            b'{"hook_event_name": "Stop", "session_id": "s\xfe"}',
            "hook event is not UTF-8 (byte 0xfe at offset 44)",
        ),
        (b"[" * 100_000, f"hook event is nested over {MAX_NESTING} levels deep"),
        (
            event(n=0).replace("0", "7" * 5000).encode(),
            f"hook event holds a number of over {sys.get_int_max_str_digits()} digits",
        ),
        (
            event(prompt="\ud800").encode(),
            "hook event holds a lone surrogate (an escape from \\ud800 to \\udfff); not text",
        ),
    ],
    # Plain ids: mutmut selects each test again by node id, in the process that collected
    # it, and pytest finds no test whose id it made from bytes (scripts/_mutate.py checks).
    ids=[
        "empty",
        "blank",
        "not-json",
        "list",
        "string",
        "unknown-name",
        "no-name",
        "no-session",
        "null-session",
        "int-session",
        "blank-session",
        "empty-session",
        "not-utf8",
        "too-deep",
        "huge-number",
        "lone-surrogate",
    ],
)
def test_each_refusal_is_one_exact_line(stdin: bytes, line: str, tmp_path: Path) -> None:
    assert refused(stdin, tmp_path) == f"phi capture: {line}\n"


def test_the_nesting_limit_is_exact() -> None:
    """Finding 11: the store's parser gives up a little past 200 levels, so 200 is taken and
    201 refused (in arrays and objects alike), and depth counts from the event itself."""
    assert check_event(nested(MAX_NESTING)) == CheckedEvent(name="Stop", cwd=None)
    with pytest.raises(InvalidInput, match=r"^hook event is nested over 200 levels deep$"):
        check_event(nested(MAX_NESTING + 1))
    objects = {"opener": '{"a": ', "closer": "}"}
    assert check_event(nested(MAX_NESTING, **objects)).name == "Stop"
    with pytest.raises(InvalidInput, match="nested over 200 levels"):
        check_event(nested(MAX_NESTING + 1, **objects))


def test_what_the_hook_takes_from_an_event() -> None:
    assert check_event(event(cwd="/src/app")) == CheckedEvent(name="Stop", cwd="/src/app")
    assert check_event(event(cwd="")) == CheckedEvent(name="Stop", cwd=None)
    assert check_event(event(cwd=7)) == CheckedEvent(name="Stop", cwd=None)
    start = json.dumps({"hook_event_name": "SessionStart", "session_id": "s"})
    assert check_event(start) == CheckedEvent(name="SessionStart", cwd=None)
    # A lone surrogate escaped in the JSON is refused; written as text it is fine.
    assert check_event(event(prompt="caf\u00e9 \U0001f600")).name == "Stop"


def test_the_size_limit_is_exact_to_the_byte() -> None:
    """An event of exactly `MAX_EVENT_BYTES` is read whole; one byte more is refused, with
    its true size (the rest is read too, so a host writing into the pipe is not blocked)."""
    body = event().encode()
    exact = b" " * (MAX_EVENT_BYTES - len(body)) + body
    assert read_event(io.BytesIO(exact)) == exact.decode()
    over = b" " * 3 * (1 << 20) + exact
    stream = io.BytesIO(over)
    with pytest.raises(InvalidInput) as caught:
        read_event(stream)
    assert str(caught.value) == (
        f"hook event of {len(over)} bytes is over the limit of {MAX_EVENT_BYTES}; not captured"
    )
    assert stream.read() == b""  # drained to the end
    one_over = b" " + exact
    with pytest.raises(InvalidInput, match=f"^hook event of {MAX_EVENT_BYTES + 1} bytes is"):
        read_event(io.BytesIO(one_over))


def test_a_deep_value_before_plain_ones_is_still_found() -> None:
    """Every value is looked into, whatever its place among the event's fields."""
    inner = "[" * MAX_NESTING + "]" * MAX_NESTING  # the event itself is the first level
    deep_first = '{"deep": ' + inner + ', "hook_event_name": "Stop", "session_id": "s"}'
    with pytest.raises(InvalidInput, match="nested over 200 levels"):
        check_event(deep_first)


class Pipe(io.BytesIO):
    """A host's pipe: what one read may ask for is recorded."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int | None] = []

    def read(self, size: int | None = -1, /) -> bytes:
        self.asked.append(size)
        return super().read(size)


def test_an_event_over_the_limit_is_never_held_whole() -> None:
    """Reading past the limit goes in chunks: a host's runaway output is counted, not held."""
    stream = Pipe(b" " * (MAX_EVENT_BYTES + 3 * (1 << 20)))
    with pytest.raises(InvalidInput, match="over the limit"):
        read_event(stream)
    assert stream.asked[0] == MAX_EVENT_BYTES + 1
    assert all(size is not None and 0 < size <= MAX_EVENT_BYTES + 1 for size in stream.asked)
