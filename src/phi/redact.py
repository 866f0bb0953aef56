"""Secrets in outside text, replaced by a marker naming their kind.

phi keeps and shows text it did not write: a tool's output, a captured hook event, a post, a
health URL from the settings. Any of them may carry a credential, and what phi stores or
prints lives on in its memory, its run journal and its logs. Every such surface passes the
text through `redact` (`redact_url` for a URL shown or used as a name, `redact_json` for a
JSON document); each secret becomes `[REDACTED:<kind>]`, e.g. `[REDACTED:aws-access-key]`.

Detection is detect-secrets' (1.5): its plugins' own patterns and its keyword detector's
assignment patterns, plus a short supplement for forms those plugins miss (fine-grained
GitHub tokens, current OpenAI and Anthropic keys, bare npm tokens, `Authorization` headers,
`*_TOKEN=` lines, secret URL parameters...), each listed with why in `phi._redact_rules`.
Left out on purpose: the entropy plugins (they flag git SHAs, UUIDs and content hashes, and
ordinary text must come out unchanged) and the public-IP plugin (an address is no secret).

Cost matters: this runs on every captured event, stored row, journalled run and log line,
and a hook has a 100 ms budget. Importing detect-secrets takes ~150 ms and running all of its
patterns over 100 KB ~250 ms. So each detector has a gate: literals, one of which any text it
matches contains, and a cheap pattern that confirms, both run on the case-folded text. Text
no gate opens comes back as is, without importing detect-secrets; a detector runs only on
the lines its gate opened (detect-secrets' patterns are line-based), or, in a very long line,
on a window around each opening.

This module and `phi._redact_rules` import nothing else from phi, so every layer
(`phi.memory` included) may use them.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from phi._redact_rules import (
    MARKER_OPEN,
    Detector,
    Gate,
    detectors,
    gates,
    is_placeholder,
    kind_of_name,
    secret_name,
    triggers,
)

__all__ = [
    "RedactingFilter",
    "Secret",
    "find_secrets",
    "redact",
    "redact_data",
    "redact_json",
    "redact_logs",
    "redact_url",
]

WINDOW: Final = 4096
"""How far around a gate's opening a very long line is scanned: longer than any secret a
detector matches, short enough that a one-line JSON document is not scanned whole by all."""


@dataclass(frozen=True, kw_only=True)
class Secret:
    """A secret found in a text (its value is deliberately not kept)."""

    kind: str
    """What it is, as the marker names it: `aws-access-key`, `github-token`, `password`..."""
    start: int
    """Offset of its first character in the text scanned."""
    end: int
    """Offset just past its last character."""


def find_secrets(text: str) -> list[Secret]:
    """The secrets in `text`, in order; overlapping finds are merged into one."""
    segments = _Segments(text)
    if not segments.may_open() or not any(segments.opened_by(gate) for gate in gates()):
        return []
    found: list[tuple[int, int, int, str]] = []
    for rank, detector in enumerate(detectors()):
        if opened := segments.opened_by(detector.gate):
            found += [(s, e, rank, kind) for s, e, kind in _finds(detector, text, opened)]
    found.sort()
    merged: list[tuple[int, int, int, str]] = []
    for start, end, rank, kind in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            kept = (rank, kind) if rank < last[2] else (last[2], last[3])
            merged[-1] = (last[0], max(end, last[1]), *kept)
        else:
            merged.append((start, end, rank, kind))
    return [Secret(kind=kind, start=start, end=end) for start, end, _, kind in merged]


def redact(text: str) -> str:
    """`text` with each secret replaced by `[REDACTED:<kind>]`; ordinary text unchanged.
    Redacting a redacted text changes nothing."""
    out: list[str] = []
    at = 0
    for secret in find_secrets(text):
        out += [text[at : secret.start], _marker(secret.kind)]
        at = secret.end
    return "".join(out) + text[at:] if out else text


def redact_url(url: str) -> str:
    """`url` fit to show, or to name a thing by: no user or password, each secret query or
    fragment value (`token`, `key`, `password`, `sig`...) replaced, and secrets in the path
    (webhook URLs) too. Never raises: what is no URL is `redact`ed as text."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return redact(url)
    if ":" in host:
        host = f"[{host}]"  # IPv6, bracketed as it was written
    netloc = f"{host}:{port}" if port is not None else host
    query, fragment = _redact_params(parts.query), _redact_params(parts.fragment)
    return redact(urlunsplit((parts.scheme, netloc, parts.path, query, fragment)))


