"""The derivation walks both stores' `forget` and `forget_row` share: pure code over the
provenance each backend reads, so SQLite and PostgreSQL cannot drift apart.

How a row records what it was made from (its *sources*), as keys:
- `row:<row_id>` for each id in `meta["derived_from"]` (a promoted card names the
  observation) and for each `phi-memory:<row_id>` source URI (a fact extracted from an
  exchange that had no URI of its own);
- `uri:<uri>` for each other source URI, only on a learned row (`meta["learned_by"]`: a
  fact, a summary): it was made from the rows that carry that URI.
A row *provides* `row:<its id>`, and, when it is not learned itself, `uri:<uri>` for each of
its source URIs (a verbatim exchange or a captured event is where the URI came from).

`forget_row` does not follow `causal` edges: capture links a prompt to the decision it led
to and that to its outcome, which are events of their own, not copies; following them would
erase a whole session. `forget` of a namespace or person does follow them (everything goes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "LEARNED_BY",
    "MEMORY_URI",
    "Node",
    "RowWalk",
    "derived_closure",
    "node",
    "split_keys",
]

MAX_DERIVATION_DEPTH: Final = 50
"""A guard against a cycle of derivations in damaged data."""

LEARNED_BY: Final = "learned_by"
"""`meta` key of a row a learning pass made (a fact, a summary, a card)."""
MEMORY_URI: Final = "phi-memory:"
"""A source URI naming another row of the memory (`phi.memory.learning.extract`)."""


@dataclass(frozen=True, kw_only=True)
class Node:
    """What the walk needs of one row."""

    key: int
    """The backend's internal id."""
    row_id: str
    namespace: str
    sources: frozenset[str]
    """The keys of what this row was made from (see the module docstring)."""
    provides: frozenset[str]
    """The keys a row made from this one would name."""
    supersedes: str | None
    """The row this one corrects (it may become current again)."""


def node(
    *,
    key: int,
    row_id: str,
    namespace: str,
    source_uris: Iterable[object],
    derived_from: object,
    learned: bool,
    supersedes: str | None,
) -> Node:
    """A `Node` from a row's columns; values that are not strings (damaged data) name nothing."""
    uris = [u for u in source_uris if isinstance(u, str)]
    named = derived_from if isinstance(derived_from, list) else []
    sources = {f"row:{i}" for i in named if isinstance(i, str)}
    sources |= {f"row:{u.removeprefix(MEMORY_URI)}" for u in uris if u.startswith(MEMORY_URI)}
    plain = {f"uri:{u}" for u in uris if not u.startswith(MEMORY_URI)}
    if learned:
        sources |= plain
    provides = {f"row:{row_id}"} | (set() if learned else plain)
    return Node(
        key=key,
        row_id=row_id,
        namespace=namespace,
        sources=frozenset(sources),
        provides=frozenset(provides),
        supersedes=supersedes,
    )


@dataclass(kw_only=True)
class RowWalk:
    """`forget_row`'s walk: from one row to every row whose only sources are erased rows.

    A backend drives it with its own two reads, in its own transaction::

        walk = RowWalk(start=node, confine=confine)
        while keys := walk.pending():
            made = derived_from_keys(conn, keys)      # rows naming any of `keys`
            walk.step(made, providers(conn, walk.sources_of(made)))

    A row derived from the erased row and from another that stays is kept (a summary of
    two exchanges outlives the forgetting of one). `confine` keeps the walk inside a
    client's namespaces: a derived row outside them stays.
    """

    start: Node
    confine: Callable[[str], bool] | None = None
    erased: dict[int, Node] = field(default_factory=dict)
    _frontier: list[Node] = field(default_factory=list)
    _depth: int = 0

    def __post_init__(self) -> None:
        self.erased[self.start.key] = self.start
        self._frontier = [self.start]

    def pending(self) -> frozenset[str]:
        """The keys rows derived from the newest erased rows would name (empty: done)."""
        if self._depth >= MAX_DERIVATION_DEPTH:
            return frozenset()
        self._depth += 1
        return frozenset().union(*(n.provides for n in self._frontier))

    @staticmethod
    def sources_of(made: Iterable[Node]) -> frozenset[str]:
        return frozenset().union(*(n.sources for n in made))

    def step(self, made: Iterable[Node], providers: Iterable[Node]) -> None:
        """Erase each row of `made` whose every present source is erased."""
        provided_by: dict[str, set[int]] = {}
        for provider in providers:
            for k in provider.provides:
                provided_by.setdefault(k, set()).add(provider.key)
        newly: list[Node] = []
        for candidate in made:
            if candidate.key in self.erased:
                continue
            if self.confine is not None and not self.confine(candidate.namespace):
                continue
            present = set().union(*(provided_by.get(k, set()) for k in candidate.sources))
            present.discard(candidate.key)
            if present and present <= self.erased.keys():
                newly.append(candidate)
        for found in newly:
            self.erased[found.key] = found
        self._frontier = newly

    def ordered(self) -> list[Node]:
        """The erased rows, the asked one first, then the derived ones by id."""
        rest = sorted((n for n in self.erased.values() if n is not self.start), key=_by_id)
        return [self.start, *rest]


def split_keys(keys: Iterable[str]) -> tuple[list[str], list[str]]:
    """The row ids and the URIs among derivation keys, for a backend's queries."""
    ids = [k.removeprefix("row:") for k in keys if k.startswith("row:")]
    return ids, [k.removeprefix("uri:") for k in keys if k.startswith("uri:")]


def _by_id(n: Node) -> str:
    return n.row_id


def derived_closure(seeds: Set[int], made_from: Mapping[int, Set[int]]) -> set[int]:
    """`forget`'s walk: every row derived, directly or through other rows, from `seeds`
    (not the seeds), by any one of its sources (`made_from`: source id to derived ids)."""
    found: set[int] = set()
    frontier = set(seeds)
    for _ in range(MAX_DERIVATION_DEPTH):
        if not frontier:
            break
        reached: set[int] = set()
        for source in frontier:
            reached |= made_from.get(source, set())
        frontier = reached - seeds - found
        found |= frontier
    return found
