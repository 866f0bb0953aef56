"""The near-duplicate threshold, checked against real MiniLM similarities.

Contradictions and corrections must stay below the line (a NOOP there loses a
correction); some paraphrases land above it (each saves a model call); the rest go to the
model, which costs a call and loses nothing.
"""

from __future__ import annotations

import pytest

from phi.memory import MiniLMEmbedder
from phi.memory.learning import NEAR_DUPLICATE

pytestmark = pytest.mark.anyio

PARAPHRASES = [
    ("likes rust", "enjoys rust"),
    ("prefers to be called nate", "wants to be called nate"),
    ("has a dog named Max", "owns a dog called Max"),
    ("works as a nurse", "is a nurse by profession"),
    ("lives in Berlin", "is based in Berlin"),
    ("is learning to play the guitar", "is learning guitar"),
    ("enjoys hiking on weekends", "likes to go hiking on the weekend"),
]
CONTRADICTIONS = [
    ("prefers to be called nate", "prefers to be called nathan"),
    ("lives in Berlin", "lives in Paris"),
    ("has two kids", "has three kids"),
    ("likes rust", "dislikes rust"),
    ("likes rust", "likes python"),
    ("is vegetarian", "is no longer vegetarian"),
    ("works as a nurse", "used to work as a nurse, now a teacher"),
    ("has a dog named Max", "has a cat named Max"),
    ("is 30 years old", "is 31 years old"),
]


async def cosines(minilm: MiniLMEmbedder, pairs: list[tuple[str, str]]) -> list[float]:
    vectors = await minilm.embed([text for pair in pairs for text in pair])
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


async def test_threshold_sits_above_every_contradiction(minilm: MiniLMEmbedder) -> None:
    worst = max(await cosines(minilm, CONTRADICTIONS))
    assert 0.85 < worst < NEAR_DUPLICATE - 0.04


async def test_some_paraphrases_are_caught_without_a_model(minilm: MiniLMEmbedder) -> None:
    scores = await cosines(minilm, PARAPHRASES)
    assert min(scores) > 0.7
    assert 1 <= sum(s >= NEAR_DUPLICATE for s in scores) < len(scores)


FAR_CORRECTIONS = [
    ("works as a nurse", "quit their job"),
    ("is single", "got married last month"),
    ("likes rust", "stopped programming"),
]


async def test_corrections_can_look_unrelated(minilm: MiniLMEmbedder) -> None:
    """Why there is no "nothing similar -> ADD without a call" guard above zero candidates:
    a correction can score as low as an unrelated fact, and such a guard would lose it."""
    assert max(await cosines(minilm, FAR_CORRECTIONS)) < 0.3
