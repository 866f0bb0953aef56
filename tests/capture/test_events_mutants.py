"""The rules for a captured event's ids: what counts as blank, the event id, the row source."""

from __future__ import annotations

import pytest

from phi.capture.events import HOOK_EVENTS, capture_uri, is_blank, new_event_id


@pytest.mark.parametrize(
    "text", ["", " ", "\t\n\r", "\u200b", "\u3000", "\u2028\u2029", "\x00\x7f", "\ufeff "]
)
def test_text_that_shows_nothing_is_blank(text: str) -> None:
    assert is_blank(text)


@pytest.mark.parametrize("text", ["s", " s ", "\u200bs", "0", "\u00e9", "-", "\ud800"])
def test_text_that_shows_something_is_not_blank(text: str) -> None:
    assert not is_blank(text)


def test_event_ids_are_96_random_bits_in_hex() -> None:
    ids = {new_event_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 24 and int(i, 16) >= 0 for i in ids)


def test_a_row_source_names_the_session_and_the_event_escaped() -> None:
    assert capture_uri("s-1", "e1") == "capture://s-1/e1"
    # A slash in a session id cannot pass for the event part, nor a space break the URI.
    assert capture_uri("a/b c", "e/1") == "capture://a%2Fb%20c/e%2F1"
    # A lone surrogate reaches the store, which names it, instead of an encoding error here.
    assert capture_uri("\ud800", "e") == "capture://%ED%A0%80/e"


def test_the_hook_events_are_claude_codes() -> None:
    assert sorted(HOOK_EVENTS) == [
        "Notification",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "PreToolUse",
        "SessionEnd",
        "SessionStart",
        "Stop",
        "SubagentStop",
        "UserPromptSubmit",
    ]
