"""The supervisor: one coaching turn through six agents (docs/architecture.md "One coaching turn, as data").

``Supervisor.run_turn(user, session, text)``:

1. deterministic safety screen; tier 3 => the crisis response replaces everything, no agent runs;
   tier 2 => the support response is the first reply (no Coach), the rest runs in "pause" mode;
   the Coach's and Stability's risk assessments may raise the tier, never lower it
   (:mod:`launcher.pipeline._model_raise`): an accepted Coach raise to 3 shows the crisis response instead of
   its reply and stops the turn's coaching, to 2 the support response; an accepted Stability raise
   (judged after the join) replaces the synthesis with the crisis or support response;
2. ``Blackboard.begin_turn`` (turn id, Shadow barrier opened); the user message is stored;
3. one context pack per agent (profile + recent history + relevant entries, shared part first and
   byte-identical, agent part last), cut to the agent's ``context_budget_tokens``;
4. Coach + Shadow, Persona, Plasticity, Stability run concurrently (anyio task group), each with its
   own deadline and one retry on a transient failure; the Coach's reply is delivered (callback) the
   moment its ``write_coach`` call succeeds, checked for blocked moves first;
   Pineal's process is started (connected) once the specialists are up, while they wait on the model;
   :meth:`Supervisor.prewarm` starts a session's processes when it opens (``coach chat`` does);
5. Pineal starts only when the sequencer reports Shadow written AND the others are done or past their
   deadline (``Blackboard.collect``); without Shadow no synthesis model runs (deterministic fallback);
6. the synthesis is validated (``validate_synthesis`` + blocked moves on the final text); a rejected
   or missing synthesis is repaired once by Pineal, then replaced by ``fallback_synthesis(brief)``;
7. delivery, history and the ``TurnRecord`` are written to the blackboard.

A failing, hanging or crashing agent never stops the turn: the user still gets a Coach reply (a
deterministic fallback if the Coach failed) and a synthesis marked ``degraded`` naming what was missing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from blackboard import AGENT_ORDER, Blackboard, check_turn_text
from launcher.agents._spec_view import view_of
from launcher.pipeline._agent_task import prestart_agent
from launcher.pipeline._reply_stream import ReplyEvent
from launcher.pipeline._screen import SafetyScreen, ScreenOutcome
from launcher.pipeline._turn_scope import TurnDirectory
from launcher.pipeline._turn_status import AgentStatus, TurnResult
from launcher.pipeline.turn import Turn, _invocation
from launcher.runner._agent_runner import AgentInvocation, AgentRunner
from launcher.runner._process_pool import POOL_USER, new_pool_session

__all__ = [
    "AgentStatus",
    "ScreenOutcome",
    "Supervisor",
    "SupervisorSettings",
    "TurnResult",
    "pool_invocations",
]

log = logging.getLogger(__name__)

ScreenFn = Callable[[str, Mapping[str, Any] | None], ScreenOutcome]
"""``(message, the session's safety state after its previous message or None) -> ScreenOutcome``
(:class:`launcher.pipeline._screen.SafetyScreen` is the real one)."""


@dataclass(frozen=True)
class SupervisorSettings:
    """Supervisor knobs. Times in seconds.

    Attributes:
        history_turns: earlier turns of the session put in the context packs.
        collect_grace_s: how long the barrier check waits after the agents are done (they are, so this
            only absorbs the sequencer's lock latency).
        pineal_min_s: a repair is not attempted with less than this left of Pineal's deadline.
        coach_head_start_s: the specialists start once the Coach's process is up and prompted, or
            after this many seconds, whichever comes first ("Coach first": starting six cold Claude
            Code processes at once on a small machine delays the Coach's first token by seconds; a
            warm Coach is up in milliseconds, so warm turns lose nothing). 0 = all start together.
        coach_head_start_until: what the specialists wait for (at most ``coach_head_start_s``):
            ``"started"`` (the Coach's process is up and prompted) or ``"first_token"`` (the Coach's
            first token arrived, or it ended). ``"first_token"`` is for a model server that serves requests
            one at a time in arrival order (``coach demo``'s one-slot llama-server): there a specialist's
            request queued first delays the Coach's reply by its whole prefill, and waiting costs nothing
            because the server could not serve both at once anyway.
        sequential: benchmarks only: run the agents one after another (each deadline counted from its
            own start) to measure what parallel dispatch saves.
        pineal_prefill: send Pineal's shared context ahead while the specialists work
            (:mod:`launcher.pipeline._pineal_prefill`); off to measure what it saves, and for a
            one-slot model server (``coach demo``), where it cannot overlap the specialists.
    """

    history_turns: int = 6
    collect_grace_s: float = 0.05
    pineal_min_s: float = 1.0
    coach_head_start_s: float = 2.0
    coach_head_start_until: Literal["started", "first_token"] = "started"
    sequential: bool = False
    pineal_prefill: bool = True


def _safe_status(cb: Callable[[AgentStatus], None] | None) -> Callable[[AgentStatus], None] | None:
    """Wrap a status callback so a broken display never stops a turn."""
    if cb is None:
        return None

    def safe(status: AgentStatus) -> None:
        try:
            cb(status)
        except Exception:
            log.exception("on_status callback failed")

    return safe


class Supervisor:
    """Runs coaching turns. One instance serves many users and sessions concurrently.

    Args:
        board: the blackboard facade (its ``store`` is used for the supervisor's own entries).
        runner: the agent runner (``ClaudeAgentRunner`` or a test double at that boundary).
        agents: returns the current agent specs by name (re-read every turn: hot reload).
        screen: the deterministic safety screen (see :data:`ScreenFn`); default ``SafetyScreen()``.
        directory: the turn directory shared with the in-process MCP server (warm processes).
        settings: :class:`SupervisorSettings`.
    """

    def __init__(
        self,
        board: Blackboard,
        runner: AgentRunner,
        agents: Callable[[], Mapping[str, Any]],
        *,
        screen: ScreenFn | None = None,
        directory: TurnDirectory | None = None,
        settings: SupervisorSettings | None = None,
    ) -> None:
        self.board = board
        self.runner = runner
        self._agents = agents
        self._screen: ScreenFn = screen or SafetyScreen()
        self.directory = directory or TurnDirectory()
        self.settings = settings or SupervisorSettings()
        self._session_locks: dict[tuple[str, str], anyio.Lock] = {}
        # One thread for every screening: the screen's encoder keeps its scratch memory per thread (a new
        # thread would allocate and fault it in again, which triples a short message's time), and the
        # event loop goes on serving the other sessions' streams and tool calls meanwhile
        self._screen_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coach-safety-screen")

    async def screen(self, text: str, state: Mapping[str, Any] | None) -> ScreenOutcome:
        """The safety screen's verdict for ``text`` after the session's ``state`` (see :data:`ScreenFn`),
        computed on the supervisor's screen thread (one thread; screenings queue there in order) while the
        event loop runs on. Raises what the screen raises."""
        return await asyncio.get_running_loop().run_in_executor(
            self._screen_thread, self._screen, text, state
        )

    async def warm_up(self) -> None:
        """Pay this process's one-time costs of a turn now, off any turn's critical path: the safety
        screen's first call (its encoder's lazy parts and scratch memory, about 0.5 s), on the thread
        every turn's screening uses (:meth:`screen`). Never raises."""
        try:
            await self.screen(
                "I keep planning to exercise more, but by the evening I feel I am letting myself down.", None
            )
        except Exception:
            log.exception("warm-up of the safety screen failed")

    async def prewarm(self, user: str, session: str) -> list[str]:
        """Start the session's agent processes now (Coach first, Pineal last), while the user types, so
        the session's first :meth:`run_turn` skips process start-up. Only free slots of the runner's
        warm-process limit are used (no other session's process is evicted); at most two start at once
        (the processes' start-up is CPU-bound). Returns the agents whose process was started; a runner
        without ``prestart`` or with one-shot processes starts none. Never raises for agent processes;
        safe to cancel (a process being started is stopped) and to run alongside :meth:`run_turn` (a
        run waits for its agent's process being started instead of starting a second one).
        """
        views = {name: view_of(spec) for name, spec in self._agents().items()}
        order = [n for n in AGENT_ORDER if n in views]
        started: list[str] = []
        await self.warm_up()
        limiter = anyio.CapacityLimiter(2)

        async def one(name: str) -> None:
            async with limiter:
                v = views[name]
                if await prestart_agent(
                    self.runner, _invocation(v, user, session, ""), evict=False, limit_s=v.deadline_s
                ):
                    started.append(name)

        async with anyio.create_task_group() as tg:
            for name in order:
                tg.start_soon(one, name)
        return [n for n in order if n in started]

    async def run_turn(
        self,
        user: str,
        session: str,
        text: str,
        *,
        on_coach_reply: Callable[[str], None] | None = None,
        on_status: Callable[[AgentStatus], None] | None = None,
        on_reply_stream: Callable[[ReplyEvent], None] | None = None,
        hooks: Any = None,
    ) -> TurnResult:
        """Run one turn; see the module docstring. Returns the :class:`TurnResult`.

        ``hooks``: a :class:`launcher.scaleout.hooks.TurnHooks` when the turn is a job that may be a
        redelivery (``coach worker``): resume an already begun turn without running again the agents
        whose entries are written, record the turn id, check the worker's lease before each dispatch.

        ``on_coach_reply(text)`` is called once, as soon as the reply exists (before the synthesis);
        ``on_status(status)`` on every agent status change. Turns of one session run one at a time (in
        call order); different sessions run concurrently. Raises ``blackboard`` errors only when the
        blackboard itself is unusable (bad ids, store unavailable); agent failures never raise.
        ``on_reply_stream(event)`` shows the Coach's reply while it is written (``delta`` / ``retract`` /
        ``end``; :mod:`launcher.pipeline._reply_stream` says what is shown and when it is taken back).
        A ``text`` that is not UTF-8 (a lone surrogate) or holds a NUL raises ``InvalidValueError`` before
        anything runs (``blackboard.check_turn_text``).
        """
        check_turn_text(text)
        lock = self._session_locks.setdefault((user, session), anyio.Lock())
        async with lock:
            return await self._run_turn(
                user, session, text, on_coach_reply, _safe_status(on_status), on_reply_stream, hooks
            )

    async def _run_turn(
        self,
        user: str,
        session: str,
        text: str,
        on_coach_reply: Callable[[str], None] | None,
        on_status: Callable[[AgentStatus], None] | None,
        on_reply_stream: Callable[[ReplyEvent], None] | None = None,
        hooks: Any = None,
    ) -> TurnResult:
        return await Turn(self, user, session, text, on_coach_reply, on_status, on_reply_stream, hooks).run()


def pool_invocations(agents: Mapping[str, Any]) -> list[AgentInvocation]:
    """One invocation per agent (its settings only; no prompt) for ``ClaudeAgentRunner.fill_pool``
    (:mod:`launcher.runner._process_pool`), from the supervisor's agent specs (``Supervisor._agents()``),
    in roster order (the Coach first, Pineal last), each with the pool user and a pool session of its own."""
    views = {name: view_of(spec) for name, spec in agents.items()}
    order = [n for n in AGENT_ORDER if n in views]
    return [_invocation(views[n], POOL_USER, new_pool_session(), "") for n in order]
