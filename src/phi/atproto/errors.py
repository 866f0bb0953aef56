"""The errors `phi.atproto` raises.

Network failures arrive from the `atproto` SDK as a handful of HTTP-shaped exceptions; the
client turns each into one of these, carrying the identifier it was about and a message that
says what to do next.

Every error the client raises is an `AtprotoError`, so one `except AtprotoError` around a
network call catches all of them (a deleted post must not escape the handler of a batch).
Those the caller can fix (a wrong password, a record that does not fit its lexicon, a handle
that does not exist, a bad argument) are also `UserError`s, so the CLI still maps them to
exit 2 and the HTTP API to a 4xx; the others are runtime failures of the network (rate
limit, an unreachable PDS after retries).
"""

from __future__ import annotations

from phi.errors import InvalidInput, PhiError, UserError

__all__ = [
    "AccountNotConfigured",
    "AtprotoError",
    "AuthenticationFailed",
    "IdentityUnresolved",
    "InvalidArgument",
    "InvalidRecord",
    "MethodNotSupported",
    "NetworkUnavailable",
    "NotFound",
    "RateLimited",
    "RecordNotFound",
    "RequestRefused",
    "SandboxError",
    "SandboxInstallFailed",
    "SandboxNotRunning",
    "SandboxStartFailed",
    "SessionExpired",
]


class AtprotoError(PhiError):
    """Any failure of the AT Protocol client (those the caller can fix are `UserError`s too)."""


class AccountNotConfigured(AtprotoError, UserError):
    """phi's handle or app password is not set."""


class InvalidArgument(AtprotoError, InvalidInput):
    """An argument to the client was refused before anything was sent."""


class AuthenticationFailed(AtprotoError, UserError):
    """The PDS refused the handle and password."""

    def __init__(self, handle: str, pds_url: str, detail: str) -> None:
        self.handle, self.pds_url = handle, pds_url
        super().__init__(
            f"the PDS at {pds_url!r} refused the login of {handle!r} ({detail}); check "
            "PHI_HANDLE and PHI_APP_PASSWORD (an app password looks like xxxx-xxxx-xxxx-xxxx; "
            "create one under Settings > App passwords)"
        )


class SessionExpired(AtprotoError):
    """The session expired and logging in again did not work."""

    def __init__(self, handle: str, detail: str) -> None:
        self.handle = handle
        super().__init__(
            f"the session of {handle!r} expired and could not be renewed ({detail}); log in "
            "again with a valid app password (PHI_APP_PASSWORD)"
        )


class RateLimited(AtprotoError):
    """The server kept answering 429 after the client's retries."""

    def __init__(self, what: str, retry_after: float | None) -> None:
        self.what, self.retry_after = what, retry_after
        when = f"in {retry_after:.0f} s" if retry_after is not None else "later"
        super().__init__(f"rate limited while doing {what}; try again {when}")


class NetworkUnavailable(AtprotoError):
    """The network failed the same request several times in a row."""

    def __init__(self, what: str, attempts: int, detail: str) -> None:
        self.what, self.attempts = what, attempts
        super().__init__(
            f"{what} failed {attempts} times ({detail}); check that the PDS is reachable "
            "(for the sandbox: `phi sandbox status`)"
        )


class NotFound(AtprotoError, UserError):
    """The thing asked for does not exist on the network."""

    def __init__(self, what: str, detail: str = "") -> None:
        self.what = what
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"{what} was not found{suffix}; check the identifier")


class IdentityUnresolved(AtprotoError):
    """An account's DID document could not be found or names no PDS."""

    def __init__(self, did: str, detail: str) -> None:
        self.did = did
        super().__init__(f"cannot find where {did!r} lives: {detail}")


class RecordNotFound(NotFound):
    """No record at this collection and record key."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        super().__init__(f"record {uri!r}")


class InvalidRecord(AtprotoError, InvalidInput):
    """A record does not fit its lexicon, so nothing was written."""

    def __init__(self, collection: str, problems: list[str]) -> None:
        self.collection, self.problems = collection, problems
        super().__init__(
            f"invalid {collection!r} record: {'; '.join(problems)}; fix the fields and write again"
        )


class MethodNotSupported(AtprotoError):
    """The server does not offer this method (for example search on a small AppView)."""

    def __init__(self, method: str, detail: str) -> None:
        self.method = method
        super().__init__(f"the server does not offer {method!r} ({detail})")


class RequestRefused(AtprotoError):
    """The server refused a request for a reason not covered by a more specific error."""

    def __init__(self, what: str, status: int | None, detail: str) -> None:
        self.what, self.status = what, status
        super().__init__(f"{what} was refused (HTTP {status}: {detail})")


class SandboxError(UserError):
    """Base of the local sandbox network's errors."""


class SandboxInstallFailed(SandboxError):
    """Installing Node 22 or `@atproto/dev-env` into the cache failed."""

    def __init__(self, step: str, log_tail: str) -> None:
        self.step = step
        super().__init__(
            f"sandbox install step {step!r} failed; the registry must be reachable and "
            f"`npm` installed. Last lines of its output:\n{log_tail}"
        )


class SandboxStartFailed(SandboxError):
    """The launcher did not bring the network up."""

    def __init__(self, reason: str, log_tail: str) -> None:
        self.reason = reason
        super().__init__(
            f"the sandbox did not start: {reason}. PostgreSQL and Redis must run on 127.0.0.1 "
            f"(`bash scripts/services.sh`). Last lines of the launcher log:\n{log_tail}"
        )


class SandboxNotRunning(SandboxError):
    """An action needs the sandbox, and it is not running."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        super().__init__(
            f"no sandbox is running from {state_dir!r}; start it with `phi sandbox up`"
        )
