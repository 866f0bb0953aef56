"""The data model of phi's memory: rows, edges and the names they use.

A row lives in one namespace and is never edited in place by the pipeline: a change of
belief writes a new row that `supersedes` the old one, and the old one's status becomes
`superseded`. Edges connect rows with a type and a weight; the recall path walks them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import Field

from phi.errors import InvalidInput
from phi.memory.serial import Instant, to_json

__all__ = [
    "BLOCK_SCOPE",
    "EDGE_TYPES",
    "KINDS",
    "MAX_CONTENT_CHARS",
    "MAX_TAGS",
    "STATUSES",
    "TRUST_OF_KIND",
    "USER_BLOCK_PREFIX",
    "USER_NAMESPACE_PREFIX",
    "Edge",
    "EdgeType",
    "Kind",
    "NewRow",
    "Row",
    "Status",
    "Trust",
    "Turn",
    "content_hash",
    "new_row_id",
    "user_label",
    "user_namespace",
    "validate_did",
    "validate_meta",
    "validate_namespace",
    "validate_row_text",
    "validate_stored_text",
    "validate_text",
]

Kind = Literal["interaction", "observation", "exploration_note", "summary", "note"]
"""What a row is. `note` is phi's own note about the world (the `phi-episodic` namespace)."""

Status = Literal["active", "superseded"]
Trust = Literal["high", "medium", "low", "lowest"]
EdgeType = Literal["temporal", "semantic", "reference", "causal", "supersedes"]

KINDS: Final[tuple[Kind, ...]] = get_args(Kind)
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
EDGE_TYPES: Final[tuple[EdgeType, ...]] = get_args(EdgeType)
TRUSTS: Final[tuple[Trust, ...]] = get_args(Trust)

TRUST_OF_KIND: Final[Mapping[Kind, Trust]] = {
    "interaction": "high",
    "note": "medium",
    "observation": "medium",
    "summary": "low",
    "exploration_note": "lowest",
}
"""Default trust: verbatim words beat extracted facts, which beat syntheses and research."""

USER_NAMESPACE_PREFIX: Final = "phi-users-"
"""One namespace per person, keyed by DID."""
BLOCK_SCOPE: Final = "block"
"""The ledger scope of blocks (`phi.memory.learning.blocks`). Named here, below both the
blocks and `Memory`, because `Memory.forget` erases a person's block with their rows."""
USER_BLOCK_PREFIX: Final = "user:"
"""A person's block is labelled `user:{did}`."""

MAX_CONTENT_CHARS: Final = 20_000
"""Longer text belongs in several rows: one embedding cannot represent it anyway."""
MAX_TAGS: Final = 3
MAX_NAMESPACE_CHARS: Final = 200

# Matched with `fullmatch`: `$` also matches before a trailing newline, which let
# "notes\n" through as a namespace.
_NAMESPACE_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:%-]*")
_DID_RE: Final = re.compile(r"did:[a-z]+:[A-Za-z0-9._:%-]+")


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One utterance of a verbatim exchange."""

    speaker: str
    """Who said it, as it should read in context (a handle like `@alice.test`, or a name)."""
    text: str
    """What they said, verbatim."""
    by_phi: bool = False
    """Whether phi said it: extraction never learns about a person from phi's own words."""


