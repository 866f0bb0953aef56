"""What `phi.redact` looks for: detect-secrets' plugins, a short supplement, and the gate
in front of each (see `phi.redact` for why gates). Tables only; the scanning is there.

Patterns are compiled, and detect-secrets imported, on first use (`detectors`): nothing here
costs anything at import.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "EXCLUDED_PLUGINS",
    "KEYWORD",
    "MARKER_OPEN",
    "Detector",
    "Gate",
    "Triggers",
    "detectors",
    "gates",
    "is_placeholder",
    "kind_of_name",
    "secret_name",
    "triggers",
]

MARKER_OPEN: Final = "[REDACTED:"

Policy = Literal["whole", "group", "param", "keyword", "key-block"]


@dataclass(frozen=True, kw_only=True)
class Gate:
    """What a text must hold before a detector is worth running on it. It must open on
    every match of its detectors' patterns, alone (tests/security checks it)."""

    literals: tuple[str, ...]
    """One of these must occur (in the case-folded text, unless `exact_case`); none: the
    `confirm` pattern alone decides (a token whose only fixed character is a `.`)."""
    confirm: str | None = None
    """Then this pattern must match; the lines it (or else a literal) matches are scanned."""
    exact_case: bool = False


@dataclass(frozen=True, kw_only=True)
class Detector:
    """One pattern, its gate, and how to read a secret from its matches."""

    kind: str
    pattern: re.Pattern[str]
    gate: Gate
    policy: Policy = "whole"
    """`whole`: the match, trimmed and widened to its token; `group`: its first group that
    matched; `param`: group 2 when group 1 names a secret (`secret_name`); `keyword`: group
    `group` of a keyword assignment; `key-block`: a private key's header, and its block."""
    group: int = 0
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    """A test the secret must pass too (JWT: it decodes)."""


def _gate(*literals: str, confirm: str | None = None) -> Gate:
    return Gate(literals=literals, confirm=confirm)


# Gates are tight on purpose: any gate that opens costs detect-secrets' import in a hook's
# process, so ordinary code (`key=lambda`, `max_tokens=1024`, `msg.text`) must open none.
_KEYWORDS: Final = (
    # detect-secrets' keyword list (`plugins.keyword.DENYLIST`), then the assignment its
    # patterns need: `password=`, `"api_key": `, `secret := `, `password("`, `pwd[0] = `.
    r"(?:api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key"
    r"|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd"
    r"|secret|contrase(?:ñ|n)a)\w*(?:[\]'\"`]{0,2}|\[\d*\])\s*(?:[:=!(]|.assign)"
)
KEYWORD: Final = _gate("key", "pass", "pwd", "secret", "contrase", confirm=_KEYWORDS)


def _assigned(names: str, value: str, *literals: str) -> Gate:
    """The gate of a `build_assignment_regex` pattern (IBM, Cloudant, SoftLayer): a name,
    an assignment (`=`, `:`, `:=`, `=>`, `::` or spaces), a value of a fixed shape."""
    return _gate(
        *literals,
        confirm=rf"(?:{names})['\"]?\]? *(?:=>|:=|::|=|:| ) *['\"]?(?:{value})",
    )


_SECRET_KEYS: Final = "key|pwd|pw|password|pass|token"
_USERINFO: Final = _gate("://", confirm=r"://[^\s/?#\[\]@]+:[^\s/?#\[\]@]+@")


@dataclass(frozen=True, kw_only=True)
class _Plugin:
    """A detect-secrets plugin taken as the list of its patterns (`denylist`)."""

    module: str
    name: str
    kinds: tuple[str, ...]
    """The kind each pattern finds; the last one given goes for the rest."""
    gates: tuple[Gate, ...]
    """The gate of each pattern, likewise."""
    policy: Policy = "whole"


