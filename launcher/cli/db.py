"""``coach db upgrade``: create or upgrade the PostgreSQL schema of ``[data] url`` (``COACH_DATABASE_URL``).

Every command that opens the blackboard on PostgreSQL also upgrades on start; this command does only
that, so an operator can migrate before rolling out new workers. Stored rows are never changed; a
schema written by a newer coachboard is refused (exit 2, nothing changed). Without ``[data] url`` there
is nothing to upgrade (the SQLite blackboard creates its tables itself): exit 2 with that said.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from launcher.cli._common import fail

__all__ = ["db_app"]

db_app = typer.Typer(help="The PostgreSQL schema of [data] url (docs/postgresql.md).", no_args_is_help=True)


@db_app.command("upgrade")
def upgrade_cmd(
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
) -> None:
    """Create the schema if missing and apply the migrations it lacks; prints the versions."""
    from blackboard import BlackboardError
    from blackboard._pg_conn import describe, upgrade_schema
    from launcher.cli._common import load_config_or_exit

    config = load_config_or_exit(config_path)
    if not config.data.url:
        fail(
            "error: no PostgreSQL configured ([data] url or COACH_DATABASE_URL); the SQLite blackboard in "
            f"{config.data.dir} needs no upgrade"
        )
    try:
        before, after = upgrade_schema(config.data.url, config.data.db_schema)
    except BlackboardError as exc:
        fail(f"error ({exc.code}): {exc}")
    where = f"{describe(config.data.url)} schema {config.data.db_schema}"
    if before == after:
        typer.echo(f"PostgreSQL {where}: at version {after}, nothing to do")
    else:
        typer.echo(f"PostgreSQL {where}: upgraded from version {before} to {after}")
