"""The `phi` command. Each sub-command is a thin adapter over one library call.

Every command reads its settings through `phi.cli._edge.settings()`, so a bad `PHI_*`
value is one line and exit 2 wherever it is met.
"""

from __future__ import annotations

import typer

from phi.cli.bench import bench_app
from phi.cli.capture import capture_command
from phi.cli.mcp import mcp_command
from phi.cli.memory import memory_app
from phi.cli.postgres import postgres_app
from phi.cli.run import prompt_command, run_command
from phi.cli.runs import runs_app
from phi.cli.sandbox import sandbox_app
from phi.cli.web import web_command

__all__ = ["app", "main"]

app = typer.Typer(
    name="phi",
    help="phi: a digital entity on the AT Protocol, and a memory engine any agent can use.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(memory_app, name="memory")
app.add_typer(bench_app, name="bench")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(postgres_app, name="postgres")
app.add_typer(runs_app, name="runs")
app.command("mcp")(mcp_command)
app.command("capture")(capture_command)
app.command("web")(web_command)
app.command("run")(run_command)
app.command("prompt")(prompt_command)


def main() -> None:
    """Console-script entry point. A mistyped command line (an unknown option, a missing
    argument, a value of the wrong type) is one line naming it and the `--help` to read,
    exit 2, like every other mistake: click's own report is a five-line box."""
    import sys

    # typer vendors click (0.29: `typer._click`) and exports only some of its exceptions.
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    try:
        code = app(standalone_mode=False)
    except NoArgsIsHelpError as exc:  # `phi memory` alone: its help, as before
        if exc.format_message().strip():  # typer has usually printed it already
            exc.show()
        sys.exit(exc.exit_code)
    except UsageError as exc:
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        typer.echo(f"error: {exc.format_message().rstrip('.')}{where}", err=True)
        sys.exit(exc.exit_code)
    except ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    # Outside standalone mode click returns what ended the command: the code of a
    # `typer.Exit`, or the command's own return value (None).
    sys.exit(code if isinstance(code, int) else 0)


# Registers `phi memory extract | review | history | blocks ...` on `memory_app`.
# Registers `phi memory walk | link` on `memory_app`.
# Registers `phi memory upgrade | backup | restore` on `memory_app`.
from phi.cli import memory_admin as _memory_admin  # noqa: E402, F401
from phi.cli import memory_graph as _memory_graph  # noqa: E402, F401
from phi.cli import memory_learning as _memory_learning  # noqa: E402, F401

# Registers `phi memory reembed` on `memory_app`.
from phi.cli import memory_reembed as _memory_reembed  # noqa: E402, F401

# Registers `phi memory migrate | import` on `memory_app`.
from phi.cli import memory_transfer as _memory_transfer  # noqa: E402, F401

# Registers `phi memory settle | cluster` on `memory_app`.
from phi.cli import memory_upkeep as _memory_upkeep  # noqa: E402, F401
