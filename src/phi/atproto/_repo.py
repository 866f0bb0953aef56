"""Record operations on phi's own collections: create, put, get, list, delete.

Every write is validated against the collection's lexicon first (the PDS does not know
phi's lexicons, so it would store anything). Only phi's collections are writable here:
posts, likes and follows have their own methods on `PhiClient`. Reading is open to any
collection: `recent_operations` lists what phi wrote anywhere in its repo.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from atproto_client import AsyncClient, models  # type: ignore[import-untyped]

from phi.atproto._session import Session
from phi.atproto.errors import InvalidArgument
from phi.atproto.lexicon import Lexicons
from phi.atproto.models import Operation, RecordRef
from phi.atproto.records import PhiRecord, StoredRecord

__all__ = ["RecordMethods"]

R = TypeVar("R", bound=PhiRecord)


def _plain(value: Any) -> dict[str, Any]:
    """An SDK record value (a model or a dict) as plain JSON-like data."""
    if isinstance(value, dict):
        return value
    if hasattr(value, "to_dict"):  # the SDK's DotDict, for lexicons it does not know
        as_dict = value.to_dict()
        assert isinstance(as_dict, dict)
        return as_dict
    dumped = value.model_dump(by_alias=True, exclude_none=True)
    assert isinstance(dumped, dict)
    return dumped


async def _list_page(client: AsyncClient, *, params: Any) -> Any:
    return await client.com.atproto.repo.list_records(params)


_NSID = re.compile(r"^[a-zA-Z]([a-zA-Z0-9-]*)(\.[a-zA-Z0-9-]+){2,}$")
_TID = re.compile(r"^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$")
_S32 = "234567abcdefghijklmnopqrstuvwxyz"
_SUMMARY_CHARS = 80
_EPOCH = datetime.fromtimestamp(0, tz=UTC)
_TITLE_FIELDS = (
    "text",
    "title",
    "name",
    "content",
    "displayName",
    "handle",
    "url",
    "description",
)


def tid_time(rkey: str) -> datetime | None:
    """When a TID record key was minted (microseconds since the epoch in its top bits)."""
    if not _TID.match(rkey):
        return None
    value = 0
    for char in rkey:
        value = value * 32 + _S32.index(char)
    return datetime.fromtimestamp((value >> 10) / 1_000_000, tz=UTC)


def _created_at(value: dict[str, Any], rkey: str) -> datetime:
    raw = value.get("createdAt")
    if isinstance(raw, str):
        try:
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return tid_time(rkey) or _EPOCH


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def _subject(value: dict[str, Any]) -> str:
    subject = value.get("subject")
    if isinstance(subject, dict):
        return str(subject.get("uri", ""))
    return str(subject or "")


def _title(value: dict[str, Any]) -> str | None:
    """The first text-like field of a record, looking one level into `content`."""
    for key in _TITLE_FIELDS:
        text = value.get(key)
        if isinstance(text, str) and text.strip():
            return text
        if isinstance(text, dict):
            inner = _title(text)
            if inner:
                return inner
    return None


def summarize(collection: str, value: dict[str, Any]) -> str:
    """A short human line for a record: `post: ...`, `like at://...`, `follow did:...`."""
    if collection == "app.bsky.feed.post":
        kind = "reply" if value.get("reply") else "post"
        return f"{kind}: {_clip(str(value.get('text', '')))}"
    verbs = {
        "app.bsky.feed.like": "like",
        "app.bsky.feed.repost": "repost",
        "app.bsky.graph.follow": "follow",
        "app.bsky.graph.block": "block",
    }
    if collection in verbs:
        return f"{verbs[collection]} {_subject(value)}"
    name = collection.rsplit(".", 1)[-1]
    source, target = value.get("source"), value.get("target")
    if isinstance(source, str) and isinstance(target, str):  # an edge between two records
        label = value.get("connectionType")
        return f"{name}: {source} → {target}" + (f" ({label})" if label else "")
    title = _title(value)
    return f"{name}: {_clip(title)}" if title else name


class RecordMethods:
    """The record half of `PhiClient` (a mixin: it needs `_session` and `lexicons`)."""

    _session: Session
    lexicons: Lexicons

    def _uri(self, collection: str, rkey: str) -> str:
        return f"at://{self._session.identity.did}/{collection}/{rkey}"

    async def create_raw_record(
        self, collection: str, value: dict[str, Any], *, rkey: str | None = None
    ) -> RecordRef:
        """Validate `value` against its lexicon, then create it in `collection`.

        Raises:
            InvalidRecord: It does not fit the lexicon, or the collection is not phi's.
        """
        self.lexicons.validate(collection, value)
        did = self._session.identity.did
        data = models.ComAtprotoRepoCreateRecord.Data(
            repo=did, collection=collection, record=value, rkey=rkey, validate_=False
        )
        response = await self._session.request(
            lambda c: c.com.atproto.repo.create_record(data), what=f"createRecord in {collection!r}"
        )
        return RecordRef(uri=response.uri, cid=response.cid)

    async def put_raw_record(self, collection: str, rkey: str, value: dict[str, Any]) -> RecordRef:
        """Validate `value`, then write it at `collection/rkey`, replacing what was there.

        Raises:
            InvalidRecord: It does not fit the lexicon, or the collection is not phi's.
        """
        self.lexicons.validate(collection, value)
        data = models.ComAtprotoRepoPutRecord.Data(
            repo=self._session.identity.did,
            collection=collection,
            rkey=rkey,
            record=value,
            validate_=False,
        )
        response = await self._session.request(
            lambda c: c.com.atproto.repo.put_record(data), what=f"putRecord {collection}/{rkey}"
        )
        return RecordRef(uri=response.uri, cid=response.cid)

    async def create_record(self, record: PhiRecord, *, rkey: str | None = None) -> RecordRef:
        """Create `record` in its collection (a new TID record key unless `rkey` is given)."""
        collection = record.collection(self.lexicons.prefix)
        return await self.create_raw_record(
            collection, record.to_record(self.lexicons.prefix), rkey=rkey
        )

    async def put_record(self, record: PhiRecord, rkey: str) -> RecordRef:
        """Write `record` at `rkey` in its collection, replacing any previous version."""
        collection = record.collection(self.lexicons.prefix)
        return await self.put_raw_record(collection, rkey, record.to_record(self.lexicons.prefix))

    async def get_record(self, model: type[R], rkey: str) -> StoredRecord[R]:
        """Read one of phi's records.

        Raises:
            RecordNotFound: Nothing at that key.
            InvalidRecord: What is stored does not fit `model`.
        """
        collection = model.collection(self.lexicons.prefix)
        uri = self._uri(collection, rkey)
        params = models.ComAtprotoRepoGetRecord.Params(
            repo=self._session.identity.did, collection=collection, rkey=rkey
        )
        response = await self._session.request(
            lambda c: c.com.atproto.repo.get_record(params), what=f"getRecord {uri}", record_uri=uri
        )
        return StoredRecord(
            uri=response.uri, cid=response.cid, value=model.from_record(_plain(response.value))
        )

    async def _list_raw(self, collection: str, *, limit: int) -> list[tuple[str, str, Any]]:
        """Up to `limit` records of `collection` in phi's repo as `(uri, cid, value)`, newest
        first (the PDS lists by record key, descending)."""
        found: list[tuple[str, str, Any]] = []
        cursor: str | None = None
        while len(found) < limit:
            params = models.ComAtprotoRepoListRecords.Params(
                repo=self._session.identity.did,
                collection=collection,
                limit=min(100, limit - len(found)),
                cursor=cursor,
            )
            page = await self._session.request(
                partial(_list_page, params=params), what=f"listRecords {collection!r}"
            )
            found.extend((item.uri, item.cid, item.value) for item in page.records)
            cursor = page.cursor
            if not cursor or not page.records:
                break
        return found

    async def list_records(self, model: type[R], *, limit: int = 100) -> list[StoredRecord[R]]:
        """Up to `limit` of phi's records of one kind, newest first."""
        collection = model.collection(self.lexicons.prefix)
        return [
            StoredRecord(uri=uri, cid=cid, value=model.from_record(_plain(value)))
            for uri, cid, value in await self._list_raw(collection, limit=limit)
        ]

    async def recent_operations(
        self, collections: Sequence[str], *, limit: int = 10
    ) -> list[Operation]:
        """The last `limit` records phi wrote across `collections`, newest first.

        Each collection is listed newest first and the lists are merged by record key: TID
        keys sort by the time they were minted. A record with another kind of key (a goal
        at `make-friends`, the profile at `self`) sorts by its `createdAt` instead.

        Args:
            collections: Collection NSIDs, e.g. `["app.bsky.feed.post", "app.bsky.feed.like",
                "app.bsky.graph.follow", "io.phi.goal"]`.
            limit: How many operations to return.

        Raises:
            InvalidArgument: A collection is not an NSID, or `limit` is not positive.
        """
        if isinstance(collections, str):
            raise InvalidArgument(f"collections is a list of NSIDs, got the string {collections!r}")
        if limit < 1:
            raise InvalidArgument(f"limit must be at least 1, got {limit}")
        for collection in collections:
            if not _NSID.match(collection):
                raise InvalidArgument(
                    f"{collection!r} is not a collection NSID (like 'app.bsky.feed.post')"
                )
        operations: list[Operation] = []
        for collection in dict.fromkeys(collections):
            for uri, _cid, raw in await self._list_raw(collection, limit=limit):
                value = _plain(raw)
                rkey = uri.rsplit("/", 1)[-1]
                operations.append(
                    Operation(
                        collection=collection,
                        rkey=rkey,
                        uri=uri,
                        created_at=_created_at(value, rkey),
                        summary=summarize(collection, value),
                    )
                )

        def newest(op: Operation) -> tuple[datetime, str]:
            return (tid_time(op.rkey) or op.created_at, op.uri)

        return heapq.nlargest(limit, operations, key=newest)

    async def delete_record(self, model: type[PhiRecord], rkey: str) -> None:
        """Delete one of phi's records (no error if it was already gone)."""
        collection = model.collection(self.lexicons.prefix)
        data = models.ComAtprotoRepoDeleteRecord.Data(
            repo=self._session.identity.did, collection=collection, rkey=rkey
        )
        await self._session.request(
            lambda c: c.com.atproto.repo.delete_record(data),
            what=f"deleteRecord {collection}/{rkey}",
        )
