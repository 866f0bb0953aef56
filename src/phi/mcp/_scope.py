"""Namespace confinement: what `phi mcp --namespace-prefix X` lets a client see and touch.

Every tool passes its namespaces and rows through one `Scope`, so confinement is checked in
one place. A row outside the scope is reported as not found, never as forbidden: a confined
client must not learn that another client's row exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phi.errors import InvalidInput, NamespaceNotFound, RowNotFound
from phi.memory import Memory, Row

__all__ = ["Scope"]


@dataclass(frozen=True, kw_only=True)
class Scope:
    """The namespaces one MCP client may use."""

    prefix: str | None = None
    """Only namespaces starting with this; `None` means the whole store."""

    def allows(self, namespace: str) -> bool:
        return self.prefix is None or namespace.startswith(self.prefix)

    def check(self, namespace: str) -> str:
        """`namespace` if this client may use it, else `InvalidInput` saying why."""
        if not self.allows(namespace):
            raise InvalidInput(
                f"namespace {namespace!r} is outside this server's prefix {self.prefix!r}; "
                f"use a namespace starting with {self.prefix!r}"
            )
        return namespace

    def check_row(self, row: Row) -> Row:
        """`row` if it lies inside the scope; otherwise the caller is told it does not exist."""
        if not self.allows(row.namespace):
            raise RowNotFound(row.row_id)
        return row

    async def namespaces(self, memory: Memory, asked: Sequence[str] | None) -> list[str] | None:
        """The namespaces a read may cover: the ones asked for (checked), or, for a confined
        client that named none, every namespace under its prefix."""
        if asked:
            return [self.check(name) for name in asked]
        if self.prefix is None:
            return None
        names = [info.namespace for info in await memory.namespaces(prefix=self.prefix)]
        if not names:
            raise NamespaceNotFound(f"{self.prefix}*")
        return names
