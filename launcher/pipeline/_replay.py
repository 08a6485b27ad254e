"""Replaying the user side of a real transcript through the supervisor (``coach replay``, ``coach demo``).

Each session of the transcript becomes one blackboard session ``{prefix}-s{n}`` (n from 1) of one user;
every utterance of it is one :meth:`launcher.pipeline.supervisor.Supervisor.run_turn`; after its last turn the
session is closed with :func:`launcher.pipeline.sessions.close_session` (compacted into the user's profile, so
the next session's agents start from it). A rich progress bar (on the given console, normally stderr)
names the session, the turn and which agents are running or done, and refreshes several times a second.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from blackboard import AGENT_ORDER
from launcher.pipeline._turn_status import AgentStatus, TurnResult
from launcher.pipeline.sessions import CloseResult, close_session
from launcher.transcripts import Transcript, Utterance

__all__ = [
    "ReplayedTurn",
    "default_user",
    "plan_sessions",
    "quiet_interrupts",
    "replay_transcript",
    "run_tag",
]

_HEARTBEAT_S = 5.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class ReplayedTurn:
    """One replayed turn: where it ran (``session`` index from 1, ``turn`` index in the session from 1,
    the blackboard ``session_id``), the source utterance's ``index`` and the :class:`TurnResult`."""

    session: int
    turn: int
    session_id: str
    utterance_index: int
    result: TurnResult
    wall_s: float


def default_user(transcript: Transcript) -> str:
    """``{source}-{id}`` made into a valid key part (``annomi-24``)."""
    return _UNSAFE.sub("_", f"{transcript.source}-{transcript.id}")[:64]


def run_tag(now: float | None = None) -> str:
    """A session prefix unique per run: ``r20261130T221500`` (UTC)."""
    return time.strftime("r%Y%m%dT%H%M%S", time.gmtime(now))


def plan_sessions(transcript: Transcript, turns_per_session: int | None = None) -> list[list[Utterance]]:
    """The sessions to play: each of the transcript's sessions, cut to its first ``turns_per_session``
    utterances (None: all). Raises ValueError when ``turns_per_session`` < 1."""
    if turns_per_session is not None and turns_per_session < 1:
        raise ValueError(f"turns per session must be >= 1, got {turns_per_session}")
    return [s[:turns_per_session] if turns_per_session else list(s) for s in transcript.sessions if s]


async def _heartbeat(progress: Progress, task: Any, console: Console, every_s: float = _HEARTBEAT_S) -> None:
    """Print the bar's state as a text line every ``every_s`` seconds (for non-terminal output)."""
    while True:
        await anyio.sleep(every_s)
        t = progress.tasks[task]
        console.print(
            f"  [{t.elapsed or 0:5.0f} s] {t.description} ({int(t.completed)}/{int(t.total or 0)} turns done)"
            f" {t.fields.get('activity', '')}",
            markup=False,
            highlight=False,
        )


class _DropShutdownTracebacks(logging.Filter):
    """Drops uvicorn's lifespan tracebacks of a cancelled shutdown (Ctrl-C): noise, not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[0] if record.exc_info else None
        if exc is not None and issubclass(exc, (KeyboardInterrupt, asyncio.CancelledError)):
            return False
        # starlette reports a failed lifespan shutdown as a message holding the traceback text
        text = record.getMessage()
        return not (
            text.startswith("Traceback") and text.rstrip().endswith(("CancelledError", "KeyboardInterrupt"))
        )


def quiet_interrupts() -> None:
    """Install :class:`_DropShutdownTracebacks` on ``uvicorn.error`` (call after the servers started:
    uvicorn configures its loggers when a server is created)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DropShutdownTracebacks) for f in logger.filters):
        logger.addFilter(_DropShutdownTracebacks())


def _activity(statuses: dict[str, AgentStatus]) -> str:
    running = [n for n in AGENT_ORDER if n in statuses and statuses[n].status == "running"]
    done = [n for n in AGENT_ORDER if n in statuses and statuses[n].status not in ("pending", "running")]
    parts = []
    if running:
        parts.append("running: " + " ".join(running))
    if done:
        parts.append("done: " + " ".join(done))
    return " | ".join(parts) or "safety screen, context packs"


