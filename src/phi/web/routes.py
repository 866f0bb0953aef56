"""The API routes: each a thin adapter over one `Memory` call with the same name."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from phi.memory import Edge, EdgeType, Kind, Memory, Neighbour, NewRow, Row
from phi.memory.memory import MAX_WALK_DEPTH
from phi.web._deps import get_memory, require_token
from phi.web.graph import Graph, build_graph
from phi.web.models import (
    ForgetOut,
    HealthOut,
    HistoryOut,
    LinkIn,
    RememberIn,
    RowForgetOut,
    SearchOut,
    WalkOut,
)
from phi.web.people import PersonView, person_view

__all__ = ["router"]

router = APIRouter()
MemoryDep = Annotated[Memory, Depends(get_memory)]


@router.get("/health")
async def health(memory: MemoryDep, request: Request) -> HealthOut:
    """The store answers; how big it is; whether writes are enabled."""
    stats = await memory.stats()
    writable = request.app.state.token is not None
    return HealthOut(rows=stats.rows, namespaces=stats.namespaces, writable=writable)


@router.get("/api/memory/search")
async def search(
    memory: MemoryDep,
    q: Annotated[str, Query(min_length=1, description="What to recall.")],
    namespace: Annotated[list[str] | None, Query(description="Limit to these namespaces.")] = None,
    kind: Annotated[list[Kind] | None, Query(description="Only these kinds.")] = None,
    include_superseded: bool = False,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> SearchOut:
    """`Memory.search`: hybrid recall, best first, with provenance and age."""
    found = await memory.search(
        q,
        namespace=namespace or None,
        kinds=kind,
        status=None if include_superseded else "active",
        limit=limit,
    )
    return SearchOut(query=q, results=found, unembedded=found.unembedded)


@router.get("/api/memory/rows/{row_id}")
async def get_row(memory: MemoryDep, row_id: str) -> Row:
    """`Memory.get`: one row by id."""
    return await memory.get(row_id)


@router.get("/api/memory/history/{row_id}")
async def history(memory: MemoryDep, row_id: str) -> HistoryOut:
    """`Memory.history`: what was believed and when, oldest first."""
    chain = await memory.history(row_id)
    return HistoryOut(row_id=row_id, history=chain)


@router.get("/api/memory/neighbors/{row_id}")
async def neighbors(
    memory: MemoryDep, row_id: str, type: Annotated[list[EdgeType] | None, Query()] = None
) -> list[Neighbour]:
    """`Memory.neighbors`: rows linked to this one in its namespace, strongest first."""
    return await memory.neighbors(row_id, types=type)


@router.get("/api/users/{did_or_handle}")
async def user(memory: MemoryDep, did_or_handle: str) -> PersonView:
    """What phi knows about one person and why: observations with sources and history,
    recent exchanges, the summary. Only that person's namespace is read."""
    return await person_view(memory, did_or_handle)


@router.get("/api/memory/graph")
async def graph(memory: MemoryDep) -> Graph:
    """People placed by PCA of their observation vectors, phi at the centre, linked where
    they share references, grouped by topic."""
    return await build_graph(memory)


@router.post("/api/memory/rows", status_code=201, dependencies=[Depends(require_token)])
async def remember(memory: MemoryDep, body: RememberIn) -> Row:
    """`Memory.remember` (needs the bearer token)."""
    return await memory.remember(
        NewRow(
            content=body.content,
            namespace=body.namespace,
            kind=body.kind,
            tags=body.tags,
            source_uris=body.source_uris,
            author=body.author,
            supersedes=body.supersedes,
        )
    )


@router.delete("/api/memory/namespaces/{namespace}", dependencies=[Depends(require_token)])
async def forget(memory: MemoryDep, namespace: str) -> ForgetOut:
    """`Memory.forget`: erase a namespace for good (needs the bearer token)."""
    return ForgetOut.of(await memory.forget(namespace))


@router.delete("/api/memory/rows/{row_id}", dependencies=[Depends(require_token)])
async def forget_row(memory: MemoryDep, row_id: str) -> RowForgetOut:
    """`Memory.forget_row`: erase one row for good with the rows made from it alone
    (needs the bearer token)."""
    return RowForgetOut.of(await memory.forget_row(row_id))


@router.get("/api/memory/walk/{row_id}")
async def walk(
    memory: MemoryDep,
    row_id: str,
    depth: Annotated[int, Query(ge=1, le=MAX_WALK_DEPTH, description="Hops to follow.")] = 2,
    type: Annotated[list[EdgeType] | None, Query(description="Only these edge types.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> WalkOut:
    """`Memory.walk`: rows reachable within `depth` hops in the row's namespace, nearest
    first, each with the edge it was reached by."""
    steps = await memory.walk(row_id, depth=depth, types=type, limit=limit)
    return WalkOut(row_id=row_id, steps=steps)


@router.post("/api/memory/link", status_code=201, dependencies=[Depends(require_token)])
async def link(memory: MemoryDep, body: LinkIn) -> Edge:
    """`Memory.link`: an edge between two rows of one namespace (needs the bearer token)."""
    return await memory.link(body.src, body.dst, edge_type=body.edge_type, weight=body.weight)
