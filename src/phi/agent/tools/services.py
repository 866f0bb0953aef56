"""The watched services by name: [KNOWN SERVICES] and `check_service`.

The names are those of the health URLs the scheduled service check requests
(`PHI_HEALTH_URLS`): a URL's host, with its path when two URLs share a host, never its
user, password or secret query values (`phi.redact.redact_url`). The tool's
argument is an enum of exactly these names (set per run in the tool's schema), so a model
cannot invent a service. A check requests the URL with the runtime's own check code and
keeps the service's last status in memory, so the answer carries the last transition (when
it went down or recovered) as well as the status now.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final
from urllib.parse import urlsplit

import httpx
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from phi.agent.deps import PhiDeps
from phi.memory import Memory
from phi.redact import redact_url
from phi.runtime.schedules import ServiceStatus, check_services

__all__ = [
    "SERVICE_SCOPE",
    "KnownStatus",
    "known_status",
    "record_status",
    "service_names",
    "service_tools",
]

SERVICE_SCOPE: Final = "service-status"
"""Learning-state scope of each service's last status, keyed by its name."""
CHECK_TIMEOUT: Final = 10.0


def service_names(urls: tuple[str, ...]) -> dict[str, str]:
    """Name → URL for each watched URL: its host, or host and path when hosts repeat.

    Names are read from the URL as `redact_url` shows it: a name reaches the prompt, the
    journal and the tool's schema, and `https://user:pass@host/health?token=...` must not."""
    shown = [urlsplit(redact_url(url)) for url in urls]
    hosts = [parts.netloc or redact_url(url) for url, parts in zip(urls, shown, strict=True)]
    names: dict[str, str] = {}
    for url, host, parts in zip(urls, hosts, shown, strict=True):
        name = host if hosts.count(host) == 1 else f"{host}{parts.path}"
        names.setdefault(name, url)
    return names


@dataclass(frozen=True, kw_only=True)
class KnownStatus:
    """A service's status as last checked, and when it last changed."""

    ok: bool
    detail: str
    """Status code or error of the last check."""
    checked_at: datetime
    since: datetime
    """When it last went up or down (its first check, if it never changed)."""
    changed: bool
    """Whether `since` is a real transition rather than the first check."""


async def known_status(memory: Memory, name: str) -> KnownStatus | None:
    entry = await memory.state.read(SERVICE_SCOPE, name)
    if entry is None:
        return None
    raw = json.loads(entry.value)
    return KnownStatus(
        ok=bool(raw["ok"]),
        detail=str(raw["detail"]),
        checked_at=datetime.fromisoformat(raw["checked_at"]),
        since=datetime.fromisoformat(raw["since"]),
        changed=bool(raw["changed"]),
    )


async def record_status(
    memory: Memory, name: str, status: ServiceStatus, *, at: datetime
) -> KnownStatus:
    """Keep `status` as `name`'s last status, moving `since` only on a transition."""
    before = await known_status(memory, name)
    if before is None or before.ok != status.ok:
        now = KnownStatus(
            ok=status.ok, detail=status.detail, checked_at=at, since=at, changed=before is not None
        )
    else:
        now = replace(before, detail=status.detail, checked_at=at)
    value = {
        "ok": now.ok,
        "detail": now.detail,
        "checked_at": now.checked_at.isoformat(),
        "since": now.since.isoformat(),
        "changed": now.changed,
    }
    await memory.state.write(SERVICE_SCOPE, name, json.dumps(value), at=at, keep=5)
    return now


def describe(deps: PhiDeps, status: KnownStatus) -> str:
    state = "up" if status.ok else "down"
    if status.changed:
        moved = "recovered" if status.ok else "went down"
        last = f"last transition: {moved} {deps.age(status.since)}"
    else:
        last = f"no transition seen ({state} since the first check, {deps.age(status.since)})"
    return f"{state} ({status.detail}), checked {deps.age(status.checked_at)}; {last}"


async def _names_enum(ctx: RunContext[PhiDeps], tool: ToolDefinition) -> ToolDefinition | None:
    """Offer the watched names as the only values; no watched services, no tool."""
    names = sorted(service_names(ctx.deps.config.services))
    if not names:
        return None
    schema = copy.deepcopy(tool.parameters_json_schema)
    schema["properties"]["name"]["enum"] = names
    return replace(tool, parameters_json_schema=schema)


service_tools = FunctionToolset[PhiDeps]()


@service_tools.tool(prepare=_names_enum)
async def check_service(ctx: RunContext[PhiDeps], name: str) -> str:
    """Check one of the services you watch now (names in [KNOWN SERVICES]): whether it is
    up, and when it last went down or recovered.

    Args:
        name: The service's exact name.
    """
    deps = ctx.deps
    names = service_names(deps.config.services)
    url = names.get(name)
    if url is None:
        raise ModelRetry(f"no watched service is called {name!r}; use one of {sorted(names)}")
    async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as http:
        (status,) = await check_services([url], http)
    known = await record_status(deps.memory, name, status, at=deps.now)
    answer = f"{name}: {describe(deps, known)}"
    deps.activity.record(f"check_service({name!r}) → {answer[:100]}")
    return answer


async def known_services_block(deps: PhiDeps) -> str:
    """[KNOWN SERVICES]: the exact names `check_service` takes, with their last status."""
    names = service_names(deps.config.services)
    if not names:
        return ""
    lines = ["[KNOWN SERVICES — check_service(name) takes exactly these names]"]
    for name, url in names.items():
        known = await known_status(deps.memory, name)
        shown = describe(deps, known) if known is not None else "not checked yet"
        lines.append(f"- {name} ({redact_url(url)}): {shown}")
    return "\n".join(lines)
