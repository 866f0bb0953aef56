"""The control API: routes and bearer auth over ASGI, the token file, and uvicorn for real."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from phi.errors import UserError
from phi.runtime.control import (
    ControlServerFailed,
    control_hosts,
    control_token,
    create_control_app,
    serve_control,
)

TOKEN = "control-s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class FakeController:
    """A controller that records what it was asked to do."""

    def __init__(self) -> None:
        self.paused = False
        self.calls: list[str] = []

    async def pause(self) -> None:
        self.calls.append("pause")
        self.paused = True

    async def resume(self) -> None:
        self.calls.append("resume")
        self.paused = False

    async def post_now(self) -> str:
        self.calls.append("post_now")
        if self.paused:
            raise UserError("phi is paused; resume it first")
        return "posted a musing"

    async def review_now(self) -> str:
        self.calls.append("review_now")
        return "reviewed 12 observations"

    async def health(self) -> dict[str, Any]:
        return {"polls": 3, "last_poll": "2025-06-01T12:00:00+00:00"}


@pytest.fixture
def controller() -> FakeController:
    return FakeController()


@pytest.fixture
async def client(controller: FakeController) -> AsyncIterator[httpx.AsyncClient]:
    app = create_control_app(controller, TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8781") as opened:
        yield opened


@pytest.mark.anyio
async def test_an_untrusted_host_is_refused_even_for_health(controller: FakeController) -> None:
    """Finding 11c: the control API checks `Host` as the web app does (DNS rebinding)."""
    app = create_control_app(controller, TOKEN)
    transport = httpx.ASGITransport(app=app)
    for host in ("attacker.example", "attacker.example:8781", "localhost.", "127.0.0.2"):
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as http:
            refused = await http.get("/health")
            assert refused.status_code == 400, host
            detail = refused.json()["detail"]
            assert detail.startswith(f"host {host.split(':')[0]!r} is not trusted")
            assert detail.endswith("or add the name to PHI_CONTROL_TRUSTED_HOSTS")
            assert (await http.post("/pause", headers=AUTH)).status_code == 400
    assert controller.calls == []
    for host in ("127.0.0.1:8781", "localhost", "[::1]:8781"):
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as http:
            assert (await http.get("/health")).status_code == 200, host


@pytest.mark.anyio
async def test_the_trusted_hosts_follow_the_bind_address_and_the_setting(
    controller: FakeController,
) -> None:
    assert control_hosts("127.0.0.1") == ["localhost", "127.0.0.1", "::1"]
    assert control_hosts("10.0.0.5")[-1] == "10.0.0.5"
    assert "0.0.0.0" not in control_hosts("0.0.0.0")
    hosts = control_hosts("0.0.0.0", ["phi.internal"])
    app = create_control_app(controller, TOKEN, trusted_hosts=hosts)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://phi.internal:8781") as http:
        assert (await http.get("/health")).status_code == 200
    async with httpx.AsyncClient(transport=transport, base_url="http://10.0.0.5") as http:
        assert (await http.get("/health")).status_code == 400
    anyone = create_control_app(controller, TOKEN, trusted_hosts=control_hosts("::", ["*"]))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=anyone), base_url="http://whatever.example"
    ) as http:
        assert (await http.get("/health")).status_code == 200


@pytest.mark.anyio
async def test_health_is_open_and_shows_pause(
    client: httpx.AsyncClient, controller: FakeController
) -> None:
    health = await client.get("/health")
    assert (health.status_code, health.json()) == (
        200,
        {"status": "ok", "polls": 3, "last_poll": "2025-06-01T12:00:00+00:00"},
    )
    controller.paused = True
    assert (await client.get("/health")).json()["status"] == "paused"


@pytest.mark.anyio
async def test_routes_call_the_controller(
    client: httpx.AsyncClient, controller: FakeController
) -> None:
    answers = [
        (await client.post(path, headers=AUTH)).json()
        for path in ("/pause", "/resume", "/post-now", "/review-now")
    ]
    assert answers == [
        {"status": "paused"},
        {"status": "ok"},
        {"result": "posted a musing"},
        {"result": "reviewed 12 observations"},
    ]
    assert controller.calls == ["pause", "resume", "post_now", "review_now"]


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/pause", "/resume", "/post-now", "/review-now"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN.upper()}"},
        {"Authorization": "Bearer caf\u00e9".encode("latin-1")},
    ],
    ids=["missing", "wrong", "not-bearer", "longer", "shorter", "other-case", "non-ascii"],
)
async def test_control_routes_need_the_token(
    client: httpx.AsyncClient,
    controller: FakeController,
    path: str,
    headers: dict[str, Any],
) -> None:
    refused = await client.post(path, headers=headers)
    assert (refused.status_code, refused.json()) == (
        401,
        {"detail": "missing or wrong bearer token"},
    )
    assert refused.headers["www-authenticate"] == "Bearer"
    assert controller.calls == []


@pytest.mark.anyio
async def test_controller_errors_become_statuses(
    client: httpx.AsyncClient, controller: FakeController
) -> None:
    controller.paused = True
    refused = await client.post("/post-now", headers=AUTH)
    assert (refused.status_code, refused.json()) == (
        400,
        {"detail": "phi is paused; resume it first"},
    )


def test_app_needs_a_token(controller: FakeController) -> None:
    with pytest.raises(UserError, match="non-empty token"):
        create_control_app(controller, "")


def test_configured_token_wins(phi_home: Path) -> None:
    assert control_token(phi_home, SecretStr("  from-settings ")) == "from-settings"
    assert not (phi_home / "control.token").exists()


def test_generated_token_is_private_and_kept(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    first = control_token(home, None)
    path = home / "control.token"
    assert len(first) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == first + "\n"
    assert control_token(home, SecretStr("")) == first
    assert control_token(home, None) == first


def test_empty_token_file_is_refused(phi_home: Path) -> None:
    (phi_home / "control.token").write_text("\n")
    with pytest.raises(UserError, match="delete it"):
        control_token(phi_home, None)


def test_a_token_file_that_is_not_utf8_is_one_clear_error(phi_home: Path) -> None:
    """Finding 11b: a UserError (one line, exit 2 at the CLI), not a UnicodeDecodeError."""
    path = phi_home / "control.token"
    path.write_bytes(b"caf\xe9-token\n")
    path.chmod(0o600)
    with pytest.raises(UserError, match=r"control\.token' is not UTF-8 text \(byte 3\); delete it"):
        control_token(phi_home, None)


@pytest.mark.anyio
async def test_serve_control_over_real_http(controller: FakeController) -> None:
    app = create_control_app(controller, TOKEN)
    async with serve_control(app, host="127.0.0.1", port=0) as url:
        assert url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/health")).json()["status"] == "ok"
            assert (await http.post("/pause")).status_code == 401
            assert (await http.post("/pause", headers=AUTH)).json() == {"status": "paused"}
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(ControlServerFailed, match=f"127.0.0.1:{port}"):
            async with serve_control(app, host="127.0.0.1", port=port):
                pass
    assert controller.paused
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as http:
            await http.get(f"{url}/health")
