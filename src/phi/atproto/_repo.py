"""Record operations on phi's own collections: create, put, get, list, delete.

Every write is validated against the collection's lexicon first (the PDS does not know
phi's lexicons, so it would store anything). Only phi's collections are writable here:
posts, likes and follows have their own methods on `PhiClient`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeVar

from atproto_client import AsyncClient, models  # type: ignore[import-untyped]

from phi.atproto._session import Session
from phi.atproto.lexicon import Lexicons
from phi.atproto.models import RecordRef
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

    async def list_records(self, model: type[R], *, limit: int = 100) -> list[StoredRecord[R]]:
        """Up to `limit` of phi's records of one kind, newest first."""
        collection = model.collection(self.lexicons.prefix)
        found: list[StoredRecord[R]] = []
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
            for item in page.records:
                found.append(
                    StoredRecord(
                        uri=item.uri, cid=item.cid, value=model.from_record(_plain(item.value))
                    )
                )
            cursor = page.cursor
            if not cursor or not page.records:
                break
        return found

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
