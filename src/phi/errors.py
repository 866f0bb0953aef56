"""The errors phi raises.

One base, `PhiError`. A `UserError` is a mistake the caller can fix (bad input, a wrong
setting, a store made by another embedding model); anything else is a runtime failure.
The CLI and the web API map these to exit codes and HTTP statuses in one place each.

This module imports nothing from phi, so every layer (`phi.memory` included) may use it.
"""

from __future__ import annotations

__all__ = [
    "EmbedderMismatch",
    "EmbedderMoved",
    "EmbeddingFailed",
    "InvalidInput",
    "NamespaceNotFound",
    "PhiError",
    "RestoreTargetNotEmpty",
    "RowNotFound",
    "SchemaBehind",
    "SchemaTooNew",
    "StoreError",
    "UserError",
]


class PhiError(Exception):
    """Base class of every error phi raises on purpose."""


class UserError(PhiError):
    """A mistake the caller can fix: bad input, a wrong setting, a wrong file."""


class InvalidInput(UserError):
    """An argument was refused before anything was written."""


class RowNotFound(UserError):
    """No row has this id."""

    def __init__(self, row_id: str) -> None:
        self.row_id = row_id
        super().__init__(f"no memory row with id {row_id!r}")


class NamespaceNotFound(UserError):
    """The namespace holds no rows."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        super().__init__(f"namespace {namespace!r} holds no rows (see `phi memory stats`)")


class EmbedderMismatch(UserError):
    """The store's vectors were made by another embedding model or dimension."""

    def __init__(self, *, stored: str, stored_dim: int, given: str, given_dim: int) -> None:
        self.stored, self.stored_dim, self.given, self.given_dim = (
            stored,
            stored_dim,
            given,
            given_dim,
        )
        super().__init__(
            f"this store holds vectors from {stored!r} ({stored_dim}-d) but the embedder is "
            f"{given!r} ({given_dim}-d); open it with the same embedder or use another store"
        )


class EmbedderMoved(EmbedderMismatch):
    """The store moved to another embedding model (`phi memory reembed` through another
    handle or process) after this handle opened it: its old-model vectors are refused."""

    def __init__(self, *, stored: str, stored_dim: int, given: str, given_dim: int) -> None:
        self.stored, self.stored_dim, self.given, self.given_dim = (
            stored,
            stored_dim,
            given,
            given_dim,
        )
        UserError.__init__(
            self,
            f"this store moved to {stored!r} ({stored_dim}-d) after it was opened here"
            f" (a re-embed through another handle or process); vectors from {given!r}"
            f" ({given_dim}-d) are refused and nothing was written: reopen the store with"
            f" the {stored!r} embedder",
        )


class StoreError(UserError):
    """The store file or URL cannot be used (corrupt, foreign, unsupported)."""


class EmbeddingFailed(PhiError):
    """An embedding server could not be reached or sent an unusable answer."""


class SchemaTooNew(StoreError):
    """The store was upgraded by a newer phi: it holds migrations this phi does not know.
    Raised before anything is written."""

    def __init__(self, *, store_version: str, code_version: str) -> None:
        self.store_version, self.code_version = store_version, code_version
        super().__init__(
            f"this store is at schema version {store_version}, newer than this phi's"
            f" {code_version}; upgrade phi to open it (the store was left unchanged)"
        )


class SchemaBehind(StoreError):
    """The store's schema is older than this phi's and automatic upgrades are off."""

    def __init__(self, *, store_version: str, code_version: str) -> None:
        self.store_version, self.code_version = store_version, code_version
        super().__init__(
            f"this store is at schema version {store_version} and this phi needs"
            f" {code_version}; run `phi memory upgrade` on it (automatic upgrades are off"
            " for this store: PHI_AUTO_UPGRADE)"
        )


class RestoreTargetNotEmpty(UserError):
    """A restore would overwrite a store that holds data; `replace` allows it."""