_PLUGINS: Final = (
    _Plugin(
        module="aws",
        name="AWSKeyDetector",
        kinds=("aws-access-key", "aws-secret-key"),
        gates=(
            _gate(
                *("a3t", "abia", "acca", "akia", "asia"),
                confirm=r"(?:a3t[a-z0-9]|abia|acca|akia|asia)[0-9a-z]{16}",
            ),
            _gate(
                "aws", confirm=rf"aws.{{0,20}}?(?:{_SECRET_KEYS}).{{0,20}}?['\"][0-9a-z/+]{{40}}"
            ),
        ),
        policy="group",
    ),
    _Plugin(
        module="azure_storage_key",
        name="AzureStorageKeyDetector",
        kinds=("azure-storage-key",),
        gates=(_gate("accountkey="),),
    ),
    _Plugin(
        module="basic_auth",
        name="BasicAuthDetector",
        kinds=("basic-auth",),
        gates=(_USERINFO,),
        policy="group",
    ),
    _Plugin(
        module="cloudant",
        name="CloudantDetector",
        kinds=("cloudant",),
        gates=(
            _assigned(_SECRET_KEYS, "[0-9a-f]{64}", "key", "pw", "pass", "token"),
            _assigned(_SECRET_KEYS, "[a-z]{24}", "key", "pw", "pass", "token"),
            _gate("cloudant.com"),
        ),
        policy="group",
    ),
    _Plugin(
        module="discord",
        name="DiscordBotTokenDetector",
        kinds=("discord-bot-token",),
        gates=(_gate(confirm=r"\.[\w-]{6}\.[\w-]{27}"),),
    ),
    _Plugin(
        module="github_token",
        name="GitHubTokenDetector",
        kinds=("github-token",),
        gates=(_gate("ghp_", "gho_", "ghu_", "ghs_", "ghr_", confirm=r"gh[pousr]_\w{36}"),),
    ),
    _Plugin(
        module="gitlab_token",
        name="GitLabTokenDetector",
        kinds=("gitlab-token",),
        gates=(
            _gate(
                *("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glcbt-", "glimt-", "glptt-"),
                *("glagent-", "gloas-", "gr1348941"),
            ),
        ),
    ),
    _Plugin(
        module="ibm_cloud_iam",
        name="IbmCloudIamDetector",
        kinds=("ibm-cloud-iam-key",),
        gates=(_assigned(_SECRET_KEYS, r"[\w-]{44}", "key", "pw", "pass", "token"),),
        policy="group",
    ),
    _Plugin(
        module="ibm_cos_hmac",
        name="IbmCosHmacDetector",
        kinds=("ibm-cos-hmac",),
        gates=(_assigned(r"secret[-_]?(?:access)?[-_]?key", "[a-f0-9]{48}", "secret"),),
        policy="group",
    ),
    _Plugin(
        module="jwt",
        name="JwtTokenDetector",
        kinds=("jwt",),
        gates=(_gate("eyj", confirm=r"eyj[\w=-]+\.[\w=-]"),),
    ),
    _Plugin(
        module="mailchimp",
        name="MailchimpDetector",
        kinds=("mailchimp-key",),
        gates=(_gate("-us", confirm=r"[0-9a-z]{32}-us\d"),),
    ),
    _Plugin(
        module="npm",
        name="NpmDetector",
        kinds=("npm-token",),
        gates=(_gate("_authtoken="),),
        policy="group",
    ),
    _Plugin(
        module="openai", name="OpenAIDetector", kinds=("openai-key",), gates=(_gate("t3blbkfj"),)
    ),
    _Plugin(
        module="private_key",
        name="PrivateKeyDetector",
        kinds=("private-key",),
        gates=(_gate("private key", "putty-user-key-file-2"),),
        policy="key-block",
    ),
    _Plugin(
        module="pypi_token",
        name="PypiTokenDetector",
        kinds=("pypi-token",),
        gates=(_gate("pypi-age"),),
    ),
    _Plugin(
        module="sendgrid",
        name="SendGridDetector",
        kinds=("sendgrid-key",),
        gates=(_gate("sg.", confirm=r"sg\.[\w-]{22}\.[\w-]{43}"),),
    ),
    _Plugin(
        module="slack",
        name="SlackDetector",
        kinds=("slack-token", "slack-webhook"),
        gates=(_gate("xox", confirm="xox[abposr]-"), _gate("hooks.slack.com")),
    ),
    _Plugin(
        module="softlayer",
        name="SoftlayerDetector",
        kinds=("softlayer",),
        gates=(
            _assigned(_SECRET_KEYS, "[a-z0-9]{64}", "key", "pw", "pass", "token"),
            # detect-secrets' pattern leaves its dots unescaped: `api0softlayer0com` too.
            _gate("softlayer", confirm="api.softlayer.com/soap/"),
        ),
        policy="group",
    ),
    _Plugin(
        module="square_oauth",
        name="SquareOAuthDetector",
        kinds=("square-oauth",),
        gates=(_gate("sq0csp-"),),
    ),
    _Plugin(
        module="stripe",
        name="StripeDetector",
        kinds=("stripe-key",),
        gates=(_gate("_live_", confirm=r"[rs]k_live_[0-9a-z]{24}"),),
    ),
    _Plugin(
        module="telegram_token",
        name="TelegramBotTokenDetector",
        kinds=("telegram-bot-token",),
        gates=(_gate(confirm=r"\d{8}:[\w-]{35}"),),
    ),
    _Plugin(
        module="twilio",
        name="TwilioKeyDetector",
        kinds=("twilio-key",),
        gates=(Gate(literals=("AC", "SK"), confirm=r"(?:AC|SK)[a-z0-9]{32}", exact_case=True),),
    ),
    _Plugin(
        module="artifactory",
        name="ArtifactoryDetector",
        kinds=("artifactory",),
        gates=(
            Gate(literals=("AKC",), confirm=r"AKC[a-zA-Z0-9]{10}", exact_case=True),
            Gate(literals=("AP",), confirm=r"AP[\dA-F][a-zA-Z0-9]{8}", exact_case=True),
        ),
    ),
)