async def replay_transcript(
    supervisor: Any,
    transcript: Transcript,
    *,
    user: str,
    prefix: str,
    console: Console,
    turns_per_session: int | None = None,
    runner: Any = None,
    on_turn: Callable[[ReplayedTurn], None] | None = None,
    on_close: Callable[[CloseResult], None] | None = None,
    on_coach_reply: Callable[[str], None] | None = None,
    stream_reply: bool = False,
) -> list[ReplayedTurn]:
    """Play ``transcript``'s user side through ``supervisor`` (see the module docstring).

    Args:
        supervisor: a :class:`launcher.pipeline.supervisor.Supervisor` (its ``board`` is used to close sessions).
        user: the blackboard user id; ``prefix``: session ids are ``{prefix}-s{n}``.
        console: where the progress bar is drawn (``on_turn`` may print through ``console`` too).
        turns_per_session: play at most this many utterances of each session (None: all).
        runner: the agent runner whose warm processes of a session are stopped when it closes.
        on_turn: called after each turn; on_close after each session close; on_coach_reply with the
            Coach's reply the moment it exists; ``stream_reply``: the progress line shows the Coach's
            reply as it is written (``Supervisor.run_turn(on_reply_stream=...)``).

    Returns every replayed turn in order. Raises what ``run_turn`` / ``close_session`` raise (a broken
    blackboard; agent failures never raise). Cancellation (Ctrl-C) propagates; sessions already
    played stay closed, the interrupted one stays open.
    """
    sessions = plan_sessions(transcript, turns_per_session)
    total = sum(len(s) for s in sessions)
    done: list[ReplayedTurn] = []
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TextColumn("turns"),
        TimeElapsedColumn(),
        TextColumn("[dim]{task.fields[activity]}"),
    )
    live = console.is_terminal
    with Progress(
        *columns, console=console, refresh_per_second=4, transient=False, disable=not live
    ) as progress:
        task = progress.add_task("replay", total=total, activity="")
        async with anyio.create_task_group() as tg:
            if not live:  # no live bar off a terminal (make demo | tee): text heartbeats instead
                tg.start_soon(_heartbeat, progress, task, console)
            for s_index, utterances in enumerate(sessions, start=1):
                session_id = f"{prefix}-s{s_index}"
                for t_index, utt in enumerate(utterances, start=1):
                    statuses: dict[str, AgentStatus] = {}
                    label = f"session {s_index}/{len(sessions)} turn {t_index}/{len(utterances)}"
                    progress.update(task, description=label, activity=_activity(statuses))

                    def on_status(st: AgentStatus, statuses: dict[str, AgentStatus] = statuses) -> None:
                        statuses[st.agent] = st
                        progress.update(task, activity=_activity(statuses))

                    t0 = time.monotonic()
                    streamed = {"on_reply_stream": _streamed(progress, task)} if stream_reply else {}
                    result = await supervisor.run_turn(
                        user,
                        session_id,
                        utt.text,
                        on_coach_reply=on_coach_reply,
                        on_status=on_status,
                        **streamed,
                    )
                    turn = ReplayedTurn(
                        s_index, t_index, session_id, utt.index, result, time.monotonic() - t0
                    )
                    done.append(turn)
                    progress.advance(task)
                    if on_turn is not None:
                        on_turn(turn)
                progress.update(
                    task, description=f"closing session {s_index}", activity="compacting into the profile"
                )
                closed = await close_session(supervisor.board, user, session_id, runner=runner)
                if on_close is not None:
                    on_close(closed)
            progress.update(task, description="replay done", activity="")
            tg.cancel_scope.cancel()
    return done


def _streamed(progress: Any, task: Any) -> Callable[[Any], None]:
    """An ``on_reply_stream`` callback showing the reply's words, as written, on the progress line."""
    from launcher.pipeline._reply_view import ReplyText

    text = ReplyText()

    def on_event(event: Any) -> None:
        text(event)
        progress.update(task, activity="coach: " + text.tail(70))

    return on_event
