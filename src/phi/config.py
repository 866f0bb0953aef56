"""Settings, read once at the edge (the CLI or the web app) and passed down.

Every field comes from a `PHI_*` environment variable or a `.env` file in the working
directory. Nothing reads the environment at import time: build `Settings()` where the
program starts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings import SettingsError as PydanticSettingsError

from phi.errors import UserError
from phi.private import check_secret_file, private_dir

if TYPE_CHECKING:
    from phi.memory.embed import Embedder

__all__ = ["Settings", "SettingsError", "WebSearchProvider", "load_settings"]


class SettingsError(UserError):
    """A `PHI_*` setting (environment or `.env`) holds a value phi cannot use."""


WebSearchProvider = Literal["brave", "tavily", "searxng", "json"]
"""The web search APIs phi speaks (`phi.agent.search`, one module each)."""

_KEYED_SEARCH: Final = frozenset({"brave", "tavily"})
"""Web search providers that need `PHI_WEB_SEARCH_KEY`; they also have a public URL."""

ENV_FILE: Final = ".env"
"""The settings file read from the working directory, besides the environment."""

_SECRET_NAME: Final = re.compile(r"(PASSWORD|PASSWD|TOKEN|SECRET|(^|_)KEY)$")
"""Names of `.env` lines that carry a secret: every `SecretStr` setting (a test checks) and
provider keys (`OPENAI_API_KEY`)."""

_URL_PASSWORD: Final = re.compile(r"://[^/@\s:]*:[^/@\s]+@")
"""A URL with a password in it (`postgresql://phi:PASSWORD@host/db`)."""


def _default_home() -> Path:
    return Path.home() / ".phi"


def _split_list(value: Any) -> Any:
    """Read a list setting from the environment as a JSON list or as comma-separated items."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            message = "not a valid JSON list; give a JSON list or comma-separated items"
            raise ValueError(message) from None
    return [item.strip() for item in text.split(",") if item.strip()]


