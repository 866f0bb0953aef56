"""The hook's first look at an event: refuse what could never be stored, before queueing it.

Cheap on purpose (a hook runs on every tool call): the standard library's JSON parser and a
few checks, no pydantic. Every refusal is an `InvalidInput` with one line saying what is
wrong; the full validation happens when the event is stored, and an event refused there is
set aside, not lost.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import BinaryIO, Final

from phi.capture.events import HOOK_EVENTS, is_blank
from phi.errors import InvalidInput

__all__ = ["MAX_EVENT_BYTES", "MAX_NESTING", "CheckedEvent", "check_event", "read_event"]

MAX_EVENT_BYTES: Final = 8 * 1024 * 1024
"""The largest event taken. Claude Code clips tool output far below this; what is larger is
a whole generated file in a `Write`, and a row keeps 4,000 characters of it anyway."""
MAX_NESTING: Final = 200
"""How deep arrays and objects may nest. The store's parser (pydantic) gives up a little
past this, so a deeper event would only be refused later, when nobody sees why."""
_CHUNK: Final = 1 << 20


@dataclass(frozen=True, kw_only=True)
class CheckedEvent:
    """What the hook needs of an event it took."""

    name: str
    """`hook_event_name`, one of `HOOK_EVENTS`."""
    cwd: str | None
    """The host's working folder, if it sent one (a session start's preload hint)."""


def read_event(stream: BinaryIO) -> str:
    """The event on `stream` as text: at most `MAX_EVENT_BYTES` of UTF-8.

    Raises:
        InvalidInput: the event is larger, or its bytes are not UTF-8.
    """
    data = stream.read(MAX_EVENT_BYTES + 1)
    if len(data) > MAX_EVENT_BYTES:
        # Read the rest too: a host writing into a pipe nobody reads would fail or hang.
        size = len(data) + sum(len(chunk) for chunk in iter(lambda: stream.read(_CHUNK), b""))
        raise InvalidInput(
            f"hook event of {size} bytes is over the limit of {MAX_EVENT_BYTES}; not captured"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"hook event is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None


def check_event(payload: str) -> CheckedEvent:
    """The event in `payload`, or `InvalidInput` naming the first thing wrong with it."""
    if not payload.strip():
        raise InvalidInput("hook event is empty; the host sends one JSON object on stdin")
    event = _parse(payload)
    if not isinstance(event, dict):
        raise InvalidInput(f"hook event must be a JSON object, not {type(event).__name__}")
    name = event.get("hook_event_name")
    if name not in HOOK_EVENTS:
        raise InvalidInput(
            f"unknown hook_event_name {name!r}; expected one of {', '.join(sorted(HOOK_EVENTS))}"
        )
    session = event.get("session_id")
    if session is None:
        raise InvalidInput("hook event has no session_id")
    if not isinstance(session, str):
        raise InvalidInput(f"session_id must be a string, not {type(session).__name__}")
    if is_blank(session):
        raise InvalidInput(f"hook event has a blank session_id {session!r}")
    cwd = event.get("cwd")
    return CheckedEvent(name=str(name), cwd=cwd if isinstance(cwd, str) and cwd else None)


def _parse(payload: str) -> object:
    try:
        event = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"hook event is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput(f"hook event is nested over {MAX_NESTING} levels deep") from None
    except ValueError:  # Python refuses to read a number of thousands of digits
        raise InvalidInput(
            f"hook event holds a number of over {sys.get_int_max_str_digits()} digits"
        ) from None
    if _deeper_than(event, MAX_NESTING):
        raise InvalidInput(f"hook event is nested over {MAX_NESTING} levels deep")
    try:
        json.dumps(event, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise InvalidInput(
            "hook event holds a lone surrogate (an escape from \\ud800 to \\udfff); not text"
        ) from None
    return event


def _deeper_than(value: object, limit: int) -> bool:
    """Whether arrays and objects in `value` nest more than `limit` deep (no recursion:
    `value` came from outside)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
