"""Issue 24 for `phi._redact_rules`: the functions that build the rule tables and read a
secret's name, tested so that a one-line break of them fails here.

The tables (`gates`, `detectors`) are built once per process: the gates at import, the
detectors on first use. A test that only used the ones this process built would never see
their building break, though every hook process builds them anew. So `fresh` builds both
modules again from their source, as a new process would, and the behaviour is checked on
what it built.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from phi._redact_rules import is_placeholder, kind_of_name, secret_name

from .redaction_corpus import CORPUS, ORDINARY


def _load(name: str) -> ModuleType:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """`phi.redact` over rule tables built anew from `phi._redact_rules`' source; the
    modules this process imported are put back after."""
    rules = _load("phi._redact_rules")
    monkeypatch.setitem(sys.modules, "phi._redact_rules", rules)
    redact = _load("phi.redact")
    assert redact.gates is rules.gates  # the fresh one reads the fresh tables
    return redact


# Fake values for the detectors the corpus leaves out, shaped as each plugin expects.
ASSIGNED = (
    ("ibm-cloud-iam-key", "ibm_cloud_iam_api_key = '" + "Fake-" * 8 + "Fake'", "Fake-" * 8),
    ("ibm-cos-hmac", "ibm_cos_hmac secret_access_key: '" + "fa1e" * 12 + "'", "fa1e" * 12),
    ("cloudant", "cloudant_password = '" + "fa1e" * 16 + "'", "fa1e" * 16),
    ("cloudant", "cloudant_pw = " + "fakefakefakefakefakefake", "fakefakefakefakefakefake"),
    ("softlayer", "softlayer_api_key = '" + "fake" * 16 + "'", "fake" * 16),
    ("softlayer", "https://api.softlayer.com/soap/v3/" + "fake" * 16, "fake" * 16),
)


def test_freshly_built_rules_find_every_secret_form_by_its_kind(fresh: ModuleType) -> None:
    texts = [(form.kind, form.text, form.secret) for form in CORPUS] + list(ASSIGNED)
    missed = [
        (kind, text)
        for kind, text, secret in texts
        if secret in (cleaned := fresh.redact(text)) or f"[REDACTED:{kind}]" not in cleaned
    ]
    assert missed == []


# The forms phi's own tables (`_SUPPLEMENT`, `_BY_NAME`) find, redacted exactly: the marker
# takes the value's place and the name it was given stays.
EXACT = {
    "aws-secret-env": "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]\nAWS_REGION=eu-west-1",
    "github-fine-grained": "GH=[REDACTED:github-token]",
    "google-api-key": "maps key [REDACTED:google-api-key]",
    "openai-project": "using [REDACTED:openai-key]",
    "anthropic": "ANTHROPIC: [REDACTED:anthropic-key]",
    "npm-token": "[REDACTED:npm-token]",
    "discord-webhook": "[REDACTED:discord-webhook]",
    "bearer-header": "> Authorization: Bearer [REDACTED:bearer-token]",
    "heroku": "HEROKU_API_KEY=[REDACTED:heroku-api-key]",
    "token-env": "export CI_TOKEN=[REDACTED:token]",
    "health-url": (
        "GET https://ops:[REDACTED:basic-auth]@status.example/health?token=[REDACTED:token]&v=2"
    ),
}


def test_freshly_built_rules_replace_the_value_and_keep_its_name(fresh: ModuleType) -> None:
    texts = {form.name: form.text for form in CORPUS}
    assert {name: fresh.redact(texts[name]) for name in EXACT} == EXACT


def test_freshly_built_gates_stay_shut_on_ordinary_text(fresh: ModuleType) -> None:
    """No gate opens on ordinary text: a hook's process then never imports detect-secrets."""
    assert len(fresh.gates()) == len(set(fresh.gates()))
    opened = [
        (text, gate)
        for text in ORDINARY
        for gate in fresh.gates()
        if fresh._Segments(text).opened_by(gate)
    ]
    assert opened == []
    assert [fresh.redact(text) for text in ORDINARY] == list(ORDINARY)


def test_source_code_forms_of_a_keyword_are_left_out_on_purpose(fresh: ModuleType) -> None:
    """A secret compared, or quoted and followed by `;` alone: forms of source code, which
    `_keyword_detectors` leaves out; an assignment in the same code is still found."""
    for text in ('if "hunter2fake" == password:', 'password "hunter2fake";'):
        assert fresh.redact(text) == text
    assert fresh.redact('String password = "hunter2fake";') == (
        'String password = "[REDACTED:password]";'
    )


# -- names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        *[(n, True) for n in ("key", "KEY", "sig", "auth", "pass", "pwd", "jwt")],
        *[(n, True) for n in ("GITHUB_TOKEN", "client_secret", "db_password", "x-api-key")],
        *[(n, True) for n in ("passwd", "apikey", "aws_access_key", "private_key")],
        *[(n, True) for n in ("X-Amz-Signature", "credential", "google_credentials")],
        *[(n, False) for n in ("page", "keys", "tokenizer", "max_tokens", "author", "")],
        *[(n, False) for n in ("passage", "signal", "monkey", "keyboard")],
    ],
)
def test_which_names_hold_a_secret(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("db_password", "password"),
        ("PGPASS", "password"),
        ("user_pwd", "password"),
        ("contraseña", "password"),
        ("passkey", "password"),  # the first stem that matches names it
        ("client_secret", "secret"),
        ("secret_key", "secret"),
        ("GITHUB_TOKEN", "token"),
        ("api_key", "api-key"),
        ("X-Amz-Signature", "signature"),
        ("jwt", "credential"),
        ("auth", "credential"),
    ],
)
def test_the_kind_a_name_gives_its_marker(name: str, kind: str) -> None:
    assert kind_of_name(name) == kind


@pytest.mark.parametrize(
    "value",
    ["", "''", '""', "``", "none", "NULL", "'nil'", "true", "False", "undefined", "empty"],
)
def test_values_that_say_there_is_no_secret(value: str) -> None:
    assert is_placeholder(value)


@pytest.mark.parametrize(
    "value", ["****", "xxxx", "XXX", "...", "--", "x-x.X*", "[REDACTED:token]"]
)
def test_masked_and_already_redacted_values_are_placeholders(value: str) -> None:
    assert is_placeholder(value)
    assert is_placeholder(f'"{value}"')


@pytest.mark.parametrize(
    "value", ["hunter2", "x1", "nullable", "'none1'", "Xnull", "X[REDACTED:token]", "*a*"]
)
def test_values_that_may_hold_a_secret_are_not_placeholders(value: str) -> None:
    assert not is_placeholder(value)
