"""phi's memory over the Model Context Protocol: any agent can plug it in.

`build_server(memory, McpOptions(...))` returns an `MCPServer` (official `mcp` SDK); the
`phi mcp` command serves it over stdio or streamable HTTP.
"""

from phi.mcp._scope import Scope
from phi.mcp.capture import CAPTURE_KINDS, Captured, CaptureKind, capture, chunk_text
from phi.mcp.server import DEFAULT_SESSION_NAMESPACE, McpOptions, build_server

__all__ = [
    "CAPTURE_KINDS",
    "DEFAULT_SESSION_NAMESPACE",
    "CaptureKind",
    "Captured",
    "McpOptions",
    "Scope",
    "build_server",
    "capture",
    "chunk_text",
]
