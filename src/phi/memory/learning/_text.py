"""Small text rules the learning passes share: normal forms, grounding, tags."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from phi.memory._stopwords import STOPWORDS
from phi.memory.model import MAX_TAGS

_WORD: Final = re.compile(r"[a-z0-9]+")
_NUMBER: Final = re.compile(r"\d+(?:[.,]\d+)?")
_STEM: Final = 5
"""Words are compared by their first five letters: `writing` and `writes` meet, and no
stemmer is needed for a check this coarse."""
MAX_TAG_CHARS: Final = 40


def normal_form(text: str) -> str:
    """Case, spacing and punctuation folded away: `Likes Rust.` and `likes rust` are equal."""
    return " ".join(_WORD.findall(text.casefold()))


def numbers(text: str) -> frozenset[str]:
    """The numbers a text states: `30 years old` and `31 years old` are not duplicates."""
    return frozenset(_NUMBER.findall(text))


def content_stems(text: str) -> frozenset[str]:
    return frozenset(
        word[:_STEM]
        for word in _WORD.findall(text.casefold())
        if word not in STOPWORDS and (len(word) >= 3 or word.isdigit())
    )


def grounded(claim: str, said: Iterable[str]) -> bool:
    """Whether `claim` shares a content word with what the person said.

    A cheap guard against a fact the model made up: an observation about a person must
    rest on at least one word of theirs. It drops a few true paraphrases ("I'm vegan" ->
    "eats no animal products"), which is the right side to err on.
    """
    spoken: set[str] = set()
    for text in said:
        spoken |= content_stems(text)
    return bool(content_stems(claim) & spoken)


def clean_tags(tags: Sequence[str], *, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Up to three short, lower-case, distinct tags."""
    cleaned = [" ".join(t.casefold().split())[:MAX_TAG_CHARS] for t in (*tags, *extra)]
    return tuple(dict.fromkeys(t for t in cleaned if t))[:MAX_TAGS]


def union(*groups: Sequence[str]) -> tuple[str, ...]:
    """Distinct values of every group, first seen first."""
    return tuple(dict.fromkeys(value for group in groups for value in group))
