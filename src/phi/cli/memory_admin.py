"""`phi memory upgrade | backup | restore`: thin adapters over `phi.memory.backup`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import AsJson, Db, console, emit_json, fail, memory_location, run
from phi.cli.memory import memory_app

if TYPE_CHECKING:
    from phi.memory.backup import BackupReport, RestoreReport, UpgradeReport

__all__ = ["backup_command", "restore_command", "upgrade_command"]


def _pg_tools() -> Path:
    """The folder of the bundled PostgreSQL's `pg_dump` and `pg_restore` (the server
    `phi postgres up` runs), which can dump any server up to its own version."""
    from phi.postgres._process import INSTALL

    return Path(INSTALL)


@memory_app.command("upgrade")
def upgrade_command(db: Db = None, as_json: AsJson = False) -> None:
    """Bring a store's schema up to this phi's: apply its pending migrations, under a lock
    so that hosts upgrading one shared store at once apply each migration once. Run it
    when PHI_AUTO_UPGRADE is off (the default for PostgreSQL) and phi says the store is
    behind; a store from a newer phi is refused and left unchanged."""
    from phi.memory.backup import upgrade

    location = memory_location(db)

    async def go() -> UpgradeReport:
        return await upgrade(location)

    report = run(go)
    if as_json:
        emit_json(
            {
                "location": report.location,
                "from": {"version": report.before.number, "name": report.before.name},
                "to": {"version": report.after.number, "name": report.after.name},
                "applied": list(report.applied),
            }
        )
        return
    console.print(
        f"{report.location}: schema version {report.before} -> {report.after}", highlight=False
    )
    for name in report.applied:
        console.print(f"  applied {name}", highlight=False)
    if not report.applied:
        console.print("  already up to date", highlight=False)


@memory_app.command("backup")
def backup_command(
    destination: Annotated[str, typer.Argument(help="A new file to write the backup to.")],
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Write a consistent snapshot of the store to a new file (0600) while phi runs and
    writes: SQLite's online backup (a SQLite file) or pg_dump's custom format (the store's
    schema only, from the bundled PostgreSQL's pg_dump)."""
    from phi.memory.backup import backup

    location = memory_location(db)

    async def go() -> BackupReport:
        return await backup(location, destination, pg_tools=_pg_tools())

    report = run(go)
    if as_json:
        emit_json(
            {
                "location": report.location,
                "destination": str(report.destination),
                "version": report.version.number,
                "name": report.version.name,
                "bytes": report.size,
                "seconds": round(report.seconds, 3),
            }
        )
        return
    console.print(
        f"backed up {report.location} (schema version {report.version}) to"
        f" {report.destination}: {report.size:,} bytes in {report.seconds:.1f} s",
        highlight=False,
    )


@memory_app.command("restore")
def restore_command(
    source: Annotated[str, typer.Argument(help="A file written by `phi memory backup`.")],
    db: Db = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a store that holds data.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Make the store a copy of a backup: into a new or empty store, or over one that
    holds data with --replace (stop the phi processes using it first). A backup from a
    newer phi is refused. A PostgreSQL backup goes into a schema of its own name."""
    from phi.memory.backup import restore

    if not Path(source).expanduser().is_file():
        fail(f"no backup at {source!r} (check the path)")
    location = memory_location(db)

    async def go() -> RestoreReport:
        return await restore(source, location, replace=replace, pg_tools=_pg_tools())

    report = run(go)
    if as_json:
        emit_json(
            {
                "location": report.location,
                "source": str(report.source),
                "version": report.version.number,
                "name": report.version.name,
                "seconds": round(report.seconds, 3),
            }
        )
        return
    console.print(
        f"restored {report.source} (schema version {report.version}) into {report.location}"
        f" in {report.seconds:.1f} s",
        highlight=False,
    )
