"""``coach chat --broker URL`` (or ``[broker] url``): the chat as a scale-out front end (docs/scale-out.md).

Each line typed is published as a turn job (``launcher.scaleout.frontend.BrokerFrontend``: the job row in
PostgreSQL first, then an ids-only message on RabbitMQ) and followed until a ``coach worker`` finishes it:
the Coach's reply is printed the moment the worker records it, then the synthesis. Nothing runs here: no
agent process, proxy or MCP server is started on this machine.

De-duplication: a job is followed by its id, a reply is printed once per job and a result once per turn
id, so a job followed again (after PostgreSQL came back) or a redelivered turn never shows twice.

A line the job store refuses for its text (longer than the store takes, not UTF-8, a NUL) is not kept:
it is reported at once with the fix, since sending it again would fail again.

Nothing typed is lost when a server goes away mid-chat. A line whose job could not be created or published
(PostgreSQL or RabbitMQ unreachable) is kept, under its job id, and sent again before the next line (or
with ``/retry``); the job id makes the second try create no second job. A job being followed when
PostgreSQL went away runs on the worker regardless and is followed again the same way. Lines still owed
when the chat ends are listed with the command that follows them (``coach run --broker --job-id``).

``/quit`` closes the session on the shared blackboard (compaction into the profile), as in-process chat
does; the worker that held its warm agent processes lets them go when its lease lapses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

__all__ = ["RETRY_COMMAND", "chat_via_broker", "run_chat_via_broker"]

#: The line that sends owed lines again without typing a new one.
RETRY_COMMAND = "/retry"


@dataclass
class _Owed:
    """Lines typed whose result has not been shown yet, oldest first, each with its job id."""

    items: list[tuple[str, str]] = field(default_factory=list)
    replied: set[str] = field(default_factory=set)  # job ids whose first reply was printed
    shown: set[str] = field(default_factory=set)  # turn ids whose result was printed


def _tier_of(board: Any, user: str, session: str, turn: str | None) -> int:
    """The safety tier the supervisor wrote in the turn's ``message`` entry (0 when it cannot be read)."""
    if not turn:
        return 0
    try:
        entry = board.read_turn(user, session, turn).get("message")
    except Exception:
        return 0
    tier = entry.value.get("crisis_tier") if entry is not None else None
    return int(tier) if isinstance(tier, int) else 0


def _error(console: Any, what: str, exc: BaseException, job_id: str) -> None:
    from rich.markup import escape

    console.print(
        f"[bold red]error:[/bold red] {what} ({escape(str(exc))}). Nothing typed is lost: your message is kept "
        f"as job {job_id} and sent again (never twice) before your next line; type {RETRY_COMMAND} to send it now.",
        highlight=False,
    )
    console.file.flush()


async def _settle_one(
    front: Any, board: Any, console: Any, user: str, session: str, item: tuple[str, str], owed: _Owed
) -> bool:
    """Submit (again) and follow one owed line; True when it is settled (shown or failed for good)."""
    from blackboard import BlackboardError, InvalidValueError
    from launcher.cli.chat import _show_first_reply, _show_result, _StatusView
    from launcher.scaleout.broker import BrokerError
    from launcher.scaleout.frontend import TurnJobFailed, turn_result_from_doc

    job_id, text = item
    view = _StatusView(console, time.monotonic())
    try:
        await front.submit(user, session, text, job_id)
    except InvalidValueError as exc:  # the text itself (too long, not UTF-8): sending it again fails again
        console.print(f"error: this line was not sent: {exc}", markup=False, highlight=False)
        return True
    except (BlackboardError, BrokerError) as exc:
        _error(console, "this turn could not be sent", exc, job_id)
        return False

    def on_reply_job(job: Any) -> None:
        if job.job_id in owed.replied:
            return
        owed.replied.add(job.job_id)
        _show_first_reply(view, job.coach_reply, _tier_of(board, user, session, job.turn_id))

    try:
        doc = await front.follow(
            job_id, on_reply_job=on_reply_job, on_note=lambda line: view.print(line, markup=False)
        )
    except TurnJobFailed as exc:
        view.print(f"error: {exc}", markup=False)
        return True
    except BlackboardError as exc:
        _error(
            console, f"lost PostgreSQL while following job {job_id}; the turn runs on its worker", exc, job_id
        )
        return False
    if doc.get("turn_id") not in owed.shown:
        owed.shown.add(str(doc.get("turn_id")))
        result = turn_result_from_doc(doc)
        if job_id not in owed.replied:  # the worker finished before the reply was seen
            owed.replied.add(job_id)
            _show_first_reply(view, result.coach_reply, result.crisis_tier)
        _show_result(console, result)
    return True


