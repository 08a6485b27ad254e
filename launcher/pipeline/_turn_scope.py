"""Server-side turn resolution for warm agent processes (an adapter over ``mcp_server``'s scope).

A warm Claude Code process keeps its MCP headers for the whole session, so it cannot send a new
``x-coach-turn`` each turn. Instead the supervisor records, in a :class:`TurnDirectory` shared with the
in-process MCP HTTP server, which turn of each session is open and which agents are running in it;
:class:`DirectoryScope` (an ``mcp_server`` ``ScopeSource``) fills in the turn for requests that carry
user, session and agent headers but no turn header.

Safety: user, session and agent always come from headers the supervisor set (never from the model);
the turn comes from the directory, and only for an agent the supervisor armed for that turn. Once an
agent's run ends (ok, failed or past its deadline) it is disarmed, so a late call from its process
cannot write into a later turn. A request that does carry ``x-coach-turn`` (one-shot processes) keeps
it unchanged.

A proxy in another process (``coach serve``) cannot read the directory: a :class:`TurnListener`
(``launcher.pipeline._proxy_turns.ProxyTurnMirror``) gets every change, in order, and the supervisor awaits
:meth:`TurnDirectory.synced` after opening a turn or arming an agent, before the agent's first request.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Protocol

from mcp_server import HeaderScope, Scope

__all__ = ["DirectoryScope", "TurnDirectory", "TurnListener"]


class TurnListener(Protocol):
    """Gets every change of a :class:`TurnDirectory`."""

    def changed(self, op: str, user: str, session: str, turn: str, agents: tuple[str, ...]) -> None:
        """``op``: open / arm / disarm / close, as the directory's methods. Called under the directory's
        lock, in order: queue the change, never block."""

    async def synced(self) -> None:
        """Return once every change queued so far has reached its destination (or was given up)."""


class TurnDirectory:
    """Thread-safe map (user, session) -> (open turn, armed agents). Arming counts: an agent armed twice
    (Pineal for its prefill, then for its run, which may overlap) stays armed until disarmed twice."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], tuple[str, Counter[str]]] = {}
        self._listeners: list[TurnListener] = []

    def add_listener(self, listener: TurnListener) -> None:
        """Send every later change to ``listener`` too."""
        with self._lock:
            self._listeners.append(listener)

    def _tell(self, op: str, user: str, session: str, turn: str, agents: Iterable[str]) -> None:
        names = tuple(agents)
        for listener in self._listeners:
            listener.changed(op, user, session, turn, names)

    async def synced(self) -> None:
        """Return once every listener has passed on the changes so far (at once without listeners)."""
        for listener in list(self._listeners):
            await listener.synced()

    def open(self, user: str, session: str, turn: str, agents: Iterable[str] = ()) -> None:
        """Mark ``turn`` as the session's open turn (replacing any earlier one) and arm ``agents``."""
        with self._lock:
            armed = Counter(set(agents))
            self._open[(user, session)] = (turn, armed)
            self._tell("open", user, session, turn, sorted(armed))

    def arm(self, user: str, session: str, turn: str, agent: str) -> None:
        """Allow ``agent`` to act in ``turn`` (no-op when that turn is no longer open)."""
        with self._lock:
            cur = self._open.get((user, session))
            if cur is not None and cur[0] == turn:
                cur[1][agent] += 1
                self._tell("arm", user, session, turn, (agent,))

    def disarm(self, user: str, session: str, turn: str, agent: str) -> None:
        """Stop ``agent`` acting in ``turn``."""
        with self._lock:
            cur = self._open.get((user, session))
            if cur is not None and cur[0] == turn and cur[1][agent] > 0:
                cur[1][agent] -= 1
                if cur[1][agent] == 0:
                    del cur[1][agent]
                self._tell("disarm", user, session, turn, (agent,))

    def close(self, user: str, session: str, turn: str) -> None:
        """The turn is over: no agent of the session gets a turn until the next :meth:`open`."""
        with self._lock:
            cur = self._open.get((user, session))
            if cur is not None and cur[0] == turn:
                del self._open[(user, session)]
                self._tell("close", user, session, turn, ())

    def open_turns(self) -> int:
        """How many sessions have a turn open now (between :meth:`open` and :meth:`close`)."""
        with self._lock:
            return len(self._open)

    def turn_for(self, user: str, session: str, agent: str | None) -> str | None:
        """The open turn for an armed ``agent`` of this session, else None."""
        with self._lock:
            cur = self._open.get((user, session))
            if cur is None or agent is None or cur[1][agent] <= 0:
                return None
            return cur[0]


class DirectoryScope:
    """``ScopeSource`` for the MCP HTTP server: header scope, with the turn filled from a directory.

    With ``secret``, the headers must carry ``x-coach-scope-token`` = ``mcp_server.scope_token(secret,
    scope)`` of the scope *as sent* (no turn for warm processes), checked before the turn is filled in.
    """

    def __init__(self, directory: TurnDirectory, secret: str | None = None) -> None:
        self.directory = directory
        self._headers = HeaderScope(secret=secret)

    def scope_for(self, headers: Mapping[str, str] | None) -> Scope:
        """Raises ``mcp_server.errors.ScopeError`` when headers are missing, malformed or not signed."""
        scope = self._headers.scope_for(headers)
        scope = _bound_scope(self.directory, scope)  # a pooled agent process acts for its bound session
        if scope.turn is not None:
            return scope
        turn = self.directory.turn_for(scope.user, scope.session, scope.agent)
        if turn is None:
            return scope
        return Scope.create(scope.user, scope.session, turn, scope.agent)


def _bound_scope(directory: TurnDirectory, scope: Scope) -> Scope:
    """``scope`` with a pooled process's identity replaced by the session it was handed to
    (``launcher.runner._process_pool``; unchanged for every other process)."""
    from launcher.runner._process_pool import bindings_for

    bound = bindings_for(directory).resolve(scope.user, scope.session)
    if bound == (scope.user, scope.session):
        return scope
    return Scope.create(bound[0], bound[1], scope.turn, scope.agent)
