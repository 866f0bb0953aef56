"""phi's memory as a picture (seed 000): people placed by what phi believes about them.

Each person is the mean of their active `observation` vectors (all their active rows when
phi has extracted nothing yet, and the node says so), projected to 2-d by PCA (numpy SVD).
The projection is centred on the people's mean, which is where phi is drawn: phi sits in
the middle of everyone it knows. People who share a reference (a thread, a URL, a handle)
are linked; people close in meaning are grouped by a small deterministic k-means, and each
group is named by its most distinctive words.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from phi.memory import Memory, Row, extract_refs
from phi.memory.recall import query_terms
from phi.memory.views import row_vectors
from phi.web.people import USER_PREFIX, person_label

__all__ = ["Cluster", "Graph", "PersonEdge", "PersonNode", "build_graph", "kmeans", "project_2d"]

Floats = npt.NDArray[np.float64]

MAX_EDGE_REFS: Final = 5
"""How many shared references an edge lists (its weight counts them all)."""


@dataclass(frozen=True, kw_only=True)
class PersonNode:
    did: str
    namespace: str
    label: str
    x: float
    """PCA coordinate in [-1, 1]; phi is at (0, 0)."""
    y: float
    cluster: int
    basis: Literal["observations", "all_rows"]
    """What the position was computed from: observations, or all rows when there are none."""
    observations: int
    """Active observations phi holds about them."""
    rows: int
    """All their active rows."""


@dataclass(frozen=True, kw_only=True)
class PersonEdge:
    source: str
    """DID of one person."""
    target: str
    weight: int
    """How many references they share."""
    refs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Cluster:
    cluster: int
    topic: str
    """The group's most distinctive words."""
    size: int


@dataclass(frozen=True, kw_only=True)
class Graph:
    people: tuple[PersonNode, ...]
    edges: tuple[PersonEdge, ...]
    clusters: tuple[Cluster, ...]
    phi: Mapping[str, float] = field(default_factory=lambda: {"x": 0.0, "y": 0.0})
    """phi, the centre every position is relative to."""


def project_2d(points: Floats) -> Floats:
    """PCA to two dimensions, centred on the mean and scaled into the unit disc."""
    if len(points) == 0:
        return np.zeros((0, 2))
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((len(points), 2))
    components = vt[:2]
    coords[:, : len(components)] = centred @ components.T
    # SVD signs are arbitrary; fix them so the picture does not flip between calls.
    for axis in range(coords.shape[1]):
        column = coords[:, axis]
        if column.size and column[np.argmax(np.abs(column))] < 0:
            coords[:, axis] = -column
    radius = float(np.max(np.linalg.norm(coords, axis=1)))
    return coords / radius if radius > 1e-12 else coords


def kmeans(points: Floats, k: int, *, rounds: int = 20) -> list[int]:
    """Deterministic k-means: farthest-point seeding from the first point, then Lloyd."""
    n = len(points)
    if n == 0:
        return []
    k = max(1, min(k, n))
    centres = [points[0]]
    while len(centres) < k:
        dist = np.min([np.linalg.norm(points - c, axis=1) for c in centres], axis=0)
        centres.append(points[int(np.argmax(dist))])
    labels = np.zeros(n, dtype=int)
    for _ in range(rounds):
        dist = np.stack([np.linalg.norm(points - c, axis=1) for c in centres], axis=1)
        new = np.argmin(dist, axis=1)
        if np.array_equal(new, labels) and _ > 0:
            break
        labels = new
        centres = [
            points[labels == i].mean(axis=0) if np.any(labels == i) else centres[i]
            for i in range(k)
        ]
    return [int(label) for label in labels]


@dataclass(frozen=True, kw_only=True)
class _Person:
    did: str
    namespace: str
    label: str
    basis: Literal["observations", "all_rows"]
    rows: tuple[Row, ...]
    observations: int
    active_rows: int
    mean: Floats
    refs: frozenset[str]
    words: frozenset[str]
    """The content words of their active rows (to name their group)."""


