"""`phi run` and `phi prompt --preview`: phi on its account, and the prompt it would get."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from phi.cli._edge import console, fail, run, settings
from phi.errors import UserError
from phi.redact import RedactingFilter

if TYPE_CHECKING:
    from fastapi import FastAPI

    from phi.config import Settings
    from phi.runtime.main import WebServing
    from phi.runtime.poller import PhiRuntime

__all__ = ["prompt_command", "run_command"]

LogFormat = Literal["text", "json"]


class _JsonLines(logging.Formatter):
    """One JSON object per record: time, level, logger, message (and the error, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            # The text the redacting filter left, when it did (`phi.redact.RedactingFilter`).
            entry["error"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(fmt: LogFormat, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        _JsonLines()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler.addFilter(RedactingFilter())  # log lines quote posts, tool output, URLs
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_command(
    log_format: Annotated[
        str, typer.Option("--log-format", help="Log lines as `text` or `json` (one object each).")
    ] = "text",
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    web: Annotated[
        bool,
        typer.Option(
            "--web",
            help="Also serve the memory page and the run journal ($PHI_WEB_HOST:$PHI_WEB_PORT) "
            "over the same memory, in this process.",
        ),
    ] = False,
) -> None:
    """Run phi on its real account (PHI_HANDLE, PHI_APP_PASSWORD, optional PHI_PDS_URL)
    until Ctrl-C or SIGTERM. Runs are journalled under $PHI_HOME (`phi runs`); with
    OTEL_EXPORTER_OTLP_ENDPOINT set, they are traced over OTLP/HTTP."""
    if log_format not in ("text", "json"):
        fail(f"--log-format {log_format!r}: use text or json")
    if log_level.lower() not in ("debug", "info", "warning", "error"):
        fail(f"--log-level {log_level!r}: use debug, info, warning or error")
    import anyio

    from phi.atproto import ClientConfig
    from phi.runtime.main import serve_phi, stop_on_signals

    current = settings()
    try:
        account = ClientConfig.from_settings(current)
    except UserError as exc:
        fail(str(exc))
    # Here, not at the top: the OpenTelemetry SDK is not worth loading for other commands.
    from phi.runtime.tracing import ENDPOINT_VARIABLE, tracing_from_env

    serving = _web_serving(current) if web else None
    configure_logging(log_format, log_level)  # type: ignore[arg-type]
    log = logging.getLogger("phi")
    tracing = tracing_from_env(os.environ)
    if tracing is not None:
        log.info("tracing runs to %s", os.environ[ENDPOINT_VARIABLE])

    async def main() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signals, stop)
            await serve_phi(current, account, emit=log.info, stop=stop, web=serving)
            tg.cancel_scope.cancel()

    try:
        run(main)
    finally:
        if tracing is not None:
            tracing.stop()  # flushes the spans still batched


def _web_serving(settings: Settings) -> WebServing:
    """The memory and activity pages over the running phi, as `phi web` would serve them."""
    from phi.cli.web import web_access
    from phi.web import create_app

    access = web_access(settings, None, None)

    def build(runtime: PhiRuntime) -> FastAPI:
        return create_app(
            memory=runtime.memory,
            journal=runtime.journal,
            token=access.token,
            trusted_hosts=access.hosts,
            token_for_reads=access.public,
        )

    from phi.runtime.main import WebServing

    return WebServing(app=build, host=access.bind, port=settings.web_port)


def prompt_command(
    preview: Annotated[
        bool, typer.Option("--preview", help="Print the system prompt of the next run.")
    ] = False,
    entry: Annotated[
        str,
        typer.Option(help="The run: notifications (the unread ones now), musing or reflection."),
    ] = "notifications",
    sandbox: Annotated[
        bool, typer.Option("--sandbox", help="phi on the running local network, not PHI_HANDLE.")
    ] = False,
) -> None:
    """The exact system prompt phi would get for a run. Reads, writes nothing, marks nothing
    seen."""
    if not preview:
        fail("say --preview (the only mode): phi prompt --preview [--sandbox]")
    if entry not in ("notifications", "musing", "reflection"):
        fail(f"--entry {entry!r}: use notifications, musing or reflection")
    from phi.atproto import ClientConfig
    from phi.atproto.sandbox import Sandbox, SandboxConfig
    from phi.runtime.app import open_runtime
    from phi.runtime.sandbox_run import sandbox_settings

    current = settings()

    async def main() -> str:
        if sandbox:
            info = await Sandbox(SandboxConfig.from_settings(current)).info()
            local = sandbox_settings(current, info)
            config = info.client_config("phi", nsid_prefix=local.nsid_prefix)
        else:
            local, config = current, ClientConfig.from_settings(current)
        async with open_runtime(local, config) as runtime:
            return await runtime.preview(entry)  # type: ignore[arg-type]

    console.print(run(main), highlight=False, markup=False, soft_wrap=True)