def redact_json(text: str) -> str:
    """A JSON document with every string redacted, a secret-named key's value included
    (`{"password": "x"}`). Redacting the raw JSON text instead could cut an escape in two.
    Text that is not JSON is `redact`ed as text; a document with no secret keeps its bytes."""
    try:
        document = json.loads(text)
    except ValueError:
        return redact(text)
    cleaned = redact_data(document)
    return text if cleaned == document else json.dumps(cleaned, ensure_ascii=False)


def redact_data(value: Any, *, name: str | None = None) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string redacted and
    the string of a secret-named key (`password`, `api_key`, `*_token`...) replaced whole.
    `name` is the key `value` is found under, if any."""
    if isinstance(value, str):
        # A bare `key` names a secret in a URL (`?key=`); in JSON it is as often a map's key.
        if name and name.lower() != "key" and secret_name(name) and not is_placeholder(value):
            return _marker(kind_of_name(name))
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_data(item, name=str(key)) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_data(item) for item in value)
    return value


class RedactingFilter(logging.Filter):
    """Redacts each record's message and traceback. Install it on a handler (`redact_logs`):
    a handler's filters see every record it writes, a logger's only those logged on it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError, KeyError):
            # A malformed call (`log.info("%d", "x")`): logging reports it when the handler
            # formats the record, printing its `msg` and `args`, and goes on. A filter that
            # raised would throw it into the caller instead; what is printed is redacted.
            record.msg, record.args = redact(str(record.msg)), _redacted_args(record.args)
        else:
            cleaned = redact(message)
            if cleaned != message:
                # The arguments one by one where that is enough: formatters such as
                # uvicorn's access log read `args` themselves.
                args = _redacted_args(record.args)
                if _formatted(record.msg, args) == cleaned:
                    record.args = args
                else:
                    record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def redact_logs(*loggers: str) -> None:
    """Put a `RedactingFilter` on every handler of `loggers` (the root logger if none)."""
    for name in loggers or (None,):
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())


def _formatted(msg: object, args: Any) -> str | None:
    try:
        return msg % args if isinstance(msg, str) and args else None
    except (TypeError, ValueError, KeyError):
        return None


def _redacted_args(args: Any) -> Any:
    def one(value: object) -> object:
        text = str(value)
        cleaned = redact(text)
        return value if cleaned == text else cleaned

    if isinstance(args, tuple):
        return tuple(one(arg) for arg in args)
    if isinstance(args, Mapping):
        return {key: one(arg) for key, arg in args.items()}
    return args


def _marker(kind: str) -> str:
    return f"{MARKER_OPEN}{kind}]"


# -- where to look ---------------------------------------------------------------------


class _Segments:
    """The parts of one text each gate opens, worked out once per gate."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Case-folded, as an IGNORECASE pattern sees it (`ſ` is an `s`, `K` a `k`); a few
        # characters fold to two (`ß`), and offsets must stay the text's: those stay as is.
        folded = text.casefold()
        if len(folded) != len(text):
            folded = "".join(c if len(f := c.casefold()) != 1 else f for c in text)
        self.folded = folded
        self._opened: dict[Gate, list[tuple[int, int]]] = {}

    def may_open(self) -> bool:
        """Whether any gate can open: all their literals and literal-less patterns at once."""
        wanted = triggers()
        return (
            any(literal in self.folded for literal in wanted.folded)
            or any(literal in self.text for literal in wanted.exact)
            or any(_pattern(source).search(self.folded) for source in wanted.patterns)
        )

    def opened_by(self, gate: Gate) -> list[tuple[int, int]]:
        """(start, end) of each line a gate opens; of a window, in a very long line."""
        if gate not in self._opened:
            self._opened[gate] = self._open(gate)
        return self._opened[gate]

    def _open(self, gate: Gate) -> list[tuple[int, int]]:
        text = self.text
        haystack = text if gate.exact_case else self.folded
        present = [literal for literal in gate.literals if literal in haystack]
        if gate.literals and not present:
            return []
        pattern = _pattern(gate.confirm or "|".join(map(re.escape, present)))
        spans: list[tuple[int, int]] = []
        line_start = line_end = -1
        for match in pattern.finditer(haystack):
            at = match.start()
            if at >= line_end:
                line_start = text.rfind("\n", 0, at) + 1
                found = text.find("\n", at)
                line_end = len(text) if found < 0 else found
            start, end = max(line_start, at - WINDOW), min(line_end, match.end() + WINDOW)
            if spans and start <= spans[-1][1]:  # the same line: one segment
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
        return spans


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(source: str) -> re.Pattern[str]:
    if source not in _PATTERNS:
        _PATTERNS[source] = re.compile(source)
    return _PATTERNS[source]


# -- what is found ---------------------------------------------------------------------


def _finds(
    detector: Detector, text: str, segments: list[tuple[int, int]]
) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of each secret `detector` finds in `segments` of `text`."""
    for base, end in segments:
        segment, at = text[base:end], 0
        while (match := detector.pattern.search(segment, at)) is not None:
            found = _read(detector, match)
            at = _resume_at(detector, match, found)
            if found is None:
                continue
            start, stop, kind = found
            if detector.policy == "whole":
                yield (*_widened(text, base + start, base + stop), kind)
            elif detector.policy == "key-block":
                yield (*_key_block(text, base + start, base + stop), kind)
            else:
                yield base + start, base + stop, kind


