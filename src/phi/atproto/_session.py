"""The logged-in SDK client: login, a persisted session, renewal, and every request's wrapper.

phi runs for days; its access token lives minutes and its refresh token weeks. The SDK
refreshes the access token before it expires and reports each new session, which is written
to `session_file` so a restart resumes without a fresh login (the PDS rate-limits logins).
When the server refuses the session anyway (revoked, expired refresh token), the session
logs in again with the app password once, then gives up with `SessionExpired`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

import anyio
from atproto_client import AsyncClient  # type: ignore[import-untyped]
from atproto_client import exceptions as sdk
from atproto_client.client.session import Session as SdkSession  # type: ignore[import-untyped]
from atproto_client.client.session import SessionEvent

from phi.atproto._calls import DEFAULT_RETRY, RetryPolicy, call, error_name, is_auth_expired
from phi.atproto.errors import AccountNotConfigured, AuthenticationFailed, SessionExpired
from phi.atproto.models import Identity
from phi.config import Settings
from phi.private import check_secret_file, write_private

__all__ = ["ClientConfig", "Session"]

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """How `PhiClient` reaches the network and as whom."""

    pds_url: str
    """The PDS to log in to (`https://bsky.social`, or the sandbox's)."""
    handle: str
    """The account's handle (or DID)."""
    password: str = field(repr=False)
    """An app password."""
    session_file: Path | None = None
    """Where the session is kept between runs; None keeps it in memory only."""
    nsid_prefix: str = "io.phi"
    """Prefix of phi's own record collections."""
    owner_handle: str | None = None
    """phi's owner, always allowed to be mentioned."""
    retry: RetryPolicy = DEFAULT_RETRY
    """Retries of transient failures."""
    mention_policy: Literal["consent", "anyone"] = "consent"
    """`consent`: tag only consenting handles (phi); `anyone`: a person's own client."""
    plc_url: str = "https://plc.directory"
    """The PLC directory that resolves `did:plc` DIDs (the sandbox runs its own)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ClientConfig:
        """The configuration of phi's own account, from `PHI_HANDLE`, `PHI_APP_PASSWORD`...

        Raises:
            AccountNotConfigured: The handle or the app password is not set (each missing
                one named).
        """
        if not settings.handle or settings.app_password is None:
            missing = [
                name
                for name, absent in (
                    ("PHI_HANDLE (phi's handle, e.g. phi.bsky.social)", not settings.handle),
                    (
                        "PHI_APP_PASSWORD (an app password of that account)",
                        settings.app_password is None,
                    ),
                )
                if absent
            ]
            raise AccountNotConfigured(
                f"phi's account is not configured: set {' and '.join(missing)} "
                "(or use the local network: `phi sandbox run`)"
            )
        return cls(
            pds_url=settings.pds_url,
            handle=settings.handle,
            password=settings.app_password.get_secret_value(),
            session_file=settings.home / "sessions" / f"{settings.handle}.session",
            nsid_prefix=settings.nsid_prefix,
            owner_handle=settings.owner_handle,
            plc_url=settings.plc_url,
        )


class Session:
    """Owns the SDK's `AsyncClient` and runs every request through retries and renewal."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.sdk = AsyncClient(base_url=config.pds_url)
        self.sdk.on_session_change(self._on_session_change)
        self._identity: Identity | None = None

    @property
    def identity(self) -> Identity:
        """Who is logged in."""
        assert self._identity is not None, "open() the session first"
        return self._identity

    async def _on_session_change(self, event: SessionEvent, session: SdkSession) -> None:
        self._identity = Identity(did=session.did, handle=session.handle)
        path = self.config.session_file
        if path is None or event == SessionEvent.IMPORT:
            return
        # 0600 from its first byte: the session string is as good as the password for a day.
        saved = self.sdk.export_session_string()
        await anyio.to_thread.run_sync(write_private, path, saved)

    async def open(self) -> Identity:
        """Resume the saved session if the server still accepts it, else log in.

        Raises:
            AuthenticationFailed: The handle and password were refused.
            NetworkUnavailable: The PDS could not be reached.
        """
        if await self._resume():
            return self.identity
        await self._login()
        return self.identity

    async def _resume(self) -> bool:
        path = self.config.session_file
        if path is None or not await anyio.Path(path).exists():
            return False
        # A session others can read is refused like a password file would be (ssh's rule).
        await anyio.to_thread.run_sync(check_secret_file, path)
        saved = await anyio.Path(path).read_text()
        try:
            await self.sdk.login(session_string=saved.strip(), fetch_bsky_profile=False)
            if self.config.handle not in (self.identity.handle, self.identity.did):
                return False  # a session of another account: do not use it
            await call(lambda: self.sdk.com.atproto.server.get_session(), what="getSession")
        except (sdk.AtProtocolError, ValueError):
            return False  # unreadable, revoked or expired: log in with the password
        return True

    async def _login(self) -> None:
        config = self.config
        try:
            await call(
                lambda: self.sdk.login(config.handle, config.password, fetch_bsky_profile=False),
                what=f"login of {config.handle!r}",
                retry=config.retry,
            )
        except (sdk.UnauthorizedError, sdk.BadRequestError) as exc:
            name, message = error_name(exc)
            raise AuthenticationFailed(config.handle, config.pds_url, message or name) from exc
        except sdk.LoginRequiredError as exc:  # pragma: no cover - login never needs a session
            raise AuthenticationFailed(config.handle, config.pds_url, str(exc)) from exc

    async def request(
        self,
        fn: Callable[[AsyncClient], Awaitable[T]],
        *,
        what: str,
        record_uri: str | None = None,
    ) -> T:
        """Run one request as the logged-in account.

        Transient failures are retried; a refused session is renewed once by logging in
        again; everything else becomes a phi error (see `phi.atproto.errors`).
        """
        try:
            return await call(
                lambda: fn(self.sdk), what=what, retry=self.config.retry, record_uri=record_uri
            )
        except sdk.AtProtocolError as exc:
            if not is_auth_expired(exc):
                raise
        try:
            await self._login()
        except AuthenticationFailed as exc:
            raise SessionExpired(self.config.handle, str(exc)) from exc
        try:
            return await call(
                lambda: fn(self.sdk), what=what, retry=self.config.retry, record_uri=record_uri
            )
        except sdk.AtProtocolError as exc:
            raise SessionExpired(self.config.handle, str(exc)) from exc

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self.sdk.request.close()
