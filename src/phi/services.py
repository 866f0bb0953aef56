"""The services phi watches: the health check, each one's last status, and when to tag the owner.

Below both the agent (the `check_service` tool, [KNOWN SERVICES], [SERVICE HEALTH]) and the
runtime (the scheduled check), so neither imports the other for it. A service is named by
its health URL as `redact_url` shows it (`service_names`); each check, the tool's or the
schedule's, keeps the service's last status in memory (`record_status`), so the prompt shows
what the last check of either saw. The scheduled check also keeps its own results
(`LastCheck`): its transitions are counted against its previous run, across restarts.

The owner is tagged as seed 001's relay check says ("tag owner if *.waow.tech dips or
fleet-wide degradation"), decided here in code (`owner_alert`) and handed to the run.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final
from urllib.parse import urlsplit

import anyio
import httpx

from phi.memory import Memory
from phi.redact import redact, redact_url

__all__ = [
    "CHECK_TIMEOUT",
    "SERVICE_SCOPE",
    "CheckReport",
    "KnownStatus",
    "LastCheck",
    "OwnerAlert",
    "ServiceStatus",
    "check_services",
    "fleet_degraded",
    "known_status",
    "last_check",
    "owner_alert",
    "record_check",
    "record_status",
    "service_names",
    "transitions",
]

SERVICE_SCOPE: Final = "service-status"
"""Memory state scope of each service's last status, keyed by its name."""
LAST_CHECK_SCOPE: Final = "service-check"
"""Memory state scope of the scheduled check's last results (key `last`)."""
CHECK_TIMEOUT: Final = 10.0
"""Seconds one health URL may take before it counts as down."""


@dataclass(frozen=True, kw_only=True)
class ServiceStatus:
    """The answer of one health URL."""

    url: str
    """The URL requested."""
    ok: bool
    """Whether it answered with a status below 400."""
    status_code: int | None
    """The HTTP status, or `None` when no answer came."""
    error: str | None
    """Why no answer came (timeout, refused connection...), or `None`."""
    latency_ms: float
    """Time until the answer or the failure, in milliseconds."""

    @property
    def detail(self) -> str:
        """The status code, or the error when there was no answer."""
        return str(self.status_code) if self.status_code is not None else str(self.error)


async def check_services(urls: Sequence[str], client: httpx.AsyncClient) -> list[ServiceStatus]:
    """`GET` each URL concurrently and report how it answered.

    Network failures and timeouts (the `client`'s timeout applies) become statuses
    (`ok=False` with an `error`), never exceptions.

    Returns:
        One status per URL, in the order of `urls`.
    """
    results: dict[int, ServiceStatus] = {}

    async def check(index: int, url: str) -> None:
        results[index] = await _check_one(url, client)

    async with anyio.create_task_group() as tg:
        for index, url in enumerate(urls):
            tg.start_soon(check, index, url)
    return [results[index] for index in range(len(urls))]


async def _check_one(url: str, client: httpx.AsyncClient) -> ServiceStatus:
    started = time.perf_counter()
    try:
        response = await client.get(url)
    except httpx.HTTPError as exc:
        return ServiceStatus(
            url=url,
            ok=False,
            status_code=None,
            # httpx may quote the URL, with whatever credentials it carries.
            error=redact(f"{type(exc).__name__}: {exc}") if str(exc) else type(exc).__name__,
            latency_ms=(time.perf_counter() - started) * 1000,
        )
    return ServiceStatus(
        url=url,
        ok=response.status_code < 400,
        status_code=response.status_code,
        error=None,
        latency_ms=(time.perf_counter() - started) * 1000,
    )


def transitions(previous: Mapping[str, bool], current: Iterable[ServiceStatus]) -> list[str]:
    """What changed since the last check, one line per service.

    `previous` maps each URL to whether it was up (`{s.url: s.ok for s in last}`). A URL not
    checked before is reported only when it is down.

    Returns:
        Lines like `https://x went down (503)` and `https://x recovered`, in the order of
        `current`; each URL as `redact_url` shows it (the lines reach the prompt).
    """
    lines: list[str] = []
    for status in current:
        was_up = previous.get(status.url)
        if not status.ok and was_up is not False:
            lines.append(f"{redact_url(status.url)} went down ({status.detail})")
        elif status.ok and was_up is False:
            lines.append(f"{redact_url(status.url)} recovered")
    return lines


def service_names(urls: Sequence[str]) -> dict[str, str]:
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
    """`name`'s last status, by whichever check saw it last; `None` before any."""
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


@dataclass(frozen=True, kw_only=True)
class LastCheck:
    """What the last scheduled check saw."""

    at: datetime
    up: Mapping[str, bool]
    """Service name → whether it answered, in the order checked."""
    detail: Mapping[str, str]
    """Service name → status code or error."""


