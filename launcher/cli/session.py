"""``coach session close --user U --session S [--json]``: compact a session into the user's profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from launcher.cli._common import (
    ConfigOpt,
    SessionOpt,
    UserOpt,
    check_data_dir,
    check_ids,
    fail,
    load_config_or_exit,
    plural,
    store_error,
)

__all__ = ["session_app"]

session_app = typer.Typer(help="Coaching sessions.", no_args_is_help=True)


def _check_blackboard_exists(config: Any, user: str, session: str) -> None:
    """``coach session close`` on a data directory without a blackboard (a typo in COACH_DATA_DIR):
    nothing can be closed, so refuse (exit 2) without creating the folder or an empty store. A data
    dir that is a file (or under one) is left to ``check_data_dir``'s message."""
    directory = Path(config.data.dir)
    if config.data.url or (directory / "blackboard.sqlite3").exists():  # PostgreSQL: the database says
        return
    if any(p.exists() and not p.is_dir() for p in (directory, *directory.parents)):
        return
    fail(
        f"error: no such session: there is no blackboard in {directory}, so user {user} has no session "
        f"{session} (nothing was closed or created). Fix: set COACH_DATA_DIR or [data] dir to the folder "
        "`coach run` used"
    )


@session_app.command("close")
def session_close_cmd(
    user: UserOpt,
    session: SessionOpt,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON document")] = False,
    config_path: ConfigOpt = None,
) -> None:
    """Compact a session into the user's profile (compare-and-swap; a second close changes nothing)."""
    import anyio

    from blackboard import BlackboardError, StoreUnavailableError
    from launcher.errors import DataDirError, SessionError
    from launcher.pipeline._data_dir import disk_full, open_board
    from launcher.pipeline.sessions import close_session

    check_ids(user=user, session=session)
    config = load_config_or_exit(config_path)
    _check_blackboard_exists(config, user, session)
    check_data_dir(config)

    async def main() -> Any:
        board = open_board(
            config.data.dir, thresholds=config.thresholds
        )  # a full disk: DataDirError disk_full
        try:
            return await close_session(board, user, session)
        finally:
            board.close()

    try:
        res = anyio.run(main)
    except SessionError as exc:
        if isinstance(exc.__cause__, StoreUnavailableError) and disk_full(config.data.dir) is not None:
            store_error(exc.__cause__, config.data.dir)  # the full disk, said so with the fix
        fail(f"error: {exc}")
    except (DataDirError, BlackboardError) as exc:
        store_error(exc, config.data.dir)
    doc = {
        "user": res.user,
        "session": res.session,
        "profile_version": res.profile_version,
        "merged": list(res.merged),
        "already_closed": res.already_closed,
        "turns": res.turns,
    }
    if as_json:
        typer.echo(json.dumps(doc))
    elif res.already_closed:
        typer.echo(
            f"session {session} was already closed; profile of {user} stays at version {res.profile_version}"
        )
    else:
        merged = ", ".join(res.merged) or "nothing (no Persona or Shadow output in this session)"
        typer.echo(
            f"session {session} closed ({plural(res.turns, 'turn')}): merged {merged}; profile v{res.profile_version}"
        )
