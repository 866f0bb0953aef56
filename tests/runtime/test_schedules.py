"""The schedule clock, seeding it from phi's posts, and the service check over real HTTP."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

import httpx
import pytest
from dirty_equals import IsFloat, IsStr

from phi.atproto import Post, PostRef
from phi.config import Settings
from phi.errors import InvalidInput
from phi.memory import Memory
from phi.runtime.schedules import (
    JOBS,
    Fired,
    Schedule,
    ScheduleConfig,
    ScheduleState,
)
from phi.services import ServiceStatus, check_services, transitions

PHI = "did:plc:phi"
DAY = datetime(2025, 6, 1, tzinfo=UTC)
NO_SUMMARY = timedelta(days=365)
"""A summary interval long enough to keep `summary_refresh` out of the way once marked."""


def at(hour: int, minute: int = 0, second: int = 0, *, day: int = 0) -> datetime:
    return DAY + timedelta(days=day, hours=hour, minutes=minute, seconds=second)


def schedule(config: ScheduleConfig, *, started_at: datetime) -> Schedule:
    """A schedule whose initial summary refresh is done, so tests see only their job."""
    made = Schedule(config, started_at=started_at)
    made.mark("summary_refresh", started_at)
    return made


def post(created_at: datetime, *, reply: bool = False, author_did: str = PHI) -> Post:
    root = PostRef(uri="at://did:plc:alice/app.bsky.feed.post/root", cid="cidroot")
    return Post(
        uri=f"at://{author_did}/app.bsky.feed.post/{created_at.timestamp():.0f}",
        cid="cid",
        author_did=author_did,
        author_handle="phi.test",
        text="a thought",
        created_at=created_at,
        reply_root=root if reply else None,
        reply_parent=root if reply else None,
    )


def test_musing_once_per_musing_hour() -> None:
    config = ScheduleConfig(musing_hours=frozenset({9, 13}), summary_refresh_every=NO_SUMMARY)
    clock = schedule(config, started_at=at(8))
    assert clock.due(at(8, 59, 59)) == []
    assert clock.due(at(9)) == ["musing"]
    clock.mark("musing", at(9, 0, 5))
    assert clock.due(at(9, 59, 59)) == []
    assert clock.due(at(10)) == []
    assert clock.due(at(13, 30)) == ["musing"]
    clock.mark("musing", at(13, 30))
    assert clock.due(at(13, 59)) == []
    assert clock.due(at(9, day=1)) == ["musing"]


def test_reflection_once_a_day_from_its_hour() -> None:
    config = ScheduleConfig(
        musing_hours=frozenset(), reflection_hour=22, summary_refresh_every=NO_SUMMARY
    )
    clock = schedule(config, started_at=at(12))
    assert clock.due(at(21, 59, 59)) == []
    assert clock.due(at(22)) == ["reflection"]
    # Not done at 22: still due until midnight, then the day rolls over.
    assert clock.due(at(23, 59, 59)) == ["reflection"]
    clock.mark("reflection", at(23, 59, 59))
    assert clock.due(at(0, 0, 1, day=1)) == []
    assert clock.due(at(21, 59, day=1)) == []
    assert clock.due(at(22, 0, day=1)) == ["reflection"]
    clock.mark("reflection", at(22, 0, day=1))
    assert clock.due(at(23, day=1)) == []


def test_no_reflection_hour_means_never() -> None:
    config = ScheduleConfig(musing_hours=frozenset(), reflection_hour=None)
    clock = schedule(config, started_at=at(0))
    assert [clock.due(at(hour)) for hour in range(24)] == [[]] * 24


def test_service_check_every_interval_after_start() -> None:
    config = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        service_check_every=timedelta(hours=3),
        summary_refresh_every=NO_SUMMARY,
        health_urls=("http://127.0.0.1:1/health",),
    )
    clock = schedule(config, started_at=at(10))
    assert clock.due(at(10)) == []
    assert clock.due(at(12, 59, 59)) == []
    assert clock.due(at(13)) == ["service_check"]
    clock.mark("service_check", at(13, 0, 2))
    assert clock.due(at(16)) == []
    assert clock.due(at(16, 0, 2)) == ["service_check"]


def test_no_health_urls_means_no_service_check() -> None:
    config = ScheduleConfig(musing_hours=frozenset(), reflection_hour=None, health_urls=())
    clock = schedule(config, started_at=at(0))
    assert clock.due(at(0, day=3)) == ["summary_refresh"]
    assert "service_check" not in clock.due(at(0, day=30))


def test_summary_refresh_at_start_then_every_interval() -> None:
    config = ScheduleConfig(musing_hours=frozenset(), reflection_hour=None)
    clock = Schedule(config, started_at=at(10))
    assert clock.due(at(10)) == ["summary_refresh"]
    clock.mark("summary_refresh", at(10))
    assert clock.due(at(9, 59, day=1)) == []
    assert clock.due(at(10, day=1)) == ["summary_refresh"]


def test_due_lists_every_job_in_order() -> None:
    config = ScheduleConfig(
        musing_hours=frozenset({22}),
        reflection_hour=22,
        service_check_every=timedelta(hours=1),
        health_urls=("http://127.0.0.1:1/health",),
        extraction_every=timedelta(hours=24),
    )
    clock = Schedule(config, started_at=at(20))
    assert clock.due(at(22)) == list(JOBS)
    assert JOBS == ("musing", "reflection", "service_check", "summary_refresh", "extraction")


def test_hours_are_utc_and_times_must_be_aware() -> None:
    config = ScheduleConfig(musing_hours=frozenset({9}), summary_refresh_every=NO_SUMMARY)
    clock = schedule(config, started_at=at(0))
    eleven_in_paris = datetime(2025, 6, 1, 11, 0, tzinfo=timezone(timedelta(hours=2)))
    assert clock.due(eleven_in_paris) == ["musing"]
    clock.mark("musing", eleven_in_paris)
    assert clock.due(at(9, 30)) == []
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.due(datetime(2025, 6, 1, 9))


def test_seed_marks_the_slots_of_top_level_posts_only() -> None:
    config = ScheduleConfig(
        musing_hours=frozenset({9, 13, 17}), reflection_hour=22, summary_refresh_every=NO_SUMMARY
    )
    clock = schedule(config, started_at=at(17, 30))
    clock.seed_from_posts(
        [
            post(at(13, 20)),  # a musing at 13: that hour only
            post(at(17, 5), reply=True),  # a reply is conversation, not a musing
            post(at(10, 0)),  # not a musing hour: marks nothing
            post(at(22, 30, day=-1)),  # yesterday's reflection: not today's
            post(at(9, 10), author_did="did:plc:alice"),  # a repost in the author feed
        ],
        at(17, 30),
        author_did=PHI,
    )
    assert clock.due(at(13, 40)) == []
    assert clock.due(at(9, 30)) == ["musing"]
    assert clock.due(at(17, 30)) == ["musing"]
    assert clock.due(at(22)) == ["reflection"]


def test_restart_after_reflection_does_not_reflect_again() -> None:
    config = ScheduleConfig(
        musing_hours=frozenset({22}), reflection_hour=22, summary_refresh_every=NO_SUMMARY
    )
    clock = schedule(config, started_at=at(22, 40))
    clock.seed_from_posts([post(at(22, 15))], at(22, 40))
    assert clock.due(at(22, 40)) == []
    assert clock.due(at(23, 59)) == []
    assert clock.due(at(22, day=1)) == ["musing", "reflection"]


def test_seed_without_posts_leaves_everything_due() -> None:
    config = ScheduleConfig(musing_hours=frozenset({9}), summary_refresh_every=NO_SUMMARY)
    clock = schedule(config, started_at=at(9, 30))
    clock.seed_from_posts([], at(9, 30))
    assert clock.due(at(9, 30)) == ["musing"]


def test_a_held_schedule_has_nothing_due_until_released() -> None:
    """Finding 25.3: the sandbox answers alice before any scheduled job takes the model."""
    config = ScheduleConfig(musing_hours=frozenset({9}))
    clock = Schedule(config, started_at=at(9))
    clock.hold()
    assert clock.held and clock.due(at(9, 30)) == []
    clock.release()
    assert clock.due(at(9, 30)) == ["musing", "summary_refresh"]


@pytest.mark.anyio
async def test_used_slots_survive_a_restart_through_memory(memory: Memory) -> None:
    """Finding 25.3: a musing that posted nothing (the guard refused it) used its slot; a
    restart within the hour reads that back from memory instead of musing again."""
    config = ScheduleConfig(musing_hours=frozenset({9}), reflection_hour=22)
    first = Schedule(config, started_at=at(9, 5))
    for job in first.due(at(9, 5)):  # the musing and the first summary refresh
        first.mark(job, at(9, 5))
    first.mark("reflection", at(22, 10, day=-1))
    await ScheduleState(memory).save(first.fired())

    restarted = Schedule(config, started_at=at(9, 40))
    restarted.restore(await ScheduleState(memory).load())
    assert restarted.due(at(9, 40)) == []
    assert restarted.fired() == first.fired()
    assert restarted.due(at(22)) == ["reflection"]  # yesterday's reflection is not today's
    assert restarted.due(at(9, 5, day=1)) == ["musing", "summary_refresh"]


@pytest.mark.anyio
async def test_unreadable_schedule_state_starts_empty(memory: Memory) -> None:
    await memory.state.write(ScheduleState.SCOPE, "fired", "{not json")
    assert await ScheduleState(memory).load() == Fired()
    assert Schedule(ScheduleConfig(), started_at=at(9)).fired() == Fired()


def test_config_validation_and_settings() -> None:
    with pytest.raises(InvalidInput, match=r"0-23, got \[24\]"):
        ScheduleConfig(musing_hours=frozenset({9, 24}))
    with pytest.raises(InvalidInput, match="reflection hour"):
        ScheduleConfig(reflection_hour=-1)
    with pytest.raises(InvalidInput, match="service_check_every must be positive"):
        ScheduleConfig(service_check_every=timedelta(0))
    settings = Settings(
        _env_file=None,
        musing_hours="21, 9",
        reflection_hour="none",
        service_check_hours=0.5,
        health_urls='["http://127.0.0.1:1/a"]',
    )
    assert ScheduleConfig.from_settings(settings) == ScheduleConfig(
        musing_hours=frozenset({9, 21}),
        reflection_hour=None,
        service_check_every=timedelta(minutes=30),
        health_urls=("http://127.0.0.1:1/a",),
        extraction_every=timedelta(days=1),  # the settings' default: daily
    )
    off = Settings(_env_file=None, extraction_hours="none", owner_services="*.example.org")
    assert ScheduleConfig.from_settings(off).extraction_every is None
    assert ScheduleConfig.from_settings(off).owner_services == ("*.example.org",)


def test_transitions() -> None:
    def status(url: str, ok: bool, code: int | None, error: str | None = None) -> ServiceStatus:
        return ServiceStatus(url=url, ok=ok, status_code=code, error=error, latency_ms=1.0)

    previous = {"https://a": True, "https://b": False, "https://c": True, "https://d": False}
    current = [
        status("https://a", False, 503),
        status("https://b", True, 200),
        status("https://c", True, 200),
        status("https://d", False, None, "ConnectError"),
        status("https://new-up", True, 200),
        status("https://new-down", False, None, "ConnectTimeout"),
    ]
    assert transitions(previous, current) == [
        "https://a went down (503)",
        "https://b recovered",
        "https://new-down went down (ConnectTimeout)",
    ]


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.release.wait(5)
        code = {"/ok": 200, "/down": 503, "/moved": 302}.get(self.path, 404)
        try:
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting for /slow

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"release": release})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.anyio
async def test_check_services_over_real_http(local_server: str) -> None:
    refused = f"http://127.0.0.1:{closed_port()}/health"
    urls = [f"{local_server}/ok", f"{local_server}/down", f"{local_server}/moved", refused]
    urls.append(f"{local_server}/slow")
    async with httpx.AsyncClient(timeout=0.5) as client:
        statuses = await check_services(urls, client)
    latency = cast(float, IsFloat(ge=0))
    assert statuses == [
        ServiceStatus(url=urls[0], ok=True, status_code=200, error=None, latency_ms=latency),
        ServiceStatus(url=urls[1], ok=False, status_code=503, error=None, latency_ms=latency),
        ServiceStatus(url=urls[2], ok=True, status_code=302, error=None, latency_ms=latency),
        ServiceStatus(
            url=refused,
            ok=False,
            status_code=None,
            error=cast(str, IsStr(regex=r"ConnectError: .+")),
            latency_ms=latency,
        ),
        ServiceStatus(
            url=urls[4],
            ok=False,
            status_code=None,
            error=cast(str, IsStr(regex=r"ReadTimeout.*")),
            latency_ms=cast(float, IsFloat(ge=400)),
        ),
    ]
    assert transitions({url: True for url in urls}, statuses) == [
        f"{urls[1]} went down (503)",
        f"{refused} went down ({statuses[3].error})",
        f"{urls[4]} went down ({statuses[4].error})",
    ]
    async with httpx.AsyncClient() as client:
        assert await check_services([], client) == []
