"""The records phi owns on its PDS, as pydantic models.

`goal`, `mentionConsent` and `observation` live under phi's NSID prefix (default `io.phi.`);
public memory uses Semble's `network.cosmik.card` (a NOTE or a URL bookmark) and
`network.cosmik.connection`. Each model knows its collection name; the client validates the
serialised record against the lexicon before writing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Generic, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from phi.atproto.errors import InvalidRecord

__all__ = [
    "CardContentNote",
    "CardContentUrl",
    "CosmikCard",
    "CosmikConnection",
    "Goal",
    "MentionConsent",
    "Observation",
    "PhiRecord",
    "RecordKind",
    "StoredRecord",
    "collection_name",
]

RecordKind = Literal["goal", "mentionConsent", "observation", "cosmikCard", "cosmikConnection"]
"""The kinds of record phi writes."""

_FOREIGN: dict[RecordKind, str] = {
    "cosmikCard": "network.cosmik.card",
    "cosmikConnection": "network.cosmik.connection",
}


def collection_name(kind: RecordKind, prefix: str) -> str:
    """The collection NSID of `kind` under phi's NSID `prefix` (e.g. `io.phi.goal`)."""
    return _FOREIGN.get(kind) or f"{prefix}.{kind}"


def _now() -> datetime:
    return datetime.now(UTC)


class PhiRecord(BaseModel):
    """Base of phi's record models: camelCase on the wire, frozen, no unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )
    kind: ClassVar[RecordKind]

    @classmethod
    def collection(cls, prefix: str) -> str:
        """This model's collection under `prefix`."""
        return collection_name(cls.kind, prefix)

    def to_record(self, prefix: str) -> dict[str, Any]:
        """The record as written to the PDS, `$type` included."""
        body = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {"$type": self.collection(prefix), **body}

    @classmethod
    def from_record(cls, value: dict[str, Any]) -> Self:
        """Parse a record read from the PDS.

        Raises:
            InvalidRecord: The stored record does not fit this model.
        """
        body = {k: v for k, v in value.items() if k != "$type"}
        try:
            return cls.model_validate(body)
        except ValidationError as exc:
            problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            raise InvalidRecord(cls.kind, problems) from exc


R = TypeVar("R", bound=PhiRecord)


class Goal(PhiRecord):
    """One of phi's anchors, e.g. "make 3 friends", with a concrete signal of progress."""

    kind: ClassVar[RecordKind] = "goal"
    title: str
    """Short name of the goal."""
    description: str
    """What the goal means."""
    progress_signal: str
    """How phi and its owner can tell it is progressing."""
    created_at: datetime = Field(default_factory=_now)
    """When the goal was set."""
    updated_at: datetime | None = None
    """When it last changed."""


class MentionConsent(PhiRecord):
    """A handle that agreed to be @-mentioned by phi (record key: the handle)."""

    kind: ClassVar[RecordKind] = "mentionConsent"
    handle: str
    """The consenting handle."""
    did: str | None = None
    """Its DID, when known."""
    note: str | None = None
    """Where the consent was given (a post URI, say)."""
    created_at: datetime = Field(default_factory=_now)
    """When it was recorded."""


class Observation(PhiRecord):
    """Something phi noticed and has not acted on yet (its attention pool)."""

    kind: ClassVar[RecordKind] = "observation"
    content: str
    """What was noticed."""
    reasoning: str | None = None
    """Why it matters."""
    source_uris: list[str] = Field(default_factory=list)
    """Where it was noticed (AT-URIs or URLs)."""
    created_at: datetime = Field(default_factory=_now)
    """When it was noticed; the pool archives the oldest first."""


class CardContentNote(BaseModel):
    """The content of a NOTE card."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)
    type_: Literal["network.cosmik.card#noteContent"] = Field(
        default="network.cosmik.card#noteContent", alias="$type"
    )
    text: str


class CardUrlMetadata(BaseModel):
    """What a bookmarked page says about itself."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)
    title: str | None = None
    description: str | None = None
    site_name: str | None = None


class CardContentUrl(BaseModel):
    """The content of a URL card."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)
    type_: Literal["network.cosmik.card#urlContent"] = Field(
        default="network.cosmik.card#urlContent", alias="$type"
    )
    url: str
    metadata: CardUrlMetadata | None = None


class CosmikCard(PhiRecord):
    """A public memory card on Semble: a NOTE (text) or a URL (bookmark)."""

    kind: ClassVar[RecordKind] = "cosmikCard"
    type: Literal["NOTE", "URL"]
    """The card type."""
    content: Annotated[CardContentNote | CardContentUrl, Field(discriminator="type_")]
    """The note text or the bookmarked URL."""
    url: str | None = None
    """The URL, for URL cards."""
    created_at: datetime = Field(default_factory=_now)
    """When it was made."""

    @classmethod
    def note(cls, text: str) -> CosmikCard:
        """A NOTE card holding `text`."""
        return cls(type="NOTE", content=CardContentNote(text=text))

    @classmethod
    def bookmark(
        cls, url: str, *, title: str | None = None, description: str | None = None
    ) -> CosmikCard:
        """A URL card for `url`, with what the page is about."""
        meta = (
            CardUrlMetadata(title=title, description=description) if title or description else None
        )
        return cls(type="URL", url=url, content=CardContentUrl(url=url, metadata=meta))


class CosmikConnection(PhiRecord):
    """A typed link between two cards or URLs on Semble."""

    kind: ClassVar[RecordKind] = "cosmikConnection"
    source: str
    """Where the link starts (URL or AT-URI)."""
    target: str
    """Where it points (URL or AT-URI)."""
    connection_type: str | None = None
    """What kind of link (e.g. `SUPPORTS`, `RELATED`)."""
    note: str | None = None
    """Why the two are linked."""
    created_at: datetime = Field(default_factory=_now)
    """When it was made."""


@dataclass(frozen=True, kw_only=True)
class StoredRecord(Generic[R]):
    """A record read back from the PDS: where it is, and its value."""

    uri: str
    """The record's AT-URI."""
    cid: str | None
    """The CID of the version read."""
    value: R
    """The parsed record."""

    @property
    def rkey(self) -> str:
        """The record key."""
        return self.uri.rsplit("/", 1)[-1]
