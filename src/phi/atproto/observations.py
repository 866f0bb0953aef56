"""phi's attention pool: at most five active observations, the oldest archived on overflow.

Observations live on the PDS (`{prefix}.observation`) so they show in the system prompt on
every run. When a new one would make six, the oldest leaves the pool: it is handed to an
archive first (the agent passes memory's `phi-observations` namespace) and deleted only
after that succeeded, so nothing is lost. `phi.atproto` does not import the memory engine;
the archive is any object with `archive_observation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from phi.atproto.client import PhiClient
from phi.atproto.models import RecordRef
from phi.atproto.records import Observation, StoredRecord

__all__ = ["AttentionPool", "ObservationArchive", "Observed"]

POOL_SIZE = 5
"""Active observations at most (seed 003: "phi's small attention pool (max 5)")."""


class ObservationArchive(Protocol):
    """Where observations go when they leave the pool."""

    async def archive_observation(self, observation: StoredRecord[Observation]) -> None:
        """Keep `observation` somewhere searchable; raise if that failed."""


@dataclass(frozen=True, kw_only=True)
class Observed:
    """What `AttentionPool.observe` did."""

    ref: RecordRef
    """The new observation's record."""
    archived: list[StoredRecord[Observation]] = field(default_factory=list)
    """Observations that left the pool to make room, oldest first."""


class AttentionPool:
    """The active observations of phi, bounded, oldest archived first.

    Args:
        client: An open client logged in as phi.
        archive: Receives observations that leave the pool.
        capacity: How many stay active.
    """

    def __init__(
        self, client: PhiClient, *, archive: ObservationArchive, capacity: int = POOL_SIZE
    ) -> None:
        self.client, self.archive, self.capacity = client, archive, capacity

    async def active(self) -> list[StoredRecord[Observation]]:
        """The active observations, oldest first."""
        stored = await self.client.list_records(Observation, limit=100)
        return sorted(stored, key=lambda s: (s.value.created_at, s.rkey))

    async def observe(self, observation: Observation) -> Observed:
        """Add `observation`; archive and delete the oldest ones beyond `capacity`."""
        ref = await self.client.create_record(observation)
        current = await self.active()
        overflow = current[: max(0, len(current) - self.capacity)]
        for old in overflow:
            await self.archive.archive_observation(old)
            await self.client.delete_record(Observation, old.rkey)
        return Observed(ref=ref, archived=overflow)

    async def drop(self, rkey: str) -> None:
        """Take one observation out of the pool (acted on, or no longer relevant), archiving it."""
        stored = await self.client.get_record(Observation, rkey)
        await self.archive.archive_observation(stored)
        await self.client.delete_record(Observation, rkey)
