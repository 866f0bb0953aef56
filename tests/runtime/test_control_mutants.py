"""The control API's edges that a user or a script sees: a non-ASCII token, the exact errors,
the OpenAPI document, the log of starts and pauses, IPv6 loopback and a taken port, and the
token file made private from its first instant. test_control.py has the routes and auth."""

from __future__ import annotations

import base64
import io
import os
import stat
from pathlib import Path

import httpx
import pytest
from tests.runtime.test_control import AUTH, TOKEN, FakeController

from phi.agent.control_log import ControlLog
from phi.errors import PhiError, UserError
from phi.runtime.control import (
    ControlServerFailed,
    control_hosts,
    control_token,
    create_control_app,
    serve_control,
)

pytestmark = pytest.mark.anyio


def client(app: object) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8781")


async def test_a_non_ascii_token_is_compared_as_the_bytes_a_client_sends() -> None:
    """Finding: the header (latin-1 text to Starlette) was re-encoded as UTF-8, so a token
    with a non-ASCII character could never match, even sent exactly (as curl sends it)."""
    controller = FakeController()
    app = create_control_app(controller, "t\u00f6k\u00e9n-control")
    async with client(app) as http:
        exact = {"Authorization": "Bearer t\u00f6k\u00e9n-control".encode()}
        paused = await http.post("/pause", headers=exact)  # type: ignore[arg-type]
        assert (paused.status_code, paused.json()) == (200, {"status": "paused"})
        latin = {"Authorization": "Bearer t\u00f6k\u00e9n-control".encode("latin-1")}
        refused = await http.post("/resume", headers=latin)  # type: ignore[arg-type]
        assert refused.status_code == 401
    assert controller.calls == ["pause"]


class Broken(FakeController):
    """A controller whose review fails inside phi (not the user's doing)."""

    async def review_now(self) -> str:
        raise PhiError("the memory store is locked")


async def test_a_failure_that_is_not_the_users_is_a_500_with_its_message() -> None:
    async with client(create_control_app(Broken(), TOKEN)) as http:
        failed = await http.post("/review-now", headers=AUTH)
    assert (failed.status_code, failed.json()) == (
        500,
        {"detail": "the memory store is locked"},
    )


def test_an_empty_token_is_refused_in_one_line() -> None:
    with pytest.raises(UserError) as caught:
        create_control_app(FakeController(), "")
    assert str(caught.value) == "the control API needs a non-empty token"


async def test_the_openapi_document_names_the_control_api() -> None:
    async with client(create_control_app(FakeController(), TOKEN)) as http:
        info = (await http.get("/openapi.json")).json()["info"]
    assert info == {
        "title": "phi control",
        "summary": "Pause, resume and prod the running phi.",
        "version": "0.1.0",
    }


def test_a_wildcard_bind_adds_no_name_to_trust() -> None:
    loopback = ["localhost", "127.0.0.1", "::1"]
    for bind in ("0.0.0.0", "::", "", "127.0.0.1", "localhost", "::1"):
        assert control_hosts(bind) == loopback, bind
    assert control_hosts("10.0.0.5", ["phi.internal"]) == [*loopback, "phi.internal", "10.0.0.5"]


async def test_over_ipv6_loopback_starts_pauses_and_resumes_are_logged(phi_home: Path) -> None:
    log = ControlLog(path=phi_home / "control.log")
    controller = FakeController()
    app = create_control_app(controller, TOKEN, log=log)
    async with serve_control(app, host="::1", port=0) as url:
        assert url.startswith("http://[::1]:")
        async with httpx.AsyncClient(base_url=url, headers={"Host": "[::1]"}) as http:
            assert (await http.post("/pause", headers=AUTH)).json() == {"status": "paused"}
            assert (await http.post("/resume", headers=AUTH)).json() == {"status": "ok"}
    assert [event.kind for event in await log.events()] == ["started", "paused", "resumed"]


async def test_a_taken_port_is_one_line_saying_what_to_do() -> None:
    app = create_control_app(FakeController(), TOKEN)
    async with serve_control(app, host="127.0.0.1", port=0) as url:
        port = int(url.rsplit(":", 1)[1])
        with pytest.raises(ControlServerFailed) as caught:
            async with serve_control(app, host="127.0.0.1", port=port):
                pass
    assert str(caught.value) == (
        f"the control API could not listen on 127.0.0.1:{port}: Address already in use (while "
        f"attempting to bind on address ('127.0.0.1', {port})); free the port or set "
        "PHI_CONTROL_HOST and PHI_CONTROL_PORT"
    )


def test_a_generated_token_is_32_random_bytes_in_a_file_never_open_to_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a umask that takes nothing off, the file is 0600 from the instant it exists, not
    only once its mode is set: another user could keep a descriptor opened in between."""
    modes: list[int] = []
    fchmod = os.fchmod

    def spy(fd: int, mode: int) -> None:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", spy)
    old = os.umask(0)
    try:
        token = control_token(tmp_path / "home", None)
    finally:
        os.umask(old)
    assert modes == [0o600]
    assert len(base64.urlsafe_b64decode(token + "=")) == 32


def test_a_broken_token_file_says_where_it_is_and_what_to_do(phi_home: Path) -> None:
    path = phi_home / "control.token"
    path.write_text("  \n")
    path.chmod(0o600)
    with pytest.raises(UserError) as caught:
        control_token(phi_home, None)
    assert str(caught.value) == (
        f"the control token file {str(path)!r} is empty; delete it to get a new token"
    )
    path.write_bytes(b"caf\xe9-token\n")
    with pytest.raises(UserError) as caught:
        control_token(phi_home, None)
    assert str(caught.value) == (
        f"the control token file {str(path)!r} is not UTF-8 text (byte 3); "
        "delete it to get a new token, or set PHI_CONTROL_TOKEN"
    )


def test_a_utf8_token_file_reads_the_same_whatever_the_locale(
    phi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`phi run` started from a shell whose locale is ASCII (C without UTF-8 mode) finds the
    same token. The locale is stood in for where `pathlib` asks for it, `io.text_encoding`:
    a child process with `LC_ALL=C PYTHONUTF8=0` shows the same but takes seconds to start."""
    path = phi_home / "control.token"
    path.write_text("t\u00f6k\u00e9n-from-the-owner\n", encoding="utf-8")
    path.chmod(0o600)
    monkeypatch.setattr(io, "text_encoding", lambda encoding, *_: encoding or "ascii")
    assert control_token(phi_home, None) == "t\u00f6k\u00e9n-from-the-owner"
