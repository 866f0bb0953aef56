"""Blocks (seed 002): short, always-visible texts phi curates with explicit operations.

Three core blocks (`persona`, `zeitgeist`, `humans`) and one block per person
(`user:{did}`). Each holds at most `limit` characters (default 5000), checked on every
write path before anything is stored: `set`, `append` and `replace` refuse a result over
the limit with a message saying how much must go. Every write is a new version in the
memory's ledger (`Memory.ledger`), so recent edits stay inspectable.

A run attaches the blocks of its participants with `Blocks.attach(...)`, an async context
manager that detaches them when the run ends, whether it returns or raises: nothing stays
attached between runs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from pydantic import computed_field

from phi.errors import InvalidInput
from phi.memory.memory import Memory
from phi.memory.model import BLOCK_SCOPE, USER_BLOCK_PREFIX, user_label, utc_now
from phi.memory.serial import Instant, to_json

__all__ = [
    "BLOCK_SCOPE",
    "CORE_BLOCKS",
    "DEFAULT_LIMIT",
    "AttachedBlocks",
    "Block",
    "Blocks",
    "default_content",
    "user_label",
]

CORE_BLOCKS: Final = ("persona", "zeitgeist", "humans")
DEFAULT_LIMIT: Final = 5000


def _check_label(label: str) -> str:
    if label in CORE_BLOCKS:
        return label
    if label.startswith(USER_BLOCK_PREFIX):
        return user_label(label.removeprefix(USER_BLOCK_PREFIX))
    raise InvalidInput(
        f"unknown block {label!r}: use one of {', '.join(CORE_BLOCKS)} or 'user:<did>'"
    )


def default_content(label: str) -> str:
    """What a block holds before anything is written to it."""
    if label.startswith(USER_BLOCK_PREFIX):
        did = label.removeprefix(USER_BLOCK_PREFIX)
        return f"# User: {did}\n\nNo information about this user yet."
    return ""


@dataclass(frozen=True, kw_only=True)
class Block:
    """A block as it is now."""

    label: str
    content: str
    limit: int
    version: int
    """0 for a block never written (its default content)."""
    updated_at: Instant | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def chars(self) -> int:
        """Characters used, against `limit`."""
        return len(self.content)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (`phi.memory.serial`), `chars` included."""
        json_value: dict[str, Any] = to_json(self)
        return json_value

    def render(self) -> str:
        return f"[BLOCK {self.label} — {len(self.content)}/{self.limit} chars]\n{self.content}"


@dataclass(kw_only=True)
class Blocks:
    """The blocks of one memory, and which of them the current runs have attached."""

    memory: Memory
    limit: int = DEFAULT_LIMIT
    _attached: Counter[str] = field(default_factory=Counter, init=False, repr=False)
    _lock: anyio.Lock = field(default_factory=anyio.Lock, init=False, repr=False)

    async def view(self, label: str) -> Block:
        """The block's current content (its default if never written)."""
        label = _check_label(label)
        entry = await self.memory.ledger.read_state(BLOCK_SCOPE, label)
        if entry is None:
            return Block(
                label=label,
                content=default_content(label),
                limit=self.limit,
                version=0,
                updated_at=None,
            )
        content = json.loads(entry.value)["content"]
        return Block(
            label=label,
            content=content,
            limit=self.limit,
            version=entry.version,
            updated_at=entry.written_at,
        )

    async def history(self, label: str, *, limit: int = 20) -> list[Block]:
        """The kept versions of the block (the store keeps the last 20), newest first."""
        label = _check_label(label)
        entries = await self.memory.store.state_history(BLOCK_SCOPE, label, limit=limit)
        return [
            Block(
                label=label,
                content=json.loads(entry.value)["content"],
                limit=self.limit,
                version=entry.version,
                updated_at=entry.written_at,
            )
            for entry in entries
        ]

    async def labels(self) -> list[str]:
        """Every block that has been written, core blocks first."""
        written = await self.memory.ledger.state_keys(BLOCK_SCOPE)
        return [*CORE_BLOCKS, *(k for k in written if k not in CORE_BLOCKS)]

    async def set(self, label: str, content: str, *, dry_run: bool = False) -> Block:
        """Replace the whole block."""
        label = _check_label(label)
        async with self._lock:
            return await self._write(label, content, dry_run=dry_run)

    async def append(self, label: str, text: str, *, dry_run: bool = False) -> Block:
        """Add `text` on a new line at the end of the block."""
        if not text.strip():
            raise InvalidInput(f"nothing to append to block {label!r}")
        async with self._lock:
            current = await self.view(label)
            joined = f"{current.content}\n{text}" if current.content else text
            return await self._write(current.label, joined, dry_run=dry_run)

    async def replace(self, label: str, old: str, new: str, *, dry_run: bool = False) -> Block:
        """Replace every occurrence of `old` with `new` (`old` must occur)."""
        if not old:
            raise InvalidInput("the text to replace is empty")
        async with self._lock:
            current = await self.view(label)
            if old not in current.content:
                raise InvalidInput(
                    f"block {current.label!r} does not contain {old!r}; view it first"
                )
            return await self._write(
                current.label, current.content.replace(old, new), dry_run=dry_run
            )

    async def _write(self, label: str, content: str, *, dry_run: bool) -> Block:
        if len(content) > self.limit:
            raise InvalidInput(
                f"block {label!r} would hold {len(content)} characters, over its limit of "
                f"{self.limit}; shorten it by {len(content) - self.limit} (replace or set)"
            )
        now = utc_now()
        if dry_run:
            current = await self.view(label)
            return Block(
                label=label,
                content=content,
                limit=self.limit,
                version=current.version,
                updated_at=current.updated_at,
            )
        version = await self.memory.ledger.write_state(
            BLOCK_SCOPE, label, json.dumps({"content": content}, ensure_ascii=False), at=now
        )
        return Block(
            label=label, content=content, limit=self.limit, version=version, updated_at=now
        )

    async def forget(self, did: str) -> int:
        """Erase a person's block and its versions for good (they asked to be forgotten);
        `Memory.forget` erases their namespace, not this. Returns the versions erased."""
        label = user_label(did)
        async with self._lock:
            return await self.memory.ledger.erase_state(BLOCK_SCOPE, label)

    @property
    def attached(self) -> frozenset[str]:
        """Labels attached by runs in progress."""
        return frozenset(label for label, count in self._attached.items() if count > 0)

    @asynccontextmanager
    async def attach(self, dids: Sequence[str]) -> AsyncIterator[AttachedBlocks]:
        """Attach the core blocks and the blocks of `dids` for one run, then detach them,
        also when the run raises. A person's block is created with its default text on
        first attach."""
        labels = list(dict.fromkeys([*CORE_BLOCKS, *(user_label(d) for d in dids)]))
        self._attached.update(labels)
        try:
            for label in labels:
                block = await self.view(label)
                if block.version == 0 and label.startswith(USER_BLOCK_PREFIX):
                    await self.set(label, block.content)
            yield AttachedBlocks(blocks=self, labels=tuple(labels))
        finally:
            self._attached.subtract(labels)
            self._attached = +self._attached  # drop labels no run holds


@dataclass(frozen=True, kw_only=True)
class AttachedBlocks:
    """The blocks one run sees."""

    blocks: Blocks
    labels: tuple[str, ...]

    async def render(self) -> str:
        """Every attached block, labelled with its name and how full it is."""
        return "\n\n".join([(await self.blocks.view(label)).render() for label in self.labels])