async def last_check(memory: Memory) -> LastCheck | None:
    """The last scheduled check's results; `None` before the first."""
    entry = await memory.state.read(LAST_CHECK_SCOPE, "last")
    if entry is None:
        return None
    raw = json.loads(entry.value)
    return LastCheck(
        at=datetime.fromisoformat(raw["at"]),
        up={name: bool(ok) for name, ok in raw["up"]},
        detail=dict(raw["detail"]),
    )


def fleet_degraded(up: Iterable[bool]) -> bool:
    """Whether the whole fleet is degraded: two or more services watched, more than half
    of them down (one service down among several is a dip, not the fleet)."""
    states = list(up)
    down = states.count(False)
    return len(states) >= 2 and down * 2 > len(states)


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


@dataclass(frozen=True, kw_only=True)
class OwnerAlert:
    """Why this check's news is the owner's to hear now."""

    own_down: tuple[str, ...] = ()
    """The owner's own services (`owner_services`) that went down in this check."""
    fleet: tuple[int, int] | None = None
    """(down, watched) when the fleet became degraded in this check."""

    def reason(self) -> str:
        parts = []
        if self.own_down:
            parts.append(f"their own service(s) went down: {', '.join(self.own_down)}")
        if self.fleet is not None:
            down, watched = self.fleet
            parts.append(f"the whole fleet is degraded: {down} of {watched} services down")
        return "; ".join(parts)


def owner_alert(
    previous: Mapping[str, bool],
    current: Sequence[ServiceStatus],
    *,
    owner_services: Sequence[str],
) -> OwnerAlert | None:
    """Whether this check tags the owner, and why (seed 001: "tag owner if *.waow.tech dips
    or fleet-wide degradation").

    Only news counts, so a long outage tags once: one of the owner's own services (its host
    matches a pattern of `owner_services`, e.g. `*.example.org`) went down since
    `previous`, or the fleet became degraded (`fleet_degraded`). Anything else (a service
    of someone else's dipping alone, a recovery) is no reason to tag.

    Args:
        previous: URL → whether it was up at the last check (unknown URLs count as up).
        current: This check's statuses.
        owner_services: Host patterns (`fnmatch`, case-insensitive) of the owner's services.
    """
    patterns = [p.lower() for p in owner_services]
    named = {url: name for name, url in service_names([s.url for s in current]).items()}
    own_down = tuple(
        named[status.url]
        for status in current
        if not status.ok
        and previous.get(status.url, True)
        and any(fnmatch.fnmatchcase(_host(status.url), p) for p in patterns)
    )
    now_degraded = fleet_degraded(s.ok for s in current)
    was_degraded = fleet_degraded(previous.get(s.url, True) for s in current)
    fleet = None
    if now_degraded and not was_degraded:
        fleet = (sum(not s.ok for s in current), len(current))
    if not own_down and fleet is None:
        return None
    return OwnerAlert(own_down=own_down, fleet=fleet)


@dataclass(frozen=True, kw_only=True)
class CheckReport:
    """One scheduled check: what changed, and whether the owner is to be tagged."""

    changes: tuple[str, ...]
    """`transitions` against the previous scheduled check."""
    alert: OwnerAlert | None

    def prompt(self, owner_handle: str | None) -> str:
        """The check's news for its run ([SERVICE CHECK]), with the tagging decision."""
        lines = list(self.changes)
        if self.alert is None:
            lines.append(
                "do not tag your owner for this: none of their own services failed and the "
                "fleet is not degraded. keep it to an observation unless it is worth a post, "
                "and mention nobody."
            )
        elif owner_handle is None:
            lines.append(f"no owner is configured to tag ({self.alert.reason()}).")
        else:
            lines.append(
                f"tag your owner @{owner_handle.removeprefix('@')} in one post now: "
                f"{self.alert.reason()}. group the changes, facts only."
            )
        return "\n".join(lines)


async def record_check(
    memory: Memory,
    statuses: Sequence[ServiceStatus],
    *,
    at: datetime,
    owner_services: Sequence[str] = (),
) -> CheckReport:
    """Keep a scheduled check's results: each service's status ([KNOWN SERVICES], as the
    tool's checks do) and the check's own (`last_check`), and say what changed since the
    previous scheduled check and whether that tags the owner."""
    names = service_names([s.url for s in statuses])
    url_name = {url: name for name, url in names.items()}
    before = await last_check(memory)
    previous = {
        status.url: before.up[url_name[status.url]]
        for status in statuses
        if before is not None and url_name.get(status.url) in before.up
    }
    for status in statuses:
        if status.url in url_name:
            await record_status(memory, url_name[status.url], status, at=at)
    value = {
        "at": at.isoformat(),
        "up": [[url_name[s.url], s.ok] for s in statuses if s.url in url_name],
        "detail": {url_name[s.url]: s.detail for s in statuses if s.url in url_name},
    }
    await memory.state.write(LAST_CHECK_SCOPE, "last", json.dumps(value), at=at, keep=2)
    return CheckReport(
        changes=tuple(transitions(previous, statuses)),
        alert=owner_alert(previous, statuses, owner_services=owner_services),
    )
