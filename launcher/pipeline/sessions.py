"""Closing sessions: compaction into the user's versioned profile, and an idle timeout.

``close_session`` folds the session's latest Persona and Shadow outputs into ``users/{u}/profile``
with ``Blackboard.update_profile`` (``blackboard.merge_profile`` under compare-and-swap: traits move at
most ±10 POMP per session (docs/coaching.md, Persona), goals merged by description with mention counts,
follow-through counts and outcomes, pattern class and follow-through probability), marks the session
record closed (CAS, so a second close is a no-op and never merges twice) and stops the session's warm
agent processes. The record says ``compacted: false`` from the close until the profile is written, so a
close cut off in between (a full disk, kill -9) is finished by running the close again. The next session's context packs start from that profile (``launcher.pipeline._turn_io``).
Then the sequencer directories of the user's closed sessions' finished turns are removed
(``Blackboard.prune_turn_barriers``; a turn still running is kept until a later close), so the data
directory does not grow with every turn; a failure there is logged and never fails the close.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from blackboard import Blackboard, BlackboardError, Entry, VersionConflictError, profile_key, session_key
from launcher.errors import SessionError
from launcher.pipeline._turn_io import turn_order

__all__ = ["CloseResult", "IdleSessions", "close_session", "idle_check_interval", "session_outputs"]

log = logging.getLogger(__name__)

_PROFILE_AGENTS = ("persona", "shadow")
_CAS_ATTEMPTS = 50


@dataclass(frozen=True)
class CloseResult:
    """``profile_version``: the profile's version after the close (0: no profile); ``merged``: which
    agents' outputs were folded in; ``already_closed``: the session had been closed before (nothing
    merged this time); ``turns``: turns in the session; ``pruned_turns``: the user's closed-session
    turns (``session/turn``) whose sequencer directories were removed by this close."""

    user: str
    session: str
    profile_version: int
    merged: tuple[str, ...]
    already_closed: bool
    turns: int
    pruned_turns: tuple[str, ...] = ()


def session_outputs(board: Blackboard, user: str, session: str) -> tuple[dict[str, Entry], int]:
    """The latest entry of each profile agent (Persona, Shadow) in the session, and its turn count."""
    latest: dict[str, tuple[tuple[int, int, str], Entry]] = {}
    turns: set[str] = set()
    for e in board.store.list(session_key(user, session) + "/turns/"):
        parts = e.key.split("/")
        if len(parts) < 7:
            continue
        turns.add(parts[5])
        kind = parts[6]
        if kind in _PROFILE_AGENTS:
            order = turn_order(parts[5])
            if kind not in latest or order > latest[kind][0]:
                latest[kind] = (order, e)
    return {k: v[1] for k, v in latest.items()}, len(turns)


def _update_session_record(
    board: Blackboard, user: str, session: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> dict[str, Any]:
    """Compare-and-swap on the session record: ``change(value)`` gives the new value, or None to leave
    it; retried on a conflict. Returns the value ``change`` last saw (the one replaced or left).
    Raises SessionError (code ``no_such_session``) when the session has no record (never begun):
    nothing is created; a retryable SessionError when the record kept changing."""
    key = session_key(user, session)
    for _ in range(_CAS_ATTEMPTS):
        cur = board.store.read(key)
        if cur is None:
            raise SessionError(
                f"no such session: user {user} has no session {session} (nothing was closed or created). "
                f"Check the ids with: coach board show --user {user}",
                code="no_such_session",
            )
        new = change(cur.value)
        if new is None:
            return cur.value
        try:
            board.store.write(key, new, expected_version=cur.version, author="supervisor")
            return cur.value
        except VersionConflictError:
            continue
    raise SessionError(
        f"session {session}: the session record kept changing; close it again later", retryable=True
    )


def _mark_closed(board: Blackboard, user: str, session: str) -> str:
    """Set ``closed_at`` on the session record, with ``compacted: false`` until the profile is written
    (:func:`_mark_compacted`). Returns ``"closed"`` (this call closed it), ``"pending"`` (an earlier
    close stopped between closing and compacting: a full disk, kill -9, Ctrl-C) or ``"done"`` (closed
    and compacted earlier; records from before the marker existed count as done)."""
    before = _update_session_record(
        board,
        user,
        session,
        lambda v: None if v.get("closed_at") else {**v, "closed_at": time.time(), "compacted": False},
    )
    if not before.get("closed_at"):
        return "closed"
    return "pending" if before.get("compacted") is False else "done"


def _mark_compacted(board: Blackboard, user: str, session: str) -> None:
    """Set ``compacted: true`` on the closed session's record: its compaction is complete."""
    _update_session_record(
        board, user, session, lambda v: {**v, "compacted": True} if v.get("compacted") is False else None
    )


