"""Who may talk to the web API: trusted Host names, the token for reads off loopback, bearer
tokens compared as bytes, and bad bodies refused by name. Over ASGI (httpx) and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from typer.testing import CliRunner

from phi.cli import app as cli
from phi.errors import InvalidInput
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.web import create_app

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def stored(memory: Memory) -> Memory:
    await memory.remember(
        NewRow(content="alice writes a parser in rust", namespace="phi-users-did:plc:alice")
    )
    return memory


def client(app: FastAPI, host: str = "127.0.0.1:8780") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{host}")


async def test_an_untrusted_host_is_refused(stored: Memory) -> None:
    app = create_app(memory=stored, token=TOKEN)
    async with client(app, "attacker.example") as attacker:
        for path in ("/api/memory/search?q=rust", "/health", "/memory"):
            refused = await attacker.get(path)
            assert refused.status_code == 400
            assert "host 'attacker.example' is not trusted" in refused.json()["detail"]
        rebound = await attacker.get("/api/memory/search?q=rust", headers={"Host": "localhost."})
        assert rebound.status_code == 400
    for host in ("127.0.0.1:8780", "localhost", "LOCALHOST:1", "[::1]:8780"):
        async with client(app, host) as local:
            assert (await local.get("/api/memory/search?q=rust")).status_code == 200


async def test_trusted_hosts_are_configurable(stored: Memory) -> None:
    app = create_app(memory=stored, token=TOKEN, trusted_hosts=["phi.example"])
    async with client(app, "phi.example:443") as named:
        assert (await named.get("/health")).status_code == 200
    async with client(app, "127.0.0.1") as local:
        assert (await local.get("/health")).status_code == 400
    anyone = create_app(memory=stored, token=TOKEN, trusted_hosts=["*"])
    async with client(anyone, "whatever.example") as other:
        assert (await other.get("/health")).status_code == 200


async def test_reads_need_the_token_when_asked(stored: Memory) -> None:
    app = create_app(memory=stored, token=TOKEN, token_for_reads=True)
    async with client(app) as http:
        for path in ("/api/memory/search?q=rust", "/api/memory/graph", "/health"):
            assert (await http.get(path)).status_code == 401
            assert (await http.get(path, headers=AUTH)).status_code == 200
        wrong = await http.get("/api/memory/search?q=rust", headers={"Authorization": "Bearer x"})
        assert wrong.status_code == 401
    with pytest.raises(InvalidInput, match="token"):
        create_app(memory=stored, token_for_reads=True)


NEAR_TOKENS = [f"{TOKEN}x", TOKEN[:-1], TOKEN.upper(), f"{TOKEN} {TOKEN}", "s"]
"""Tokens that start with the real one, or that it starts with: a loosened compare lets one in."""


@pytest.mark.parametrize("near", NEAR_TOKENS)
async def test_only_the_exact_token_writes_or_reads(stored: Memory, near: str) -> None:
    """Finding 11a: the bearer token is compared exactly, in both directions."""
    body = {"content": "hello", "namespace": "notes"}
    app = create_app(memory=stored, token=TOKEN, token_for_reads=True)
    async with client(app) as http:
        headers = {"Authorization": f"Bearer {near}"}
        refused = await http.post("/api/memory/rows", json=body, headers=headers)
        assert (refused.status_code, refused.json()) == (
            401,
            {"detail": "missing or wrong bearer token"},
        )
        read = await http.get("/api/memory/search?q=rust", headers=headers)
        assert read.status_code == 401
        assert (await http.get("/api/memory/search?q=rust", headers=AUTH)).status_code == 200
    assert (await stored.stats()).rows == 1


async def test_a_non_ascii_bearer_token_is_compared_as_bytes(stored: Memory) -> None:
    body = {"content": "hello", "namespace": "notes"}
    app = create_app(memory=stored, token=TOKEN)
    async with client(app) as http:
        odd = {"Authorization": "Bearer t\u00f6k\u00e9n".encode()}
        refused = await http.post("/api/memory/rows", json=body, headers=odd)  # type: ignore[arg-type]
        assert refused.status_code == 401
        assert refused.json()["detail"] == "missing or wrong bearer token"
    unicode_token = create_app(memory=stored, token="t\u00f6k\u00e9n")
    async with client(unicode_token) as http:
        created = await http.post("/api/memory/rows", json=body, headers=odd)  # type: ignore[arg-type]
        assert created.status_code == 201


BAD_BODIES: list[tuple[bytes, str]] = [
    (b'{"content": "half \\ud800", "namespace": "notes"}', "content is not valid UTF-8"),
    (b'{"content": "a", "namespace": "notes", "tags": ["\\udcff"]}', "tag is not valid"),
    (b'{"content": "a", "namespace": "notes", "source_uris": ["\\ud800"]}', "source URI"),
    (b'{"content": "a", "namespace": "notes", "author": "\\ud800"}', "author is not valid"),
    (b'{"content": "a", "namespace": "notes", "author": "bob"}', "not a DID"),
    (b'{"content": "a", "namespace": "notes", "author": "did:plc:b\\n"}', "not a DID"),
    (b'{"content": "a", "namespace": "notes\\n"}', "invalid namespace"),
]


@pytest.mark.parametrize(("body", "message"), BAD_BODIES)
async def test_bad_bodies_are_4xx_naming_the_problem(
    stored: Memory, body: bytes, message: str
) -> None:
    before = [row async for row in stored.export()]
    app = create_app(memory=stored, token=TOKEN)
    async with client(app) as http:
        headers = {**AUTH, "Content-Type": "application/json"}
        refused = await http.post("/api/memory/rows", content=body, headers=headers)
        assert refused.status_code == 400, refused.text
        assert message in refused.json()["detail"]
        found = await http.get("/api/memory/search", params={"q": "rust"})
        assert found.status_code == 200
    assert [row async for row in stored.export()] == before


async def test_invalid_utf8_in_a_body_is_a_400(stored: Memory) -> None:
    app = create_app(memory=stored, token=TOKEN)
    async with client(app) as http:
        headers = {**AUTH, "Content-Type": "application/json"}
        raw = b'{"content": "\xff\xfe", "namespace": "notes"}'
        refused = await http.post("/api/memory/rows", content=raw, headers=headers)
        assert refused.status_code == 400
        assert "error parsing the body" in refused.json()["detail"]
    assert (await stored.stats()).rows == 1


def test_phi_web_on_a_public_address_without_a_token_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    result = CliRunner().invoke(cli, ["web", "--host", "0.0.0.0", "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "'0.0.0.0' is not a loopback address" in result.output
    assert "PHI_WEB_TOKEN" in result.output
    assert "Traceback" not in result.output
    assert not db.exists()


def serve_once(
    monkeypatch: pytest.MonkeyPatch, requests: list[tuple[str, dict[str, str]]]
) -> list[httpx.Response]:
    """Make `uvicorn.Server.serve` answer `requests` through the app over ASGI (`phi web`
    binds a free port, port 0, that nothing is served on), so a CLI test sees what `phi web`
    would serve."""
    answers: list[httpx.Response] = []
    monkeypatch.setenv("PHI_WEB_PORT", "0")

    async def serve(self: uvicorn.Server, sockets: Any = None) -> None:
        app = self.config.app
        assert isinstance(app, FastAPI)
        async with app.router.lifespan_context(app):
            host = self.config.host
            async with client(app, host if host != "0.0.0.0" else "phi.example") as http:
                for path, headers in requests:
                    answers.append(await http.get(path, headers=headers))

    monkeypatch.setattr(uvicorn.Server, "serve", serve)
    return answers


def test_phi_web_off_loopback_needs_the_token_for_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm: MiniLMEmbedder
) -> None:
    monkeypatch.setenv("PHI_WEB_TOKEN", TOKEN)
    answers = serve_once(
        monkeypatch, [("/api/memory/graph", {}), ("/api/memory/graph", AUTH), ("/health", AUTH)]
    )
    args = ["web", "--host", "0.0.0.0", "--trusted-host", "phi.example", "--db"]
    result = CliRunner().invoke(cli, [*args, str(tmp_path / "m.db")])
    assert result.exit_code == 0, result.output
    assert "every request, reads included, needs the bearer token" in result.output
    assert [answer.status_code for answer in answers] == [401, 200, 200]


def test_phi_web_on_loopback_keeps_reads_open_and_checks_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = serve_once(monkeypatch, [("/health", {}), ("/health", {"Host": "attacker.example"})])
    result = CliRunner().invoke(cli, ["web", "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 0, result.output
    assert [answer.status_code for answer in answers] == [200, 400]
