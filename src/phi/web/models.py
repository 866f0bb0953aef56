"""The web API's JSON shapes (pydantic at the boundary; the library keeps dataclasses)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from phi.memory import (
    Edge,
    EdgeType,
    ForgetReport,
    Kind,
    Neighbour,
    Recalled,
    Row,
    Status,
    Step,
    Trust,
)
from phi.web.graph import Graph
from phi.web.people import PersonView

__all__ = [
    "ForgetOut",
    "GraphOut",
    "HealthOut",
    "HistoryOut",
    "LinkIn",
    "LinkOut",
    "NeighbourOut",
    "RecalledOut",
    "RememberIn",
    "RowOut",
    "SearchOut",
    "StepOut",
    "UserOut",
    "WalkOut",
]


class RowOut(BaseModel):
    row_id: str
    namespace: str
    kind: Kind
    content: str
    status: Status
    supersedes: str | None
    trust: Trust
    tags: list[str]
    source_uris: list[str]
    author: str | None
    created_at: datetime
    updated_at: datetime
    meta: dict[str, Any]

    @classmethod
    def of(cls, row: Row) -> RowOut:
        return cls.model_validate(row.to_json())


class RecalledOut(RowOut):
    score: float
    matched_by: Literal["dense", "text", "both", "graph"]
    age_seconds: float

    @classmethod
    def of_hit(cls, hit: Recalled) -> RecalledOut:
        return cls.model_validate(hit.to_json())


class SearchOut(BaseModel):
    query: str
    results: list[RecalledOut]


class HistoryOut(BaseModel):
    row_id: str
    history: list[RowOut] = Field(description="The supersession chain, oldest first.")


class NeighbourOut(BaseModel):
    edge_type: EdgeType
    weight: float
    row: RowOut

    @classmethod
    def of(cls, neighbour: Neighbour) -> NeighbourOut:
        return cls(
            edge_type=neighbour.edge.edge_type,
            weight=neighbour.edge.weight,
            row=RowOut.of(neighbour.row),
        )


class ObservationOut(RowOut):
    history: list[RowOut] = Field(description="The beliefs this one replaced, oldest first.")


class UserOut(BaseModel):
    did: str
    namespace: str
    label: str
    observations: list[ObservationOut]
    recent: list[RowOut] = Field(description="The newest verbatim exchanges, newest first.")
    summary: RowOut | None
    block: str | None = Field(description="Their per-user block, if phi ever wrote one.")
    kinds: dict[str, int]

    @classmethod
    def of(cls, view: PersonView) -> UserOut:
        return cls(
            did=view.did,
            namespace=view.namespace,
            label=view.label,
            observations=[
                ObservationOut.model_validate(
                    {**o.row.to_json(), "history": [h.to_json() for h in o.history]}
                )
                for o in view.observations
            ],
            recent=[RowOut.of(row) for row in view.recent],
            summary=RowOut.of(view.summary) if view.summary else None,
            block=view.block,
            kinds=dict(view.kinds),
        )


class NodeOut(BaseModel):
    did: str
    namespace: str
    label: str
    x: float
    y: float
    cluster: int
    basis: Literal["observations", "all_rows"]
    observations: int
    rows: int


class EdgeOut(BaseModel):
    source: str
    target: str
    weight: int
    refs: list[str]


class ClusterOut(BaseModel):
    cluster: int
    topic: str
    size: int


class GraphOut(BaseModel):
    phi: dict[str, float] = Field(default={"x": 0.0, "y": 0.0}, description="phi, the centre.")
    people: list[NodeOut]
    edges: list[EdgeOut]
    clusters: list[ClusterOut]

    @classmethod
    def of(cls, graph: Graph) -> GraphOut:
        return cls.model_validate(
            {
                "people": [vars(p) for p in graph.people],
                "edges": [{**vars(e), "refs": list(e.refs)} for e in graph.edges],
                "clusters": [vars(c) for c in graph.clusters],
            }
        )


class HealthOut(BaseModel):
    status: Literal["ok"] = "ok"
    rows: int
    namespaces: int
    writable: bool = Field(description="Whether a bearer token is configured for writes.")


class RememberIn(BaseModel):
    content: str
    namespace: str
    kind: Kind = "note"
    tags: list[str] = Field(default_factory=list, max_length=3)
    source_uris: list[str] = Field(default_factory=list)
    author: str | None = None
    supersedes: str | None = None


class ForgetOut(BaseModel):
    namespace: str
    rows: int
    edges: int
    kinds: dict[str, int]

    @classmethod
    def of(cls, report: ForgetReport) -> ForgetOut:
        return cls(
            namespace=report.namespace,
            rows=report.rows,
            edges=report.edges,
            kinds=dict(report.kinds),
        )


class LinkIn(BaseModel):
    src: str = Field(description="Row the edge starts from (e.g. the cause).")
    dst: str = Field(description="Row the edge points to (e.g. the effect).")
    edge_type: EdgeType = "causal"
    weight: float = Field(default=1.0, gt=0, le=1)


class LinkOut(BaseModel):
    src: str
    dst: str
    edge_type: EdgeType
    weight: float

    @classmethod
    def of(cls, edge: Edge) -> LinkOut:
        return cls(src=edge.src, dst=edge.dst, edge_type=edge.edge_type, weight=edge.weight)


class StepOut(BaseModel):
    depth: int = Field(description="Hops from the start row.")
    via: str = Field(description="The row this one was reached from.")
    edge_type: EdgeType
    weight: float
    row: RowOut

    @classmethod
    def of(cls, step: Step) -> StepOut:
        return cls(
            depth=step.depth,
            via=step.via,
            edge_type=step.edge.edge_type,
            weight=step.edge.weight,
            row=RowOut.of(step.row),
        )


class WalkOut(BaseModel):
    row_id: str
    steps: list[StepOut] = Field(description="Reachable rows, nearest first, each once.")
