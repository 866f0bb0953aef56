"""What one agent run knows: `PhiDeps`, built by the entry point that starts the run.

Every entry point (a notification batch, a scheduled musing, the daily reflection, a service
check, a review) ends in the same `agent.run(...)`; only the user prompt and these deps differ.
Dynamic prompt blocks read the deps and return "" when their part is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from phi.agent.cache import PromptCaches
from phi.agent.mcp_config import McpServerConfig
from phi.agent.search import WebSearch
from phi.atproto import Notification, PhiClient, Post, Profile, Thread
from phi.memory import Memory
from phi.memory.learning import Blocks, SmallModel
from phi.memory.model import utc_now
from phi.memory.preload import format_age

__all__ = [
    "Action",
    "ActionValue",
    "ActivityLog",
    "AgentConfig",
    "Approval",
    "AuthorLookup",
    "Batch",
    "Entry",
    "NotificationContext",
    "PhiDeps",
    "PhiPost",
    "Vision",
]

Vision = Literal["auto", "on", "off"]
"""`PHI_MODEL_VISION`: `auto` follows the model's profile (`supports_image_input`)."""

Entry = Literal["notifications", "musing", "reflection", "service_check", "review", "preview"]
"""What started a run. Only `notifications` batches can pass the owner gate."""


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """The parts of the settings the agent uses, fixed for the process."""

    nsid_prefix: str = "io.phi"
    """Prefix of phi's record collections."""
    owner_handle: str | None = None
    """Who approves gated actions (like-as-approval); no owner means nothing gated passes."""
    personality_file: Path | None = None
    """A personality to use instead of the built-in one."""
    web_search: WebSearch | None = None
    """The search API `web_search` asks (`PHI_WEB_SEARCH_*`); absent means no such tool."""
    card_search_url: str | None = None
    """A network-wide index of public cards; absent means phi searches its own cards only."""
    synthesize: bool = True
    """Let the small model write prompt blocks (self-awareness, relevant memories). Off for
    the tiny local model, whose syntheses are noise and would slow every batch."""
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """External MCP servers whose tools every run gets (`PHI_MCP_SERVERS`)."""
    services: tuple[str, ...] = ()
    """The health URLs the service check watches; [KNOWN SERVICES] names them."""
    control_log: Path | None = None
    """The control API's log of starts, pauses and resumes, for [OPERATIONAL HISTORY]."""
    recent_conversations: int = 8
    """Exchanges [RECENT CONVERSATIONS] shows in musings and reflections; 0: the block is off."""
    recent_conversation_chars: int = 2400
    """The most characters [RECENT CONVERSATIONS] holds."""
    unshown_people: tuple[str, ...] = ()
    """Handles or DIDs kept out of [RECENT CONVERSATIONS] (the deny list: people phi never
    answers are not brought up either)."""
    vision: Vision = "auto"
    """Whether a batch's pictures go to the model as images (`phi.agent.images`)."""
    image_max_bytes: int = 5_000_000
    """Largest picture fetched for the model."""
    images_per_batch: int = 4
    """Most pictures passed to the model in one batch."""


ActionValue = str | tuple[str, ...]
"""One argument of a gated action: text, or a list of texts kept as a list (so approving
`['a', 'b']` can never be read as approving `['a,b']`)."""


@dataclass(frozen=True, kw_only=True)
class Action:
    """A gated action, named exactly: the tool and the arguments it would run with."""

    tool: str
    args: tuple[tuple[str, ActionValue], ...]
    """(name, value) pairs sorted by name; scalars as text, lists as tuples of text."""

    @classmethod
    def of(cls, tool: str, **args: object) -> Action:
        return cls(tool=tool, args=tuple(sorted((k, _action_value(v)) for k, v in args.items())))

    def describe(self) -> str:
        shown = ", ".join(f"{k}={list(v) if isinstance(v, tuple) else v!r}" for k, v in self.args)
        return f"{self.tool}({shown})"


def _action_value(value: object) -> ActionValue:
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    return str(value)


@dataclass(frozen=True, kw_only=True)
class Approval:
    """The owner liked an authorization request in this batch: that one action may pass."""

    action: Action
    request_uri: str
    """phi's request post the owner liked."""
    thread_root: str
    """The thread the request was discussed in."""
    owner_did: str
    """The owner's DID when the request was posted, which the like came from: handles change
    hands, DIDs do not."""


