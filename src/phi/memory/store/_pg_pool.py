"""How many connections a store's pool may hold: the setting, within what the server allows.

A PostgreSQL server refuses connections past `max_connections`, of which the last
`superuser_reserved_connections` (and, from PostgreSQL 16, `reserved_connections`) are kept
for administrators. A pool that may grow past what is left fails at the worst moment (a
burst of agents), with "too many clients" from a connection it opens mid-request. So the
bound is checked once, when the store opens: a setting larger than the server could ever
give one client is lowered to what it can, with a one-line warning, and a bound larger
than the connections free right now (other processes hold the rest) is warned about.

Every process that opens the store has a pool of its own: N processes sharing one server
need N x the bound (plus one connection each for a bulk load or an upgrade) within
`max_connections - reserved - SPARE`; `docs/scaling.md` has the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from phi.memory.store._pg_schema import Conn

__all__ = ["DEFAULT_POOL_MAX", "SPARE", "ServerRoom", "pool_bound", "server_room"]

DEFAULT_POOL_MAX: Final = 4
"""A process's pool bound unless set (`PHI_POSTGRES_POOL_MAX`): the embedder's CPU, not the
database, limits a process; under 64 clients no process had more than 2 sessions busy at
once (`bench/load.py`, pools of 8), and 23 processes at 4 fit PostgreSQL's default of 100
connections."""

SPARE: Final = 5
"""Connections no pool may take: room for `psql`, `pg_dump`, `phi memory upgrade` and the
extra connection of a bulk load while every pool is full."""


@dataclass(frozen=True, kw_only=True)
class ServerRoom:
    """What a server allows its ordinary clients, read when a store opens."""

    max_connections: int
    reserved: int
    """Slots only superusers (or `pg_use_reserved_connections`) may take."""
    in_use: int
    """Client connections open now, the one that asked included."""

    @property
    def budget(self) -> int:
        """Connections all the pools on this server may hold together (at least 1)."""
        return max(1, self.max_connections - self.reserved - SPARE)

    @property
    def free(self) -> int:
        """Connections of the budget nobody holds now (the asking one is about to close)."""
        return self.budget - (self.in_use - 1)


async def server_room(conn: Conn) -> ServerRoom:
    """The server's connection limits and use, through `conn`."""
    cur = await conn.execute(
        "SELECT current_setting('max_connections')::int,"
        " current_setting('superuser_reserved_connections')::int"
        # `reserved_connections` exists from PostgreSQL 16; older servers have none.
        " + coalesce(current_setting('reserved_connections', true)::int, 0),"
        " (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')"
    )
    max_connections, reserved, in_use = await cur.fetchone() or (0, 0, 0)
    return ServerRoom(
        max_connections=int(max_connections), reserved=int(reserved), in_use=int(in_use)
    )


def pool_bound(wanted: int, room: ServerRoom, *, where: str) -> tuple[int, str | None]:
    """The pool's bound for a setting of `wanted` on a server with `room`, and a one-line
    warning when the bound is not what was asked or may not be reached now."""
    limits = (
        f"max_connections {room.max_connections} - {room.reserved} reserved - {SPARE} spare"
        f" = {room.budget}"
    )
    if wanted > room.budget:
        return room.budget, (
            f"PHI_POSTGRES_POOL_MAX={wanted} is more than the PostgreSQL server at {where!r}"
            f" allows ({limits}): this process's pool stops at {room.budget}"
        )
    if wanted > room.free:
        return wanted, (
            f"only {max(room.free, 0)} connections of the PostgreSQL server at {where!r} are"
            f" free now ({limits}, {room.in_use - 1} in use) and this process's pool may grow"
            f" to {wanted} (PHI_POSTGRES_POOL_MAX): with N processes on one server keep"
            f" N x PHI_POSTGRES_POOL_MAX within {room.budget}"
        )
    return wanted, None