EXCLUDED_PLUGINS: Final = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector", "KeywordDetector"}
)
"""Plugins not taken as pattern lists: the entropy and IP ones (see `phi.redact`), and the
keyword one, whose assignment patterns are taken one by one (`_keyword_detectors`)."""

# Forms detect-secrets 1.5's plugins miss: kind, pattern, gate, policy. Taken first, their
# kinds being the most exact.
_SUPPLEMENT: Final[tuple[tuple[str, str, Gate, Policy], ...]] = (
    # The AWS plugin finds a secret key only quoted; CLI config files and `aws configure`
    # output leave it bare, and the JSON of `aws sts` calls it SecretAccessKey.
    (
        "aws-secret-key",
        r"(?i:aws.{0,20}?(?:secret|key)|secret_?access_?key).{0,20}?[=:]\s*['\"]?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        _gate(
            *("aws", "secret"),
            confirm=r"(?:aws.{0,20}?(?:secret|key)|secret_?access_?key).{0,20}?[=:]\s*['\"]?"
            r"[a-z0-9/+]{40}",
        ),
        "group",
    ),
    # Fine-grained personal access tokens came after the GitHub plugin's prefixes.
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,}", _gate("github_pat_"), "whole"),
    (
        "google-api-key",
        r"AIza[0-9A-Za-z_\-]{35}",
        _gate("aiza", confirm=r"aiza[\w-]{35}"),
        "whole",
    ),
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{20,}", _gate("sk-ant-"), "whole"),
    # The OpenAI plugin knows only the legacy `...T3BlbkFJ...` keys.
    (
        "openai-key",
        r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9]{40,}",
        _gate("sk-", confirm=r"sk-(?:proj|svcacct|admin)-[\w-]{20}|sk-[a-z0-9]{40}"),
        "whole",
    ),
    # The npm plugin needs the `.npmrc` line; a bare token is just as good to an attacker.
    ("npm-token", r"npm_[A-Za-z0-9]{36}", _gate("npm_", confirm=r"npm_[a-z0-9]{36}"), "whole"),
    (
        "discord-webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+",
        _gate("discord", confirm=r"discord(?:app)?\.com/api/webhooks/"),
        "whole",
    ),
    # HTTP credentials: no plugin reads headers.
    (
        "bearer-token",
        r"(?i:authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|bot)\s+)?|bearer\s+)"
        r"([A-Za-z0-9\-._~+/]{8,}=*)",
        _gate("auth", "bearer", confirm=r"authorization[\"']?\s*[:=]|bearer\s"),
        "group",
    ),
    (
        "heroku-api-key",
        r"(?i:heroku.{0,20}?[=:]\s*['\"]?)"
        r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})",
        _gate("heroku", confirm=r"heroku.{0,20}?[=:]"),
        "group",
    ),
)