@dataclass(frozen=True, kw_only=True)
class NewRow:
    """A row to remember: the one parameter list of `Memory.remember` and `remember_many`
    (the CLI, MCP and HTTP `remember` build one). The store assigns id and timestamps."""

    content: str
    namespace: str
    kind: Kind = "note"
    trust: Trust | None = None
    """How far to believe it; `None` takes the kind's default (`TRUST_OF_KIND`)."""
    tags: Sequence[str] = ()
    """0-3 topic tags."""
    source_uris: Sequence[str] = ()
    """AT-URIs or other URIs it came from (part of its identity)."""
    author: str | None = None
    """The DID the row is about, when it is about a person."""
    supersedes: str | None = None
    """The row this corrects; that row becomes `superseded`."""
    status: Status = "active"
    created_at: datetime | None = None
    """When the remembered thing happened; now if not given."""
    thread: str | None = None
    """The conversation it belongs to, kept as `meta["thread"]` (recall filters by it)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    written_by: str | None = None
    """Who wrote it: the label of the credential (an MCP bearer token's name), never the
    secret; `None` for a local write."""

    def __post_init__(self) -> None:
        # Callers pass lists from JSON bodies; the value stays immutable and hashable.
        object.__setattr__(self, "tags", tuple(self.tags))
        object.__setattr__(self, "source_uris", tuple(self.source_uris))

    @property
    def resolved_trust(self) -> Trust:
        """`trust`, or the kind's default."""
        return self.trust or TRUST_OF_KIND.get(self.kind, "medium")

    @property
    def resolved_meta(self) -> dict[str, Any]:
        """`meta` with `thread` in it."""
        return {**self.meta, "thread": self.thread} if self.thread else dict(self.meta)

    @classmethod
    def interaction(
        cls,
        turns: Sequence[Turn],
        *,
        namespace: str,
        author: str | None = None,
        source_uris: Sequence[str] = (),
        created_at: datetime | None = None,
        thread: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> NewRow:
        """A verbatim exchange ("speaker: text" per line) as a high-trust `interaction`.

        The turns are kept in `meta["turns"]` with who said what, so extraction can learn
        from a person's own words and never from phi's.
        """
        if not turns:
            raise InvalidInput("an interaction needs at least one turn")
        for turn in turns:
            if not turn.text.strip() or not turn.speaker.strip():
                raise InvalidInput(f"empty turn in interaction: {turn!r}")
        content = "\n".join(f"{t.speaker}: {t.text}" for t in turns)
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(
                f"interaction of {len(content)} characters is over the limit of {MAX_CONTENT_CHARS}"
            )
        said = [{"speaker": t.speaker, "text": t.text, "by_phi": t.by_phi} for t in turns]
        return cls(
            content=content,
            namespace=namespace,
            kind="interaction",
            trust="high",
            author=author,
            source_uris=tuple(source_uris),
            created_at=created_at,
            thread=thread,
            meta={**(meta or {}), "turns": said},
        )


@dataclass(frozen=True, kw_only=True)
class Row:
    """A stored memory row."""

    row_id: str
    """Stable, unique, time-ordered id."""
    namespace: str
    kind: Kind
    content: str
    status: Status
    supersedes: str | None
    trust: Trust
    tags: tuple[str, ...]
    source_uris: tuple[str, ...]
    author: str | None
    created_at: Instant
    updated_at: Instant
    meta: Mapping[str, Any]
    content_hash: Annotated[str, Field(exclude=True)]
    """Identity for idempotent writes: kind, content and sources (internal: not in JSON)."""
    written_by: str | None = None
    """The label of the credential that first wrote it (`NewRow.written_by`); `None` for a
    local write."""

    @property
    def thread(self) -> str | None:
        """The conversation it belongs to (`meta["thread"]`), if it names one."""
        thread = self.meta.get("thread")
        return thread if isinstance(thread, str) and thread else None

    def age_seconds(self, now: datetime) -> float:
        """How long ago the remembered thing happened, as of `now`."""
        return max(0.0, (now - self.created_at).total_seconds())

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (`phi.memory.serial`; timestamps in ISO 8601)."""
        json_value: dict[str, Any] = to_json(self)
        return json_value


@dataclass(frozen=True, kw_only=True)
class Edge:
    """A typed, weighted link between two rows (`src` happened first for temporal edges)."""

    src: str
    dst: str
    edge_type: EdgeType
    weight: float = 1.0
    created_at: Annotated[Instant | None, Field(exclude=True)] = None
    """When the edge was made (bookkeeping: the JSON of an edge is its ends, type and
    weight)."""

    def other(self, row_id: str) -> str:
        """The end of this edge that is not `row_id`."""
        return self.dst if self.src == row_id else self.src


def validate_did(did: str, *, what: str = "DID") -> str:
    """Return `did` if it is a whole DID (`did:method:id`), else raise `InvalidInput`."""
    if not _DID_RE.fullmatch(did):
        raise InvalidInput(f"{what} is not a DID: {did!r} (expected e.g. 'did:plc:abc123')")
    return did


def user_namespace(did: str) -> str:
    """The namespace of one person, keyed by DID (which survives handle changes)."""
    return f"{USER_NAMESPACE_PREFIX}{validate_did(did)}"


def validate_text(value: str, *, what: str) -> str:
    """Return `value` if every store can keep it and every surface can send it, else raise
    `InvalidInput` naming `what` and the position of the first bad character.

    One rule for every surface and backend (the library, CLI, HTTP and MCP; SQLite and
    PostgreSQL), applied before any store sees the text, so a value is never accepted by
    one store and refused by another (which made a migration stop at the first such row):
    - a NUL character: SQLite keeps it, PostgreSQL refuses it in text and in JSON;
    - a lone surrogate (`\\ud800` in JSON, or what `surrogateescape` makes of invalid
      UTF-8 on a command line): a valid Python `str` that no database, JSON encoder or
      terminal takes.
    """
    if (at := value.find("\x00")) >= 0:
        raise InvalidInput(
            f"{what} holds a NUL character at position {at} ({_excerpt(value, at)}); no"
            " store keeps it (PostgreSQL refuses it), so phi refuses it everywhere: remove it"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{what} is not valid UTF-8 text: {_excerpt(value, exc.start)} has a lone surrogate"
            f" at position {exc.start}; send well-formed Unicode"
        ) from None
    return value


def _excerpt(value: str, at: int, *, width: int = 24) -> str:
    """The text around position `at`, quoted: a message stays one short line when the
    value is a 20,000-character row."""
    start, end = max(0, at - width), at + width + 1
    clipped = repr(value[start:end])
    return f"{'…' if start else ''}{clipped}{'…' if end < len(value) else ''}"


def validate_meta(meta: object, *, what: str = "meta") -> None:
    """Apply `validate_text` to every key and string value of a JSON-like `meta`, naming
    the path of the bad one (`meta['turns'][1]['text']`, `meta key 'k'`)."""
    if isinstance(meta, str):
        validate_text(meta, what=what)
    elif isinstance(meta, Mapping):
        for key, value in meta.items():
            validate_text(str(key), what=f"{what} key {str(key)!r}")
            validate_meta(value, what=f"{what}[{str(key)!r}]")
    elif isinstance(meta, list | tuple):
        for n, value in enumerate(meta):
            validate_meta(value, what=f"{what}[{n}]")


def validate_row_text(item: NewRow) -> None:
    """Refuse a row whose text, tags, sources, author or meta no store can keep, or whose
    author is not a DID."""
    if item.thread is not None:
        validate_text(item.thread, what="meta")  # the thread is kept in meta
    validate_stored_text(item)
    if item.author is not None:
        validate_did(item.author, what="author")


def validate_stored_text(item: NewRow | Row) -> None:
    """Refuse a row (a new one, or one read from a store an older phi wrote) holding text
    that some store cannot keep (`validate_text`): what `migrate` leaves behind."""
    validate_text(item.namespace, what="namespace")
    validate_text(item.content, what="content")
    for tag in item.tags:
        validate_text(tag, what="tag")
    for uri in item.source_uris:
        validate_text(uri, what="source URI")
    if item.author is not None:
        validate_text(item.author, what="author")
    if item.supersedes is not None:
        validate_text(item.supersedes, what="supersedes")
    validate_meta(item.meta)


def user_label(did: str) -> str:
    """The label of one person's block (by DID, which survives handle changes)."""
    user_namespace(did)  # validates the DID
    return f"{USER_BLOCK_PREFIX}{did}"


def validate_namespace(namespace: str) -> str:
    """Return `namespace` if it is a valid name, else raise `InvalidInput`."""
    if (
        not namespace
        or len(namespace) > MAX_NAMESPACE_CHARS
        or not _NAMESPACE_RE.fullmatch(namespace)
    ):
        raise InvalidInput(
            f"invalid namespace {namespace!r}: use 1-{MAX_NAMESPACE_CHARS} characters "
            "from letters, digits and . _ : % - (starting with a letter or digit)"
        )
    return namespace


def content_hash(kind: str, content: str, source_uris: Sequence[str]) -> str:
    """The identity of a write: the same kind, text and sources make one row."""
    payload = json.dumps([kind, content, sorted(set(source_uris))], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def new_row_id() -> str:
    """A UUIDv7: unique, and sortable by creation time."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62 | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def ensure_utc(moment: datetime) -> datetime:
    """Refuse naive datetimes (their zone is a guess) and normalise to UTC."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput(
            f"timestamp {moment.isoformat()!r} has no timezone; pass an aware datetime"
        )
    return moment.astimezone(UTC)
