"""The guard against degenerate text: what phi writes is never posted when it is empty, an
echo of the post it answers, or a loop.

Tiny models fail in these three ways (SmolLM2 answered "hi, i'm alice. what do you
remember about me?" to alice's own words, ran into "i'm a cat. i'm a cat. i'm a cat.",
and posted "..."); a frontier model rarely does, but one check covers every brain. The
posting tools call `refuse_degenerate`, so every path that posts (replies, `post`, musing,
`/post-now`, `phi run`) goes through it.

The thresholds were measured on the `phi bench brain` cases and the failures quoted above:
a real answer to a post shares at most a third of its word trigrams with it (greetings
such as "hi alice! i'm well, thanks" share none), an echo shares nearly all.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Final, Literal

from pydantic_ai import ModelRetry, RunContext

from phi.agent.deps import PhiDeps
from phi.agent.outcomes import Refused

__all__ = ["ECHO_SHARE", "Degenerate", "degenerate", "refuse_degenerate"]


ECHO_SHARE: Final = 0.6
"""Share of a reply's word trigrams found in the post it answers above which it is an echo."""
_ECHO_MIN_WORDS: Final = 4
"""Shorter replies ("hi alice!") are not judged as echoes: too few words to tell."""
_REPEATS: Final = ((3, 3), (5, 2))
"""(n, times): any word n-gram occurring this often is a loop."""
_WORD_RUN: Final = 3
"""One word this many times in a row ("hello, hello, hello") is a loop too."""
_ONE_WORD_SHARE: Final = 0.6
"""A text of at least `_WORD_RUN` uses of one word that make this share of its words is a
loop however they are separated ("Hello, hello!</br>Hello, hello!")."""
_CHAR_RUN: Final = re.compile(r"(.)\1{7,}")
"""One character eight times in a row ("1000000000", "!!!!!!!!")."""
_WORD: Final = re.compile(r"[\w']+")


@dataclass(frozen=True, kw_only=True)
class Degenerate:
    """Why a text is not posted."""

    reason: Literal["empty", "echo", "loop"]
    """Which failure it is."""
    detail: str
    """One line saying what was found, for the log and the activity output."""


def degenerate(text: str, *, answering: str | None = None) -> Degenerate | None:
    """Why `text` must not be posted, or None when it may.

    Args:
        text: What phi would post.
        answering: The post it replies to, if any (for the echo check).
    """
    words = _words(text)
    if not words:
        return Degenerate(reason="empty", detail=f"no words in {_shown(text)}")
    if run := _CHAR_RUN.search(text):
        return Degenerate(
            reason="loop", detail=f"{run.group(1)!r} repeated {len(run.group(0))} times"
        )
    for start in range(len(words) - _WORD_RUN + 1):
        if len(set(words[start : start + _WORD_RUN])) == 1:
            return Degenerate(reason="loop", detail=f"{words[start]!r} {_WORD_RUN} times in a row")
    (common, uses), *_ = Counter(words).most_common(1)
    if uses >= _WORD_RUN and uses >= _ONE_WORD_SHARE * len(words):
        return Degenerate(reason="loop", detail=f"{common!r} is {uses} of its {len(words)} words")
    for n, times in _REPEATS:
        counts = Counter(_ngrams(words, n))
        if counts:
            gram, count = counts.most_common(1)[0]
            if count >= times:
                return Degenerate(
                    reason="loop", detail=f"{' '.join(gram)!r} repeated {count} times"
                )
    if answering is not None and len(words) >= _ECHO_MIN_WORDS:
        share = echo_share(text, answering)
        if share >= ECHO_SHARE:
            return Degenerate(
                reason="echo", detail=f"{share:.0%} of its word trigrams repeat the post it answers"
            )
    return None


def echo_share(text: str, answering: str) -> float:
    """Share of `text`'s word trigrams (bigrams for short texts) that occur in `answering`."""
    words, source = _words(text), _words(answering)
    n = 3 if len(words) >= 6 else 2
    grams = _ngrams(words, n)
    if not grams:
        return 0.0
    theirs = set(_ngrams(source, n))
    return sum(1 for gram in grams if gram in theirs) / len(grams)


def refuse_degenerate(
    ctx: RunContext[PhiDeps], tool: str, text: str, *, answering: str | None = None
) -> Refused | None:
    """None when `text` may be posted; otherwise say why in the log and the activity output
    and refuse it: first as a retry (the model writes again, the local brain with other
    sampling), then, with the tool's retries spent, as the tool's result, so the run ends
    without posting instead of failing.

    Raises:
        ModelRetry: The text is degenerate and the tool may still be retried.
    """
    bad = degenerate(text, answering=answering)
    if bad is None:
        return None
    line = f"{tool} not posted ({bad.reason}: {bad.detail}): {_shown(text)}"
    # One channel: the activity stream, which `phi run` logs and the sandbox prints. A log
    # line here as well printed every refusal twice.
    ctx.deps.activity.record(line)
    if ctx.retry < ctx.max_retries:
        raise ModelRetry(
            f"not posted: {bad.reason} ({bad.detail}). write something of your own, in new words"
        )
    return Refused(refused=f"not posted: {bad.reason} ({bad.detail})")


def _words(text: str) -> list[str]:
    # Handles (@phi.test) are addressing, not content; an apostrophe alone is no word.
    found = _WORD.findall(re.sub(r"@[\w.:-]+", " ", text.lower()))
    return [w for w in found if any(c.isalnum() for c in w)]


def _ngrams(words: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 120 else flat[:119] + "…")
