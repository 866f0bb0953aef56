"""What phi knows about one person, gathered from their namespace only.

Everything here reads `phi-users-{did}` and nothing else, so a page about one person can
never show another person's rows (DESIGN: "a query about one person never returns another
person's rows").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import JsonSchemaValue

from phi.errors import InvalidInput, NamespaceNotFound
from phi.memory import USER_NAMESPACE_PREFIX, Memory, Row, user_namespace
from phi.memory.learning import Blocks, user_label
from phi.memory.serial import spread, spread_schema
from phi.memory.views import person_rows, rows_mentioning

__all__ = [
    "USER_PREFIX",
    "Observation",
    "PersonNotFound",
    "PersonView",
    "person_label",
    "person_view",
    "resolve",
]

USER_PREFIX: Final = USER_NAMESPACE_PREFIX
MAX_OBSERVATIONS: Final = 200
RECENT_EXCHANGES: Final = 10


class PersonNotFound(NamespaceNotFound):
    """No stored row speaks under this handle (and resolving it needs the network)."""

    def __init__(self, handle: str) -> None:
        self.namespace = f"{USER_PREFIX}?"
        self.handle = handle
        Exception.__init__(
            self,
            f"no one in memory speaks as {handle!r}; resolving a handle needs the network, "
            "so pass their DID (did:plc:...)",
        )


@dataclass(frozen=True, kw_only=True)
class Observation:
    """An active observation and the beliefs it replaced."""

    row: Row
    history: tuple[Row, ...]
    """Older versions, oldest first (empty when the belief never changed)."""

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # In JSON an observation is its row with its history beside the row's fields.
        return spread(handler(self), "row")

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> JsonSchemaValue:
        return spread_schema(core_schema, handler, "row")


@dataclass(frozen=True, kw_only=True)
class PersonView:
    """What phi knows about a person, and why."""

    did: str
    namespace: str
    label: str
    """A handle or name seen in their own rows, else the DID."""
    observations: tuple[Observation, ...]
    """Active observations, newest first, each with its sources and history."""
    recent: tuple[Row, ...]
    """The newest verbatim exchanges, newest first."""
    summary: Row | None
    """The newest active relationship summary, if one was written."""
    block: str | None
    """Their per-user block (seed 002), if phi ever wrote one."""
    kinds: Mapping[str, int]
    """Row counts by kind (superseded rows included)."""


async def resolve(memory: Memory, did_or_handle: str) -> str:
    """A DID as given, or the one DID whose own rows speak with this handle.

    Resolving a handle properly needs the network (a DNS or `.well-known` lookup); offline
    we only trust rows where the person spoke under that handle or were stored with it.
    """
    value = did_or_handle.strip()
    if value.startswith("did:"):
        user_namespace(value)  # validates
        return value
    handle = value.removeprefix("@").lower()
    if not handle or "." not in handle:
        raise InvalidInput(
            f"{did_or_handle!r} is neither a DID nor a handle like 'alice.bsky.social'"
        )
    found: set[str] = set()
    for row in await rows_mentioning(memory, handle):
        if row.namespace.startswith(USER_PREFIX) and _speaks_as(row, handle):
            found.add(row.namespace.removeprefix(USER_PREFIX))
    if len(found) == 1:
        return found.pop()
    if found:
        raise InvalidInput(f"handle {handle!r} appears for {len(found)} people; pass a DID")
    raise PersonNotFound(handle)


def _speaks_as(row: Row, handle: str) -> bool:
    if str(row.meta.get("handle", "")).lower().removeprefix("@") == handle:
        return True
    return any(name.lower().removeprefix("@") == handle for name in _speakers(row))


def _speakers(row: Row) -> list[str]:
    """Who spoke in an interaction row, phi's own turns left out."""
    turns = row.meta.get("turns")
    if not isinstance(turns, list):
        return []
    return [
        str(turn["speaker"])
        for turn in turns
        if isinstance(turn, dict) and turn.get("speaker") and not turn.get("by_phi")
    ]


def person_label(rows: list[Row], did: str) -> str:
    """The handle stored with their rows, or the name they most often speak under."""
    for row in rows:
        handle = row.meta.get("handle")
        if isinstance(handle, str) and handle:
            return handle
    names = Counter(name for row in rows for name in _speakers(row))
    return names.most_common(1)[0][0] if names else did


async def person_view(memory: Memory, did_or_handle: str) -> PersonView:
    """Everything the memory page shows about one person."""
    did = await resolve(memory, did_or_handle)
    found = await person_rows(
        memory, did, observations=MAX_OBSERVATIONS, exchanges=RECENT_EXCHANGES
    )
    observed, recent = list(found.observations), list(found.exchanges)
    observations = []
    for row in observed:
        older = (await memory.history(row.row_id))[:-1] if row.supersedes else []
        observations.append(Observation(row=row, history=tuple(older)))
    block = await Blocks(memory=memory).view(user_label(did))
    return PersonView(
        did=did,
        namespace=found.namespace,
        label=person_label([*recent, *observed], did),
        observations=tuple(observations),
        recent=tuple(recent),
        summary=found.summary,
        block=block.content if block.version > 0 else None,
        kinds=found.kinds,
    )
