"""Where an account lives: its DID document, its PDS, and public records read there.

phi's own PDS holds phi's repo only; another account's records (the owner's likes) live on
the PDS its DID document names. `did:plc` documents come from the PLC directory the network
uses (`https://plc.directory`, or the sandbox's on loopback); `did:web` documents from
`https://<host>/.well-known/did.json` (plain http for `localhost` only, as the reference
resolver does for development). Only the account a caller names is resolved: the owner,
whom the operator configured, so the addresses a document names are trusted like the
configuration itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

import httpx

from phi.atproto.errors import IdentityUnresolved, NetworkUnavailable, RequestRefused

__all__ = ["DidDocument", "IdentityMethods", "did_document_url", "parse_did_document"]

_DID_PLC: Final = re.compile(r"^did:plc:[a-z2-7]{24}$")
_DID_WEB: Final = re.compile(r"^did:web:[A-Za-z0-9.\-]+(%3A[0-9]+)?$")
"""Host-level `did:web` only: atproto does not use path-based ones."""
_LOCAL_HOSTS: Final = frozenset({"localhost", "127.0.0.1"})
PDS_SERVICE: Final = "#atproto_pds"
"""The `id` of the PDS entry in a DID document's `service` list."""
LIKES_COLLECTION: Final = "app.bsky.feed.like"


@dataclass(frozen=True, kw_only=True)
class DidDocument:
    """What phi needs from a DID document."""

    did: str
    """The DID the document belongs to."""
    handle: str | None
    """The handle it claims (`alsoKnownAs: at://...`), not verified against DNS."""
    pds_url: str
    """The `#atproto_pds` service endpoint: where the account's repo is served."""


def did_document_url(did: str, *, plc_url: str) -> str:
    """Where the DID document of `did` is published.

    Raises:
        IdentityUnresolved: `did` is neither a `did:plc` nor a host-level `did:web`.
    """
    if _DID_PLC.match(did):
        return f"{plc_url.rstrip('/')}/{did}"
    if _DID_WEB.match(did):
        host = unquote(did.removeprefix("did:web:"))
        scheme = "http" if host.split(":", 1)[0] in _LOCAL_HOSTS else "https"
        return f"{scheme}://{host}/.well-known/did.json"
    raise IdentityUnresolved(did, "phi resolves did:plc and host-level did:web only")


def _pds_endpoint(did: str, services: Any) -> str:
    if isinstance(services, list):
        for service in services:
            if not isinstance(service, dict):
                continue
            if service.get("id") in (PDS_SERVICE, f"{did}{PDS_SERVICE}"):
                endpoint = service.get("serviceEndpoint")
                if isinstance(endpoint, str) and endpoint.startswith(("http://", "https://")):
                    return endpoint.rstrip("/")
    raise IdentityUnresolved(did, "its DID document names no #atproto_pds service endpoint")


def parse_did_document(did: str, body: object) -> DidDocument:
    """The PDS and handle a DID document names.

    Raises:
        IdentityUnresolved: The document is not for `did`, or names no PDS.
    """
    if not isinstance(body, dict) or body.get("id") != did:
        raise IdentityUnresolved(did, "the document served is not this DID's")
    aliases = body.get("alsoKnownAs")
    handle = next(
        (
            a.removeprefix("at://")
            for a in aliases or []
            if isinstance(a, str) and a.startswith("at://")
        ),
        None,
    )
    return DidDocument(did=did, handle=handle, pds_url=_pds_endpoint(did, body.get("service")))


async def _get_json(http: httpx.AsyncClient, url: str, *, what: str, **params: str) -> Any:
    try:
        response = await http.get(url, params=params or None)
    except httpx.HTTPError as exc:
        raise NetworkUnavailable(what, 1, f"{type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        raise RequestRefused(what, response.status_code, response.text[:200])
    try:
        return response.json()
    except json.JSONDecodeError as exc:
        raise RequestRefused(what, response.status_code, "the answer is not JSON") from exc


class IdentityMethods:
    """DID resolution and reading other accounts' public records (a `PhiClient` mixin: it
    needs `_http` and `_plc_url`)."""

    _http: httpx.AsyncClient
    _plc_url: str

    async def resolve_did(self, did: str) -> DidDocument:
        """The DID document of `did`: its PDS and the handle it claims.

        Raises:
            IdentityUnresolved: Not a DID phi resolves, unknown to the directory, or a
                document without a PDS.
            NetworkUnavailable: The directory (or the did:web host) did not answer.
        """
        url = did_document_url(did, plc_url=self._plc_url)
        try:
            body = await _get_json(self._http, url, what=f"DID document of {did!r}")
        except RequestRefused as exc:
            raise IdentityUnresolved(did, f"{url} answered HTTP {exc.status}") from exc
        return parse_did_document(did, body)

    async def liked_post_uris(self, did: str, *, limit: int = 100) -> list[str]:
        """URIs of the posts `did` liked, newest first, read from the likes in their own
        repo on their own PDS (wherever it is), up to `limit` likes.

        Raises:
            IdentityUnresolved: The account's PDS cannot be found.
            NetworkUnavailable, RequestRefused: Their PDS did not serve the records.
        """
        where = await self.resolve_did(did)
        body = await _get_json(
            self._http,
            f"{where.pds_url}/xrpc/com.atproto.repo.listRecords",
            what=f"{did}'s likes on {where.pds_url}",
            repo=did,
            collection=LIKES_COLLECTION,
            limit=str(max(1, min(limit, 100))),
        )
        records = body.get("records") if isinstance(body, dict) else None
        uris = []
        for record in records if isinstance(records, list) else []:
            value = record.get("value") if isinstance(record, dict) else None
            subject = value.get("subject") if isinstance(value, dict) else None
            uri = subject.get("uri") if isinstance(subject, dict) else None
            if isinstance(uri, str) and "/app.bsky.feed.post/" in uri:
                uris.append(uri)
        return uris