def _resume_at(detector: Detector, match: re.Match[str], found: tuple[int, int, str] | None) -> int:
    """Where to look for the next match. A keyword match runs to the end of its line, but
    its value may end earlier (`_keyword_value`) or hold no secret: the rest of the line
    can hold another assignment (`API_KEY=a DB_PASSWORD=b`), so the search goes on from the
    end of the value, or from its start when it was none."""
    if detector.policy == "keyword":
        return found[1] if found is not None else match.start(detector.group)
    return match.end() if match.end() > match.start() else match.start() + 1


def _read(detector: Detector, match: re.Match[str]) -> tuple[int, int, str] | None:
    """The secret in one match (offsets in the segment), or `None` when it holds none."""
    if detector.policy == "param":
        name, value = match.group(1), match.group(2)
        if not secret_name(name) or is_placeholder(value):
            return None
        return (*match.span(2), kind_of_name(name))
    if detector.policy == "keyword":
        return _keyword_value(detector, match)
    if detector.policy == "group" and detector.pattern.groups:
        group = next((g for g in range(1, detector.pattern.groups + 1) if match.group(g)), 0)
        return (*match.span(group), detector.kind)
    start, end = _trimmed(match.string, *match.span())
    secret = match.string[start:end]
    if not secret or (detector.check is not None and not detector.check(secret)):
        return None
    return start, end, detector.kind


def _keyword_value(detector: Detector, match: re.Match[str]) -> tuple[int, int, str] | None:
    """The value of a keyword assignment. detect-secrets' values run to the end of their
    line; an unquoted one here ends at its first space, so prose such as "secret: she never
    told" loses a word, not the sentence. Values that name a secret rather than hold it go
    by detect-secrets' own heuristics (`${DB_PASSWORD}`, `$password`, `os.environ[...]`)."""
    from detect_secrets.filters import heuristic

    line = match.string
    start, end = match.span(detector.group)
    value = line[start:end]
    quoted = start > 0 and line[start - 1] in "'\"`"
    if not quoted and (space := re.search(r"\s", value)):
        end, value = start + space.start(), value[: space.start()]
    if (
        is_placeholder(value)
        or heuristic.is_templated_secret(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_indirect_reference(line)
    ):
        return None
    return start, end, kind_of_name(line[match.start() : start])


def _trimmed(line: str, start: int, end: int) -> tuple[int, int]:
    # Artifactory's patterns take the separators around the token into the match.
    while start < end and line[start] in " \t\r=:\"'":
        start += 1
    while end > start and line[end - 1] in " \t\r\"'":
        end -= 1
    return start, end


_TOKEN_CHAR: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole token around a match: a detector matching a prefix of a longer token
    (Stripe's 24 characters of a 99-character key) must not leave the rest behind."""
    while start > 0 and text[start - 1] in _TOKEN_CHAR:
        start -= 1
    while end < len(text) and text[end] in _TOKEN_CHAR:
        end += 1
    return start, end


_KEY_END: Final = re.compile(r"-----END[^\n-]*PRIVATE KEY[^\n-]*-----|Private-MAC:\s*[0-9a-fA-F]+")
_KEY_BODY: Final = re.compile(r"-*(?:[A-Za-z0-9+/=\s-]|\\[nr])*")


def _key_block(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole block a private key's header opens (the plugin flags the header only): to
    its END line, or, when the text was clipped before that, over the base64 that follows."""
    while start > 0 and text[start - 1] == "-":
        start -= 1
    closing = _KEY_END.search(text, end)
    if closing is not None:
        return start, closing.end()
    body = _KEY_BODY.match(text, end)
    return start, body.end() if body else end


# -- URLs and JSON ---------------------------------------------------------------------


def _redact_params(query: str) -> str:
    """`a=1&token=x` -> `a=1&token=[REDACTED:token]`, the rest byte for byte."""
    pieces = []
    for piece in re.split(r"([&;])", query):
        name, eq, value = piece.partition("=")
        if eq and secret_name(name) and not is_placeholder(value):
            piece = f"{name}={_marker(kind_of_name(name))}"
        pieces.append(piece)
    return "".join(pieces)
