"""Network failures become typed errors; transient ones are retried (no network needed)."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from atproto_client import exceptions as sdk  # type: ignore[import-untyped]
from atproto_client.models.common import XrpcError  # type: ignore[import-untyped]
from atproto_client.request import Response  # type: ignore[import-untyped]

import phi.atproto
from phi.atproto import (
    AccountNotConfigured,
    AtprotoError,
    AuthenticationFailed,
    InvalidArgument,
    InvalidRecord,
    NetworkUnavailable,
    NotFound,
    RateLimited,
    RecordNotFound,
    RetryPolicy,
)
from phi.atproto._calls import call
from phi.errors import InvalidInput, UserError

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(attempts=3, base_delay=0.0)


def _response(status: int, error: str = "", message: str = "") -> Response:
    content = XrpcError(error=error, message=message) if error else None
    return Response(
        success=False, status_code=status, content=content, headers={"retry-after": "0"}
    )


def _failing(errors: list[Exception], result: str = "ok") -> Callable[[], Awaitable[str]]:
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


def _raised_names(source: Path) -> list[str]:
    """The exception classes a module raises by name (`raise X(...)`, `raise X`)."""
    names = []
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id[:1].isupper():
                names.append(target.id)
    return names


def test_every_error_the_client_raises_is_an_atproto_error() -> None:
    # The batch builder catches `AtprotoError` around each notification's fetches: an error
    # outside that tree (a deleted post's `NotFound` once was) fails the whole batch.
    root = Path(phi.atproto.__file__).parent
    raised: dict[str, type] = {}
    for source in root.glob("*.py"):
        module = importlib.import_module(f"phi.atproto.{source.stem}".replace(".__init__", ""))
        for name in _raised_names(source):
            if name != "AssertionError":  # invariants, not errors
                raised[name] = getattr(module, name)
    # `_translate` returns the rest, typed `-> AtprotoError` (mypy checks that half).
    assert {"NotFound", "InvalidRecord", "AuthenticationFailed"} <= set(raised)
    outside = sorted(name for name, cls in raised.items() if not issubclass(cls, AtprotoError))
    assert outside == []


def test_caller_mistakes_stay_user_errors() -> None:
    # The CLI maps `UserError` to exit 2 and the HTTP API to a 4xx: still true for these.
    for cls in (
        NotFound,
        RecordNotFound,
        InvalidRecord,
        InvalidArgument,
        AuthenticationFailed,
        AccountNotConfigured,
    ):
        assert issubclass(cls, AtprotoError) and issubclass(cls, UserError), cls
    assert issubclass(InvalidRecord, InvalidInput) and issubclass(InvalidArgument, InvalidInput)
    for failure in (RateLimited, NetworkUnavailable):
        assert not issubclass(failure, UserError), failure
