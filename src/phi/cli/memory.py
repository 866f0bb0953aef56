"""`phi memory ...`: the memory engine on the command line, mirroring `phi.memory.Memory`."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from phi.cli._edge import (
    AsJson,
    Db,
    InSandbox,
    Yes,
    confirm_erase,
    console,
    emit_json,
    fail,
    open_memory,
    parse_time,
    plural,
    read_text,
    run,
    show_table,
    shown_location,
)
from phi.private import private_file

if TYPE_CHECKING:
    from phi.memory import Found, Kind, Row

__all__ = ["AsJson", "Db", "InSandbox", "memory_app"]

memory_app = typer.Typer(help="Read and write phi's memory.", no_args_is_help=True)

Namespace = Annotated[
    str, typer.Option("--namespace", "-n", help="Namespace, e.g. phi-users-did:plc:…")
]
Namespaces = Annotated[
    list[str] | None,
    typer.Option("--namespace", "-n", help="Limit to these namespaces (repeatable)."),
]


def _print_hits(found: Found) -> None:
    from phi.memory.preload import format_age

    if not found:
        console.print("no matching memory")
    for rank, hit in enumerate(found, start=1):
        row = hit.row
        console.print(
            f"[bold]{rank}.[/] {hit.score:.3f}  {row.kind} · {row.trust} trust · "
            f"{format_age(hit.age_seconds)} · {row.namespace} · found by {hit.matched_by}",
            highlight=False,
        )
        text = row.content if len(row.content) <= 500 else row.content[:499] + "…"
        # Every line indented: an interaction's second turn at column 0 reads as a new hit.
        console.print(_indented(text), highlight=False, markup=False)
        console.print(f"   [dim]id {row.row_id}[/]", highlight=False)
    if found.unembedded:
        one = found.unembedded == 1
        them = "it" if one else "them"
        console.print(
            f"note: {plural(found.unembedded, 'row')} in this scope {'is' if one else 'are'}"
            f" not embedded yet: search by meaning cannot see {them} until the embedder"
            f" catches up (`phi memory embed`); search by words finds {them} already",
            highlight=False,
            markup=False,
        )


def _indented(text: str, prefix: str = "   ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


def _field(value: object) -> str:
    """One field of a row as a person reads it: no Python reprs (`None`, `['a']`)."""
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _print_row(row: Row) -> None:
    for key, value in row.to_json().items():
        # The value is text from outside (a post, a tool's output): never rich markup, or
        # `[pepper]` vanishes and a stray `[/]` is an error.
        console.print(f"{key}: {_field(value)}", highlight=False, markup=False)


@memory_app.command("add")
def add(
    text: Annotated[str, typer.Argument(help="What to remember ('-' reads standard input).")],
    namespace: Namespace,
    kind: Annotated[str, typer.Option(help="Row kind.")] = "note",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Topic tag (up to 3).")] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Source URI (repeatable).")
    ] = None,
    author: Annotated[str | None, typer.Option(help="DID of the person this is about.")] = None,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Remember TEXT in a namespace (the same text and sources twice make one row)."""
    content = read_text(text)
    chosen_kind = _kind(kind)

    async def go() -> tuple[Row, bool]:
        from phi.memory import NewRow

        async with open_memory(db, sandbox=sandbox, creates=True) as memory:
            before = (await memory.stats()).rows
            row = await memory.remember(
                NewRow(
                    content=content,
                    namespace=namespace,
                    kind=chosen_kind,
                    tags=tag or (),
                    source_uris=source or (),
                    author=author,
                )
            )
            # `remember` returns the existing row for a repeated write; the row count says
            # which happened without a second lookup.
            return row, (await memory.stats()).rows == before

    row, existed = run(go)
    if as_json:
        emit_json({**row.to_json(), "existed": existed})
    elif existed:
        console.print(f"already remembered: {row.row_id} in {row.namespace}", highlight=False)
    else:
        console.print(f"remembered {row.row_id} in {row.namespace}", highlight=False)