# Secrets known by the name they are given; taken last, as any other find says more.
_BY_NAME: Final[tuple[tuple[str, str, Gate, Policy], ...]] = (
    # The keyword list has no `token`: `GITHUB_TOKEN=...`, `auth_token: ...`. The name must
    # end in it (so `max_tokens: 1024` and `tokenizer: ...` stay) and the value look like a
    # token: eight characters or more, letters and digits both.
    (
        "token",
        r"(?i:[\w.-]*(?:token|credentials?|auth))[\]'\"]{0,2}\s*(?::=|=|:)\s*['\"]?"
        r"((?=[^\s'\"]*\d)(?=[^\s'\"]*[A-Za-z])[A-Za-z0-9_\-./+=]{8,})",
        _gate(
            *("token", "credential", "auth"),
            confirm=r"(?:token|credentials?|auth)[\]'\"]{0,2}\s*(?::=|=|:)\s*['\"]?[\w./+=-]{8}",
        ),
        "group",
    ),
    # A URL's query or fragment value, by its parameter's name (`redact_url`'s rule, for
    # URLs inside a text).
    (
        "credential",
        r"[?&;#]([A-Za-z0-9_.\-]+)=([^&#\s\"'<>\\]+)",
        _gate(
            *("key", "sig", "auth", "pass", "pwd", "jwt", "token", "secret", "credential"),
            confirm=r"[?&;#][^=\s&#]*(?:key|sig|auth|pass|pwd|jwt|token|secret|credential)"
            r"[^=\s&#]*=[^&#\s\"'<>\\]",
        ),
        "param",
    ),
)


@cache
def gates() -> tuple[Gate, ...]:
    """Every distinct gate: text none of them opens holds no secret."""
    every = (
        *(gate for plugin in _PLUGINS for gate in plugin.gates),
        *(entry[2] for entry in (*_SUPPLEMENT, *_BY_NAME)),
        KEYWORD,
    )
    return tuple(dict.fromkeys(every))


@dataclass(frozen=True, kw_only=True)
class Triggers:
    """What any gate needs, flattened: text holding none of it opens no gate, and a short
    text is told so in a few microseconds rather than gate by gate."""

    folded: tuple[str, ...]
    """Literals sought in the case-folded text."""
    exact: tuple[str, ...]
    """Literals sought as they are."""
    patterns: tuple[str, ...]
    """The confirm patterns of gates that have no literal."""


@cache
def triggers() -> Triggers:
    every = gates()
    return Triggers(
        folded=tuple(dict.fromkeys(lit for g in every if not g.exact_case for lit in g.literals)),
        exact=tuple(dict.fromkeys(lit for g in every if g.exact_case for lit in g.literals)),
        patterns=tuple(g.confirm for g in every if not g.literals and g.confirm),
    )


