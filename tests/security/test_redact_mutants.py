"""Issue 24 for `phi.redact`: what a one-line break of it would change, asserted exactly.

`test_redaction.py` holds the corpus and the gates' property; these are the cases it left
open: which kind names a secret two detectors find, secrets side by side, a URL without a
host, JSON with non-ASCII text, log records whose arguments a formatter reads itself (as
uvicorn's access log does), a malformed log call, and `redact_logs`. Each is fast and
in-process.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from uvicorn.logging import AccessFormatter

import phi.redact
from phi.redact import RedactingFilter, find_secrets, redact, redact_json, redact_logs, redact_url

from .redaction_corpus import AWS_ID, CORPUS, GITHUB, ORDINARY, Form

NPM = "npm_" + "Fake" * 9


def _form(name: str) -> Form:
    return next(form for form in CORPUS if form.name == name)


# -- where finds meet ------------------------------------------------------------------------


def test_the_most_exact_kind_names_a_secret_even_when_a_vaguer_find_starts_first() -> None:
    """The `*_TOKEN=` rule sees the whole value; the npm rule, starting later, knows what it
    is: the marker says npm-token."""
    assert redact(f"DEPLOY_TOKEN=v2/{NPM}") == "DEPLOY_TOKEN=[REDACTED:npm-token]"


def test_two_secrets_side_by_side_keep_a_marker_each() -> None:
    key_block = _form("ec-private-key").text
    assert redact(key_block) == "[REDACTED:private-key]"  # a block at the very start, whole
    assert redact(f"{AWS_ID}{key_block}") == "[REDACTED:aws-access-key][REDACTED:private-key]"
    assert [(s.kind, s.start) for s in find_secrets(f"{AWS_ID}{key_block}")] == [
        ("aws-access-key", 0),
        ("private-key", len(AWS_ID)),
    ]


def test_ordinary_text_that_holds_a_gate_literal_never_builds_the_detectors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fast path: text a literal lets through but no gate opens comes back without the
    detectors (and detect-secrets' import) being touched."""

    def never() -> None:
        raise AssertionError("the detectors were built for ordinary text")

    monkeypatch.setattr(phi.redact, "detectors", never)
    may_open = [text for text in ORDINARY if phi.redact._Segments(text).may_open()]
    assert len(may_open) >= 3  # the premise: these pass the literal check, then no gate
    assert [redact(text) for text in ORDINARY] == list(ORDINARY)


# -- URLs and JSON ---------------------------------------------------------------------------


def test_a_url_without_a_host_keeps_its_path_and_loses_its_secrets() -> None:
    assert redact_url("/health?token=abc123fake&v=2") == "/health?token=[REDACTED:token]&v=2"
    assert redact_url("health") == "health"


def test_a_secret_parameter_value_goes_whole_up_to_the_next_parameter() -> None:
    """A value may hold `=` (base64 padding, a nested pair): all of it is the secret."""
    assert redact_url("https://h.example/p?token=a=b<c&v=2") == (
        "https://h.example/p?token=[REDACTED:token]&v=2"
    )


def test_redacted_json_keeps_non_ascii_text_as_it_was_written() -> None:
    cleaned = redact_json('{"note": "café ☕", "password": "pw-fake-1"}')
    assert cleaned == '{"note": "café ☕", "password": "[REDACTED:password]"}'


# -- logs ------------------------------------------------------------------------------------


def _filtered(msg: str, args: object) -> logging.LogRecord:
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, msg, None, None)
    record.args = args  # type: ignore[assignment]
    assert RedactingFilter().filter(record) is True
    return record


def test_an_access_log_record_keeps_its_arguments_each_redacted() -> None:
    """uvicorn's access formatter unpacks `args` itself: they must stay five, in order, with
    the secret gone from the one that held it, and numbers still numbers."""
    msg = '%s - "%s %s HTTP/%s" %d'
    record = _filtered(msg, ("127.0.0.1:5000", "GET", "/hook?token=tOkFake77", "1.1", 200))
    assert (record.msg, record.args) == (
        msg,
        ("127.0.0.1:5000", "GET", "/hook?token=[REDACTED:token]", "1.1", 200),
    )
    written = AccessFormatter(fmt="%(request_line)s %(status_code)s", use_colors=False)
    assert written.format(record) == "GET /hook?token=[REDACTED:token] HTTP/1.1 200 OK"


def test_named_log_arguments_are_redacted_one_by_one() -> None:
    record = _filtered("%(who)s said %(what)s", {"who": "ci", "what": f"AWS {AWS_ID}"})
    assert record.args == {"who": "ci", "what": "AWS [REDACTED:aws-access-key]"}
    assert record.getMessage() == "ci said AWS [REDACTED:aws-access-key]"


def test_a_message_only_the_whole_line_shows_a_secret_in_is_replaced_whole() -> None:
    record = _filtered("password=%s", ("hunter2fake",))
    assert (record.msg, record.args) == ("password=[REDACTED:password]", ())


def test_a_malformed_log_call_is_reported_by_logging_not_raised_into_the_caller(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Found by issue 24's review of the filter: `log.info("%d", "x")` is a logging error
    that logging reports on stderr and moves past; with the filter installed it raised
    `TypeError` into whatever was logging (phi's run loop). The report holds no secret."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("tests.security.malformed")
    log.handlers[:], log.propagate = [handler], False
    try:
        log.warning("%d rows from " + GITHUB + " for %s", "many", f"AWS {AWS_ID}")
        log.warning("next line")
    finally:
        log.handlers[:] = []
    assert stream.getvalue() == "next line\n"
    reported = capsys.readouterr().err
    assert "--- Logging error ---" in reported
    assert (
        "Message: '%d rows from [REDACTED:github-token] for %s'\n"
        "Arguments: ('many', 'AWS [REDACTED:aws-access-key]')\n"
    ) in reported
    assert AWS_ID not in reported and GITHUB not in reported


@pytest.fixture
def root_handler() -> Iterator[logging.StreamHandler[io.StringIO]]:
    """The root logger with one handler of ours (pytest's own are put back after)."""
    root = logging.getLogger()
    kept = root.handlers[:]
    handler = logging.StreamHandler(io.StringIO())
    root.handlers[:] = [handler]
    try:
        yield handler
    finally:
        root.handlers[:] = kept


def _redacting(handler: logging.Handler) -> int:
    return sum(isinstance(f, RedactingFilter) for f in handler.filters)


def test_redact_logs_puts_one_filter_on_each_handler_of_the_loggers_named(
    root_handler: logging.StreamHandler[io.StringIO],
) -> None:
    named = logging.getLogger("tests.security.redact_logs")
    first, second = logging.StreamHandler(io.StringIO()), logging.StreamHandler(io.StringIO())
    named.handlers[:] = [first, second]
    try:
        redact_logs("tests.security.redact_logs")
        redact_logs("tests.security.redact_logs")  # again: still one each
        assert [_redacting(h) for h in (first, second, root_handler)] == [1, 1, 0]
        redact_logs()  # none named: the root logger's
        assert [_redacting(h) for h in (first, second, root_handler)] == [1, 1, 1]
    finally:
        named.handlers[:] = []


def test_a_handler_redact_logs_filtered_writes_no_secret(
    root_handler: logging.StreamHandler[io.StringIO],
) -> None:
    redact_logs()
    logging.getLogger("tests.security.anywhere").warning("tool said %s", f"AWS {AWS_ID}")
    assert root_handler.stream.getvalue() == "tool said AWS [REDACTED:aws-access-key]\n"
