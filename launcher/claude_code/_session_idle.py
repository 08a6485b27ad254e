"""Idle close of the session server (``coach mcp`` session mode), as in ``coach chat`` and ``coach serve``:
a session without a tool call or a running turn for ``[agents] idle_close_s`` seconds is closed
(compacted into the profile; ``launcher.pipeline.sessions``). The next turn then goes to a new session
(``launcher.claude_code.session.SessionTurns.open_session``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["SessionIdleClose"]

log = logging.getLogger(__name__)


class _Turns(Protocol):
    user: str
    session: str


class SessionIdleClose:
    """The session server's idle close: ``launcher.pipeline.sessions.IdleSessions`` (``idle``) over the current
    session only, touched on every tool call (:meth:`touch`), paused while a turn runs
    (:meth:`set_busy`); a check that finds a turn running closes nothing.

    Args:
        turns: the server's turns; ``turns.user`` / ``turns.session`` name the session (read at each call,
            so after a rollover the new session is tracked and the closed one forgotten).
        close: ``await close(user, session)`` closes a session (``launcher.pipeline.sessions.close_session``);
            ``SessionError`` is logged by ``IdleSessions``, any other error here; the server goes on.
        timeout_s: seconds without activity (``[agents] idle_close_s``, > 0).
        clock: seconds (``time.monotonic``; tests pass a fake one).
    """

    def __init__(
        self,
        turns: _Turns,
        close: Callable[[str, str], Awaitable[Any]],
        timeout_s: float,
        clock: Callable[[], float],
    ) -> None:
        from launcher.pipeline.sessions import IdleSessions

        self.turns = turns
        self._close = close
        self.busy = False
        self.idle = IdleSessions(self._close_if_quiet, timeout_s, clock=clock)
        self._tracked: str | None = None

    def _track_current(self) -> None:
        """Track only the current session (after a rollover the closed one is dropped)."""
        current = self.turns.session
        if self._tracked is not None and self._tracked != current:
            self.idle.forget(self.turns.user, self._tracked)
        self._tracked = current

    def touch(self) -> None:
        self._track_current()
        if not self.busy:
            self.idle.touch(self.turns.user, self.turns.session)

    def set_busy(self, busy: bool) -> None:
        self._track_current()
        self.busy = busy
        if busy:
            self.idle.forget(self.turns.user, self.turns.session)
        else:
            self.idle.touch(self.turns.user, self.turns.session)

    async def _close_if_quiet(self, user: str, session: str) -> None:
        if self.busy:  # a turn started meanwhile: not idle (set_busy(False) starts the clock again)
            return
        from launcher.errors import SessionError

        try:
            result = await self._close(user, session)
        except SessionError:
            raise  # logged by IdleSessions
        except Exception as exc:  # anything else must not stop the server
            log.error("idle close of session %s failed: %s", session, type(exc).__name__, exc_info=True)
            return
        log.info(
            "session %s idle for %gs: closed (profile v%s); the next turn starts a new session",
            session,
            self.idle.timeout_s,
            getattr(result, "profile_version", "?"),
        )
