"""Self-labels: the labels an account puts on itself, in its profile record.

An `app.bsky.actor.profile` record may carry `labels`, a `com.atproto.label.defs#selfLabels`
object (`{"$type": ..., "values": [{"val": "graphic-media"}, ...]}`). Apps use them to warn
about or hide the account's content (`porn`, `sexual`, `nudity`, `graphic-media`), and
Bluesky honours `!no-unauthenticated` (do not show the account to logged-out visitors).
Pure functions check label values and edit a profile record's JSON without touching any
other field; `PhiClient.get_self_labels` and `set_self_labels` (from `SelfLabelMethods`)
read and write the record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from atproto_client import AsyncClient, models  # type: ignore[import-untyped]

from phi.atproto._session import Session
from phi.atproto.errors import InvalidArgument, RecordNotFound
from phi.atproto.models import RecordRef

__all__ = [
    "MAX_LABEL_LENGTH",
    "MAX_SELF_LABELS",
    "PROFILE_COLLECTION",
    "PROFILE_RKEY",
    "SELF_LABELS_TYPE",
    "SelfLabelMethods",
    "self_labels_of",
    "validate_self_labels",
    "with_self_labels",
]

PROFILE_COLLECTION = "app.bsky.actor.profile"
"""The collection of an account's profile record."""

PROFILE_RKEY = "self"
"""The profile record's key: an account has exactly one."""

SELF_LABELS_TYPE = "com.atproto.label.defs#selfLabels"
"""The `$type` of the `labels` object."""

MAX_SELF_LABELS = 10
"""The lexicon's limit on self-labels per record."""

MAX_LABEL_LENGTH = 128
"""The lexicon's limit on one label value (bytes; values are ASCII, so characters too)."""

_LABEL = re.compile(r"^!?[a-z0-9-]+$")
"""Lowercase ASCII letters, digits and hyphens; a leading `!` marks the protocol's own
labels (`!no-unauthenticated`)."""


def validate_self_labels(labels: Sequence[str]) -> list[str]:
    """Check label values and return them without duplicates, in the order given.

    Raises:
        InvalidArgument: A value is not lowercase ASCII letters, digits and hyphens (with an
            optional leading `!`), is longer than 128 characters, or there are more than
            10 distinct values.
    """
    if isinstance(labels, str):
        raise InvalidArgument(f"self-labels are a list of values, got the string {labels!r}")
    distinct = list(dict.fromkeys(labels))
    for value in distinct:
        if len(value) > MAX_LABEL_LENGTH:
            raise InvalidArgument(
                f"self-label {value[:40]!r}... is {len(value)} characters long; the limit is "
                f"{MAX_LABEL_LENGTH}"
            )
        if not _LABEL.match(value):
            raise InvalidArgument(
                f"self-label {value!r} is not valid: use lowercase ASCII letters, digits and "
                "hyphens (for example 'graphic-media' or '!no-unauthenticated')"
            )
    if len(distinct) > MAX_SELF_LABELS:
        raise InvalidArgument(
            f"{len(distinct)} self-labels given; a profile holds at most {MAX_SELF_LABELS}"
        )
    return distinct


def self_labels_of(profile: Mapping[str, Any]) -> list[str]:
    """The self-label values of a profile record's JSON (empty when it has none)."""
    labels = profile.get("labels")
    if not isinstance(labels, Mapping) or labels.get("$type", SELF_LABELS_TYPE) != SELF_LABELS_TYPE:
        return []
    values = labels.get("values")
    if not isinstance(values, list):
        return []
    return [v["val"] for v in values if isinstance(v, Mapping) and isinstance(v.get("val"), str)]


def with_self_labels(
    profile: Mapping[str, Any] | None, labels: Sequence[str], *, created_at: str
) -> dict[str, Any]:
    """A copy of a profile record's JSON whose self-labels are exactly `labels`.

    Every other field is kept as it is. With no labels the `labels` field is removed.

    Args:
        profile: The current record, or None when the account has no profile record yet.
        labels: The label values, already checked by `validate_self_labels`.
        created_at: `createdAt` of a new record (ignored when `profile` exists).
    """
    record: dict[str, Any] = (
        dict(profile)
        if profile is not None
        else {"$type": PROFILE_COLLECTION, "createdAt": created_at}
    )
    if labels:
        record["labels"] = {"$type": SELF_LABELS_TYPE, "values": [{"val": v} for v in labels]}
    else:
        record.pop("labels", None)
    return record