async def _person(memory: Memory, namespace: str) -> _Person | None:
    active = [row async for row in memory.export(namespace=namespace, status="active")]
    observed = [row for row in active if row.kind == "observation"]
    basis: Literal["observations", "all_rows"] = "observations" if observed else "all_rows"
    used = observed or active
    vectors = await row_vectors(memory, [row.row_id for row in used])
    if not vectors:
        return None
    mean = np.mean(np.stack([v.astype(np.float64) for v in vectors.values()]), axis=0)
    did = namespace.removeprefix(USER_PREFIX)
    refs = {ref for row in active for ref in (*extract_refs(row.content), *row.source_uris)}
    return _Person(
        did=did,
        namespace=namespace,
        label=person_label(active, did),
        basis=basis,
        rows=tuple(used),
        observations=len(observed),
        active_rows=len(active),
        mean=mean,
        refs=frozenset(refs - {did}),
        words=frozenset(word for row in active for word in query_terms(row.content)),
    )


def _edges(people: Sequence[_Person]) -> list[PersonEdge]:
    holders: dict[str, list[int]] = {}
    for index, person in enumerate(people):
        for ref in person.refs:
            holders.setdefault(ref, []).append(index)
    # A reference everyone shares (phi's own handle, a popular site) links nothing.
    common = max(2, len(people) // 2) if len(people) >= 4 else len(people)
    shared: dict[tuple[int, int], list[str]] = {}
    for ref, owners in sorted(holders.items()):
        if 2 <= len(owners) <= common:
            for i, a in enumerate(owners):
                for b in owners[i + 1 :]:
                    shared.setdefault((a, b), []).append(ref)
    return [
        PersonEdge(
            source=people[a].did,
            target=people[b].did,
            weight=len(refs),
            refs=tuple(refs[:MAX_EDGE_REFS]),
        )
        for (a, b), refs in sorted(shared.items())
    ]


def _topics(people: Sequence[_Person], labels: Sequence[int], k: int) -> list[Cluster]:
    """Name each group by the words most of its people use and the others do not."""
    names = {word for p in people for word in query_terms(p.label)}
    clusters = []
    for i in range(k):
        inside = [p for p, label in zip(people, labels, strict=True) if label == i]
        outside = [p for p, label in zip(people, labels, strict=True) if label != i]
        share_in = Counter(word for p in inside for word in p.words - names)
        share_out = Counter(word for p in outside for word in p.words - names)

        lift = {
            word: n / len(inside) - share_out[word] / max(1, len(outside))
            for word, n in share_in.items()
            if n >= min(2, len(inside))
        }
        ranked = sorted(lift, key=lambda w: (-lift[w], -share_in[w], w))
        clusters.append(Cluster(cluster=i, topic=" · ".join(ranked[:3]), size=len(inside)))
    return clusters


async def build_graph(memory: Memory) -> Graph:
    """Everyone phi knows, placed, linked and grouped."""
    people = []
    for info in await memory.namespaces(prefix=USER_PREFIX):
        person = await _person(memory, info.namespace)
        if person is not None:
            people.append(person)
    if not people:
        return Graph(people=(), edges=(), clusters=())
    means = np.stack([p.mean for p in people])
    coords = project_2d(means)
    k = max(1, min(6, round(math.sqrt(len(people) / 2))))
    labels = kmeans(coords, k)
    nodes = tuple(
        PersonNode(
            did=p.did,
            namespace=p.namespace,
            label=p.label,
            x=round(float(xy[0]), 4),
            y=round(float(xy[1]), 4),
            cluster=label,
            basis=p.basis,
            observations=p.observations,
            rows=p.active_rows,
        )
        for p, xy, label in zip(people, coords, labels, strict=True)
    )
    return Graph(
        people=nodes, edges=tuple(_edges(people)), clusters=tuple(_topics(people, labels, k))
    )