@cache
def detectors() -> tuple[Detector, ...]:
    """Every detector, the most exact first (its kind wins where finds overlap). Built on
    first use: importing detect-secrets is the slow part (~150 ms)."""
    from detect_secrets.plugins.jwt import JwtTokenDetector

    plugins: list[Detector] = []
    for plugin in _PLUGINS:
        found = getattr(
            importlib.import_module(f"detect_secrets.plugins.{plugin.module}"), plugin.name
        )
        check = JwtTokenDetector.is_formally_valid if found is JwtTokenDetector else None
        plugins += [
            Detector(
                kind=plugin.kinds[min(i, len(plugin.kinds) - 1)],
                pattern=pattern,
                gate=plugin.gates[min(i, len(plugin.gates) - 1)],
                policy=plugin.policy,
                check=check,
            )
            for i, pattern in enumerate(found.denylist)
        ]
    return (
        *_compiled(_SUPPLEMENT),
        *plugins,
        *_keyword_detectors(),
        *_compiled(_BY_NAME),
    )


def _compiled(table: tuple[tuple[str, str, Gate, Policy], ...]) -> list[Detector]:
    return [
        Detector(kind=kind, pattern=re.compile(source), gate=gate, policy=policy)
        for kind, source, gate, policy in table
    ]


def _keyword_detectors() -> list[Detector]:
    """detect-secrets' keyword assignments (`password = ...`, `"secret": "..."`), every file
    type's flavour. Left out: a secret compared (`"x" == password`) and one followed by a
    `;` only, forms of source code rather than of configuration or output."""
    from detect_secrets.plugins import keyword

    skip = {
        keyword.PRECEDED_BY_EQUAL_COMPARISON_SIGNS_QUOTES_REQUIRED_REGEX,
        keyword.FOLLOWED_BY_QUOTES_AND_SEMICOLON_REGEX,
    }
    tables = (*keyword.REGEX_BY_FILETYPE.values(), keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    groups: dict[re.Pattern[str], int] = {}
    for table in tables:
        for pattern, group in table.items():
            if pattern not in skip:
                groups.setdefault(pattern, group)
    return [
        Detector(kind="secret", pattern=p, gate=KEYWORD, policy="keyword", group=g)
        for p, g in groups.items()
    ]


# -- names: keyword assignments, URL parameters, JSON keys ------------------------------

_PLACEHOLDERS: Final = frozenset({"none", "null", "nil", "true", "false", "undefined", "empty"})
"""Values that say there is no secret; replacing them would only mangle the text."""
_SECRET_NAMES: Final = frozenset({"key", "sig", "auth", "pass", "pwd", "jwt"})
_SECRET_ENDINGS: Final = (
    *("token", "secret", "password", "passwd", "apikey", "api_key", "api-key"),
    *("access_key", "private_key", "signature", "credential", "credentials"),
)
_NAME_KINDS: Final = (
    *(("pass", "password"), ("pwd", "password"), ("contrase", "password")),
    *(("secret", "secret"), ("token", "token"), ("key", "api-key"), ("sig", "signature")),
)


def secret_name(name: str) -> bool:
    """Whether a query parameter or JSON key of this name holds a secret."""
    lowered = name.lower()
    return lowered in _SECRET_NAMES or lowered.endswith(_SECRET_ENDINGS)


def kind_of_name(name: str) -> str:
    """The marker's kind for a secret known by its name (`db_password`: password)."""
    lowered = name.lower()
    return next((kind for stem, kind in _NAME_KINDS if stem in lowered), "credential")


def is_placeholder(value: str) -> bool:
    """A value that holds no secret: empty, `null`, `****`, or a marker already."""
    stripped = value.strip("'\"`")
    return (
        not stripped
        or stripped.startswith(MARKER_OPEN)
        or stripped.lower() in _PLACEHOLDERS
        or set(stripped) <= set("*xX.-")
    )
