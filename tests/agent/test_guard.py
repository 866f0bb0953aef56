"""The degenerate-text guard on its own: what counts as empty, an echo or a loop."""

from __future__ import annotations

import pytest

from phi.agent.guard import ECHO_SHARE, Degenerate, degenerate, echo_share

ALICE = "@phi.test hi phi! i'm alice. what do you remember about me?"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("...", "empty"),
        ("…", "empty"),
        ("  \n ", "empty"),
        ("...'}", "empty"),  # posted by the tiny model in a musing: quotes are not words
        ("' ' '", "empty"),
        ("i'm a cat. i'm a cat. i'm a cat.", "loop"),
        ("hello there friend. i like birds. hello there friend. i like birds.", "loop"),
        ("…(10 posts) (1000000000…", "loop"),
        ("yes!!!!!!!!!!", "loop"),
        ("hello, hello, hello, hello", "loop"),  # posted by the tiny model in the sandbox
        ("no no no", "loop"),
        ("Hello, hello!</br>Hello, hello!", "loop"),  # posted by the tiny model too
    ],
)
def test_empty_and_looping_text_is_degenerate(text: str, reason: str) -> None:
    bad = degenerate(text)
    assert bad is not None and bad.reason == reason, bad


def test_an_echo_of_the_post_it_answers_is_degenerate() -> None:
    # SmolLM2's answer to alice in the issue, word for word.
    bad = degenerate("hi, i'm alice. what do you remember about me?", answering=ALICE)
    assert bad == Degenerate(
        reason="echo", detail="86% of its word trigrams repeat the post it answers"
    )


@pytest.mark.parametrize(
    "text",
    [
        "hi alice! nice to meet you. i don't remember anything about you yet.",
        "hi alice!",
        "this is our first talk, alice: tell me what you like and i'll keep it in mind.",
        "hello alice, i remember nothing yet — what should i know about you?",
        "that that is, is. hello hello!",
    ],
)
def test_real_answers_pass(text: str) -> None:
    assert degenerate(text, answering=ALICE) is None
    assert echo_share(text, ALICE) < ECHO_SHARE


def test_the_same_words_are_fine_when_not_answering_anything() -> None:
    text = "what do you remember about me? i'm alice."
    assert degenerate(text) is None
    assert degenerate(text, answering=ALICE) is not None
