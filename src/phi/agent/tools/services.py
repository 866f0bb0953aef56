"""The watched services by name: [KNOWN SERVICES] and `check_service`.

The names are those of the health URLs the scheduled service check requests
(`PHI_HEALTH_URLS`): a URL's host, with its path when two URLs share a host, never its
user, password or secret query values (`phi.services.service_names`). The tool's argument
is an enum of exactly these names (set per run in the tool's schema), so a model cannot
invent a service. A check requests the URL with the same code as the scheduled check
(`phi.services`) and keeps the service's last status in memory, so the answer carries the
last transition (when it went down or recovered) as well as the status now, and
[KNOWN SERVICES] shows whichever check, the tool's or the schedule's, ran last.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import httpx
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from phi.agent.deps import PhiDeps
from phi.redact import redact_url
from phi.services import (
    CHECK_TIMEOUT,
    KnownStatus,
    check_services,
    known_status,
    record_status,
    service_names,
)

__all__ = ["describe", "known_services_block", "service_names", "service_tools"]


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
