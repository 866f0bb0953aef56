"""The README's command examples name commands and options the CLI really has."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import typer.main

from phi.cli import app

README = Path(__file__).parent.parent / "README.md"


def readme_commands() -> list[list[str]]:
    """`phi ...` lines inside fenced code blocks, without comments and redirections."""
    commands, in_block = [], False
    for raw in README.read_text().splitlines():
        if raw.startswith("```"):
            in_block = not in_block
            continue
        line = raw.split("#", 1)[0].split("<", 1)[0].strip()
        if in_block and line.startswith("phi "):
            commands.append(shlex.split(line.replace("…", "x"))[1:])
    return commands


def resolve(words: list[str]) -> tuple[Any, list[str]]:
    """The command `words` name, and the words left for it."""
    command: Any = typer.main.get_command(app)
    rest = list(words)
    while rest and rest[0] in getattr(command, "commands", {}):
        command = command.commands[rest.pop(0)]
    return command, rest


def test_readme_has_phi_examples() -> None:
    assert len(readme_commands()) >= 15


def test_every_readme_example_names_a_real_command_and_options() -> None:
    for words in readme_commands():
        command, rest = resolve(words)
        assert not hasattr(command, "commands"), f"{words}: no such sub-command"
        known = {opt for param in command.params for opt in getattr(param, "opts", [])}
        used = {w.split("=", 1)[0] for w in rest if w.startswith("-") and w != "-"}
        assert used <= known, f"phi {' '.join(words)}: unknown options {sorted(used - known)}"
