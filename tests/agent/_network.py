"""A stand-in for `PhiClient` in the agent's unit tests: it records what phi would have
written and resolves only the handles it was given (the network tests use the real client)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel

from phi.agent import PhiDeps
from phi.atproto import Identity, NotFound, PhiRecord, PostRef, RecordRef

PHI = Identity(did="did:plc:phi", handle="phi.test")


@dataclass
class FakeClient:
    """Posts, records and labels land in lists; `handles` maps handle → DID."""

    handles: dict[str, str] = field(default_factory=dict)
    me: Identity = PHI
    posts: list[tuple[str, str | None]] = field(default_factory=list)
    """(text, replied-to URI) of each post."""
    records: list[PhiRecord] = field(default_factory=list)
    labels: list[list[str]] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    """Every handle looked up on the "network"."""

    async def post(self, text: str, *, reply_to: str | None = None) -> list[PostRef]:
        self.posts.append((text, reply_to))
        return [PostRef(uri=f"at://{PHI.did}/app.bsky.feed.post/{len(self.posts)}", cid="c")]

    async def resolve_handle(self, handle: str) -> str:
        self.resolved.append(handle)
        if handle not in self.handles:
            raise NotFound(f"handle {handle!r}")
        return self.handles[handle]

    async def create_record(self, record: PhiRecord) -> RecordRef:
        self.records.append(record)
        return RecordRef(uri=f"at://{PHI.did}/io.phi.record/{len(self.records)}", cid="c")

    async def set_self_labels(self, labels: Sequence[str]) -> RecordRef:
        self.labels.append(list(labels))
        return RecordRef(uri=f"at://{PHI.did}/app.bsky.actor.profile/self", cid="c")


def run_context(deps: PhiDeps) -> RunContext[PhiDeps]:
    """What a tool receives when called directly by a test."""
    return RunContext[PhiDeps](deps=deps, model=TestModel(), usage=cast(Any, None))
