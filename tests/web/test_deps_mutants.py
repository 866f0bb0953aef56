"""The web API's auth dependency as a client sees it: the exact refusals (status, body and the
`WWW-Authenticate` challenge) of a write without the token, with a wrong one, and to a
read-only API. test_hosts_and_tokens.py has the token compare itself."""

from __future__ import annotations

import httpx
import pytest

from phi.memory import Memory
from phi.web import create_app

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
BODY = {"content": "hello", "namespace": "notes"}


def client(app: object) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8780")


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {TOKEN}"}]
)
async def test_a_write_without_the_token_is_challenged(
    memory: Memory, headers: dict[str, str]
) -> None:
    async with client(create_app(memory=memory, token=TOKEN)) as http:
        refused = await http.post("/api/memory/rows", json=BODY, headers=headers)
    assert (refused.status_code, refused.json()) == (
        401,
        {"detail": "missing or wrong bearer token"},
    )
    assert refused.headers["www-authenticate"] == "Bearer"
    assert (await memory.stats()).rows == 0


async def test_a_read_only_api_says_how_to_allow_writes(memory: Memory) -> None:
    async with client(create_app(memory=memory)) as http:
        refused = await http.post(
            "/api/memory/rows", json=BODY, headers={"Authorization": f"Bearer {TOKEN}"}
        )
    assert (refused.status_code, refused.json()) == (
        403,
        {"detail": "this API is read-only; set PHI_WEB_TOKEN to allow writes"},
    )
    assert (await memory.stats()).rows == 0
