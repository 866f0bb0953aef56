"""What one hook invocation does: check, queue, then drain in the background or now."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final, TextIO

from phi.capture._check import CheckedEvent, check_event, read_event
from phi.capture.hosts import CLAUDE_CODE, Host, normalize_event
from phi.capture.project import resolve_namespace
from phi.capture.resident import Resident, ask, nudge
from phi.capture.spool import Spool, SpoolEntry
from phi.errors import InvalidInput
from phi.private import private_opener
from phi.redact import redact_json

if TYPE_CHECKING:
    from phi.capture.recall import HookEventName
    from phi.memory import Memory

__all__ = [
    "BAD_EVENT_EXIT",
    "HookOptions",
    "Refused",
    "answer_wait_s",
    "context_answer",
    "default_spool_dir",
    "open_memory",
    "recall_request",
    "run_hook",
    "take_event",
]

DEFAULT_NAMESPACE: Final = "agent-sessions"
SESSION_START_WAIT_S: Final = 30.0
"""How long a session start waits for a background drain before it preloads anyway."""
BACKGROUND_WAIT_S: Final = 120.0
"""How long a background drainer waits for another one to finish; nobody waits on it."""
PROMPT_WAIT_S: Final = 1.0
"""How long a prompt waits for the resident process's memories (it answers in about a
tenth of that when warm); past it the prompt goes on without them."""
START_WAIT_S: Final = 15.0
"""How long a session start waits for the resident process, which loads the store and the
model first if it was not up (once per idle period, a few seconds): a session's first
context is worth that wait, a prompt's is not."""


@dataclass(frozen=True, kw_only=True)
class HookOptions:
    """How the hook command was called."""

    spool_dir: Path
    """Where events queue (`<home>/capture`)."""
    db: str | None = None
    """The memory store; `None` is the configured default."""
    namespace: str | None = DEFAULT_NAMESPACE
    """Where sessions are stored and what session start preloads; `None`: the project of
    the event's folder, or `$PHI_CAPTURE_PROJECT` (`phi.capture.project`)."""
    wait: bool = False
    """Store the event (and answer) in this process before returning, instead of in the
    background (a drainer, or with `recall` the resident process)."""
    budget_tokens: int = 1500
    """Size of the session-start preload, and of a prompt's memories with `recall`."""
    recall: bool = False
    """Answer a prompt with its memories and a session start with the project's preload,
    as hook JSON (`hookSpecificOutput.additionalContext`), through the resident process
    (`phi.capture.resident`); other events nudge that process instead of starting a
    drainer. Off: the session start prints the preload as text and each event starts a
    drainer (how `run_hook` behaved before; `python -m phi.capture` turns it on)."""

    host: Host = CLAUDE_CODE
    """Whose hook events come in, and how context goes back (`phi.capture.hosts`)."""
    event_id: str | None = None
    """The id to queue the event under; `None`: a new one. The fast path
    (`phi.capture._fast`) names one, so an event it handed to a resident process that may
    have queued it before failing is queued again under the same id: stored once."""

    @property
    def resident(self) -> Resident:
        """The resident process serving this spool and store."""
        return Resident(spool_dir=self.spool_dir, db=self.db)