def _kind(value: str) -> Kind:
    from phi.memory.model import KINDS

    if value not in KINDS:
        fail(f"unknown kind {value!r}; expected one of {', '.join(KINDS)}")
    return value


@memory_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to recall.")],
    namespace: Namespaces = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only these kinds.")] = None,
    include_superseded: Annotated[
        bool,
        typer.Option("--include-superseded", help="Also rows phi no longer believes."),
    ] = False,
    author: Annotated[str | None, typer.Option(help="Only rows about this DID.")] = None,
    since: Annotated[str | None, typer.Option(help="Created at or after (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(help="Created before (ISO 8601).")] = None,
    limit: Annotated[int, typer.Option(help="How many rows.")] = 10,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Hybrid recall over memory (dense + BM25, graph-expanded, recency-aware)."""
    start, end = parse_time(since, "--since"), parse_time(until, "--until")
    kinds = [_kind(k) for k in kind or ()] or None

    async def go() -> Found:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.search(
                query,
                namespace=namespace or None,
                kinds=kinds,
                status=None if include_superseded else "active",
                author=author,
                since=start,
                until=end,
                limit=limit,
            )

    found = run(go)
    emit_json(found.to_json()) if as_json else _print_hits(found)


@memory_app.command("show")
def show(
    row_id: Annotated[str, typer.Argument(help="Row id.")],
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """One row and the rows linked to it."""

    async def go() -> tuple[Row, list[Any]]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.get(row_id), await memory.neighbors(row_id)

    row, neighbours = run(go)
    if as_json:
        emit_json(
            {
                **row.to_json(),
                "neighbors": [
                    {
                        "edge_type": n.edge.edge_type,
                        "weight": n.edge.weight,
                        "row_id": n.row.row_id,
                        "content": n.row.content,
                    }
                    for n in neighbours
                ],
            }
        )
        return
    _print_row(row)
    for n in neighbours:
        console.print(
            f"  ~{n.edge.edge_type} ({n.edge.weight:.2f}) {n.row.row_id}: {n.row.content[:100]}",
            highlight=False,
            markup=False,
        )


@memory_app.command("preload")
def preload(
    hint: Annotated[str, typer.Argument(help="What the session is about.")],
    namespace: Namespaces = None,
    budget_tokens: Annotated[
        int, typer.Option("--budget-tokens", help="Token budget of the window.")
    ] = 1500,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """The context window a session would start with."""

    async def go() -> Any:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.preload(
                hint, namespace=namespace or None, budget_tokens=budget_tokens
            )

    window = run(go)
    if as_json:
        emit_json(window.to_json())
    else:
        # Plain text, unwrapped: this is what a model would be given.
        typer.echo(window.text or "(no memory yet)")


@memory_app.command("stats")
def stats(db: Db = None, sandbox: InSandbox = False, as_json: AsJson = False) -> None:
    """What the store holds (rows, edges, namespaces, embedding model, size) and what
    its language-model passes cost (calls and tokens per pass)."""
    from phi.memory.learning import model_usage

    async def go() -> tuple[Any, Any, Any]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.stats(), await memory.namespaces(), await model_usage(memory)

    summary, namespaces, usage = run(go)
    data = {
        "location": shown_location(summary.location),
        "backend": summary.backend,
        "embedding": summary.embedding
        and {"model": summary.embedding.model, "dimension": summary.embedding.dimension},
        "rows": summary.rows,
        "edges": summary.edges,
        "namespaces": summary.namespaces,
        "size_bytes": summary.size_bytes,
        "by_namespace": [
            {
                "namespace": n.namespace,
                "rows": n.rows,
                "active": n.active,
                "kinds": dict(n.kinds),
                "last_created_at": n.last_created_at and n.last_created_at.isoformat(),
            }
            for n in namespaces
        ],
        "model_usage": [
            {
                "purpose": u.purpose,
                "calls": u.calls,
                "requests": u.requests,
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "failures": u.failures,
            }
            for u in usage
        ],
    }
    if as_json:
        emit_json(data)
        return
    embedding = summary.embedding
    shown = {
        **data,
        "embedding": f"{embedding.model} ({embedding.dimension}-d)" if embedding else "none yet",
    }
    for key in ("location", "backend", "embedding", "rows", "edges", "namespaces", "size_bytes"):
        console.print(f"[bold]{key}[/]: {shown[key]}", highlight=False)
    from rich.table import Table

    table = Table("namespace", "rows", "active", "kinds")
    for n in namespaces:
        table.add_row(
            n.namespace,
            str(n.rows),
            str(n.active),
            ", ".join(f"{k}={v}" for k, v in n.kinds.items()),
        )
    if namespaces:
        show_table(table)
    calls = Table("pass", "calls", "requests", "input tokens", "output tokens", "failures")
    for u in usage:
        calls.add_row(
            u.purpose, *map(str, (u.calls, u.requests, u.input_tokens, u.output_tokens, u.failures))
        )
    if usage:
        show_table(calls)
    else:
        console.print("model calls: none yet")


@memory_app.command("export")
def export(
    namespace: Namespaces = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File (default: stdout).")
    ] = None,
    db: Db = None,
    sandbox: InSandbox = False,
) -> None:
    """Every row as JSON lines, oldest first (superseded rows included)."""
    if output is not None and not output.parent.is_dir():
        fail(f"cannot write {str(output)!r}: the folder {str(output.parent)!r} does not exist")
    if output is not None and output.is_dir():
        fail(f"cannot write {str(output)!r}: it is a folder; give a file name")

    async def go() -> int:
        count = 0
        async with open_memory(db, sandbox=sandbox) as memory:
            if output:
                private_file(output)  # people's words: 0600, like the store they came from
            with output.open("w") if output else _stdout() as fh:
                async for row in memory.export(namespace=namespace or None, status=None):
                    fh.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
                    count += 1
        return count

    count = run(go)
    if output:
        console.print(f"exported {plural(count, 'row')} to {output}", highlight=False)


def _stdout() -> Any:
    return contextlib.nullcontext(sys.stdout)


@memory_app.command("forget")
def forget(
    namespace: Annotated[
        str | None,
        typer.Argument(help="The namespace to erase, e.g. phi-users-did:plc:… (or give --row)."),
    ] = None,
    row: Annotated[
        str | None,
        typer.Option("--row", help="Erase only this row (and what was made from it alone)."),
    ] = None,
    yes: Yes = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Erase a namespace for good (a person asked to be forgotten), or one row with --row.

    For a person's namespace, rows derived from them elsewhere go too; public records
    already published on phi's PDS from erased rows are listed for you to delete. With
    --row, the rows made from that row alone go with it, and a row it had corrected is
    current again.
    """
    if namespace is not None and row is not None:
        fail("give a namespace or --row ID, not both")
    if row is not None:
        from phi.cli.memory_forget import forget_row

        forget_row(row, yes=yes, db=db, sandbox=sandbox, as_json=as_json)
        return
    if namespace is None:
        fail("give the namespace to erase, or --row ID for one row (`phi memory forget --help`)")
    confirm_erase(f"every row of {namespace!r}", yes=yes)

    async def go() -> Any:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.forget(namespace)

    report = run(go)
    if as_json:
        emit_json(
            {
                "namespace": report.namespace,
                "rows": report.rows,
                "edges": report.edges,
                "kinds": dict(report.kinds),
                "derived": dict(report.derived),
                "published": list(report.published),
            }
        )
    else:
        kinds = ", ".join(f"{n} {k}" for k, n in report.kinds.items())
        console.print(
            f"erased {report.namespace}: {plural(report.rows, 'row')} ({kinds}) and "
            f"{plural(report.edges, 'edge')}",
            highlight=False,
        )
        if report.derived:
            where = ", ".join(f"{n} in {ns}" for ns, n in report.derived.items())
            console.print(f"  including rows derived from them elsewhere: {where}", highlight=False)
        if report.published:
            console.print(
                "  still on phi's PDS, published from erased rows; delete them yourself:",
                highlight=False,
            )
            for uri in report.published:
                console.print(f"    {uri}", highlight=False, markup=False)
