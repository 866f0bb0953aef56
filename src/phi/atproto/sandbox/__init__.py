"""The sandbox: a real local AT Protocol network on 127.0.0.1 for phi, its tests and newcomers.

`@atproto/dev-env` (PLC directory, PDS, AppView) runs on Node 22 from npm, with the machine's
PostgreSQL and Redis. The first start installs both into a project-local cache; later starts
take seconds. A cast of accounts (phi, operator, alice, bob) is created on every start.
"""

from __future__ import annotations

from phi.atproto.sandbox._cast import CAST, CastRole, SandboxAccount, SandboxInfo
from phi.atproto.sandbox._install import NODE_PACKAGE, Toolchain, ensure_installed
from phi.atproto.sandbox._network import Sandbox, SandboxConfig, SandboxStatus, wait_for_indexing
from phi.atproto.sandbox._ports import DEFAULT_BASE_PORT, schema_for

__all__ = [
    "CAST",
    "DEFAULT_BASE_PORT",
    "NODE_PACKAGE",
    "CastRole",
    "Sandbox",
    "SandboxAccount",
    "SandboxConfig",
    "SandboxInfo",
    "SandboxStatus",
    "Toolchain",
    "ensure_installed",
    "schema_for",
    "wait_for_indexing",
]
