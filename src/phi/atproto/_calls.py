"""One place where SDK exceptions become phi's errors, and transient failures are retried.

Transient: a transport failure, a timeout, a 5xx, a 429. Those are retried with exponential
backoff and jitter (a 429 waits what the server asks, capped). Everything else is
translated once, with the identifier of what was being done.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio
from atproto_client import exceptions as sdk  # type: ignore[import-untyped]
from atproto_client.client.base import is_method_not_served  # type: ignore[import-untyped]
from atproto_client.models.common import XrpcError  # type: ignore[import-untyped]

from phi.atproto.errors import (
    AtprotoError,
    InvalidRecord,
    MethodNotSupported,
    NetworkUnavailable,
    NotFound,
    RateLimited,
    RecordNotFound,
    RequestRefused,
)

__all__ = ["RetryPolicy", "call", "error_name", "is_auth_expired"]

T = TypeVar("T")

_NOT_FOUND = {"RecordNotFound", "NotFound", "ProfileNotFound", "ActorNotFound", "InvalidRequest"}
_EXPIRED = {"ExpiredToken", "InvalidToken", "AuthenticationRequired", "AuthMissing"}


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How transient failures are retried."""

    attempts: int = 4
    """Total tries, the first included."""
    base_delay: float = 0.5
    """Seconds before the first retry; doubled each time."""
    max_delay: float = 30.0
    """Cap on one wait, including a server's `retry-after`."""


DEFAULT_RETRY = RetryPolicy()


def error_name(exc: sdk.RequestErrorBase) -> tuple[str, str]:
    """The XRPC error name and message of a failed request (empty when absent)."""
    response = exc.response
    if response is None:
        return "", str(exc.__cause__ or exc)
    content = response.content
    if isinstance(content, XrpcError):
        return content.error or "", content.message or ""
    return "", str(content)[:200]


def is_auth_expired(exc: BaseException) -> bool:
    """Whether `exc` says the access or refresh token is no longer accepted."""
    if isinstance(exc, sdk.LoginRequiredError):
        return True
    if isinstance(exc, sdk.UnauthorizedError | sdk.BadRequestError):
        name, _ = error_name(exc)
        return bool(name in _EXPIRED)
    return False


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, sdk.RateLimitExceededError):
        return True
    if isinstance(exc, sdk.NetworkError):
        status = exc.response.status_code if exc.response is not None else None
        return status in (None, 502)
    if isinstance(exc, sdk.RequestException) and exc.response is not None:
        return bool(exc.response.status_code >= 500)
    return False


def _translate(exc: sdk.AtProtocolError, what: str, *, record_uri: str | None) -> AtprotoError:
    if is_method_not_served(exc):
        return MethodNotSupported(what, str(exc))
    if not isinstance(exc, sdk.RequestErrorBase):
        return RequestRefused(what, None, str(exc))
    name, message = error_name(exc)
    status = exc.response.status_code if exc.response is not None else None
    if name == "RecordNotFound" and record_uri is not None:
        return RecordNotFound(record_uri)
    if name == "InvalidRecord" or (
        name == "InvalidRequest" and "record" in message.lower() and record_uri
    ):
        return InvalidRecord(record_uri or what, [message or name])
    if name in _NOT_FOUND and (
        "not found" in message.lower() or "could not" in message.lower() or name != "InvalidRequest"
    ):
        return NotFound(what, message or name)
    if status == 404:
        return NotFound(what, message or name)
    return RequestRefused(what, status, f"{name}: {message}" if name else message)


async def call(
    fn: Callable[[], Awaitable[T]],
    *,
    what: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    record_uri: str | None = None,
) -> T:
    """Run one SDK request with retries, translating its failure into a phi error.

    Args:
        fn: The request, as a zero-argument coroutine function (called once per try).
        what: What is being done, for messages (`"getPostThread at://..."`).
        retry: How transient failures are retried.
        record_uri: The record concerned, so a missing record becomes `RecordNotFound`.

    Raises:
        RateLimited: Still limited after every retry.
        NetworkUnavailable: Still failing after every retry.
        NotFound, RecordNotFound, InvalidRecord, MethodNotSupported, RequestRefused: The server
            refused for a reason retrying cannot change.
    """
    for attempt in range(1, retry.attempts + 1):
        try:
            return await fn()
        except sdk.AtProtocolError as exc:
            if is_auth_expired(exc):
                raise  # the client renews the session and asks again
            if not _transient(exc):
                raise _translate(exc, what, record_uri=record_uri) from exc
            if attempt == retry.attempts:
                if isinstance(exc, sdk.RateLimitExceededError):
                    raise RateLimited(what, exc.retry_after) from exc
                raise NetworkUnavailable(what, attempt, str(exc) or type(exc).__name__) from exc
            delay = retry.base_delay * 2 ** (attempt - 1) * (1 + random.random() / 2)
            if isinstance(exc, sdk.RateLimitExceededError) and exc.retry_after is not None:
                delay = max(delay, exc.retry_after)
            await anyio.sleep(min(delay, retry.max_delay))
    raise AssertionError("unreachable: the loop returns or raises")
