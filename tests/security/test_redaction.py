"""Issue 23, findings 3 and 4: secrets in outside text become a marker naming their kind.

Finding 3: an AWS secret key and a GitHub token in a tool's output came back from recall,
and the run journal kept whatever a prompt held. Finding 4: a health URL's user, password
and `?token=` became the service's name. These are the unit tests of `phi.redact`: a corpus
of secret forms, ordinary text that must come out unchanged, URLs, JSON, the logging filter,
and the gates that keep the fast path cheap. `test_redaction_surfaces.py` sends the same
corpus through every surface that stores or shows outside text.

The corpus is in `redaction_corpus.py`.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phi._redact_rules import EXCLUDED_PLUGINS, Detector, detectors, gates
from phi.redact import (
    RedactingFilter,
    find_secrets,
    redact,
    redact_data,
    redact_json,
    redact_url,
)

from .redaction_corpus import AWS_ID, CORPUS, GITHUB, HEALTH_SECRET, ORDINARY, RSA_BODY, Form

# -- the corpus ------------------------------------------------------------------------


def test_the_corpus_has_every_form_the_issue_names() -> None:
    assert len(CORPUS) >= 25
    assert len({form.name for form in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("form", CORPUS, ids=lambda form: form.name)
def test_each_secret_form_becomes_a_marker_of_its_kind(form: Form) -> None:
    """Finding 3 (and 4, for the health URL): the secret is gone, its kind is named."""
    assert form.secret in form.text
    redacted = redact(form.text)
    assert form.secret not in redacted
    assert f"[REDACTED:{form.kind}]" in redacted
    assert redact(redacted) == redacted


def test_a_private_key_goes_whole_and_the_text_after_it_stays() -> None:
    form = next(f for f in CORPUS if f.name == "rsa-private-key")
    assert redact(form.text) == "cat id_rsa\n[REDACTED:private-key]\ndone"
    clipped = form.text[: form.text.index("-----END")]  # a tool output cut short
    assert RSA_BODY[:64] not in redact(clipped) and RSA_BODY[-20:] not in redact(clipped)


def test_unquoted_values_end_at_their_first_space() -> None:
    assert redact("export PASSWORD=hunter2fake # the old one") == (
        "export PASSWORD=[REDACTED:password] # the old one"
    )
    assert redact('password = "two words fake"') == 'password = "[REDACTED:password]"'


def test_an_assignment_after_a_cut_value_on_the_same_line_is_redacted_too() -> None:
    """A keyword match runs to the end of its line; cutting its value at the first space must
    not hide the rest of the line from the detector (hypothesis found `HEROKU_API_KEY=<uuid>
    DB_PASSWORD=<secret>` keeping the password)."""
    assert redact("API_KEY=k1fake DB_PASSWORD=hunter2fake") == (
        "API_KEY=[REDACTED:api-key] DB_PASSWORD=[REDACTED:password]"
    )
    assert redact("password: null secret=s3cretfake") == "password: null secret=[REDACTED:secret]"


def test_values_that_name_a_secret_are_left_alone() -> None:
    for text in (
        "password: ${DB_PASSWORD}",
        "password = $PASSWORD",
        "password = os.environ['DB_PASSWORD']",
        "password: null",
        "password: ********",
        "token=[REDACTED:token]",
    ):
        assert redact(text) == text, text


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_mangled(text: str) -> None:
    """No entropy guessing: hashes, UUIDs, base64 ids and prose come out as they went in."""
    assert redact(text) == text
    assert find_secrets(text) == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            CORPUS + tuple(Form(name="-", text=t, secret="", kind="") for t in ORDINARY)
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["\n", " ", "\n\n", "; ", "\t"]),
)
def test_mixed_text_loses_every_secret_and_redacting_twice_changes_nothing(
    forms: list[Form], separator: str
) -> None:
    text = separator.join(form.text for form in forms)
    redacted = redact(text)
    assert not [form.name for form in forms if form.secret and form.secret in redacted]
    assert redact(redacted) == redacted


# -- URLs and JSON (finding 4) ---------------------------------------------------------


def test_a_url_shown_keeps_no_user_password_or_secret_value() -> None:
    url = f"https://ops:opsFake1@status.example:8443/health?token={HEALTH_SECRET}&v=2#sig=abc"
    assert redact_url(url) == (
        "https://status.example:8443/health?token=[REDACTED:token]&v=2#sig=[REDACTED:signature]"
    )
    assert redact_url("http://127.0.0.1:9/health") == "http://127.0.0.1:9/health"
    assert redact_url("https://x.example/a?api_key=k1&key=k2&page=3&X-Amz-Signature=s") == (
        "https://x.example/a?api_key=[REDACTED:api-key]&key=[REDACTED:api-key]&page=3"
        "&X-Amz-Signature=[REDACTED:signature]"
    )
    webhook = "https://hooks.slack.com/services/TFAKE0000/BFAKE0000/" + "fake" * 6
    assert "fake" * 6 not in redact_url(webhook)
    assert redact_url("http://[::1]:80/x") == "http://[::1]:80/x"
    assert (
        redact_url("http://[oops/health?password=p1")
        == "http://[oops/health?password=[REDACTED:password]"
    )


def test_json_is_redacted_by_value_and_by_key_and_stays_json() -> None:
    document = {
        "tool_response": {"stdout": f"{GITHUB}\n", "exit": 0},
        "password": "pw-fake-1",
        "client_secret": "cs-fake-2",
        "key": "Enter",
        "items": [f"Bearer {'fAkEbEaReR' * 4}", "plain"],
        "escaped": 'config = {"password": "pw-fake-3"}',
    }
    cleaned = json.loads(redact_json(json.dumps(document)))
    assert cleaned == {
        "tool_response": {"stdout": "[REDACTED:github-token]\n", "exit": 0},
        "password": "[REDACTED:password]",
        "client_secret": "[REDACTED:secret]",
        "key": "Enter",
        "items": ["Bearer [REDACTED:bearer-token]", "plain"],
        "escaped": 'config = {"password": "[REDACTED:password]"}',
    }
    plain = '{"a":1,  "b": "nothing here"}'
    assert redact_json(plain) is plain  # untouched bytes when there is nothing to redact
    assert redact_json(f"not json {GITHUB}") == "not json [REDACTED:github-token]"
    assert redact_data(("x", {"api_token": "t-fake-1"})) == ("x", {"api_token": "[REDACTED:token]"})


# -- logs ------------------------------------------------------------------------------


def _logger_writing_to(stream: io.StringIO) -> logging.Logger:
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("tests.security.redaction")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def test_the_logging_filter_redacts_messages_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    log = _logger_writing_to(stream)
    log.info("tool said %s", f"AWS {AWS_ID}")
    log.info("password=%s", "hunter2fake")  # only the whole line says it is a password
    log.info('"GET /health?token=%s HTTP/1.1" %d', HEALTH_SECRET, 200)
    try:
        raise RuntimeError(f"could not reach https://u:{HEALTH_SECRET}@h.example/")
    except RuntimeError:
        log.exception("check failed")
    written = stream.getvalue()
    assert not [s for s in (AWS_ID, "hunter2fake", HEALTH_SECRET) if s in written]
    assert "tool said AWS [REDACTED:aws-access-key]" in written
    assert "password=[REDACTED:password]" in written
    assert "RuntimeError: could not reach https://u:[REDACTED:basic-auth]@h.example/" in written


def test_phi_run_logging_redacts_what_it_writes(capsys: pytest.CaptureFixture[str]) -> None:
    """The handler `phi run` installs (`configure_logging`) carries the filter."""
    from phi.cli.run import configure_logging

    root = logging.getLogger()
    kept, level = root.handlers[:], root.level
    try:
        for fmt in ("text", "json"):
            configure_logging(fmt, "info")
            logging.getLogger("phi.runtime").info("notifications run: replied with %s", GITHUB)
    finally:
        root.handlers[:] = kept
        root.setLevel(level)
    err = capsys.readouterr().err
    assert GITHUB not in err
    assert err.count("[REDACTED:github-token]") == 2


# -- the gates -------------------------------------------------------------------------


def _all_lines(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


@pytest.mark.parametrize(
    # Plain ids: pytest cannot select an id holding a pattern's brackets and backslashes
    # again by node id, which is how scripts/mutate runs each mutant's tests.
    "detector",
    detectors(),
    ids=[f"{i}-{d.kind}" for i, d in enumerate(detectors())],
)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_a_gate_never_hides_what_its_detector_finds(
    detector: Detector, data: st.DataObject
) -> None:
    """What makes the fast path safe: each detector, behind its gate, finds all it finds when
    run on every line of the text."""
    from phi.redact import _finds, _Segments

    text = data.draw(st.from_regex(detector.pattern), label="text")
    every = set(_finds(detector, text, _all_lines(text)))
    segments = _Segments(text)
    gated = set(_finds(detector, text, segments.opened_by(detector.gate)))
    assert gated == every
    assert segments.may_open() or not every


def test_every_detect_secrets_plugin_is_taken_or_left_out_on_purpose() -> None:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    mapping: dict[str, type] = get_mapping_from_secret_type_to_class()
    installed = {cls.__name__ for cls in mapping.values()}
    taken = {
        name
        for name in installed
        if any(d.pattern in getattr(_plugin(name), "denylist", ()) for d in detectors())
    }
    assert installed - taken == EXCLUDED_PLUGINS


def _plugin(name: str) -> type:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    mapping: dict[str, type] = get_mapping_from_secret_type_to_class()
    return next(c for c in mapping.values() if c.__name__ == name)


def test_each_gate_is_distinct_and_ordinary_text_opens_none() -> None:
    from phi.redact import _Segments

    assert len(set(gates())) == len(gates())
    for text in ORDINARY:
        assert not [g for g in gates() if _Segments(text).opened_by(g)], text


def test_ordinary_text_does_not_load_detect_secrets() -> None:
    """The fast path: a hook's process pays for detect-secrets only when a gate opens."""
    probe = (
        "import sys, phi.redact as r; "
        f"texts = {list(ORDINARY)!r}; "
        "assert all(r.redact(t) == t for t in texts); "
        "print('detect_secrets' in sys.modules); "
        f"r.redact({CORPUS[0].text!r}); print('detect_secrets' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "True"]
