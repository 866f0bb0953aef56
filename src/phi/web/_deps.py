"""Dependencies the routes share: the open memory and the write token."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from phi.memory import Memory

__all__ = ["get_memory", "require_token"]

_bearer = HTTPBearer(auto_error=False)


def get_memory(request: Request) -> Memory:
    """The memory the app's lifespan opened."""
    memory: Memory = request.app.state.memory
    return memory


def require_token(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Writes need `Authorization: Bearer <token>`; without a configured token the API is
    read-only."""
    token: str | None = request.app.state.token
    if token is None:
        raise HTTPException(403, "this API is read-only; set PHI_WEB_TOKEN to allow writes")
    if credentials is None or not hmac.compare_digest(credentials.credentials, token):
        raise HTTPException(
            401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"}
        )
