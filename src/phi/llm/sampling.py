"""Sampling that keeps a tiny model from echoing and looping, in llama.cpp's own terms.

SmolLM2-135M answers most posts by copying them ("hi, i'm alice. what do you remember
about me?" to alice's own words) and falls into loops on longer answers. Two llama.cpp
samplers address exactly these, measured with `phi bench brain` (16 of 20 degenerate
replies at the old defaults, 4 with these):

- a negative logit bias on the words of the posts being answered, so the model writes its
  own words (the people's names stay free: greeting someone by name is no echo);
- DRY ("don't repeat yourself"), which penalises extending any token sequence that already
  occurred in the context, the loops' mechanism.

Both are fields of llama.cpp's chat-completions API (its string form of `logit_bias` and
the `dry_*` fields); servers other than llama.cpp may refuse them, so only the in-process
model uses them by default.

Which posts are being answered is the run's business, not the model's: the agent sets it
for the duration of a run with `answering(...)` and the adapter reads it when it asks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

from phi.llm._chat import ChatRequest

__all__ = ["Answering", "SmallModelSampling", "answering", "current_answering", "echo_bias"]

_WORD: Final = re.compile(r"[\w']+")


@dataclass(frozen=True, kw_only=True)
class Answering:
    """What a run answers: the posts' texts and the names that may be said back."""

    texts: tuple[str, ...]
    names: frozenset[str] = frozenset()
    """Lower-case names (handles' first labels) exempt from the bias."""


_ANSWERING: ContextVar[Answering | None] = ContextVar("phi_answering", default=None)


@contextmanager
def answering(texts: Iterable[str], *, names: Iterable[str] = ()) -> Iterator[None]:
    """Within this block, model requests answer these posts (see `SmallModelSampling`)."""
    token = _ANSWERING.set(Answering(texts=tuple(texts), names=frozenset(n.lower() for n in names)))
    try:
        yield
    finally:
        _ANSWERING.reset(token)


def current_answering() -> Answering | None:
    """The posts the current run answers, if it said."""
    return _ANSWERING.get()


@dataclass(frozen=True, kw_only=True)
class SmallModelSampling:
    """llama.cpp sampler settings for a tiny model (the defaults were chosen with
    `phi bench brain`; see the README's table)."""

    echo_bias: float = -5.0
    """Logit bias on each token of the answered posts' words: strong enough that the
    model rarely copies a phrase, weak enough that a word it needs can still come."""
    dry_multiplier: float = 0.8
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    """Repeats up to this many tokens go unpunished (names, "i'm")."""
    dry_penalty_last_n: int = 4096
    """How far back DRY looks, in tokens: the whole prompt, so the posts in it count."""
    dry_sequence_breakers: tuple[str, ...] = ("\n", ":", '"', "*", "/", ".", "@")
    """Where a repeated sequence stops counting: llama.cpp's defaults plus the separators
    of URIs and handles, which a decision must copy exactly from the prompt."""

    def apply(
        self, request: ChatRequest, now: Answering | None, *, refused: Sequence[str] = ()
    ) -> None:
        """Add these settings' fields to `request`, biased against `now`'s posts and
        against `refused`, texts of the model's own that were sent back (asked again, a
        tiny model otherwise writes the same words: "hello, hello, hello" three times)."""
        request["dry_multiplier"] = self.dry_multiplier
        request["dry_base"] = self.dry_base
        request["dry_allowed_length"] = self.dry_allowed_length
        request["dry_penalty_last_n"] = self.dry_penalty_last_n
        request["dry_sequence_breakers"] = list(self.dry_sequence_breakers)
        if refused:
            base = now or Answering(texts=())
            now = Answering(texts=(*base.texts, *refused), names=base.names)
        if now is not None and (bias := echo_bias(now, self.echo_bias)):
            request["logit_bias"] = bias


def echo_bias(now: Answering, bias: float) -> list[list[str | float]]:
    """llama.cpp `logit_bias` pairs (a string biases every token it splits into) for the
    words of the answered posts, as they may start a word or continue one, lower-case and
    capitalised; the names in `now.names` are left out."""
    words = {w.lower() for text in now.texts for w in _WORD.findall(text)} - now.names
    pairs: list[list[str | float]] = []
    for word in sorted(words):
        for form in sorted({word, word.capitalize()}):
            pairs += [[form, bias], [f" {form}", bias]]
    if any("@" in text for text in now.texts):
        pairs.append(["@", bias])  # a reply never needs to open with a mention
    return pairs