class Settings(BaseSettings):
    """phi's configuration."""

    model_config = SettingsConfigDict(
        env_prefix="PHI_", env_file=ENV_FILE, extra="ignore", use_attribute_docstrings=True
    )

    home: Path = Field(default_factory=_default_home)
    """Folder for all local state: the memory store, the sandbox, caches."""

    memory_url: str | None = None
    """Where memory lives: a SQLite file path (default `<home>/memory.db`)."""

    auto_upgrade: bool | None = None
    """Whether opening a store applies this phi's pending schema migrations; unset: yes
    for a SQLite file (one user), no for PostgreSQL (a team's hosts share it: upgrade with
    `phi memory upgrade` once every host runs the new phi)."""

    postgres_pool_max: int | None = Field(default=None, ge=1, le=10_000)
    """Connections one process's PostgreSQL pool may hold (unset: 4), lowered to what the
    server allows (`max_connections` minus its reserved slots and 5 spare); N processes on
    one server need N times this (`docs/scaling.md`)."""

    embedder: str = "minilm"
    """Embedding model: `minilm` (offline default) or `openai:MODEL` (any OpenAI-compatible
    `/embeddings` endpoint, e.g. `openai:text-embedding-3-small`)."""

    embedder_url: str | None = None
    """Base URL (up to `/v1`) of an `openai:` embedder; unset means OpenAI's own."""

    embedder_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("PHI_EMBEDDER_KEY", "OPENAI_API_KEY")
    )
    """API key of an `openai:` embedder (`PHI_EMBEDDER_KEY`, else `OPENAI_API_KEY`)."""

    embedder_dimensions: int | None = Field(default=None, gt=0)
    """Vector length of an `openai:` model other than OpenAI's own (e.g. a local GGUF)."""

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

    plc_url: str = "https://plc.directory"
    """The PLC directory that resolves `did:plc` DIDs (to find the owner's PDS)."""

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

    web_trusted_hosts: Annotated[list[str], NoDecode] = []
    """`Host` names `phi web` answers besides the loopback names (`*`: any), e.g. its
    public name when it binds a non-loopback address."""

    capture_url: str | None = None
    """A `phi mcp --http` server's endpoint (`https://host/mcp`): `phi capture` delivers its
    queued events there instead of writing the store (team capture)."""

    capture_token: SecretStr | None = None
    """Bearer token for `capture_url` (or put it in `capture_token_file`)."""

    capture_token_file: Path | None = None
    """A file (mode 0600) holding the bearer token for `capture_url`."""

    poll_seconds: float = Field(default=10, gt=0)
    """Seconds between two notification polls of `phi run`."""

    rate_limit_per_hour: int = Field(default=30, gt=0)
    """Notifications phi handles per author in any sliding hour; the rest are dropped."""

    model_timeout: float = Field(default=120, gt=0)
    """Seconds one request to the agent's model may take (retries included) before it fails."""

    retry_attempts: int = Field(default=5, gt=0)
    """Failed runs a notification may be in before it is set aside (`phi runs pending`)."""

    retry_base_seconds: float = Field(default=30, gt=0)
    """Wait before a notification a failed run left unanswered runs again; doubled each time."""

    retry_max_seconds: float = Field(default=1800, gt=0)
    """The longest wait between two runs of a notification that keeps failing."""

    allow_handles: Annotated[list[str], NoDecode] = []
    """If not empty, the only handles or DIDs phi answers (comma-separated or a JSON list)."""

    deny_handles: Annotated[list[str], NoDecode] = []
    """Handles or DIDs phi never answers; wins over `allow_handles`."""

    musing_hours: Annotated[list[int], NoDecode] = [9, 13, 17, 21]
    """UTC hours (0-23) in which phi may post one unprompted musing each."""

    reflection_hour: int | None = Field(default=22, ge=0, le=23)
    """UTC hour (0-23) from which phi posts its daily reflection; empty or `none` means never."""

    health_urls: Annotated[list[str], NoDecode] = []
    """URLs the periodic service check requests; empty means no service checks."""

    service_check_hours: float = Field(default=3, gt=0)
    """Hours between two service checks of `health_urls`."""

    owner_services: Annotated[list[str], NoDecode] = []
    """Host patterns (e.g. `*.example.org`) of the owner's own services among `health_urls`:
    the scheduled check tags the owner when one goes down (or when most of them do)."""

    extraction_hours: float | None = Field(default=24, gt=0)
    """Hours between two extraction passes (facts from new exchanges), whether or not the
    reflection runs; empty or `none` means only the reflection extracts."""

    recent_conversations: int = Field(default=8, ge=0, le=50)
    """Exchanges shown as [RECENT CONVERSATIONS] in musings and reflections; 0: none."""

    recent_conversation_chars: int = Field(default=2400, ge=200, le=20000)
    """Characters [RECENT CONVERSATIONS] may hold at most (longer exchanges are clipped)."""

    profile_note: str = "🟢 online since {since}"
    """The note `phi run` keeps at the end of phi's bio while it runs (`{since}`: when it
    started, UTC); empty or `off` leaves the profile alone."""

    profile_offline_note: str = ""
    """The note left in phi's bio after a clean stop; empty removes the note."""

    control_host: str = "127.0.0.1"
    """Address the control API of `phi run` listens on (loopback by default)."""

    control_port: int = Field(default=8781, ge=0, le=65535)
    """Port of the control API (0 picks a free one)."""

    control_token: SecretStr | None = None
    """Bearer token of the control API; unset means one generated in `<home>/control.token`."""

    control_trusted_hosts: Annotated[list[str], NoDecode] = []
    """`Host` names the control API answers besides the loopback names and its own address
    (`*`: any), e.g. the name a platform's health check uses when it binds `0.0.0.0`."""

    personality_file: Path | None = None
    """A Markdown file with phi's personality for the agent; unset means the built-in one."""

    web_search_url: str | None = None
    """Base URL of the web search API: unset means the provider's public one for `brave`
    and `tavily`; required for `searxng` (the instance) and `json` (the endpoint itself)."""

    web_search_key: SecretStr | None = None
    """API key of the web search provider: required for `brave` and `tavily`; sent as a
    bearer token to a `searxng` or `json` endpoint that wants one."""

    web_search_provider: WebSearchProvider | None = Field(default=None, validate_default=True)
    """Web search API: `brave`, `tavily`, `searxng` or `json` (a GET endpoint answering
    phi's own JSON); unset means `json` when only `PHI_WEB_SEARCH_URL` is set, else no web
    search tool."""

    card_search_url: str | None = None
    """A network-wide index of public cards (Semble's `https://api.semble.so/api/search/semantic`
    answers `?query=&limit=`); unset means phi searches only its own cards."""

    mcp_servers: Path | None = None
    """A TOML or JSON file of external MCP servers whose tools every run gets; unset: none."""

    model_vision: Literal["auto", "on", "off"] = "auto"
    """Whether pictures in posts reach the agent's model as images: `auto` when its model
    profile takes images (the local model does not), `on`, or `off` (alt text only)."""

    image_max_bytes: int = Field(default=5_000_000, gt=0)
    """Largest picture (bytes) passed to the model; a bigger one is not fetched, and the
    model reads its alt text and a note."""

    images_per_batch: int = Field(default=4, ge=0)
    """Most pictures passed to the model in one notification batch; the rest by alt text."""

    @field_validator(
        "allow_handles",
        "deny_handles",
        "health_urls",
        "owner_services",
        "musing_hours",
        "web_trusted_hosts",
        "control_trusted_hosts",
        mode="before",
    )
    @classmethod
    def _split_lists(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("web_search_url", "web_search_key", "web_search_provider", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # `PHI_WEB_SEARCH_KEY=` in a `.env` means no key, not an empty one.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("web_search_provider")
    @classmethod
    def _check_web_search(
        cls, value: WebSearchProvider | None, info: ValidationInfo
    ) -> WebSearchProvider | None:
        # Declared after the URL and the key, so both are in `info.data` unless they failed
        # their own checks (then that error is the one to read, not a second one here).
        if not {"web_search_url", "web_search_key"} <= info.data.keys():
            return value
        url, key = info.data["web_search_url"], info.data["web_search_key"]
        if value is None:
            if key is not None:
                raise ValueError(
                    "unset while PHI_WEB_SEARCH_KEY is set; say which API the key is for "
                    "(brave, tavily, searxng or json)"
                )
            if not url:
                return None
            value = "json"
        if value in _KEYED_SEARCH and key is None:
            raise ValueError(f"{value} needs an API key: set PHI_WEB_SEARCH_KEY")
        if value not in _KEYED_SEARCH and not url:
            raise ValueError(f"{value} needs PHI_WEB_SEARCH_URL (there is no public one)")
        return value

    @field_validator("plc_url", "card_search_url", "web_search_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL; give one like https://host/path")
        return value

    @field_validator("home", mode="before")
    @classmethod
    def _no_empty_home(cls, value: Any) -> Any:
        # An empty PHI_HOME is the working folder, which phi would then close to 0700.
        if isinstance(value, str) and not value.strip():
            raise ValueError("empty; give a folder (default ~/.phi) or unset it")
        return value

    @field_validator("reflection_hour", "extraction_hours", mode="before")
    @classmethod
    def _no_reflection(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in {"", "none", "off"}:
            return None
        return value

    @field_validator("musing_hours")
    @classmethod
    def _check_hours(cls, value: list[int]) -> list[int]:
        wrong = [hour for hour in value if not 0 <= hour <= 23]
        if wrong:
            raise ValueError(f"musing hours are UTC hours 0-23, got {wrong!r}")
        return sorted(set(value))

    def make_embedder(self) -> Embedder:
        """The embedder these settings name: the one place every surface builds it.

        Raises:
            SettingsError: the embedder is unknown or an `openai:` model's dimension is.
        """
        from phi.errors import StoreError
        from phi.memory.embed import default_embedder

        key = self.embedder_key.get_secret_value() if self.embedder_key else None
        try:
            return default_embedder(
                self.embedder,
                base_url=self.embedder_url,
                api_key=key,
                dimensions=self.embedder_dimensions,
            )
        except StoreError as exc:
            raise SettingsError(f"PHI_EMBEDDER={self.embedder!r}: {exc}") from None

    def resolved_memory_url(self) -> str:
        """The memory store location, defaulting to a file under `home`."""
        return self.memory_url or str(self.home / "memory.db")

    def sandbox_memory_url(self) -> str:
        """The memory of phi on the local sandbox: `<home>/sandbox-memory.db`, apart from
        the real account's, unless `memory_url` names one store for both."""
        return self.memory_url or str(self.home / "sandbox-memory.db")

    def resolved_sandbox_cache(self) -> Path:
        """The sandbox install cache: `sandbox_cache`, or a project-local default."""
        if self.sandbox_cache is not None:
            return self.sandbox_cache
        checkout = Path(__file__).resolve().parents[2]
        if (checkout / "pyproject.toml").exists() and (checkout / "src" / "phi").is_dir():
            return checkout / ".cache" / "sandbox"
        return self.home / "cache" / "sandbox"


def load_settings() -> Settings:
    """`Settings()`, with a bad value reported as one `SettingsError` line per setting.

    This is the edge every command passes, so it is also where PHI_HOME is made private:
    created 0700, or closed to 0700 if an older phi (or a 022 umask) left it 0755. A `.env`
    that holds a secret and that other users can read is refused before it is used.

    Raises:
        SettingsError: naming the variable, the value given and what it accepts.
        InsecureFile: `.env` holds a secret and others can read it (with the `chmod`).
    """
    _check_env_file(Path(ENV_FILE))
    settings = _read_settings()
    try:
        private_dir(settings.home)
    except OSError as exc:
        raise SettingsError(
            f"PHI_HOME={str(settings.home)!r}: cannot make it phi's private folder: "
            f"{exc.strerror or exc}"
        ) from None
    return settings


def _check_env_file(path: Path) -> None:
    """Refuse a `.env` with a secret in it that other users can read (ssh's rule for keys).

    A `.env` without secrets (a handle, a port) may stay as open as the user likes; one
    with a password, token or key, or a URL carrying a password, is held to 0600.
    """
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return  # none, or unreadable: reading the settings reports the latter
    if any(_is_secret(line) for line in text.splitlines()):
        check_secret_file(path)


def _is_secret(line: str) -> bool:
    """Whether one `.env` line sets a secret: by its name, or a URL with a password."""
    name, sep, value = line.strip().removeprefix("export ").partition("=")
    value = value.strip().strip("'\"")
    if not sep or not value or name.lstrip().startswith("#"):
        return False
    return bool(_SECRET_NAME.search(name.strip().upper()) or _URL_PASSWORD.search(value))


def _read_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None
    except PydanticSettingsError as exc:
        # pydantic-settings' own failures (a value its sources could not parse) chain the
        # real reason; its message alone names the field but not why.
        cause = f": {exc.__cause__}" if exc.__cause__ else ""
        raise SettingsError(f"{exc}{cause}") from None
    except UnicodeDecodeError as exc:
        raise SettingsError(
            f"'.env' in {str(Path.cwd())!r} is not UTF-8 text (byte {exc.start}); "
            "save it as UTF-8 or remove it"
        ) from None
    except OSError as exc:
        raise SettingsError(f"cannot read '.env' in {str(Path.cwd())!r}: {exc.strerror}") from None


def _describe(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else "?"
        field = Settings.model_fields.get(name)
        # The docstring's first paragraph, joined: its first line alone stops mid-sentence.
        about = " ".join((field.description or "").split("\n\n")[0].split()) if field else ""
        given = error.get("input")
        value = f"={given!r}" if isinstance(given, str | int | float) else ""
        reason = error["msg"].removeprefix("Value error, ")
        problems.append(
            f"PHI_{name.upper()}{value}: {reason}" + (f" (the setting: {about})" if about else "")
        )
    return "; ".join(problems)
