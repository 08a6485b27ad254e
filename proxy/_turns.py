"""Turns of warm agent processes for a proxy that runs as its own process (``coach serve``).

A warm Claude Code process keeps the ``ANTHROPIC_CUSTOM_HEADERS`` it was started with, so its requests
name agent, user and session but no turn (``x-coach-turn``). The in-process proxy asks the supervisor's
turn directory (``create_app(turn_for=...)``). A proxy in another process keeps a :class:`TurnTable`
instead, which the supervisor fills through ``POST /coach/turns`` (``create_app(turn_secret=...)``):

    POST /coach/turns
    x-coach-control-token: <turn_control_token(secret)>
    {"changes": [{"op": "open", "user": "u1", "session": "s1", "turn": "t000002",
                  "agents": ["coach", "shadow"]},
                 {"op": "disarm", "user": "u1", "session": "s1", "turn": "t000002", "agents": ["coach"]}]}
    -> 200 {"applied": 2}

``op`` is ``open`` (the session's open turn, replacing any earlier one, with ``agents`` armed), ``arm`` /
``disarm`` (agents of that turn; ignored when it is no longer open) or ``close`` (the turn is over);
changes apply in order, all or none (the body is validated first). The semantics are those of
``launcher.pipeline._turn_scope.TurnDirectory``: a request gets a turn only while its agent is armed in it, so a
late call of an agent whose run ended is never metered under a later turn; a request that carries
``x-coach-turn`` keeps it.

Authentication: the token is ``HMAC-SHA256(secret, "coachboard proxy turn control v1")`` (hex), the secret
being the data directory's scope secret (``mcp_server.mcp_secret``: ``COACH_MCP_SECRET`` or
``<data dir>/mcp_secret``), so only local processes that can read the data directory can move turns;
the raw secret never travels. A missing or wrong token is refused (401). Only metering and the
``x-coach-turn`` forwarded upstream depend on the turn; the per-agent policies judge "the first model
call of a turn" from the request's messages (``proxy._policy.starts_new_turn``).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import Counter, OrderedDict
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .errors import AuthenticationError, InvalidRequestError

__all__ = [
    "CONTROL_TOKEN_HEADER",
    "TURNS_PATH",
    "TurnChange",
    "TurnTable",
    "turn_control_token",
    "turns_route",
]

#: Header carrying :func:`turn_control_token`.
CONTROL_TOKEN_HEADER = "x-coach-control-token"
#: The route the supervisor posts its turn changes to.
TURNS_PATH = "/coach/turns"
#: Most sessions kept open at once; past it the least recently opened one is dropped (a supervisor that
#: died without closing its turns must not grow the table for ever).
MAX_SESSIONS = 10_000

_Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


def turn_control_token(secret: str) -> str:
    """The ``x-coach-control-token`` value for ``secret`` (hex HMAC-SHA256; see the module docstring)."""
    return hmac.new(secret.encode(), b"coachboard proxy turn control v1", hashlib.sha256).hexdigest()


class TurnChange(BaseModel):
    """One change of the supervisor's turn directory (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["open", "arm", "disarm", "close"]
    user: _Id
    session: _Id
    turn: _Id
    agents: list[_Id] = Field(default_factory=list, max_length=64)


class _Changes(BaseModel):
    model_config = ConfigDict(extra="forbid")

    changes: list[TurnChange] = Field(max_length=1000)


class TurnTable:
    """Thread-safe map (user, session) -> (open turn, armed agents, counted: an agent armed twice is
    disarmed by the second disarm); see the module docstring."""

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._lock = threading.Lock()
        self._open: OrderedDict[tuple[str, str], tuple[str, Counter[str]]] = OrderedDict()
        self._max = max_sessions

    def apply(self, change: TurnChange) -> None:
        key = (change.user, change.session)
        agents = {a.lower() for a in change.agents}
        with self._lock:
            cur = self._open.get(key)
            if change.op == "open":
                self._open.pop(key, None)
                self._open[key] = (change.turn, Counter(agents))
                while len(self._open) > self._max:
                    self._open.popitem(last=False)
            elif cur is None or cur[0] != change.turn:
                return
            elif change.op == "arm":  # counted, as the supervisor's directory counts them
                cur[1].update(agents)
            elif change.op == "disarm":
                cur[1].subtract(agents)
                for a in [a for a, n in cur[1].items() if n <= 0]:
                    del cur[1][a]
            else:
                del self._open[key]

    def turn_for(self, user: str, session: str, agent: str) -> str | None:
        """The open turn of an armed ``agent`` of this session, else None."""
        with self._lock:
            cur = self._open.get((user, session))
            return cur[0] if cur is not None and cur[1][agent] > 0 else None


async def turns_route(request: Request) -> Response:
    """``POST /coach/turns`` (only routed when the app has a turn secret)."""
    state = request.app.state.proxy
    given = request.headers.get(CONTROL_TOKEN_HEADER)
    if given is None:
        raise AuthenticationError(
            f"missing {CONTROL_TOKEN_HEADER}: turn changes must be signed with the data "
            "directory's secret (proxy.turn_control_token)"
        )
    if not hmac.compare_digest(given.encode(), state.turn_token.encode()):
        raise AuthenticationError(
            f"invalid {CONTROL_TOKEN_HEADER}: the proxy uses another secret (another data "
            "directory or COACH_MCP_SECRET)"
        )
    body = await request.body()
    try:
        changes = _Changes.model_validate_json(body).changes
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise InvalidRequestError(
            f"invalid turn changes ({problems}); send "
            '{"changes": [{"op", "user", "session", "turn", "agents"}]}'
        ) from None
    for change in changes:
        state.turns.apply(change)
    return JSONResponse({"applied": len(changes)})
