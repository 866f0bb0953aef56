"""The secrets corpus of the redaction tests (issue 23, findings 3 and 4): one text per way
a secret shows up in outside text, and ordinary text that must come out unchanged.

The values are fake but well formed, and built at run time so no secret-shaped literal sits
in the source.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Form:
    """One way a secret shows up in outside text."""

    name: str
    text: str
    """Text holding the secret, as a tool's output or a post would."""
    secret: str
    """What must not survive redaction."""
    kind: str
    """The kind its marker names."""


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _key_block(label: str, body: str) -> str:
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


AWS_ID = "AKIA" + "FAKE" * 4
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "FAKEKEY000"
GITHUB = "ghp_" + "Fake0" * 7 + "F"
JWT = ".".join((_b64({"alg": "HS256", "typ": "JWT"}), _b64({"sub": "fake"}), "fakeSig_notReal-1"))
RSA_BODY = "MIIEfakeRSA" + "A" * 150
HEALTH_SECRET = "hEaLtHFake77"

CORPUS: tuple[Form, ...] = (
    Form(
        name="aws-key-id",
        text=f"aws_access_key_id = {AWS_ID}",
        secret=AWS_ID,
        kind="aws-access-key",
    ),
    Form(
        name="aws-secret-env",
        text=f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nAWS_REGION=eu-west-1",
        secret=AWS_SECRET,
        kind="aws-secret-key",
    ),
    Form(
        name="aws-sts-json",
        text=json.dumps({"Credentials": {"SecretAccessKey": "fAkE/" * 8}}, indent=2),
        secret="fAkE/" * 8,
        kind="aws-secret-key",
    ),
    Form(
        name="github-classic",
        text=f"$ git push\ntoken {GITHUB}",
        secret=GITHUB,
        kind="github-token",
    ),
    Form(
        name="github-oauth",
        text="oauth: gho_" + "fAke1" * 7 + "x",
        secret="gho_" + "fAke1" * 7 + "x",
        kind="github-token",
    ),
    Form(
        name="github-fine-grained",
        text="GH=github_pat_11FAKE0000_" + "fake" * 18,
        secret="github_pat_11FAKE0000_" + "fake" * 18,
        kind="github-token",
    ),
    Form(
        name="gitlab-pat",
        text="using glpat-" + "Fake-" * 4 + " for the API",
        secret="glpat-" + "Fake-" * 4,
        kind="gitlab-token",
    ),
    Form(
        name="slack-bot",
        text="SLACK_BOT=xoxb-1234567890-1234567890-" + "fake" * 6,
        secret="fake" * 6,
        kind="slack-token",
    ),
    Form(
        name="slack-user",
        text="xoxp-1234567890-1234567890-1234567890-" + "fake" * 8,
        secret="fake" * 8,
        kind="slack-token",
    ),
    Form(
        name="slack-webhook",
        text="posting to https://hooks.slack.com/services/TFAKE0000/BFAKE0000/" + "fake" * 6,
        secret="fake" * 6,
        kind="slack-webhook",
    ),
    Form(
        name="stripe-secret",
        text="stripe: sk_live_" + "Fake" * 6 + "andMore",
        secret="Fake" * 6 + "andMore",
        kind="stripe-key",
    ),
    Form(
        name="stripe-restricted",
        text="rk_live_" + "Fake" * 6,
        secret="rk_live_" + "Fake" * 6,
        kind="stripe-key",
    ),
    Form(name="jwt", text=f"cookie session={JWT}; Path=/", secret=JWT.split(".")[1], kind="jwt"),
    Form(
        name="rsa-private-key",
        text=f"cat id_rsa\n{_key_block('RSA PRIVATE KEY', RSA_BODY)}\ndone",
        secret=RSA_BODY[64:128],
        kind="private-key",
    ),
    Form(
        name="ec-private-key",
        text=_key_block("EC PRIVATE KEY", "MHcCAQEEIFakeEC" + "b" * 90),
        secret="MHcCAQEEIFakeEC",
        kind="private-key",
    ),
    Form(
        name="openssh-private-key",
        text=_key_block("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEFake" + "c" * 90),
        secret="b3BlbnNzaC1rZXktdjEFake",
        kind="private-key",
    ),
    Form(
        name="env-password",
        text="DB_PASSWORD=hunter2fake\nDB_HOST=db",
        secret="hunter2fake",
        kind="password",
    ),
    Form(
        name="yaml-password",
        text="database:\n  PASSWORD: s3cr3t-fake-pw\n  host: db",
        secret="s3cr3t-fake-pw",
        kind="password",
    ),
    Form(
        name="postgres-url",
        text="DATABASE_URL=postgresql://phi:pgFakePass9@db.example:5432/phi",
        secret="pgFakePass9",
        kind="basic-auth",
    ),
    Form(
        name="basic-auth-url",
        text="GET https://admin:BasicFake42@internal.example/status -> 200",
        secret="BasicFake42",
        kind="basic-auth",
    ),
    Form(
        name="bearer-header",
        text="> Authorization: Bearer " + "fAkEbEaReR" * 4,
        secret="fAkEbEaReR" * 4,
        kind="bearer-token",
    ),
    Form(
        name="google-api-key",
        text="maps key AIza" + "Fake" * 8 + "000",
        secret="AIza" + "Fake" * 8 + "000",
        kind="google-api-key",
    ),
    Form(
        name="openai-legacy",
        text="OPENAI_API_KEY=sk-" + "fake" * 5 + "T3BlbkFJ" + "Fake" * 5,
        secret="fake" * 5 + "T3BlbkFJ",
        kind="openai-key",
    ),
    Form(
        name="openai-project",
        text="using sk-proj-" + "Fake_" * 10,
        secret="Fake_" * 10,
        kind="openai-key",
    ),
    Form(
        name="anthropic",
        text="ANTHROPIC: sk-ant-api03-" + "Fake-" * 18 + "AA",
        secret="Fake-" * 18,
        kind="anthropic-key",
    ),
    Form(name="npm-token", text="npm_" + "Fake" * 9, secret="npm_" + "Fake" * 9, kind="npm-token"),
    Form(
        name="npmrc",
        text="//registry.npmjs.org/:_authToken=npm_" + "Fake" * 9,
        secret="Fake" * 9,
        kind="npm-token",
    ),
    Form(
        name="twilio",
        text="twilio sid AC" + "fake" * 8,
        secret="AC" + "fake" * 8,
        kind="twilio-key",
    ),
    Form(
        name="sendgrid",
        text="SG." + "Fake" * 5 + "Fa" + "." + "Fake" * 10 + "Fak",
        secret="Fake" * 10,
        kind="sendgrid-key",
    ),
    Form(
        name="azure-storage",
        text="AccountName=fake;AccountKey=" + "Fake" * 22 + ";EndpointSuffix=core",
        secret="Fake" * 22,
        kind="azure-storage-key",
    ),
    Form(
        name="mailchimp",
        text="mailchimp " + "fake" * 8 + "-us12",
        secret="fake" * 8,
        kind="mailchimp-key",
    ),
    Form(
        name="discord-webhook",
        text="https://discord.com/api/webhooks/123456789012345678/" + "Fake-" * 12,
        secret="Fake-" * 12,
        kind="discord-webhook",
    ),
    Form(
        name="discord-bot",
        text="bot token M" + "Fake" * 6 + ".FAKExx." + "Fake" * 6 + "abc",
        secret="Fake" * 6 + "abc",
        kind="discord-bot-token",
    ),
    Form(
        name="heroku",
        text="HEROKU_API_KEY=01234567-89ab-cdef-0123-456789abcdef",
        secret="01234567-89ab-cdef-0123-456789abcdef",
        kind="heroku-api-key",
    ),
    Form(
        name="telegram",
        text="bot 123456789:" + "Fake" * 8 + "abc",
        secret="Fake" * 8 + "abc",
        kind="telegram-bot-token",
    ),
    Form(
        name="pypi",
        text="password = pypi-AgEIcHlwaS5vcmc" + "Fake" * 18,
        secret="Fake" * 18,
        kind="pypi-token",
    ),
    Form(
        name="token-env",
        text="export CI_TOKEN=fake1234token5678",
        secret="fake1234token5678",
        kind="token",
    ),
    Form(
        name="health-url",
        text=f"GET https://ops:opsFake1@status.example/health?token={HEALTH_SECRET}&v=2",
        secret=HEALTH_SECRET,
        kind="token",
    ),
    Form(
        name="json-password",
        text=json.dumps({"user": "phi", "password": "jsonFake9"}),
        secret="jsonFake9",
        kind="password",
    ),
)
SECRETS = tuple(form.secret for form in CORPUS)

ORDINARY = (
    "commit 3f786850e387550fdab836ed7e6dc881de23001b: recall fuses the thread lift",
    "Merge: 3f78685 9c1d2e4\nAuthor: phi <phi@example.org>",
    "row 5f3c2a1e-9b7d-4c1e-8f2a-0d6b3e9a7c41 superseded 0d6b3e9a-7c41-4c1e-8f2a-5f3c2a1e9b7d",
    "blob sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 pulled",
    "the upload id was dGhpcyBpcyBqdXN0IGEgYmFzZTY0IGlkZW50aWZpZXI= and it moved on",
    "the key to a good sourdough is patience: feed it daily",
    "I passed the exam! my password manager is great, the secret is out",
    "see https://example.com/docs?page=2&sort=asc#section and at://did:plc:abc123/app.bsky.feed.post/3kxyz",
    "max_tokens: 1024, tokenizer: bert-base-uncased, sorted(rows, key=lambda r: r.score)",
    "monkey business and turkey sandwiches in Asia; msg.text; self.memory.search(query)",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
)
