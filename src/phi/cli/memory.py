"""`phi memory ...`: the memory engine on the command line."""

from __future__ import annotations

import typer

memory_app = typer.Typer(help="Read and write phi's memory.", no_args_is_help=True)
