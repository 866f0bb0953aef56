"""How the coding-memory benchmark judges what a hook injected: pure functions.

The context is split into entries: a line that does not start with white space begins one,
indented lines continue it, blank lines end it. A decision is *present* when one entry holds
all its tokens (case-insensitive). An entry *leaks* when it holds a marker (a word, a path
part, a session id) of a project other than the one the hook ran in; the generator checks
that no project's own events contain another's markers, so each hit is phi's doing.
Identifiers (UUIDs such as row ids, hex runs such as short session ids, tool-use ids) are
random: a marker is never looked for inside one (a row id holding `7250` is no leak of the
project whose marker that is), and a session-id marker counts only as a whole identifier. A
reversed decision is *stale* when an entry holds its tokens, not its replacement's, and no
word saying it was superseded (`MARKS`); the generated events contain none of those words.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "IDENTIFIER",
    "MARKS",
    "Judgement",
    "entries",
    "estimate_tokens",
    "injected_context",
    "judge",
    "leaks",
    "mask_identifiers",
    "percentile",
    "present",
    "stale",
]

MARKS: Final = re.compile(
    r"\b(supersede[sd]?|superseding|replaced|reversed|outdated|obsolete|older|no longer"
    r"|previously|formerly|overridden|stale|was changed|changed later)\b",
    re.IGNORECASE,
)
"""Words that mark an entry as not current."""
IDENTIFIER: Final = re.compile(
    r"\b(?:[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{8,}|toolu_\w+)\b", re.IGNORECASE
)
"""A random identifier: a UUID (row and session ids), a run of eight or more hex digits (a
short session id), a tool-use id."""


def mask_identifiers(text: str) -> str:
    """`text` with every identifier replaced by a space: what is left is content."""
    return IDENTIFIER.sub(" ", text)


def _holds_marker(entry: str, marker: str) -> bool:
    if IDENTIFIER.fullmatch(marker):  # a session id: only the whole identifier counts
        return marker.lower() in {found.lower() for found in IDENTIFIER.findall(entry)}
    return marker.lower() in mask_identifiers(entry).lower()


def injected_context(stdout: str) -> str:
    """What Claude Code adds to the model's context from a hook's stdout (exit 0).

    JSON with `hookSpecificOutput.additionalContext` gives that text; any other JSON object
    gives nothing (the host reads it as control output); anything else is added as is.
    """
    text = stdout.strip()
    if not text:
        return ""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(parsed, dict):
        return text
    specific = parsed.get("hookSpecificOutput")
    if isinstance(specific, dict) and isinstance(specific.get("additionalContext"), str):
        return str(specific["additionalContext"]).strip()
    return ""


def entries(context: str) -> list[str]:
    """The context split into entries (see the module's docstring)."""
    found: list[list[str]] = []
    open_entry = False
    for line in context.splitlines():
        if not line.strip():
            open_entry = False
        elif line[0].isspace() and open_entry:
            found[-1].append(line)
        else:
            found.append([line])
            open_entry = True
    return ["\n".join(lines) for lines in found]


def _holds_all(entry: str, tokens: Sequence[str]) -> bool:
    lowered = entry.lower()
    return all(token.lower() in lowered for token in tokens)


def present(context: str, tokens: Sequence[str]) -> bool:
    """True when one entry of `context` holds every token."""
    return any(_holds_all(entry, tokens) for entry in entries(context))


def leaks(context: str, project: str, markers: Mapping[str, Sequence[str]]) -> list[str]:
    """The entries holding a marker of a project other than `project`."""
    return [
        entry
        for entry in entries(context)
        if any(
            _holds_marker(entry, marker)
            for other, words in markers.items()
            if other != project
            for marker in words
        )
    ]


def stale(context: str, old: Sequence[str], new: Sequence[str]) -> list[str]:
    """The entries showing the reversed decision (tokens `old`) as if it still held."""
    return [
        entry
        for entry in entries(context)
        if _holds_all(entry, old) and not _holds_all(entry, new) and not MARKS.search(entry)
    ]


def estimate_tokens(text: str) -> int:
    """About four characters a token, as phi's own budget counts (`phi.memory.preload`)."""
    return math.ceil(len(text) / 4)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile of `values` (not empty)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """What one injected context got right and wrong."""

    kind: str
    """The measure's kind: `session_start`, `prompt`, `need` or `quiet`."""
    project: str
    needs: str | None
    recalled: bool | None
    """For a `need`: whether the needed decision is present; else `None`."""
    leaked: tuple[str, ...]
    stale: tuple[tuple[str, str], ...]
    """(reversed decision key, entry) for each stale entry."""
    tokens: int
    """The injected context's size."""


def judge(
    context: str,
    *,
    kind: str,
    project: str,
    needs: Sequence[str] | None,
    needs_key: str | None = None,
    reversed_pairs: Sequence[tuple[str, Sequence[str], Sequence[str]]] = (),
    markers: Mapping[str, Sequence[str]],
) -> Judgement:
    """Judge one injected `context` (already normalised: the replay's home path replaced).

    `needs` are the tokens of the needed decision; `reversed_pairs` are (old key, old tokens,
    new tokens) of the project's decisions reversed before this point.
    """
    stale_found = tuple(
        (key, entry) for key, old, new in reversed_pairs for entry in stale(context, old, new)
    )
    return Judgement(
        kind=kind,
        project=project,
        needs=needs_key,
        recalled=None if needs is None else present(context, needs),
        leaked=tuple(leaks(context, project, markers)),
        stale=stale_found,
        tokens=estimate_tokens(context),
    )
