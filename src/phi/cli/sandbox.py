"""`phi sandbox ...`: a real local AT Protocol network, and acting as its cast.

Thin adapters over `phi.atproto.sandbox.Sandbox` and `PhiClient`: parse, call, print.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, TypeVar

import anyio
import typer
from rich.markup import escape

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxConfig, SandboxInfo, wait_for_indexing
from phi.cli._edge import console, fail
from phi.config import Settings
from phi.errors import PhiError
from phi.runtime.sandbox_run import DEFAULT_GREETING, sandbox_run

__all__ = ["sandbox_app"]

sandbox_app = typer.Typer(
    help="A real local AT Protocol network (PLC, PDS, AppView) on 127.0.0.1, offline.",
    no_args_is_help=True,
)

T = TypeVar("T")


def _sandbox() -> Sandbox:
    return Sandbox(SandboxConfig.from_settings(Settings()))


def _run(fn: Callable[[], Awaitable[T]]) -> T:
    """Run one library call; a phi error becomes a one-line message and exit code 1."""
    try:
        return anyio.run(fn)
    except PhiError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def _print_info(info: SandboxInfo, cast_file: str) -> None:
    typer.echo(f"PDS      {info.pds_url}")
    typer.echo(f"AppView  {info.appview_url}")
    typer.echo(f"PLC      {info.plc_url}")
    typer.echo(f"cast     {cast_file}")
    for account in info.accounts.values():
        typer.echo(f"  {account.name:<9} @{account.handle:<20} app password {account.app_password}")


@sandbox_app.command()
def up() -> None:
    """Start the network (installs Node 22 and @atproto/dev-env on first use)."""
    sandbox = _sandbox()
    info = _run(sandbox.up)
    _print_info(info, str(sandbox.cast_file))


@sandbox_app.command()
def down() -> None:
    """Stop the network."""
    was_running = _run(_sandbox().down)
    typer.echo("stopped" if was_running else "not running")


@sandbox_app.command()
def status() -> None:
    """Whether the network runs, with its URLs and accounts."""
    sandbox = _sandbox()
    current = _run(sandbox.status)
    typer.echo(current.state)
    if current.info is not None:
        _print_info(current.info, str(sandbox.cast_file))
    if current.state != "running":
        raise typer.Exit(1)


async def _as(name: str, action: Callable[[PhiClient], Awaitable[str]]) -> str:
    settings = Settings()
    sandbox = Sandbox(SandboxConfig.from_settings(settings))
    info = await sandbox.info()
    async with PhiClient(info.client_config(name, nsid_prefix=settings.nsid_prefix)) as client:
        result = await action(client)
    # Let the AppView index the write so phi (and the next command) sees it.
    await wait_for_indexing(info.hook_url)
    return result


@sandbox_app.command()
def say(
    name: Annotated[str, typer.Argument(help="Cast member: phi, operator, alice or bob.")],
    text: Annotated[str, typer.Argument(help="What to post.")],
    reply_to: Annotated[str | None, typer.Option(help="AT-URI of the post to reply to.")] = None,
) -> None:
    """Post as a cast member (a reply with --reply-to). Prints the new post's AT-URI."""

    async def action(client: PhiClient) -> str:
        refs = await client.post(text, reply_to=reply_to)
        return "\n".join(ref.uri for ref in refs)

    typer.echo(_run(lambda: _as(name, action)))


@sandbox_app.command()
def like(
    name: Annotated[str, typer.Argument(help="Cast member: phi, operator, alice or bob.")],
    uri: Annotated[str, typer.Argument(help="AT-URI of the post to like.")],
) -> None:
    """Like a post as a cast member."""

    async def action(client: PhiClient) -> str:
        return (await client.like(uri)).uri

    typer.echo(_run(lambda: _as(name, action)))


@sandbox_app.command()
def follow(
    name: Annotated[str, typer.Argument(help="Cast member: phi, operator, alice or bob.")],
    handle: Annotated[str, typer.Argument(help="Handle (or DID) to follow.")],
) -> None:
    """Follow an account as a cast member."""

    async def action(client: PhiClient) -> str:
        return (await client.follow(handle)).uri

    typer.echo(_run(lambda: _as(name, action)))


@sandbox_app.command()
def wait() -> None:
    """Wait until the AppView has indexed every write so far."""

    async def action() -> None:
        await _sandbox().wait_for_indexing()

    _run(action)


@sandbox_app.command("run")
def run_phi(
    greeting: Annotated[
        str, typer.Option(help="What alice says to open the conversation.")
    ] = DEFAULT_GREETING,
    until_reply: Annotated[
        bool, typer.Option("--until-reply", help="Stop after phi has handled alice's opening post.")
    ] = False,
    poll: Annotated[float, typer.Option(help="Seconds between notification polls.")] = 2.0,
) -> None:
    """Start the network, run phi on it with the offline defaults, have alice talk to phi,
    and stream what phi does (Ctrl-C stops phi; the network keeps running)."""
    if poll <= 0:
        fail(f"--poll must be positive, got {poll}")

    def emit(line: str) -> None:
        stamp = datetime.now().strftime("%H:%M:%S")
        console.print(f"[dim]{stamp}[/] {escape(line)}", highlight=False, soft_wrap=True)

    settings = Settings()
    _run(
        lambda: sandbox_run(
            settings, emit=emit, greeting=greeting, until_reply=until_reply, poll_seconds=poll
        )
    )