async def _settle(front: Any, board: Any, console: Any, user: str, session: str, owed: _Owed) -> None:
    """Send and follow every owed line in order; stop at the first that cannot be settled now (later
    lines must not overtake it)."""
    while owed.items:
        if not await _settle_one(front, board, console, user, session, owed.items[0], owed):
            return
        owed.items.pop(0)


def _report_owed(console: Any, owed: _Owed, user: str, session: str, why: str) -> None:
    """The lines whose result was not shown, by job id, and how to follow them (nothing when none)."""
    from launcher.cli._common import plural

    if not owed.items:
        return
    ids = ", ".join(j for j, _ in owed.items)
    console.print(
        f"not shown yet: {plural(len(owed.items), 'turn')} ({ids}); {why}. Follow one with: coach run MESSAGE "
        f"-u {user} -s {session} --broker URL --job-id ID. The session stays open.",
        markup=False,
        highlight=False,
    )
    console.file.flush()


def run_chat_via_broker(config: Any, broker_url: str, user: str, session: str, console: Any, err: Any) -> int:
    """:func:`chat_via_broker` to its exit code; Ctrl-C exits 130 and SIGTERM 143, each saying the session
    is still open (and, from :func:`chat_via_broker`, which turns were not shown yet)."""
    import typer

    from launcher.cli._common import Terminated, run_async

    still_open = f"session {session} is still open (close it with: coach session close --user {user} --session {session})"
    try:
        return cast(int, run_async(chat_via_broker, config, broker_url, user, session, console, sigterm=True))
    except KeyboardInterrupt:
        err.print(f"interrupted: {still_open}", markup=False)
        raise typer.Exit(130) from None
    except Terminated:
        err.print(f"terminated (SIGTERM): {still_open}", markup=False)
        raise typer.Exit(143) from None


async def chat_via_broker(config: Any, broker_url: str, user: str, session: str, console: Any) -> int:
    """The chat loop of the module docstring; returns the exit code. Raises the front end's errors at
    start (BrokerError, StoreUnavailableError, StackError): nothing was typed yet."""
    import anyio
    import anyio.to_thread
    from rich.markup import escape

    from launcher.cli._common import plural
    from launcher.cli.chat import _READER, _read_line
    from launcher.errors import SessionError
    from launcher.pipeline._data_dir import open_board
    from launcher.pipeline.sessions import close_session
    from launcher.scaleout.broker import describe_url
    from launcher.scaleout.frontend import BrokerFrontend, new_job_id

    front = await BrokerFrontend(config, broker_url).open()
    board: Any = None
    owed = _Owed()
    try:
        board = await anyio.to_thread.run_sync(
            lambda: open_board(config.data.dir, thresholds=config.thresholds, **config.data.board_options())
        )
        console.print(
            f"[bold]coach chat[/bold] user [bold]{user}[/bold], session [bold]{session}[/bold] (turns run on "
            f"`coach worker` via {escape(describe_url(broker_url))}; /quit or Ctrl-D ends the session)",
            highlight=False,
        )
        console.file.flush()
        reader = _READER()
        try:
            while True:
                line = await _read_line(console, reader, [], [anyio.CancelScope()])
                if line is None:
                    break
                if line.strip() and line.strip().lower() != RETRY_COMMAND:
                    owed.items.append((new_job_id(), line))
                await _settle(front, board, console, user, session, owed)
        except BaseException:  # Ctrl-C or SIGTERM (a cancellation) while a line is sent or followed
            _report_owed(
                console,
                owed,
                user,
                session,
                "a line already sent runs on a worker all the same, one not sent "
                "yet is sent by the command below (with its MESSAGE)",
            )
            raise
        if owed.items:
            _report_owed(console, owed, user, session, "they are stored and run once the servers are back")
            return 1
        console.print("[dim]closing the session (compacting it into the profile)…[/dim]")
        console.file.flush()
        try:
            res = await close_session(board, user, session)
        except SessionError as exc:
            if exc.code != "no_such_session":
                raise
            console.print(f"session {session} had no turns: nothing to close", highlight=False, markup=False)
            return 0
        console.print(
            f"session {session} closed ({plural(res.turns, 'turn')}): merged {', '.join(res.merged) or 'nothing'}; "
            f"profile v{res.profile_version}",
            highlight=False,
        )
        return 0
    finally:
        await front.close()
        if board is not None:
            board.close()
