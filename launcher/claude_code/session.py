"""Session mode of ``coach mcp``: the stdio server Claude Code starts from the repository's ``.mcp.json``
(project) or the plugin manifest, for one person working inside an interactive Claude Code session.

Turned on by ``COACH_MCP_SESSION=1`` (set by ``.claude-plugin/coach-mcp.sh``). The scope is fixed at
start: user ``COACH_USER`` (default: the login name, else ``me``) and session ``COACH_SESSION`` (default
``claude-code``), or ``--user`` / ``--session``; the model never passes them. Same tools as the
supervisor's server, plus ``coach_turn`` and ``coach_synthesis`` (see :mod:`launcher.claude_code._pipeline_tool`),
with these turns:

* ``coach_turn`` starts a whole pipeline turn (the supervisor allocates the turn) and returns the first
  reply; the turn goes on in the server and ``coach_synthesis(turn)`` returns its synthesis;
* a ``write_<agent>`` call from a subagent used on its own (e.g. the Stability subagent rating a plan)
  acts as that agent and goes to the session's *manual turn*: the first such write opens a new turn
  (``Blackboard.begin_turn``); later writes of other agents join it; a second write by the same agent,
  or any write after a ``coach_turn``, opens the next one. Each write is validated against that agent's
  schema exactly as in the pipeline (Stability's gate included); ``collect_turn`` and
  ``write_synthesis`` work on the manual turn the same way;
* ``read_entry("shadow")`` reads the session's latest turn (any turn by key); ``get_session_history``
  lists every turn, the latest included (what ``/coach-board`` shows).

Idle close: with ``[agents] idle_close_s`` > 0 (default 1800; as in ``coach chat`` and ``coach serve``),
a session with no tool call and no running turn for that long is closed (``launcher.pipeline.sessions``: compacted
into the profile, its warm agent processes stopped). The session id is fixed at start, so the next
``coach_turn`` (or standalone write) after a close continues in a new session ``<session>-2`` (``-3``, ...;
the first of these not closed, so a restarted server continues the same one), whose agents start from
the updated profile. The same happens when the configured session was closed before the server started.

Which subagent may call which write tool is enforced by Claude Code (each agent file's ``tools:``); the
server checks the schema and the create-only rule (one entry per agent per turn).

The parent session's Claude Code variables (endpoint, provider, credentials) are removed from this
process's environment before any agent starts (:func:`drop_parent_session_env`).

Data and pipeline configuration: ``launcher.config.load_config`` (``COACH_CONFIG`` or ``./coach.toml``,
``COACH_DATA_DIR``, ``COACH_UPSTREAM_URL``), relative to the server's working directory (the project
root; for a plugin, the user's project); ``--data-dir`` wins over ``[data] dir``. A relative
``[agents] dir`` that does not exist there is read from the repository root (``COACH_REPO_ROOT``, set
by the launcher script), so the plugin's pipeline runs the plugin's own agent files.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from blackboard import Blackboard, SessionClosedError, turn_entry_key
from launcher.claude_code._pipeline_tool import (
    HostedPipeline,
    PipelineRun,
    TurnSummary,
    coach_synthesis_spec,
    coach_turn_spec,
)
from launcher.claude_code._session_idle import SessionIdleClose
from launcher.claude_code._turn_jobs import TurnJobs
from mcp_server import (
    SERVER_NAME,
    McpConfig,
    McpConfigError,
    Scope,
    ScopeSource,
    ToolContext,
    ToolSpec,
    all_specs,
    build_tool,
    map_blackboard_error,
)

__all__ = [
    "DEFAULT_SESSION",
    "ENV_REPO_ROOT",
    "ENV_SESSION_MODE",
    "PARENT_SESSION_ENV_PREFIXES",
    "SessionTurns",
    "build_session_server",
    "drop_parent_session_env",
    "run_session",
    "session_identity",
    "session_mode_requested",
    "stored_summary",
]

log = logging.getLogger(__name__)

#: Set to 1 (by ``.claude-plugin/coach-mcp.sh``) to serve stdio in session mode.
ENV_SESSION_MODE = "COACH_MCP_SESSION"
#: The repository (or installed plugin) root, set by ``.claude-plugin/coach-mcp.sh``.
ENV_REPO_ROOT = "COACH_REPO_ROOT"
DEFAULT_SESSION = "claude-code"
_FALLBACK_USER = "me"

_INSTRUCTIONS = (
    "coachboard blackboard for this user's coaching session (the connection fixes user and session; never "
    "pass them). coach_turn starts a coaching turn with the user's message and returns the Coach's reply "
    "at once; coach_synthesis with its turn id returns the synthesis when the specialists are done. Each coaching subagent writes its output with its own write_<agent> tool "
    "(write_synthesis for Pineal), passing exactly the fields of its input schema. Read with read_entry, "
    "list_entries, get_profile and get_session_history. Errors list each problem: fix those and call again."
)

_PART = re.compile(r"[^A-Za-z0-9_.-]+")
#: Most sessions tried when looking for the next open one after a close (``<session>-2`` ...).
_MAX_ROLLOVER = 10000


#: Variables of the parent Claude Code session that must not reach the pipeline's agent processes: they
#: would send the agents to another endpoint or provider (Bedrock, Vertex) or hand the user's own
#: credentials (``ANTHROPIC_AUTH_TOKEN``, ``CLAUDE_CODE_OAUTH_TOKEN``) to the local proxy. The runner
#: sets what the agents need (proxy URL, key, headers, plain-request settings) itself.
PARENT_SESSION_ENV_PREFIXES: tuple[str, ...] = (
    "ANTHROPIC_",
    "CLAUDE_CODE_",
    "CLAUDECODE",
    "CLAUDE_AGENT_SDK",
    "CLAUDE_CONFIG_DIR",
)


def drop_parent_session_env(env: MutableMapping[str, str]) -> list[str]:
    """Remove the parent Claude Code session's variables (:data:`PARENT_SESSION_ENV_PREFIXES`) from
    ``env`` in place. Returns the removed names, sorted (names only: values may be secrets)."""
    names = sorted(k for k in env if k.startswith(PARENT_SESSION_ENV_PREFIXES))
    for name in names:
        del env[name]
    return names


def session_mode_requested(env: Mapping[str, str] | None = None) -> bool:
    """True when ``COACH_MCP_SESSION`` is set to a true value (1, true, yes, on)."""
    value = (os.environ if env is None else env).get(ENV_SESSION_MODE, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def _default_user() -> str:
    try:
        name = getpass.getuser()
    except (OSError, KeyError):
        return _FALLBACK_USER
    cleaned = _PART.sub("-", name).strip(".-")[:64]
    return cleaned or _FALLBACK_USER


def session_identity(
    env: Mapping[str, str] | None = None, *, user: str | None = None, session: str | None = None
) -> Scope:
    """The session server's scope: ``--user``/``--session``, else ``COACH_USER``/``COACH_SESSION``, else
    the login name (letters, digits, ``_.-`` kept) and :data:`DEFAULT_SESSION`.

    Raises:
        ScopeError: a given user or session is not a valid key part (1-64 of ``A-Za-z0-9_.-``).
    """
    e = os.environ if env is None else env
    return Scope.create(
        user or e.get("COACH_USER") or _default_user(),
        session or e.get("COACH_SESSION") or DEFAULT_SESSION,
    )


class SessionTurns:
    """The session and the turns the session server's tools act on (see the module docstring).
    Thread-safe.

    ``session`` is the current session: the configured one (``base_session``) until it is found closed
    by :meth:`open_session`, then ``<base>-2``, ``<base>-3``, ... ``on_activity()`` is called on every
    tool call (the idle clock)."""

    def __init__(
        self, board: Blackboard, user: str, session: str, *, on_activity: Callable[[], None] | None = None
    ) -> None:
        self.board = board
        self.user = user
        self.base_session = session
        self.session = session
        self.on_activity = on_activity
        #: the idle close (``launcher.pipeline.sessions.IdleSessions``) when ``idle_close_s`` > 0, else None
        self.idle: Any = None
        self._lock = threading.Lock()
        self._manual: str | None = None
        self._generation = 1

    def touch(self) -> None:
        """Record activity (a tool call) for the idle close."""
        if self.on_activity is not None:
            self.on_activity()

    def open_session(self) -> str:
        """The session a new turn goes to: the current one, or, when it was closed (idle close, ``coach
        session close``), the next of ``<base>-2``, ``<base>-3``, ... that is not closed (a new session
        starts from the user's profile). Raises blackboard errors when the store is unusable."""
        with self._lock:
            return self._open_session()

    def _open_session(self) -> str:
        for _ in range(_MAX_ROLLOVER):
            try:
                self.board.check_session_open(self.user, self.session)
                return self.session
            except SessionClosedError:
                closed = self.session
                self._generation += 1
                self.session = f"{self.base_session[:56]}-{self._generation}"
                self._manual = None
                log.info("session %s was closed; new turns go to session %s", closed, self.session)
        raise SessionClosedError(self.user, self.session, time.time())

    @property
    def manual_turn(self) -> str | None:
        """The open manual turn, or None before the first standalone write (and after a coach_turn)."""
        return self._manual

    def latest(self) -> str | None:
        """The session's most recent turn id (pipeline or manual), or None for a new session."""
        prefix = f"users/{self.user}/sessions/{self.session}/turns/"
        best: tuple[int, str] | None = None
        for entry in self.board.store.list(prefix):
            if not entry.key.endswith("/meta"):
                continue
            turn = entry.key[len(prefix) :].split("/", 1)[0]
            index = entry.value.get("index")
            rank = int(index) if isinstance(index, int) else -1
            if best is None or (rank, turn) > best:
                best = (rank, turn)
        return best[1] if best else None

    def for_agent(self, agent: str) -> str:
        """The turn ``agent``'s write goes to: the manual turn, or a new one if ``agent`` already wrote
        there (or none is open). Raises blackboard errors when the store is unusable."""
        with self._lock:
            self._open_session()
            turn = self._manual
            if (
                turn is not None
                and self.board.store.read(turn_entry_key(self.user, self.session, turn, agent)) is None
            ):
                return turn
            turn = self.board.begin_turn(self.user, self.session)
            self._manual = turn
            log.info("session %s: manual turn %s opened for %s", self.session, turn, agent)
            return turn

    def pipeline_ran(self, summary: TurnSummary | None = None) -> None:
        """After a coach_turn began: the next standalone write opens a new turn."""
        with self._lock:
            self._manual = None


class _AgentScope:
    """Scope of one agent's tools: this session, that agent, its manual turn (allocated on demand)."""

    def __init__(self, turns: SessionTurns, agent: str) -> None:
        self._turns = turns
        self._agent = agent

    def scope_for(self, headers: Mapping[str, str] | None) -> Scope:
        t = self._turns
        turn = t.for_agent(self._agent)  # may move to a new session (the old one was closed)
        t.touch()
        return Scope.create(t.user, t.session, turn, self._agent)


class _ReaderScope:
    """Scope of the read tools and coach_turn: this session, no agent, and its latest turn (so that
    ``read_entry("shadow")`` reads the latest turn) or no turn (``get_session_history`` then includes
    the latest turn instead of treating it as the current one)."""

    def __init__(self, turns: SessionTurns, *, with_turn: bool) -> None:
        self._turns = turns
        self._with_turn = with_turn

    def scope_for(self, headers: Mapping[str, str] | None) -> Scope:
        t = self._turns
        t.touch()
        return Scope.create(t.user, t.session, t.latest() if self._with_turn else None, None)


def _scope_source(spec: ToolSpec, turns: SessionTurns) -> ScopeSource:
    if spec.agents is not None and len(spec.agents) == 1:
        return _AgentScope(turns, next(iter(spec.agents)))
    return _ReaderScope(turns, with_turn=spec.name == "read_entry")


def stored_summary(board: Blackboard, user: str, session: str, turn: str) -> TurnSummary | None:
    """A finished turn read back from the blackboard (its ``delivery`` entry, and the ``message`` entry's
    crisis tier), for ``coach_synthesis`` on a turn this server holds no job for; None when the turn has
    no delivery (unknown, or still running elsewhere). Raises blackboard errors (bad ids, store)."""
    delivery = board.store.read(turn_entry_key(user, session, turn, "delivery"))
    if delivery is None:
        return None
    message = board.store.read(turn_entry_key(user, session, turn, "message"))
    tier = message.value.get("crisis_tier") if message is not None else 0
    v = delivery.value
    return TurnSummary(
        turn=turn,
        coach_reply=str(v.get("coach_reply", "")),
        synthesis=str(v.get("synthesis", "")),
        synthesis_source=str(v.get("synthesis_source", "")),
        degraded=bool(v.get("degraded")),
        crisis_tier=int(tier) if isinstance(tier, int) else 0,
        missing=list(v.get("missing") or []),
        agents=dict(v.get("agents") or {}),
    )


def build_session_server(
    board: Blackboard,
    identity: Scope,
    pipeline: PipelineRun,
    config: McpConfig | None = None,
    *,
    lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager[Any]] | None = None,
    idle_close_s: float = 0.0,
    close_session: Callable[[str, str], Awaitable[Any]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[MCPServer, SessionTurns]:
    """Build the session-mode server (named ``coachboard``, like the supervisor's).

    Args:
        board: the blackboard (the pipeline writes to the same one).
        identity: user and session (:func:`session_identity`); turn and agent are ignored.
        pipeline: runs ``coach_turn`` (:class:`launcher.claude_code._pipeline_tool.HostedPipeline` for real).
        config: limits (``McpConfig()`` when None).
        lifespan: the pipeline's lifespan (``HostedPipeline.lifespan``: hosts the warm pipeline); the
            server's lifespan hosts it, then the background turns (stopped first on shutdown), then the
            idle check.
        idle_close_s: close the session after this many seconds without a tool call or a running turn
            (``[agents] idle_close_s``; 0 = never).
        close_session: ``await close_session(user, session)`` closes a session (default
            ``launcher.pipeline.sessions.close_session`` on ``board``; ``HostedPipeline.close_session`` also stops
            the session's warm agent processes).
        clock: the idle clock (seconds; tests pass a fake one).

    Returns:
        ``(server, turns)``: the server has the 11 blackboard tools plus ``coach_turn`` and
        ``coach_synthesis``; ``turns`` is its :class:`SessionTurns`.
    """
    cfg = config or McpConfig()
    turns = SessionTurns(board, identity.user, identity.session)
    idle: SessionIdleClose | None = None
    if idle_close_s > 0:
        if close_session is None:
            from launcher.pipeline.sessions import close_session as close_on_board

            close_session = partial(close_on_board, board)
        idle = SessionIdleClose(turns, close_session, idle_close_s, clock)
        turns.on_activity = idle.touch
        turns.idle = idle.idle
    jobs = TurnJobs(pipeline, on_busy=idle.set_busy if idle is not None else None)
    specs = [
        *all_specs(ToolContext(board=board, config=cfg)),
        coach_turn_spec(jobs, open_session=turns.open_session, on_started=turns.pipeline_ran),
        coach_synthesis_spec(jobs, stored=partial(stored_summary, board)),
    ]
    tools = [
        build_tool(
            s,
            _scope_source(s, turns),
            max_argument_bytes=cfg.max_argument_bytes,
            map_error=map_blackboard_error,
        )
        for s in specs
    ]

    @contextlib.asynccontextmanager
    async def server_lifespan(server: Any) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if lifespan is not None:
                await stack.enter_async_context(lifespan(server))
            await stack.enter_async_context(jobs.lifespan(server))
            async with anyio.create_task_group() as tg:
                if idle is not None:
                    from launcher.pipeline.sessions import idle_check_interval

                    tg.start_soon(idle.idle.run, idle_check_interval(idle_close_s))
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()

    server: MCPServer = MCPServer(
        SERVER_NAME,
        instructions=_INSTRUCTIONS,
        version="0.1.0",
        tools=tools,
        log_level="WARNING",
        lifespan=server_lifespan,
    )
    return server, turns


def _with_agents_dir(config: Any, repo_root: str | None) -> Any:
    """Loaded as a plugin, the server runs in the user's project, which has no ``agents/``: a relative
    ``[agents] dir`` missing there is taken from the repository (the plugin) instead."""
    agents_dir = Path(config.agents.dir)
    if agents_dir.is_absolute() or agents_dir.is_dir() or not repo_root:
        return config
    candidate = Path(repo_root) / agents_dir
    if not candidate.is_dir():
        return config
    return config.model_copy(update={"agents": config.agents.model_copy(update={"dir": candidate})})


def run_session(
    *,
    data_dir: str | None = None,
    config: Path | None = None,
    user: str | None = None,
    session: str | None = None,
    broker_frontend: Callable[[Any, str], Any] | None = None,
) -> None:
    """Serve session mode over stdio until Claude Code closes the pipe (blocking).

    With ``[broker] url`` (or ``COACH_BROKER_URL``) and ``broker_frontend`` (``coach mcp`` passes
    ``launcher.scaleout.frontend.BrokerFrontend``), ``coach_turn`` publishes each turn as a job for
    ``coach worker`` and follows it (``launcher.claude_code._broker_pipeline``) instead of running the
    agents in this process.

    Raises:
        McpConfigError: the configuration file is invalid (the message lists each problem), or the data
            directory or its blackboard cannot be used (code ``data_dir_unusable`` / ``store_unavailable``).
        ScopeError: an invalid user or session id.
    """
    from launcher.config import ConfigError, load_config
    from launcher.errors import DataDirError
    from launcher.pipeline._data_dir import open_board

    try:
        coach_config: Any = load_config(config)
    except ConfigError as exc:
        raise McpConfigError(f"session mode: {exc}") from exc
    if data_dir:
        coach_config = coach_config.model_copy(
            update={"data": coach_config.data.model_copy(update={"dir": Path(data_dir)})}
        )
    coach_config = _with_agents_dir(coach_config, os.environ.get(ENV_REPO_ROOT))
    directory = Path(coach_config.data.dir)
    identity = session_identity(user=user, session=session)
    try:  # the same check and message as coach run / chat (launcher.pipeline._data_dir)
        board = open_board(directory, thresholds=coach_config.thresholds, **coach_config.data.board_options())
    except DataDirError as exc:
        raise McpConfigError(f"session mode: {exc}", code=exc.code) from None
    dropped = drop_parent_session_env(os.environ)
    if dropped:
        log.info("not passed to the pipeline's agents: %s", ", ".join(dropped))
    hosted = HostedPipeline(coach_config)
    pipeline: Any = hosted
    if coach_config.broker.url and broker_frontend is not None:
        from launcher.claude_code._broker_pipeline import BrokerPipeline

        pipeline = BrokerPipeline(board, broker_frontend(coach_config, coach_config.broker.url))
        log.info("session mode: turns published as jobs for coach worker")
    server, turns = build_session_server(
        board,
        identity,
        pipeline,
        coach_config.mcp,
        lifespan=pipeline.lifespan,
        idle_close_s=coach_config.agents.idle_close_s,
        close_session=partial(pipeline.close_session, board),
    )
    if pipeline is hosted:
        # the session's agent processes start with the server, so the first /coach turn skips start-up
        # (on the broker they live in the workers)
        hosted.prewarm_for = lambda: (turns.user, turns.open_session())
    log.info("session mode: user=%s session=%s data=%s", identity.user, identity.session, directory)
    try:
        server.run("stdio")
    finally:
        board.close()
