"""Dependencies the routes share: the open memory and the bearer token."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from phi.memory import Memory

__all__ = ["get_memory", "require_read_token", "require_token"]

_bearer = HTTPBearer(auto_error=False)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def get_memory(request: Request) -> Memory:
    """The memory the app's lifespan opened."""
    memory: Memory = request.app.state.memory
    return memory


def _check(token: str, credentials: HTTPAuthorizationCredentials | None) -> None:
    # Compared as bytes: `compare_digest` refuses non-ASCII `str`, and a header arrives as
    # latin-1 text, so its bytes are recovered exactly and the token is taken as UTF-8.
    if credentials is None or not hmac.compare_digest(
        credentials.credentials.encode("latin-1"), token.encode()
    ):
        raise HTTPException(
            401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
        )


def require_token(request: Request, credentials: Credentials) -> None:
    """Writes need `Authorization: Bearer <token>`; without a configured token the API is
    read-only."""
    token: str | None = request.app.state.token
    if token is None:
        raise HTTPException(403, "this API is read-only; set PHI_WEB_TOKEN to allow writes")
    _check(token, credentials)


def require_read_token(request: Request, credentials: Credentials) -> None:
    """Reads need the token too when the app was built with `token_for_reads` (a server
    reachable from other machines)."""
    if request.app.state.token_for_reads:
        _check(request.app.state.token, credentials)