# The profile is read and written as raw JSON, not through the SDK's models: the SDK would
# turn the record into its own model and back, adding `$type`s and reshaping fields (blobs,
# fields newer than the SDK) that must come back exactly as they were.


async def _get_raw_record(client: AsyncClient, *, params: Any) -> Any:
    response = await client.invoke_query(
        "com.atproto.repo.getRecord", params=params, output_encoding="application/json"
    )
    return response.content


async def _put_raw_record(client: AsyncClient, *, body: dict[str, Any]) -> Any:
    response = await client.invoke_procedure(
        "com.atproto.repo.putRecord",
        content=json.dumps(body).encode(),
        input_encoding="application/json",
        output_encoding="application/json",
    )
    return response.content


class SelfLabelMethods:
    """The self-label half of `PhiClient` (a mixin: it needs `_session`)."""

    _session: Session

    async def _own_profile(self) -> tuple[str, dict[str, Any]] | None:
        """phi's profile record as raw JSON with its CID, or None when it has none."""
        uri = f"at://{self._session.identity.did}/{PROFILE_COLLECTION}/{PROFILE_RKEY}"
        params = models.ComAtprotoRepoGetRecord.Params(
            repo=self._session.identity.did, collection=PROFILE_COLLECTION, rkey=PROFILE_RKEY
        )
        try:
            content = await self._session.request(
                partial(_get_raw_record, params=params), what=f"getRecord {uri}", record_uri=uri
            )
        except RecordNotFound:
            return None
        assert isinstance(content, dict), "getRecord answers JSON"
        return str(content["cid"]), dict(content["value"])

    async def get_self_labels(self) -> list[str]:
        """The self-labels on phi's profile (`com.atproto.label.defs#selfLabels`), in order."""
        profile = await self._own_profile()
        return self_labels_of(profile[1]) if profile is not None else []

    async def set_self_labels(self, labels: Sequence[str]) -> RecordRef:
        """Make `labels` the exact set of self-labels on phi's profile record.

        Every other field of the profile (name, bio, avatar...) is kept as it is; the record
        is created if phi has none. The write is a compare-and-swap on the version read, so
        a profile edited meanwhile is not overwritten (the write is refused instead).

        Args:
            labels: Label values such as `graphic-media` or `!no-unauthenticated`; an empty
                list removes the labels. Duplicates are dropped.

        Returns:
            Where the profile record was written.

        Raises:
            InvalidArgument: A value is not lowercase letters, digits and hyphens, is longer
                than 128 characters, or there are more than 10.
            RequestRefused: The profile changed between reading and writing; try again.
        """
        values = validate_self_labels(labels)
        created_at = self._session.sdk.get_current_time_iso()
        return await self.edit_own_profile(
            lambda current: with_self_labels(current, values, created_at=created_at)
        )

    async def edit_own_profile(
        self, edit: Callable[[dict[str, Any] | None], dict[str, Any]]
    ) -> RecordRef:
        """Replace phi's profile record with `edit(current)` (`current` is `None` when phi
        has none), as raw JSON, in one compare-and-swap: a profile edited meanwhile is not
        overwritten (the write is refused instead).

        Raises:
            RequestRefused: The profile changed between reading and writing; try again.
        """
        current = await self._own_profile()
        record = edit(dict(current[1]) if current is not None else None)
        body: dict[str, Any] = {
            "repo": self._session.identity.did,
            "collection": PROFILE_COLLECTION,
            "rkey": PROFILE_RKEY,
            "record": record,
        }
        if current is not None:
            body["swapRecord"] = current[0]
        written = await self._session.request(
            partial(_put_raw_record, body=body), what="putRecord of phi's profile"
        )
        assert isinstance(written, dict), "putRecord answers JSON"
        return RecordRef(uri=str(written["uri"]), cid=str(written["cid"]))