def _close(board: Blackboard, user: str, session: str) -> CloseResult:
    """Close, then compact, then record the compaction. A close that stopped half-way is finished by
    the next close of the same session: the merge is redone unless the profile already holds it
    (``last_session`` is this session: the profile was written, only the marker was not)."""
    outputs, turns = session_outputs(board, user, session)
    state = _mark_closed(board, user, session)
    prof = board.store.read(profile_key(user))
    if state == "done":
        return CloseResult(user, session, prof.version if prof else 0, (), True, turns)
    merged: tuple[str, ...] = ()
    if not outputs:
        version = prof.version if prof else 0
    elif state == "pending" and prof is not None and prof.value.get("last_session") == session:
        version, merged = prof.version, tuple(sorted(outputs))
    else:
        entry = board.update_profile(user, session, outputs)
        version, merged = entry.version, tuple(sorted(outputs))
    _mark_compacted(board, user, session)
    return CloseResult(user, session, version, merged, False, turns)


async def close_session(board: Blackboard, user: str, session: str, *, runner: Any = None) -> CloseResult:
    """Compact ``session`` into ``user``'s profile (see the module docstring).

    Args:
        board: the blackboard.
        runner: the agent runner whose warm processes of this session are stopped (optional).

    Raises:
        SessionError: bad ids, the store is unavailable, or (code ``no_such_session``) the session was
            never begun (the message says which); nothing stored is lost: the profile is only written
            by compare-and-swap.
    """
    try:
        result = await anyio.to_thread.run_sync(partial(_close, board, user, session))
    except BlackboardError as exc:
        raise SessionError(
            f"cannot close session {session!r} of user {user!r}: {exc}", retryable=exc.retryable
        ) from exc
    if runner is not None:
        await runner.close_session(user, session)
    pruned = await anyio.to_thread.run_sync(partial(_prune_barriers, board, user))
    log.info(
        "session %s/%s closed: profile v%d merged=%s, %d turn barriers removed",
        user,
        session,
        result.profile_version,
        ",".join(result.merged),
        len(pruned),
    )
    return replace(result, pruned_turns=pruned)


def _prune_barriers(board: Blackboard, user: str) -> tuple[str, ...]:
    """``board.prune_turn_barriers(user)``; an error is logged (the close itself has succeeded)."""
    try:
        res = board.prune_turn_barriers(user)
    except (BlackboardError, OSError) as exc:
        log.warning(
            "removing the finished turns' sequencer directories of user %s failed (%s: %s); "
            "the next session close retries",
            user,
            type(exc).__name__,
            exc,
        )
        return ()
    if res.kept:
        log.info(
            "user %s: %d turns of closed sessions still running; their sequencer directories are "
            "removed by a later close",
            user,
            len(res.kept),
        )
    return res.removed


class IdleSessions:
    """Closes sessions idle for ``timeout_s`` seconds (long-running modes: ``coach chat``, ``serve``).

    Call :meth:`touch` after each turn; run :meth:`run` in a task group (it checks every
    ``interval_s``), or call :meth:`close_idle` yourself.
    """

    def __init__(
        self,
        close: Callable[[str, str], Awaitable[Any]],
        timeout_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"idle timeout must be > 0 seconds, got {timeout_s}")
        self._close = close
        self.timeout_s = timeout_s
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}

    def touch(self, user: str, session: str) -> None:
        """Record activity now."""
        self._last[(user, session)] = self._clock()

    def forget(self, user: str, session: str) -> None:
        """Stop tracking a session (closed explicitly)."""
        self._last.pop((user, session), None)

    async def close_idle(self) -> list[tuple[str, str]]:
        """Close every session idle for longer than the timeout; returns the closed ones."""
        now = self._clock()
        idle = [k for k, t in self._last.items() if now - t >= self.timeout_s]
        for user, session in idle:
            self._last.pop((user, session), None)
            try:
                await self._close(user, session)
            except SessionError as exc:
                log.warning("idle close of %s/%s failed: %s", user, session, exc.code)
        return idle

    async def run(self, interval_s: float = 30.0) -> None:
        """Check forever (cancel to stop)."""
        while True:
            await anyio.sleep(interval_s)
            await self.close_idle()


def idle_check_interval(timeout_s: float) -> float:
    """How often long-running modes check for idle sessions: a tenth of the timeout, at most every 30 s
    (so a session is closed at most 10% (or 30 s) after its timeout)."""
    return min(30.0, timeout_s / 10)
