"""`phi sandbox ...`: a real local AT Protocol network, and acting as its cast.

Thin adapters over `phi.atproto.sandbox.Sandbox` and `PhiClient`: parse, call, print.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from phi.cli._edge import AsJson, console, emit_json, fail, note, run, settings

if TYPE_CHECKING:
    from phi.atproto import PhiClient
    from phi.atproto.sandbox import Sandbox, SandboxInfo

__all__ = ["sandbox_app"]

sandbox_app = typer.Typer(
    help="A real local AT Protocol network (PLC, PDS, AppView) on 127.0.0.1, offline.",
    no_args_is_help=True,
)

T = TypeVar("T")

TICK_SECONDS = 20.0
"""How often a slow start says it is still going (the first one installs for minutes)."""

_POST_URI = re.compile(r"at://[^/\s]+/app\.bsky\.feed\.post/[A-Za-z0-9._:~-]+")


def _post_uri(uri: str) -> str:
    """`uri` if it names a post; else a one-line mistake, before anything reaches the
    network (whose answer would be an HTTP 400 from the AppView, exit 1)."""
    if not _POST_URI.fullmatch(uri):
        fail(
            f"{uri!r} is not a post's AT-URI (at://DID/app.bsky.feed.post/RKEY, as "
            "`phi sandbox say` prints)"
        )
    return uri


def _sandbox() -> Sandbox:
    from phi.atproto.sandbox import Sandbox, SandboxConfig

    return Sandbox(SandboxConfig.from_settings(settings()))


async def _up_with_progress(sandbox: Sandbox, say: Callable[[str], None]) -> SandboxInfo:
    """`sandbox.up()`, saying every `TICK_SECONDS` that it is still going (and, once, when
    it starts on other ports than configured because another program holds them)."""
    import anyio

    started = time.monotonic()

    async def tick() -> None:
        while True:
            await anyio.sleep(TICK_SECONDS)
            say(
                f"still starting the network ({time.monotonic() - started:.0f} s; the first "
                "start installs Node 22 and @atproto/dev-env, about 3-4 minutes)"
            )

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        info = await sandbox.up(say=say)
        tg.cancel_scope.cancel()
    return info


def _info_json(info: SandboxInfo, cast_file: str) -> dict[str, object]:
    return {
        "pds_url": info.pds_url,
        "appview_url": info.appview_url,
        "plc_url": info.plc_url,
        "cast_file": cast_file,
        "accounts": {
            name: {"handle": a.handle, "did": a.did, "app_password": a.app_password}
            for name, a in info.accounts.items()
        },
    }


def _print_info(info: SandboxInfo, cast_file: str) -> None:
    typer.echo(f"PDS      {info.pds_url}")
    typer.echo(f"AppView  {info.appview_url}")
    typer.echo(f"PLC      {info.plc_url}")
    typer.echo(f"cast     {cast_file}")
    for account in info.accounts.values():
        typer.echo(f"  {account.name:<9} @{account.handle:<20} app password {account.app_password}")


@sandbox_app.command()
def up(as_json: AsJson = False) -> None:
    """Start the network (installs Node 22 and @atproto/dev-env on first use)."""
    sandbox = _sandbox()
    info = run(lambda: _up_with_progress(sandbox, note))
    if as_json:
        emit_json({"state": "running", **_info_json(info, str(sandbox.cast_file))})
    else:
        _print_info(info, str(sandbox.cast_file))


@sandbox_app.command()
def down(as_json: AsJson = False) -> None:
    """Stop the network."""
    was_running = run(_sandbox().down)
    if as_json:
        emit_json({"stopped": was_running})
    else:
        typer.echo("stopped" if was_running else "not running")


@sandbox_app.command()
def status(as_json: AsJson = False) -> None:
    """Whether the network runs, with its URLs and accounts (exit 1 unless running)."""
    sandbox = _sandbox()
    current = run(sandbox.status)
    if as_json:
        info = current.info
        emit_json(
            {"state": current.state}
            | (_info_json(info, str(sandbox.cast_file)) if info is not None else {})
        )
    else:
        typer.echo(current.state)
        if current.info is not None:
            _print_info(current.info, str(sandbox.cast_file))
    if current.state != "running":
        raise typer.Exit(1)


async def _as(name: str, action: Callable[[PhiClient], Awaitable[T]]) -> T:
    from phi.atproto import PhiClient
    from phi.atproto.sandbox import wait_for_indexing

    current = settings()
    info = await _sandbox().info()
    async with PhiClient(info.client_config(name, nsid_prefix=current.nsid_prefix)) as client:
        result = await action(client)
    # Let the AppView index the write so phi (and the next command) sees it.
    await wait_for_indexing(info.hook_url)
    return result


@sandbox_app.command()
def say(
    name: Annotated[str, typer.Argument(help="Cast member: phi, operator, alice or bob.")],
    text: Annotated[str, typer.Argument(help="What to post.")],
    reply_to: Annotated[str | None, typer.Option(help="AT-URI of the post to reply to.")] = None,
    as_json: AsJson = False,
) -> None:
    """Post as a cast member (a reply with --reply-to). Prints the new post's AT-URI."""
    if reply_to is not None:
        _post_uri(reply_to)

    async def action(client: PhiClient) -> list[str]:
        return [ref.uri for ref in await client.post(text, reply_to=reply_to)]

    uris = run(lambda: _as(name, action))
    if as_json:
        emit_json({"as": name, "uris": uris})
    else:
        typer.echo("\n".join(uris))


