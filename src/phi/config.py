"""Settings, read once at the edge (the CLI or the web app) and passed down.

Every field comes from a `PHI_*` environment variable or a `.env` file in the working
directory. Nothing reads the environment at import time: build `Settings()` where the
program starts.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
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

    handle: str | None = None
    """phi's handle on the network (e.g. `phi.bsky.social`)."""

    app_password: SecretStr | None = None
    """An app password of phi's account (never the main password)."""

    pds_url: str = "https://bsky.social"
    """The PDS phi logs in to; its AppView answers the `app.bsky.*` reads."""

    owner_handle: str | None = None
    """phi's owner: always allowed to be mentioned, and the one who approves gated actions."""

    sandbox_cache: Path | None = None
    """Install cache of the local sandbox (Node 22, `@atproto/dev-env`); default
    `<project>/.cache/sandbox` in a source checkout, else `<home>/cache/sandbox`."""

    sandbox_port: int = 2582
    """First port of the sandbox: PLC here, PDS +1, AppView +2, indexing hook +3."""

    sandbox_postgres_url: str = "postgres://postgres@127.0.0.1:5432/postgres"
    """PostgreSQL the sandbox's AppView uses."""

    sandbox_redis_host: str = "127.0.0.1:6379"
    """Redis (`host:port`) the sandbox's AppView uses."""

    web_host: str = "127.0.0.1"
    """Address `phi web` listens on (loopback by default)."""

    web_port: int = 8780
    """Port `phi web` listens on."""

    web_token: SecretStr | None = None
    """Bearer token for the web API's write and control routes; unset means read-only."""

    def resolved_memory_url(self) -> str:
        """The memory store location, defaulting to a file under `home`."""
        return self.memory_url or str(self.home / "memory.db")

    def resolved_sandbox_cache(self) -> Path:
        """The sandbox install cache: `sandbox_cache`, or a project-local default."""
        if self.sandbox_cache is not None:
            return self.sandbox_cache
        checkout = Path(__file__).resolve().parents[2]
        if (checkout / "pyproject.toml").exists() and (checkout / "src" / "phi").is_dir():
            return checkout / ".cache" / "sandbox"
        return self.home / "cache" / "sandbox"
