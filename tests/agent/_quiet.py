"""A `FakeClient` that also answers the prompt blocks' reads (an account with nothing on its
PDS yet), so a test can run the whole agent, every block included, without the network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from phi.atproto import NotFound, Post, Profile

from ._network import FakeClient


@dataclass
class QuietClient(FakeClient):
    """Nothing posted, no records; `profiles` maps handle or DID → profile, `goals` are
    what `list_records` returns."""

    profiles: dict[str, Profile] = field(default_factory=dict)
    goals: list[Any] = field(default_factory=list)
    config: Any = field(default_factory=lambda: SimpleNamespace(pds_url="http://127.0.0.1:1"))

    async def list_records(self, model: type[Any], *, limit: int = 100) -> list[Any]:
        return list(self.goals) if model.__name__ == "Goal" else []

    async def list_own_posts(self, *, limit: int = 50) -> list[Post]:
        return []

    async def recent_operations(self, collections: Sequence[str], *, limit: int = 10) -> list[Any]:
        return []

    async def get_profile(self, actor: str) -> Profile:
        if actor not in self.profiles:
            raise NotFound(f"profile {actor!r}")
        return self.profiles[actor]
