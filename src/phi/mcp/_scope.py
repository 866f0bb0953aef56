"""Namespace confinement: what `phi mcp --namespace-prefix X` lets a client see and touch.

Every tool passes its namespaces and rows through one `Scope`, so confinement is checked in
one place. A row outside the scope is reported as not found, never as forbidden: a confined
client must not learn that another client's row exists.

A prefix matches at a namespace boundary, never inside a word: `alpha` covers `alpha`,
`alpha-notes`, `alpha.x`, `alpha:x` and `alpha_x`, not `alphabet-secret` (a plain
`startswith` gave the holder of `alpha` another team's `alphabet-` namespaces). A prefix that
ends in a separator (`team-a-`) already ends at a boundary.

A scope may also be read-only (a token that may look but not write), and may read further
prefixes it cannot write (a person's own prefix read-write, the team's read-only): a write
outside what it may write is refused with `ReadOnly`, which names the namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from phi.errors import InvalidInput, NamespaceNotFound, RowNotFound
from phi.memory import Memory, Row

__all__ = ["NAMESPACE_SEPARATORS", "ReadOnly", "Scope", "within"]

NAMESPACE_SEPARATORS: Final = frozenset("-_.:")
"""Where one word of a namespace name ends. Names are letters, digits and `. _ : % -`
(`phi.memory.model.validate_namespace`); `%` starts an escape inside a word, so it is no
boundary."""


def within(namespace: str, prefix: str) -> bool:
    """Whether `namespace` lies under `prefix`: it is the prefix, or continues it after a
    separator (the prefix's last character, or the namespace's next one)."""
    if not namespace.startswith(prefix):
        return False
    rest = namespace[len(prefix) :]
    return not rest or prefix[-1:] in NAMESPACE_SEPARATORS or rest[0] in NAMESPACE_SEPARATORS


class ReadOnly(InvalidInput):
    """A write to a namespace this client may only read."""

    def __init__(self, namespace: str) -> None:
        super().__init__(
            f"namespace {namespace!r} is read-only for this client (its token may read it, not"
            " write it); write with a token that has it read-write"
        )
        self.namespace = namespace


@dataclass(frozen=True, kw_only=True)
class Scope:
    """The namespaces one MCP client may use."""

    prefix: str | None = None
    """Only namespaces under this (`within`); `None` means the whole store."""
    read_only: bool = False
    """The client may read under `prefix` but write nowhere."""
    also_read: tuple[str, ...] = ()
    """More prefixes the client may read (never write)."""

    def allows(self, namespace: str) -> bool:
        """Whether the client may read `namespace`."""
        return self.writable(namespace) or self._home(namespace) or self._also(namespace)

    def writable(self, namespace: str) -> bool:
        """Whether the client may write `namespace`."""
        return not self.read_only and self._home(namespace)

    def _home(self, namespace: str) -> bool:
        return self.prefix is None or within(namespace, self.prefix)

    def _also(self, namespace: str) -> bool:
        return any(within(namespace, extra) for extra in self.also_read)

    def check_write(self, namespace: str) -> str:
        """`namespace` if this client may write it; `ReadOnly` if it may only read it, and
        the `check` error if it may not even read it."""
        if not self.writable(namespace):
            self.check(namespace)
            raise ReadOnly(namespace)
        return namespace

    def check(self, namespace: str) -> str:
        """`namespace` if this client may use it, else `InvalidInput` saying why."""
        if not self.allows(namespace):
            assert self.prefix is not None
            # Say nothing of `also_read`: the error names only what the operator configured.
            raise InvalidInput(
                f"namespace {namespace!r} is outside this server's prefix {self.prefix!r}; "
                f"use a namespace like {self.place('notes')!r}"
            )
        return namespace

    def place(self, name: str) -> str:
        """`name` if it lies inside the scope, else `name` put under the prefix (with a `-`
        when the prefix does not end in a separator)."""
        if self.prefix is None or self.allows(name):
            return name
        joint = "" if self.prefix[-1] in NAMESPACE_SEPARATORS else "-"
        return f"{self.prefix}{joint}{name}"

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
        names: list[str] = []
        for prefix in (self.prefix, *self.also_read):
            # The store lists by plain prefix; `alpha` must not read `alphabet-...`.
            listed = await memory.namespaces(prefix=prefix)
            names += [i.namespace for i in listed if self.allows(i.namespace)]
        if not names:
            raise NamespaceNotFound(f"{self.prefix}*")
        return list(dict.fromkeys(names))