@sandbox_app.command()
def like(
    name: Annotated[str, typer.Argument(help="Cast member: phi, operator, alice or bob.")],
    uri: Annotated[str, typer.Argument(help="AT-URI of the post to like.")],
    as_json: AsJson = False,
) -> None:
    """Like a post as a cast member. Prints the like's AT-URI."""
    _post_uri(uri)

    async def action(client: PhiClient) -> str:
        return (await client.like(uri)).uri

    _echo(name, run(lambda: _as(name, action)), as_json=as_json)


@sandbox_app.command()
def follow(
    name: Annotated[str, typer.Argument(help="Cast member: phi, operator, alice or bob.")],
    handle: Annotated[str, typer.Argument(help="Handle (or DID) to follow.")],
    as_json: AsJson = False,
) -> None:
    """Follow an account as a cast member. Prints the follow's AT-URI."""

    async def action(client: PhiClient) -> str:
        return (await client.follow(handle)).uri

    _echo(name, run(lambda: _as(name, action)), as_json=as_json)


def _echo(name: str, uri: str, *, as_json: bool) -> None:
    """The record a cast member's action wrote: its AT-URI, or JSON naming who wrote it."""
    if as_json:
        emit_json({"as": name, "uri": uri})
    else:
        typer.echo(uri)


@sandbox_app.command()
def wait() -> None:
    """Wait until the AppView has indexed every write so far."""

    async def action() -> None:
        await _sandbox().wait_for_indexing()

    run(action)


@sandbox_app.command("run")
def run_phi(
    greeting: Annotated[
        str | None,
        typer.Option(
            help="What alice says to open the conversation (default: she tells phi about her crow)."
        ),
    ] = None,
    follow_up: Annotated[
        str | None,
        typer.Option(
            help="What alice says next, in a new thread, referring back to her opening "
            "(default: she asks for her crow's name; '' for nothing)."
        ),
    ] = None,
    until_reply: Annotated[
        bool,
        typer.Option(
            "--until-reply", help="Stop once phi has handled alice's posts (both, by default)."
        ),
    ] = False,
    poll: Annotated[float, typer.Option(help="Seconds between notification polls.")] = 2.0,
) -> None:
    """Start the network, run phi on it with the offline defaults, have alice talk to phi,
    and stream what phi recalls and does; end with what phi holds about alice (Ctrl-C stops
    phi; the network keeps running)."""
    from rich.markup import escape

    from phi.runtime.sandbox_run import DEFAULT_FOLLOW_UP, DEFAULT_GREETING, sandbox_run

    if poll <= 0:
        fail(f"--poll must be positive, got {poll}")

    def emit(line: str) -> None:
        stamp = datetime.now().strftime("%H:%M:%S")
        console.print(f"[dim]{stamp}[/] {escape(line)}", highlight=False, soft_wrap=True)

    current = settings()
    sandbox = _sandbox()

    async def go() -> None:
        # Started here first, with progress lines, so a first run's install is not minutes
        # of silence; `sandbox_run` then finds the network up.
        if (await sandbox.status()).state != "running":
            emit(
                "bringing up the local AT Protocol network (about 15 s; the first time it "
                f"installs Node 22 and @atproto/dev-env, 3-4 minutes, a line every "
                f"{TICK_SECONDS:.0f} s)"
            )
        await _up_with_progress(sandbox, emit)
        await sandbox_run(
            current,
            emit=emit,
            greeting=greeting or DEFAULT_GREETING,
            follow_up=DEFAULT_FOLLOW_UP if follow_up is None else follow_up,
            until_reply=until_reply,
            poll_seconds=poll,
        )

    try:
        run(go)
    finally:
        if Path(current.sandbox_memory_url()).exists():
            emit(
                f"this run's memory: {current.sandbox_memory_url()} "
                "(read it with phi memory stats --sandbox, or phi web --sandbox)"
            )
