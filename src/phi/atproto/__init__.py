"""phi on the AT Protocol: an async client, the records phi owns, and the local sandbox.

`PhiClient` (opened with `async with`) does everything phi does on the network; records are
pydantic models validated against the lexicons in `lexicons/`; `phi.atproto.sandbox` runs a
real local network. This package imports nothing from `phi.memory` or `phi.agent`.
"""

from __future__ import annotations

from phi.atproto._calls import RetryPolicy
from phi.atproto._session import ClientConfig
from phi.atproto.client import NotificationPage, PhiClient
from phi.atproto.errors import (
    AccountNotConfigured,
    AtprotoError,
    AuthenticationFailed,
    IdentityUnresolved,
    InvalidArgument,
    InvalidRecord,
    MethodNotSupported,
    NetworkUnavailable,
    NotFound,
    RateLimited,
    RecordNotFound,
    RequestRefused,
    SessionExpired,
)
from phi.atproto.feeds import FeedGenerator
from phi.atproto.identity import DidDocument
from phi.atproto.labels import validate_self_labels
from phi.atproto.lexicon import Lexicons
from phi.atproto.models import (
    Embed,
    EmbedKind,
    EmbedLink,
    Identity,
    ImageRef,
    MediaKind,
    Notification,
    Operation,
    Post,
    PostRef,
    Profile,
    QuotedPost,
    QuoteState,
    RecordRef,
    Thread,
)
from phi.atproto.observations import AttentionPool, ObservationArchive, Observed
from phi.atproto.records import (
    CosmikCard,
    CosmikConnection,
    Goal,
    MentionConsent,
    Observation,
    PhiRecord,
    StoredRecord,
    collection_name,
)
from phi.atproto.text import Facet, find_facets, split_text

__all__ = [
    "AccountNotConfigured",
    "AtprotoError",
    "AttentionPool",
    "AuthenticationFailed",
    "ClientConfig",
    "CosmikCard",
    "CosmikConnection",
    "DidDocument",
    "Embed",
    "EmbedKind",
    "EmbedLink",
    "Facet",
    "FeedGenerator",
    "Goal",
    "Identity",
    "IdentityUnresolved",
    "ImageRef",
    "InvalidArgument",
    "InvalidRecord",
    "Lexicons",
    "MediaKind",
    "MentionConsent",
    "MethodNotSupported",
    "NetworkUnavailable",
    "NotFound",
    "Notification",
    "NotificationPage",
    "Observation",
    "ObservationArchive",
    "Observed",
    "Operation",
    "PhiClient",
    "PhiRecord",
    "Post",
    "PostRef",
    "Profile",
    "QuoteState",
    "QuotedPost",
    "RateLimited",
    "RecordNotFound",
    "RecordRef",
    "RequestRefused",
    "RetryPolicy",
    "SessionExpired",
    "StoredRecord",
    "Thread",
    "collection_name",
    "find_facets",
    "split_text",
    "validate_self_labels",
]
