"""`phi bench ...`: benchmarks of the memory engine."""

from __future__ import annotations

import typer

bench_app = typer.Typer(help="Benchmarks of the memory engine.", no_args_is_help=True)