@dataclass(frozen=True, kw_only=True)
class AuthorLookup:
    """A stranger's profile and recent posts, fetched before the run."""

    profile: Profile
    recent_posts: list[Post] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class NotificationContext:
    """One notification with what phi needs to answer it."""

    notification: Notification
    post: Post | None = None
    """The post that caused it (mentions, replies, quotes)."""
    thread: Thread | None = None
    """The thread around that post."""
    subject: Post | None = None
    """phi's post that was liked or reposted."""

    @property
    def text(self) -> str:
        """What the author wrote: the post as fetched, else the notification's copy."""
        return self.post.text if self.post is not None else self.notification.text

    @property
    def thread_root(self) -> str:
        n = self.notification
        if n.reply_root is not None:
            return n.reply_root.uri
        if self.subject is not None and self.subject.reply_root is not None:
            return self.subject.reply_root.uri
        return n.reason_subject or n.uri


@dataclass(kw_only=True)
class Batch:
    """The unread notifications dispatched as one cognitive event."""

    items: list[NotificationContext]
    author_lookups: dict[str, AuthorLookup] = field(default_factory=dict)
    """Strangers (no memory of them yet), by DID."""
    approvals: list[Approval] = field(default_factory=list)
    """Owner approvals that arrived in this batch."""
    participants: dict[str, str] = field(default_factory=dict)
    """Others in the batch's threads (not authors of its notifications, not phi), DID →
    handle, capped: their blocks and memory are shown too."""

    @property
    def uris(self) -> frozenset[str]:
        """Every post URI of the batch: what like and repost may touch."""
        found: set[str] = set()
        for item in self.items:
            if item.post is not None:
                found.add(item.post.uri)
            if item.notification.reason in ("mention", "reply", "quote"):
                found.add(item.notification.uri)
        return frozenset(found)

    def item(self, uri: str) -> NotificationContext | None:
        """The entry whose post is `uri`, if any."""
        for item in self.items:
            if item.notification.uri == uri or (item.post is not None and item.post.uri == uri):
                return item
        return None

    @property
    def author_dids(self) -> frozenset[str]:
        return frozenset(item.notification.author_did for item in self.items)

    def author_handles(self) -> dict[str, str]:
        """DID → handle of everyone in the batch, in order of appearance."""
        return {i.notification.author_did: i.notification.author_handle for i in self.items}

    def people(self) -> dict[str, str]:
        """DID → handle of the notifications' authors, then the threads' other participants."""
        return {**self.author_handles(), **self.participants}


@dataclass(frozen=True, kw_only=True)
class PhiPost:
    """A post phi wrote in a run, remembered as an interaction afterwards."""

    uri: str
    text: str
    thread_root: str
    in_reply_to: str | None = None
    """The post replied to, when a reply."""
    to_did: str | None = None
    """Its author, when a reply to someone in the batch."""
    to_handle: str | None = None
    to_text: str | None = None
    """What they said, verbatim."""


@dataclass
class ActivityLog:
    """What phi did in a run: the writes it made, and a stream for whoever watches."""

    emit: Callable[[str], None] | None = None
    """Called with one line per action (the sandbox streams these to the terminal)."""
    posts: list[PhiPost] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    acted_on: list[str] = field(default_factory=list)
    """Posts liked or reposted, by the URI the tool was given: with `posts`, what a retry of
    a batch whose run failed must not do again (`phi.runtime.pending`)."""

    def record(self, line: str) -> None:
        self.actions.append(line)
        if self.emit is not None:
            self.emit(line)

    def show(self, line: str) -> None:
        """Stream `line` without counting it as something phi did (what a run recalled):
        `actions` is what the journal keeps as the run's doings."""
        if self.emit is not None:
            self.emit(line)


@dataclass(kw_only=True)
class PhiDeps:
    """Everything one run can use. Built per run by the entry point."""

    client: PhiClient
    memory: Memory
    blocks: Blocks
    small: SmallModel | None
    """The memory passes' model (synthesis, self-awareness); None skips those blocks."""
    config: AgentConfig
    caches: PromptCaches
    entry: Entry = "notifications"
    batch: Batch | None = None
    now: datetime = field(default_factory=utc_now)
    last_post_text: str | None = None
    """phi's latest post, for musing and reflection."""
    service_report: str | None = None
    """Results of the service check, for its run."""
    activity: ActivityLog = field(default_factory=ActivityLog)

    def age(self, moment: datetime) -> str:
        """How long before this run `moment` was: `just now`, `5m ago`, `3d ago`..."""
        return format_age((self.now - moment).total_seconds())

    def wrote(self, *blocks: str) -> None:
        """phi just wrote to its PDS: the blocks derived from its writes (and `blocks`) are
        stale."""
        self.caches.invalidate("operations", "self_state", *blocks)

    @property
    def owner_handle(self) -> str | None:
        h = self.config.owner_handle
        if not h:
            return None
        h = h.removeprefix("@")
        # Handles are case-insensitive; a DID (an owner named by DID) is not.
        return h if h.startswith("did:") else h.lower()