def default_spool_dir() -> Path:
    """`$PHI_HOME/capture` (default `~/.phi/capture`).

    Read from the environment directly rather than through `Settings`: pydantic-settings
    alone costs over a second of imports on a busy machine, on every tool call of the host.
    The drainer is handed this same directory, so both sides agree.
    """
    home = os.environ.get("PHI_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".phi") / "capture"


BAD_EVENT_EXIT: Final = 1
"""The exit code for an event the hook refuses. Not 2, the CLI's usual code for bad input:
Claude Code reads a hook's exit 2 as "block this" (the tool call is stopped, the prompt
erased, the agent kept from stopping); any other code only shows the message."""


class Refused(Exception):
    """An event the hook does not take: its message is the one line the host shows."""


def take_event(
    stdin: BinaryIO,
    options: HookOptions,
    *,
    cwd: str | None = None,
    environ: dict[str, str] | None = None,
) -> tuple[CheckedEvent, SpoolEntry]:
    """Read, check, redact and queue (fsynced) the hook event on `stdin`.

    `cwd` and `environ` are the hook process's (its working folder and `$PHI_CAPTURE_PROJECT`)
    when this runs elsewhere, in the resident process; `None`: this process's.

    Raises:
        Refused: the event is bad, or cannot be queued (a full disk); nothing was queued.
    """
    try:
        payload = normalize_event(options.host, read_event(stdin))
        event = check_event(payload)
        where = event.cwd if cwd is None else os.path.join(cwd, event.cwd or "")
        namespace = resolve_namespace(options.namespace, where, environ=environ)
    except InvalidInput as exc:
        raise Refused(str(exc)) from None
    spool = Spool(directory=options.spool_dir)
    # Redacted before it touches the disk (the drain redacts too, as every write does).
    entry = SpoolEntry(namespace=namespace, payload=redact_json(payload))
    if options.event_id:
        entry = replace(entry, event=options.event_id)
    try:
        spool.append(entry)
    except OSError as exc:  # a full disk, a read-only home: the host must carry on
        raise Refused(f"could not queue the event in {spool.path}: {exc}") from None
    return event, entry


def run_hook(stdin: BinaryIO, options: HookOptions, *, out: TextIO, err: TextIO) -> int:
    """Handle the hook event on `stdin`; returns the exit code (never 2, see
    `BAD_EVENT_EXIT`). Whatever is wrong is said in one line on `err`."""
    try:
        event, entry = take_event(stdin, options)
    except Refused as exc:
        print(f"phi capture: {exc}", file=err)
        return BAD_EVENT_EXIT
    if options.recall:
        return _recall_hook(event, entry, options, out=out, err=err)
    if event.name == "SessionStart":
        options = replace(options, namespace=entry.namespace)
        text = drain(options, wait_s=SESSION_START_WAIT_S, preload=True, cwd=event.cwd, err=err)
        answer = options.host.context_output(event.name, text) if text else None
        if answer:
            print(answer, file=out)
    elif options.wait:
        drain(options, wait_s=SESSION_START_WAIT_S, err=err)
    else:
        detach(options)
    return 0


def recall_request(
    event: CheckedEvent, entry: SpoolEntry, options: HookOptions
) -> dict[str, object] | None:
    """What to ask the resident process for a queued event (`recall`), or `None` when the
    event has no answer (any event but a prompt with text or a session start)."""
    if event.name not in ("UserPromptSubmit", "SessionStart"):
        return None
    fields = json.loads(entry.payload)  # checked already: a JSON object
    prompt = fields.get("prompt")
    if event.name == "UserPromptSubmit" and not (isinstance(prompt, str) and prompt.strip()):
        return None
    return {
        "op": "recall" if event.name == "UserPromptSubmit" else "session_start",
        "namespace": entry.namespace,
        "session": fields.get("session_id"),
        "prompt": prompt if isinstance(prompt, str) else "",
        "cwd": event.cwd,
        "budget_tokens": options.budget_tokens,
    }


def answer_wait_s(event: CheckedEvent) -> float:
    """How long an answer to `event` may take (`PROMPT_WAIT_S` or `START_WAIT_S`)."""
    return PROMPT_WAIT_S if event.name == "UserPromptSubmit" else START_WAIT_S


def context_answer(host: Host, event: CheckedEvent, context: object) -> str | None:
    """What the hook prints for `context` at `event`, in `host`'s format; `None`: nothing."""
    if not (isinstance(context, str) and context):
        return None
    from phi.capture.recall import hook_output

    name: HookEventName = "SessionStart" if event.name == "SessionStart" else "UserPromptSubmit"
    # Claude Code's plain-text context shows in the transcript; its JSON form is quiet.
    return hook_output(name, context) if host is CLAUDE_CODE else host.context_output(name, context)


def _recall_hook(
    event: CheckedEvent, entry: SpoolEntry, options: HookOptions, *, out: TextIO, err: TextIO
) -> int:
    """The rest of a hook with `recall`: answer a prompt or a session start, and have the
    queued event stored (here with `wait`, else by the resident process)."""
    request = recall_request(event, entry, options)
    if request is None:
        if options.wait:
            drain(options, wait_s=SESSION_START_WAIT_S, err=err)
        else:
            nudge(options.resident)
        return 0
    context: object = None
    if options.wait:
        context = answer_here(options, request, err=err)
    else:
        reply = ask(
            options.resident,
            request,
            timeout_s=answer_wait_s(event),
            wait_start=event.name == "SessionStart",
        )
        context = reply.get("context") if reply else None
    answer = context_answer(options.host, event, context)
    if answer:
        print(answer, file=out)
    return 0


def answer_here(options: HookOptions, request: dict[str, object], *, err: TextIO) -> str | None:
    """What the resident process would answer to `request`, computed in this process after
    storing what is queued (`--wait`: slow, but the answer sees every earlier event)."""
    import anyio

    from phi.capture.recall import prompt_context, session_context
    from phi.errors import PhiError

    spool = Spool(directory=options.spool_dir)
    namespace, session = str(request["namespace"]), request.get("session")
    session = session if isinstance(session, str) else None

    async def go() -> str | None:
        with spool.draining(wait_s=SESSION_START_WAIT_S) as mine:
            from phi.capture.remote_sink import configured_target, drain_remote

            if options.db is None and (target := configured_target()) is not None:
                # Team capture: the server stores the queue (`remote_sink`); the answers
                # are not served from it yet, as the resident's are not.
                if mine:
                    await drain_remote(spool, target, err=err)
                return None
            async with _open_memory(options.db) as memory:
                if mine:
                    from phi.capture.spool import drain_into

                    await drain_into(memory, spool, err=err)
                if request["op"] == "recall":
                    return await prompt_context(
                        memory,
                        str(request["prompt"]),
                        namespace=namespace,
                        session=session,
                        budget_tokens=options.budget_tokens,
                    )
                cwd = request.get("cwd")
                return await session_context(
                    memory,
                    namespace=namespace,
                    session=session,
                    cwd=cwd if isinstance(cwd, str) else None,
                    budget_tokens=options.budget_tokens,
                )

    try:
        return anyio.run(go)
    except PhiError as exc:
        print(f"phi capture: {spool.pending()} event(s) queued for later: {exc}", file=err)
        return None


def detach(options: HookOptions) -> None:
    """Start a drainer that outlives this process, so the host is not kept waiting."""
    import subprocess  # not at the top: a hook that only queues never needs it

    args = [sys.executable, "-m", "phi.capture", "--drain", "--spool", str(options.spool_dir)]
    if options.db:
        args += ["--db", options.db]
    # The child keeps its own copy of the log; this process's is closed, not left to leak.
    with open(options.spool_dir / "drain.log", "a", opener=private_opener) as log:
        subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def drain(
    options: HookOptions,
    *,
    wait_s: float,
    err: TextIO,
    preload: bool = False,
    cwd: str | None = None,
) -> str | None:
    """Store what is queued; with `preload`, also return the session-start preload for
    a session in `cwd`. Errors are reported on `err`, never raised to the host.

    (An event naming a bad namespace is refused here, not when queued: checking it up front
    would import the memory engine on every tool call.)"""
    import anyio

    from phi.errors import PhiError

    spool = Spool(directory=options.spool_dir)

    async def go() -> str | None:
        with spool.draining(wait_s=wait_s) as mine:
            if not preload and (not mine or not spool.pending()):
                return None  # another drainer has the queue, or it is empty: skip the embedder
            from phi.capture.remote_sink import configured_target, drain_remote

            if options.db is None and (target := configured_target()) is not None:
                if mine:  # team capture: the server stores it (`remote_sink`)
                    await drain_remote(spool, target, err=err)
                return None
            async with _open_memory(options.db) as memory:
                if mine:
                    from phi.capture.spool import drain_into

                    await drain_into(memory, spool, err=err)
                if not preload:
                    return None
                return await _preload(memory, options, cwd)

    try:
        return anyio.run(go)
    except PhiError as exc:
        # Opening a busy store fails the same way as writing to one: the queue keeps it all.
        print(f"phi capture: {spool.pending()} event(s) queued for later: {exc}", file=err)
        return None


def open_memory(db: str | None) -> Memory:
    """The store `db` (or the configured one) with the configured embedder, not yet open."""
    return _open_memory(db)


def _open_memory(db: str | None) -> Memory:
    from phi.config import load_settings
    from phi.memory import Memory

    settings = load_settings()  # the edge of the drainer: PHI_HOME is closed (0700) here
    return Memory.open(
        db or settings.resolved_memory_url(),
        embedder=settings.make_embedder(),
        auto_upgrade=settings.auto_upgrade,
        pool_max=settings.postgres_pool_max,
    )


async def _preload(memory: Memory, options: HookOptions, cwd: str | None) -> str | None:
    from phi.errors import NamespaceNotFound

    hint = f"work in {Path(cwd).name}" if cwd else "the work ahead"
    try:
        window = await memory.preload(
            hint,
            namespace=options.namespace or DEFAULT_NAMESPACE,
            budget_tokens=options.budget_tokens,
        )
    except NamespaceNotFound:
        return None  # a first session: nothing to remember yet
    return f"What you remember from earlier sessions (phi's memory):\n\n{window.text}"
