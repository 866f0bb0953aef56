"""The web API's request bodies and response envelopes.

Memory's own values (`Row`, `Recalled`, `Neighbour`, `Step`, `Edge`, the person view and
the graph) are returned as they are: FastAPI serialises the dataclasses with pydantic,
through the same definitions `phi.memory.serial.to_json` uses for the CLI and MCP, so the
three surfaces print one shape and the OpenAPI document describes it. Only what has no
dataclass of its own lives here: bodies, envelopes, and the health answer.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from phi.memory import EdgeType, ForgetReport, Kind, Recalled, Row, RowForgetReport, Step

__all__ = [
    "ForgetOut",
    "HealthOut",
    "HistoryOut",
    "LinkIn",
    "RememberIn",
    "RowForgetOut",
    "SearchOut",
    "WalkOut",
]


class SearchOut(BaseModel):
    query: str
    results: list[Recalled]
    unembedded: int = Field(
        description="Rows in the searched scope not embedded yet: search by meaning cannot"
        " see them until they are (search by words already finds them)."
    )


class HistoryOut(BaseModel):
    row_id: str
    history: list[Row] = Field(description="The supersession chain, oldest first.")


class WalkOut(BaseModel):
    row_id: str
    steps: list[Step] = Field(description="Reachable rows, nearest first, each once.")


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


class LinkIn(BaseModel):
    src: str = Field(description="Row the edge starts from (e.g. the cause).")
    dst: str = Field(description="Row the edge points to (e.g. the effect).")
    edge_type: EdgeType = "causal"
    weight: float = Field(default=1.0, gt=0, le=1)


class ForgetOut(BaseModel):
    """What `forget` erased, without the provenance details the CLI prints."""

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


class RowForgetOut(BaseModel):
    """What `forget_row` erased: the row, the rows made from it alone, the rows current again."""

    row_id: str
    rows: int
    edges: int
    kinds: dict[str, int]
    erased: list[str]
    derived: list[str]
    reinstated: list[str]
    published: list[str]

    @classmethod
    def of(cls, report: RowForgetReport) -> RowForgetOut:
        return cls.model_validate(report.to_json())
