"""Settings, read once at the edge (the CLI or the web app) and passed down.

Every field comes from a `PHI_*` environment variable or a `.env` file in the working
directory. Nothing reads the environment at import time: build `Settings()` where the
program starts.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


def _default_home() -> Path:
    return Path.home() / ".phi"


class Settings(BaseSettings):
    """phi's configuration."""

    model_config = SettingsConfigDict(env_prefix="PHI_", env_file=".env", extra="ignore")

    home: Path = Field(default_factory=_default_home)
    """Folder for all local state: the memory store, the sandbox, caches."""

    memory_url: str | None = None
    """Where memory lives: a SQLite file path (default `<home>/memory.db`)."""

    embedder: str = "minilm"
    """Embedding model: `minilm` (offline default)."""

    model: str | None = None
    """pydantic-ai model string for the agent; unset means the air-gapped local model."""

    memory_model: str | None = None
    """pydantic-ai model string for memory's small passes (extraction, reconciliation)."""

    nsid_prefix: str = "io.phi"
    """Prefix of the record collections phi owns on its PDS."""

    def resolved_memory_url(self) -> str:
        """The memory store location, defaulting to a file under `home`."""
        return self.memory_url or str(self.home / "memory.db")
