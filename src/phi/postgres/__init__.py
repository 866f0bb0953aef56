"""A local PostgreSQL with pgvector for development and tests (`phi postgres up`).

The memory store itself lives in `phi.memory.store.postgres` and works with any server
that has the `vector` extension; this package only manages the bundled one, closed to
anyone without its password (kept in a 0600 file beside its data), phi working as a role
that is not a superuser.
"""

from phi.postgres.server import (
    DEFAULT_PORT,
    PostgresServerError,
    ServerStatus,
    rotate_password,
    server_down,
    server_status,
    server_up,
    vector_problem,
)

__all__ = [
    "DEFAULT_PORT",
    "PostgresServerError",
    "ServerStatus",
    "rotate_password",
    "server_down",
    "server_status",
    "server_up",
    "vector_problem",
]
