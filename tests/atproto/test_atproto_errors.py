"""Network failures become typed errors; transient ones are retried (no network needed)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from atproto_client import exceptions as sdk  # type: ignore[import-untyped]
from atproto_client.models.common import XrpcError  # type: ignore[import-untyped]
from atproto_client.request import Response  # type: ignore[import-untyped]

import phi.atproto
from phi.atproto import NetworkUnavailable, NotFound, RateLimited, RecordNotFound, RetryPolicy
from phi.atproto._calls import call

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(attempts=3, base_delay=0.0)


def _response(status: int, error: str = "", message: str = "") -> Response:
    content = XrpcError(error=error, message=message) if error else None
    return Response(
        success=False, status_code=status, content=content, headers={"retry-after": "0"}
    )


def _failing(errors: list[Exception], result: str = "ok") -> Callable[[], object]:
    calls = iter(errors)

    async def fn() -> str:
        error = next(calls, None)
        if error is not None:
            raise error
        return result

    return fn


async def test_transient_errors_are_retried() -> None:
    errors = [sdk.NetworkError(), sdk.RequestException(_response(503, "Unavailable"))]
    assert await call(_failing(errors), what="getPosts", retry=FAST) == "ok"


async def test_persistent_failures_become_typed_errors() -> None:
    with pytest.raises(NetworkUnavailable, match="getPosts failed 3 times"):
        await call(_failing([sdk.NetworkError()] * 3), what="getPosts", retry=FAST)
    limited = sdk.RateLimitExceededError(_response(429, "RateLimitExceeded", "slow down"))
    with pytest.raises(RateLimited, match="rate limited while doing post"):
        await call(_failing([limited] * 3), what="post", retry=FAST)


async def test_refusals_are_not_retried() -> None:
    missing = sdk.BadRequestError(_response(400, "RecordNotFound", "Could not locate record"))
    with pytest.raises(RecordNotFound, match=r"at://did:plc:x/io\.phi\.goal/g"):
        await call(
            _failing([missing]),
            what="getRecord",
            retry=FAST,
            record_uri="at://did:plc:x/io.phi.goal/g",
        )
    profile = sdk.BadRequestError(_response(400, "InvalidRequest", "Profile not found"))
    with pytest.raises(NotFound, match=r"profile 'nobody\.test' was not found"):
        await call(_failing([profile, profile]), what="profile 'nobody.test'", retry=FAST)


def test_atproto_imports_neither_memory_nor_agent() -> None:
    root = Path(phi.atproto.__file__).parent
    for source in root.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                assert not name.startswith(("phi.memory", "phi.agent")), f"{source} imports {name}"
