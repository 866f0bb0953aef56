"""phi's memory as an MCP server: thin tools over `phi.memory.Memory`.

Any agent plugs this in and gets phi's memory: `remember` and `capture` write, `recall`,
`preload`, `neighbors` and `history` read, `forget` and `forget_row` erase (only when the
operator allowed it). The `session_start` prompt and the `phi://preload/{namespace}`
resource hand a client its context window before the first message (seed 004: "wake up
already knowing").

The caller opens the `Memory` (the CLI, or a test) and keeps it open while the server runs.
phi's errors become tool errors with their one-line message in `_tool_errors`, the one
place this surface maps them.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from phi.errors import InvalidInput, NamespaceNotFound, PhiError
from phi.mcp._scope import Scope
from phi.mcp.capture import CaptureKind, capture
from phi.mcp.graph import add_graph_tools
from phi.mcp.hook_tool import add_hook_tool
from phi.memory import EdgeType, Kind, Memory, NewRow, user_namespace
from phi.memory.model import validate_namespace
from phi.memory.serial import to_json

__all__ = ["DEFAULT_SESSION_NAMESPACE", "McpOptions", "build_server"]

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_SESSION_NAMESPACE: Final = "agent-sessions"
"""Where `capture` writes when the client names no namespace (after the prefix, if any)."""

INSTRUCTIONS: Final = (
    "phi's memory. Call `preload` (or get the `session_start` prompt) at the start of a "
    "session; `recall` before answering from memory; `capture` every turn, decision, tool "
    "result and file change (a hook can do it for you); `remember` a fact worth keeping. "
    "Rows carry kind, trust and age: weigh verbatim exchanges above extracted facts."
)


@dataclass(frozen=True, kw_only=True)
class McpOptions:
    """How `phi mcp` was started."""

    namespace_prefix: str | None = None
    """Confine the client to namespaces starting with this."""
    allow_forget: bool = False
    """Register the `forget` and `forget_row` tools (hard deletes) at all."""
    session_namespace: str = DEFAULT_SESSION_NAMESPACE
    """Default namespace of `capture`; the prefix is put in front of it when it lacks it."""
    read_only: bool = False
    """The client may read, never write (a read-only bearer token)."""
    also_read: tuple[str, ...] = ()
    """More namespace prefixes the client may read, not write (a team's, beside its own)."""

    def __post_init__(self) -> None:
        # An empty prefix would confine nothing while looking like confinement.
        if self.namespace_prefix is not None:
            try:
                validate_namespace(self.namespace_prefix)
            except InvalidInput:
                raise InvalidInput(
                    f"namespace prefix {self.namespace_prefix!r} confines nothing or is not "
                    "the start of a namespace name; give e.g. 'myagent-' (letters, digits and "
                    ". _ : % -), or leave the option out to serve the whole store"
                ) from None

    def default_namespace(self) -> str:
        return Scope(prefix=self.namespace_prefix).place(self.session_namespace)


def _tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """phi's errors reach the client as a tool error carrying their one-line message."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except PhiError as exc:
            raise ToolError(str(exc)) from None

    return wrapper


Namespace = Annotated[
    str, Field(description="Namespace, e.g. `phi-users-did:plc:abc` or your own `myagent-notes`.")
]
OptNamespaces = Annotated[
    list[str] | None,
    Field(description="Limit to these namespaces; default: all you may read."),
]
Person = Annotated[
    str | None,
    Field(description="A person's DID: read only their namespace `phi-users-{did}`."),
]
RowId = Annotated[str, Field(description="A row id from `recall`, `remember` or `preload`.")]


def _about(person: str | None, namespaces: list[str] | None) -> list[str] | None:
    """A question about one person reads their namespace and nothing else."""
    if person is None:
        return namespaces
    if namespaces:
        raise InvalidInput("pass either person or namespaces, not both")
    return [user_namespace(person)]


def build_server(memory: Memory, options: McpOptions | None = None) -> MCPServer:
    """An MCP server over an open `memory` (the caller keeps it open while serving)."""
    opts = options or McpOptions()
    scope = Scope(prefix=opts.namespace_prefix, read_only=opts.read_only, also_read=opts.also_read)
    server: MCPServer = MCPServer(
        "phi-memory", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING"
    )
    _add_write_tools(server, memory, scope, opts)
    _add_read_tools(server, memory, scope)
    _add_session_start(server, memory, scope)
    add_graph_tools(server, memory, scope)
    add_hook_tool(server, memory, scope, default_namespace=opts.default_namespace())
    return server


def _add_write_tools(server: MCPServer, memory: Memory, scope: Scope, opts: McpOptions) -> None:
    @server.tool()
    @_tool_errors
    async def remember(
        content: Annotated[str, Field(description="What to remember, in plain words.")],
        namespace: Namespace,
        kind: Annotated[Kind, Field(description="Row kind; `note` for your own notes.")] = "note",
        tags: Annotated[list[str] | None, Field(description="Up to 3 topic tags.")] = None,
        source_uris: Annotated[list[str] | None, Field(description="Where it came from.")] = None,
        author: Annotated[str | None, Field(description="DID of the person it is about.")] = None,
        supersedes: Annotated[
            str | None, Field(description="Id of the row this corrects; it becomes superseded.")
        ] = None,
    ) -> dict[str, Any]:
        """Store one memory row. The same text and sources twice make one row. Pass
        `supersedes` when the belief changed: the old row stays in `history`."""
        if supersedes is not None:
            scope.check_row(await memory.get(supersedes))
        row = await memory.remember(
            NewRow(
                content=content,
                namespace=scope.check_write(namespace),
                kind=kind,
                tags=tags or (),
                source_uris=source_uris or (),
                author=author,
                supersedes=supersedes,
            )
        )
        return row.to_json()

    @server.tool(name="capture")
    @_tool_errors
    async def capture_tool(
        session: Annotated[str, Field(description="Id of the agent session (one thread).")],
        kind: Annotated[CaptureKind, Field(description="What this item is.")],
        content: Annotated[str, Field(description="The turn's text, decision, result or diff.")],
        speaker: Annotated[str | None, Field(description="Who spoke (for a `turn`).")] = None,
        by_agent: Annotated[bool, Field(description="The agent itself said it.")] = False,
        path: Annotated[str | None, Field(description="File path (for a `file_change`).")] = None,
        tool: Annotated[
            str | None, Field(description="Tool name (for a `tool_result` or an `error`).")
        ] = None,
        namespace: Annotated[str | None, Field(description="Default: the server's.")] = None,
    ) -> dict[str, Any]:
        """Store one item of a session automatically: chunked, embedded, and linked in time
        to the previous item of the same session. Send everything; no judgement needed."""
        captured = await capture(
            memory,
            namespace=scope.check_write(namespace or opts.default_namespace()),
            session=session,
            kind=kind,
            content=content,
            speaker=speaker,
            by_agent=by_agent,
            path=path,
            tool=tool,
        )
        return {"session": captured.session, "row_ids": [r.row_id for r in captured.rows]}

    if opts.allow_forget:

        @server.tool()
        @_tool_errors
        async def forget(
            namespace: Namespace,
            confirm: Annotated[str, Field(description="The namespace again, to confirm.")],
        ) -> dict[str, Any]:
            """Erase a namespace for good (a person asked to be forgotten). Irreversible."""
            if confirm != namespace:
                raise InvalidInput("confirm must repeat the namespace exactly")
            report = await memory.forget(scope.check_write(namespace))
            return {
                "namespace": report.namespace,
                "rows": report.rows,
                "edges": report.edges,
                "kinds": dict(report.kinds),
            }

        @server.tool()
        @_tool_errors
        async def forget_row(
            row_id: RowId,
            confirm: Annotated[str, Field(description="The row id again, to confirm.")],
        ) -> dict[str, object]:
            """Erase one row for good (a mistake, a leaked secret) with the rows made from it
            alone (facts extracted from it, summaries of it only); a row it had corrected
            becomes current again. Irreversible."""
            if confirm != row_id:
                raise InvalidInput("confirm must repeat the row id exactly")
            # A row it cannot read is "not found"; one it may only read is refused by name.
            scope.check_write(scope.check_row(await memory.get(row_id)).namespace)
            report = await memory.forget_row(row_id, confine=scope.writable)
            return report.to_json()


def _add_read_tools(server: MCPServer, memory: Memory, scope: Scope) -> None:
    @server.tool()
    @_tool_errors
    async def recall(
        query: Annotated[str, Field(description="What to recall, as a question or keywords.")],
        namespaces: OptNamespaces = None,
        person: Person = None,
        kinds: Annotated[list[Kind] | None, Field(description="Only these kinds.")] = None,
        author: Annotated[str | None, Field(description="Only rows about this DID.")] = None,
        include_superseded: bool = False,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> dict[str, Any]:
        """Hybrid recall (meaning + keywords + graph + recency), best first, with provenance.

        `unembedded` counts rows in the searched scope stored but not embedded yet: recall
        by meaning cannot see them until they are, recall by their words already does."""
        found = await memory.search(
            query,
            namespace=await scope.namespaces(memory, _about(person, namespaces)),
            kinds=kinds,
            author=author,
            status=None if include_superseded else "active",
            limit=limit,
        )
        return found.to_json()

    @server.tool()
    @_tool_errors
    async def preload(
        hint: Annotated[str, Field(description="What the session is about (a task, a name).")],
        namespaces: OptNamespaces = None,
        person: Person = None,
        budget_tokens: Annotated[int, Field(ge=50, le=32_000)] = 1500,
    ) -> dict[str, Any]:
        """The context a session should start with: recent, relevant and connected rows,
        rendered with trust labels within `budget_tokens`."""
        window = await memory.preload(
            hint,
            namespace=await scope.namespaces(memory, _about(person, namespaces)),
            budget_tokens=budget_tokens,
        )
        return window.to_json()

    @server.tool()
    @_tool_errors
    async def neighbors(
        row_id: RowId,
        types: Annotated[list[EdgeType] | None, Field(description="Only these edge types.")] = None,
    ) -> dict[str, Any]:
        """The rows linked to a row in its namespace (temporal, semantic, reference,
        supersedes...), strongest edge first."""
        scope.check_row(await memory.get(row_id))
        found = await memory.neighbors(row_id, types=types)
        return {"neighbors": to_json([n for n in found if scope.allows(n.row.namespace)])}

    @server.tool()
    @_tool_errors
    async def history(row_id: RowId) -> dict[str, Any]:
        """What was believed and when: the row's supersession chain, oldest first."""
        scope.check_row(await memory.get(row_id))
        chain = await memory.history(row_id)
        return {"history": [row.to_json() for row in chain if scope.allows(row.namespace)]}


NO_MEMORY_YET: Final = "(no memory yet{where}: this is the first session; nothing to recall)"
"""What a session's first call gets from an empty store or namespace: not an error."""


def _add_session_start(server: MCPServer, memory: Memory, scope: Scope) -> None:
    async def _window_text(hint: str, namespace: str | None) -> str:
        # Prompts and resources have no tool-error channel: a phi error becomes an MCP
        # "invalid params" error carrying its message (anything else would reach the client
        # as "Internal server error").
        where = f" in {namespace!r}" if namespace else ""
        try:
            window = await memory.preload(
                hint, namespace=await scope.namespaces(memory, [namespace] if namespace else None)
            )
        except NamespaceNotFound:
            return NO_MEMORY_YET.format(where=where)
        except PhiError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        return window.text or NO_MEMORY_YET.format(where=where)

    @server.prompt()
    async def session_start(hint: str = "the work ahead", namespace: str | None = None) -> str:
        """The context window to start a session with, as the first user message."""
        text = await _window_text(hint, namespace)
        return f"Here is what you remember (from phi's memory):\n\n{text}"

    @server.resource("phi://preload/{namespace}", mime_type="text/markdown")
    async def preload_resource(namespace: str) -> str:
        """A namespace's session-start context window."""
        return await _window_text("session start", namespace)
