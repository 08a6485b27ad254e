"""The supervisor: one coaching turn through six agents (DESIGN.md "One coaching turn, as data").

``Supervisor.run_turn(user, session, text)``:

1. deterministic safety screen; tier 3 => the crisis response replaces everything, no agent runs;
   tier 2 => the support response is the first reply (no Coach), the rest runs in "pause" mode;
   the Coach's and Stability's risk assessments may raise the tier, never lower it
   (:mod:`launcher._model_raise`): an accepted Coach raise to 3 shows the crisis response instead of
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

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import anyio
import anyio.to_thread

from blackboard import (
    Blackboard,
    Brief,
    SynthesisOutput,
    TurnRecord,
    WaitResult,
    build_brief,
    fallback_synthesis,
    turn_entry_key,
    validate_synthesis,
)
from launcher._agent_runner import AgentInvocation, AgentRunner, ToolCallRecord
from launcher._agent_task import MIN_RETRY_S, run_agent
from launcher._context_pack import AgentPackSpec, PackInputs, build_followups, build_packs
from launcher._fallbacks import FALLBACK_COACH_REPLY, SAFE_SYNTHESIS_TEXT, blocked_problems, degraded_note
from launcher._model_raise import StopCoaching, TurnSafety, raise_fn_of, risk_of
from launcher._pineal_prefill import prefill_pineal
from launcher._reply_stream import ReplyEvent, ReplyStream, add_stability_blocks, close_stream, open_stream
from launcher._screen import SafetyScreen, ScreenOutcome
from launcher._spec_view import AgentView, view_of
from launcher._turn_io import SessionContext, load_context, write_entry
from launcher._turn_scope import TurnDirectory
from launcher._turn_status import AGENT_ORDER, AgentStatus, TurnResult

__all__ = [
    "AgentStatus",
    "ScreenOutcome",
    "Supervisor",
    "SupervisorSettings",
    "TurnResult",
]

log = logging.getLogger(__name__)

SPECIALISTS: tuple[str, ...] = ("shadow", "persona", "plasticity", "stability")
EARLY: tuple[str, ...] = ("coach",)
#: Synthesis sources where a safety response replaced the synthesis (no Pineal, no degraded note).
SAFETY_SOURCES: frozenset[str] = frozenset({"crisis", "support"})


ScreenFn = Callable[[str, Mapping[str, Any] | None], ScreenOutcome]
"""``(message, the session's safety state after its previous message or None) -> ScreenOutcome``
(:class:`launcher._screen.SafetyScreen` is the real one)."""


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
            (:mod:`launcher._pineal_prefill`); off only to measure what it saves.
    """

    history_turns: int = 6
    collect_grace_s: float = 0.05
    pineal_min_s: float = 1.0
    coach_head_start_s: float = 2.0
    coach_head_start_until: Literal["started", "first_token"] = "started"
    sequential: bool = False
    pineal_prefill: bool = True


def _tail(view: AgentView, turn: str, extra: str = "") -> str:
    lines = [
        "# Your task",
        f"You are the {view.name} agent (turn {turn}). Use the context above.",
        f"Call {view.output_tool} exactly once with your whole output for this turn, then stop.",
        "Never pass user, session or turn ids: the connection fixes them.",
    ]
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def _invocation(v: AgentView, user: str, session: str, turn: str, prompt: str = "", followup: str = "") -> AgentInvocation:
    """The runner's invocation for agent view ``v`` (empty prompts: a prestart, which only connects)."""
    return AgentInvocation(
        agent=v.name, user=user, session=session, turn=turn, system_prompt=v.prompt, model=v.model_alias,
        tools=v.tools, max_output_tokens=v.max_output_tokens, context_budget_tokens=v.context_budget_tokens,
        prompt=prompt, followup=followup, tool_timeout_s=v.deadline_s, max_turns=v.max_turns,
    )


async def _prestart(runner: AgentRunner, inv: AgentInvocation, *, evict: bool, limit_s: float) -> bool:
    """``runner.prestart(inv)`` if the runner has it (test doubles may not), bounded by ``limit_s``;
    never raises for the process (a failed prestart only means the run starts its own process)."""
    start = getattr(runner, "prestart", None)
    if start is None:
        return False
    with anyio.move_on_after(limit_s):
        try:
            return bool(await start(inv, evict=evict))
        except Exception:
            log.exception("prestart of agent %s failed", inv.agent)
    return False


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


def _checked_synthesis(
    synthesis: SynthesisOutput | None, source: str, brief: Brief, earlier_blocks: Sequence[Brief]
) -> tuple[SynthesisOutput, str]:
    """The synthesis to show: the deterministic fallback when there is none or it names a blocked move
    (then the safe text if even the fallback does). A safety response (``crisis``/``support``) is kept."""
    if synthesis is not None and source in SAFETY_SOURCES:
        return synthesis, source
    if synthesis is None:
        synthesis, source = fallback_synthesis(brief), "fallback"
    if blocked_problems(synthesis.text, brief, *earlier_blocks) and source != "fallback":
        log.warning("synthesis named a blocked move after validation; using the fallback")
        synthesis, source = fallback_synthesis(brief), "fallback"
    if blocked_problems(synthesis.text, brief, *earlier_blocks):
        synthesis = synthesis.model_copy(update={"text": SAFE_SYNTHESIS_TEXT})
    return synthesis, source


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

    async def warm_up(self) -> None:
        """Pay this process's one-time costs of a turn now, off any turn's critical path: the safety
        screen's first call (its encoder's lazy parts, about 0.5 s). Blocks the event loop meanwhile, as
        a turn's screening does. Never raises."""
        try:  # on this thread, as run_turn calls it (a worker thread would warm its own state only)
            self._screen("I keep planning to exercise more, but by the evening I feel I am letting myself down.", None)
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
        order = [n for n in (*EARLY, *SPECIALISTS, "pineal") if n in views]
        started: list[str] = []
        await self.warm_up()
        limiter = anyio.CapacityLimiter(2)

        async def one(name: str) -> None:
            async with limiter:
                v = views[name]
                if await _prestart(self.runner, _invocation(v, user, session, ""), evict=False, limit_s=v.deadline_s):
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
    ) -> TurnResult:
        """Run one turn; see the module docstring. Returns the :class:`TurnResult`.

        ``on_coach_reply(text)`` is called once, as soon as the reply exists (before the synthesis);
        ``on_status(status)`` on every agent status change. Turns of one session run one at a time (in
        call order); different sessions run concurrently. Raises ``blackboard`` errors only when the
        blackboard itself is unusable (bad ids, store unavailable); agent failures never raise.
        ``on_reply_stream(event)`` shows the Coach's reply while it is written (``delta`` / ``retract`` /
        ``end``; :mod:`launcher._reply_stream` says what is shown and when it is taken back).
        """
        lock = self._session_locks.setdefault((user, session), anyio.Lock())
        async with lock:
            return await self._run_turn(user, session, text, on_coach_reply, _safe_status(on_status),
                                        on_reply_stream)

    async def _run_turn(
        self,
        user: str,
        session: str,
        text: str,
        on_coach_reply: Callable[[str], None] | None,
        on_status: Callable[[AgentStatus], None] | None,
        on_reply_stream: Callable[[ReplyEvent], None] | None = None,
    ) -> TurnResult:
        t0 = time.monotonic()
        started_at = time.time()
        store = self.board.store
        views = {name: view_of(spec) for name, spec in self._agents().items()}
        ctx = await load_context(store, user, session, None, self.settings.history_turns)
        verdict = self._screen(text, ctx.safety_state)
        turn: str = await anyio.to_thread.run_sync(
            partial(self.board.begin_turn, user, session, crisis_tier=verdict.tier)
        )
        await write_entry(
            store, user, session, turn, "message",
            {"text": text, "crisis_tier": verdict.tier, "safety_reasons": list(verdict.reasons),
             "safety_state": verdict.state},
        )
        safety = TurnSafety(self.board, user, session, turn, text, verdict, raise_fn_of(self._screen))
        statuses = {n: AgentStatus(n) for n in AGENT_ORDER if n in views}

        delivered: dict[str, Any] = {}
        stream = open_stream(self.directory, user, session, turn, text, verdict.tier, t0, on_reply_stream)

        def deliver(reply: str, *, fallback: bool) -> None:
            if "reply" in delivered:
                return
            delivered.update(reply=reply, fallback=fallback, at=time.monotonic() - t0)
            if stream is not None:  # streamed words: completed, or retracted first when the reply differs
                stream.final(reply)
                delivered["first_words_at"] = stream.first_words_s
            if on_coach_reply:
                try:
                    on_coach_reply(reply)
                except Exception:  # a broken display must not stop the turn
                    log.exception("on_coach_reply callback failed")

        try:
            return await self._screened_turn(user, session, turn, text, views, statuses, ctx, safety, verdict,
                                             deliver, delivered, t0, started_at, on_status, stream)
        finally:
            close_stream(self.directory, user, session, turn, stream)

    async def _screened_turn(
        self, user: str, session: str, turn: str, text: str, views: Mapping[str, AgentView],
        statuses: dict[str, AgentStatus], ctx: SessionContext, safety: TurnSafety, verdict: ScreenOutcome,
        deliver: Callable[..., None], delivered: dict[str, Any], t0: float, started_at: float,
        on_status: Callable[[AgentStatus], None] | None, stream: ReplyStream | None,
    ) -> TurnResult:
        if verdict.tier >= 3:
            for st in statuses.values():
                st.status = "skipped"
            deliver(verdict.response or "", fallback=False)
            result = TurnResult(
                turn_id=turn, coach_reply=delivered["reply"], synthesis="", synthesis_source="crisis",
                degraded=False, crisis_tier=verdict.tier, agents=statuses, coach_reply_s=delivered["at"],
                coach_first_words_s=delivered.get("first_words_at"),
            )
            await self._finish(user, session, turn, result, [], None, started_at)
            return result

        if verdict.tier == 2:
            # Coaching pauses: the deterministic support response is the first reply; the specialists
            # and Pineal still run, in the brief's "pause" mode.
            deliver(verdict.response or "", fallback=False)
            if "coach" in statuses:
                statuses["coach"].status = "skipped"
        launch = [n for n in (*EARLY, *SPECIALISTS) if n in views and not (n == "coach" and verdict.tier == 2)]
        self.directory.open(user, session, turn, launch)
        try:
            await self.directory.synced()  # an external proxy knows the turn before the agents' first call
            return await self._agents_turn(
                user, session, turn, text, views, statuses, ctx, safety, launch, deliver, delivered,
                t0, started_at, on_status, stream,
            )
        finally:
            self.directory.close(user, session, turn)

    async def _agents_turn(
        self,
        user: str,
        session: str,
        turn: str,
        text: str,
        views: Mapping[str, AgentView],
        statuses: dict[str, AgentStatus],
        ctx: SessionContext,
        safety: TurnSafety,
        launch: list[str],
        deliver: Callable[..., None],
        delivered: dict[str, Any],
        t0: float,
        started_at: float,
        on_status: Callable[[AgentStatus], None] | None,
        stream: ReplyStream | None = None,
    ) -> TurnResult:
        # Moves blocked in earlier turns of the session stay blocked (checked on every final text).
        earlier_blocks = [build_brief({"stability": e}) for e in ctx.earlier_stability]
        if stream is not None:
            stream.add_blocks(*earlier_blocks)
        screened = safety.screened.tier
        safety_line = (
            f"Safety screen: tier {screened}. Pause coaching: reflect, ask directly about safety, offer resources."
            if screened == 2
            else ""
        )
        tails = {n: _tail(views[n], turn, safety_line) for n in views}
        packs = build_packs(
            PackInputs(message=text, profile=ctx.profile, history=ctx.history, entries=ctx.relevant),
            {n: AgentPackSpec(views[n].context_budget_tokens, tails[n]) for n in launch},
        )
        followups = build_followups(
            text, ctx.relevant, {n: tails[n] for n in launch}, min(views[n].context_budget_tokens for n in launch)
        )

        def invocation(name: str, prompt: str, followup: str) -> AgentInvocation:
            return _invocation(views[name], user, session, turn, prompt, followup)

        candidate: dict[str, str] = {}
        reply_ready = anyio.Event()

        def coach_tool(call: ToolCallRecord) -> None:
            if call.name != views["coach"].output_tool or not call.ok:
                return
            reply = str(call.input.get("reply", "")).strip()
            if reply:
                candidate.setdefault("reply", reply)
                reply_ready.set()

        stop = StopCoaching()

        async def deliver_coach_reply() -> None:
            """Deliver the Coach's reply the moment it is written, unless its risk assessment raised the
            tier to 2 or 3 (then the support or crisis response; at 3 the coaching stops), or it names a
            move blocked earlier in the session or by this turn's Stability entry (then the fallback)."""
            await reply_ready.wait()
            written = await anyio.to_thread.run_sync(self.board.store.read, turn_entry_key(user, session, turn, "coach"))
            response = await safety.raise_from("coach", risk_of(written.value if written else None))
            if response is not None:
                deliver(response, fallback=False)
                if safety.tier >= 3:
                    stop.stop()
                return
            reply = candidate.get("reply")
            if reply is None:
                deliver(FALLBACK_COACH_REPLY, fallback=True)
                return
            key = turn_entry_key(user, session, turn, "stability")
            current = await anyio.to_thread.run_sync(self.board.store.read, key)
            blocks = [*earlier_blocks, build_brief({"stability": current})] if current else earlier_blocks
            if blocked_problems(reply, *blocks):
                log.warning("coach reply named a blocked move; the fallback reply is shown instead")
                deliver(FALLBACK_COACH_REPLY, fallback=True)
            else:
                deliver(reply, fallback=False)

        coach_up = anyio.Event()
        coach_token = anyio.Event()
        if "coach" not in launch or self.settings.coach_head_start_s <= 0:
            coach_up.set()
            coach_token.set()
        head_start = coach_token if self.settings.coach_head_start_until == "first_token" else coach_up

        def coach_status(st: AgentStatus) -> None:
            if st.first_token_s is not None:
                coach_token.set()
            if on_status is not None:
                on_status(st)
        # Pineal's process is started once every specialist is up and prompted (not competing with their
        # start-up for the CPU), while they wait on the model: after the barrier only its query remains.
        not_up = {n for n in launch if n != "coach"}
        specialists_up = anyio.Event()

        def up(name: str) -> None:
            not_up.discard(name)
            if not not_up:
                specialists_up.set()

        async def prestart_pineal() -> None:
            with stop.scope("pineal"):
                await specialists_up.wait()
                v = views["pineal"]
                # bounded: a stuck start must not hold up the join for long (the run would start its own)
                await _prestart(self.runner, invocation("pineal", "", ""), evict=True, limit_s=min(v.deadline_s, 30.0))
                # its shared context computed by the model server while the specialists work (once per turn)
                shared = next(iter(packs.values())).shared if packs else ""
                if self.settings.pineal_prefill:
                    await prefill_pineal(self.runner, invocation("pineal", "", ""), shared, statuses, launch,
                                         SPECIALISTS)

        async def one(name: str) -> None:
            v = views[name]
            try:
                with anyio.CancelScope() if name == "coach" else stop.scope(name):  # a crisis stops the others
                    if name != "coach":
                        with anyio.move_on_after(self.settings.coach_head_start_s):
                            await head_start.wait()
                    await run_agent(
                        self.runner, invocation(name, packs[name].text, followups[name]), v.output_tool,
                        statuses[name], t0=t0,
                        deadline_at=(time.monotonic() if self.settings.sequential else t0) + v.deadline_s,
                        on_tool_result=coach_tool if name == "coach" else None,
                        on_change=coach_status if name == "coach" else on_status,
                        on_started=coach_up.set if name == "coach" else partial(up, name),
                    )
                    if name == "stability":  # its blocked moves hold from now on over the streamed reply
                        await add_stability_blocks(stream, self.board.store, turn_entry_key(user, session, turn, name))
            finally:
                if name == "coach":
                    coach_up.set()
                    coach_token.set()
                    reply_ready.set()  # no reply written: the deliverer shows the fallback reply
                else:
                    up(name)
                self.directory.disarm(user, session, turn, name)

        if "coach" not in launch and "reply" not in delivered:
            deliver(FALLBACK_COACH_REPLY, fallback=True)  # no Coach agent file: the fallback reply at once
        if not not_up:
            specialists_up.set()
        async with anyio.create_task_group() as tg:
            if "coach" in launch:
                tg.start_soon(deliver_coach_reply)
            if "pineal" in views and not self.settings.sequential:
                tg.start_soon(prestart_pineal)
            for name in launch:
                if self.settings.sequential:
                    await one(name)
                else:
                    tg.start_soon(one, name)
        if stop.stopped:
            return await self._stopped_turn(user, session, turn, statuses, launch, delivered, safety, t0, started_at,
                                            on_status)

        # Barrier: Shadow written (sequencer) and everyone done or past their deadline (the join above).
        waited_for = [n for n in launch if n != "coach"] + (["coach"] if "coach" in launch else [])
        brief, waited = await anyio.to_thread.run_sync(
            partial(self.board.collect, user, session, turn, waited_for, self.settings.collect_grace_s)
        )
        entries = await anyio.to_thread.run_sync(self.board.read_turn, user, session, turn)
        shadow_ok = "shadow" in set(waited.arrived)
        stability = entries.get("stability")
        replaced = await safety.raise_from("stability", risk_of(stability.value if stability else None))

        synthesis: SynthesisOutput | None = None
        source = "fallback"
        if replaced is not None:  # Stability's raise to 2 or 3: its response is the synthesis, no Pineal
            synthesis, source = SynthesisOutput(text=replaced), "crisis" if safety.tier >= 3 else "support"
            if "pineal" in statuses:
                statuses["pineal"].status = "skipped"
                statuses["pineal"].error = f"not started: Stability's risk assessment raised the tier to {safety.tier}"
        elif "pineal" in views and shadow_ok:
            synthesis, source = await self._run_pineal(
                user, session, turn, views, statuses, brief, earlier_blocks, packs, t0, invocation, on_status
            )
        elif "pineal" in statuses:
            statuses["pineal"].status = "skipped"
            statuses["pineal"].error = "not started: Shadow's entry is missing (the barrier never opened)"

        synthesis, source = _checked_synthesis(synthesis, source, brief, earlier_blocks)
        missing = [n for n in AGENT_ORDER if n in statuses and statuses[n].status != "ok"]
        if screened == 2 and "coach" in missing:
            missing.remove("coach")  # not launched on purpose
        if source in SAFETY_SOURCES and "pineal" in missing:
            missing.remove("pineal")  # not started on purpose
        if source == "fallback" and "pineal" not in missing and "pineal" in statuses:
            missing.append("pineal")
        degraded = bool(missing) or source == "fallback" or bool(delivered.get("fallback"))
        text_out = synthesis.text
        if source not in SAFETY_SOURCES:
            text_out += degraded_note(missing, source == "fallback")
        result = TurnResult(
            turn_id=turn, coach_reply=delivered["reply"], synthesis=text_out, synthesis_source=source,
            degraded=degraded, crisis_tier=safety.tier, missing=missing, agents=statuses,
            coach_fallback=bool(delivered.get("fallback")), coach_reply_s=delivered["at"],
            coach_first_words_s=delivered.get("first_words_at"), synthesis_s=time.monotonic() - t0,
            synthesis_citations=[c.model_dump(mode="json") for c in synthesis.citations],
            safety_raises=list(safety.raises), safety_refused=list(safety.refused),
        )
        versions = {name: e.version for name, e in entries.items() if name in statuses}
        await self._finish(user, session, turn, result, launch, (waited, versions), started_at)
        return result

    async def _stopped_turn(
        self,
        user: str,
        session: str,
        turn: str,
        statuses: dict[str, AgentStatus],
        launch: list[str],
        delivered: dict[str, Any],
        safety: TurnSafety,
        t0: float,
        started_at: float,
        on_status: Callable[[AgentStatus], None] | None,
    ) -> TurnResult:
        """The end of a turn whose coaching the Coach's raise to tier 3 stopped: the crisis response was
        shown instead of the reply, the agents still running were cancelled, no synthesis (as on a screen
        tier-3 turn)."""
        for st in statuses.values():
            if st.status in ("pending", "running"):
                st.status = "skipped"
                st.error = f"stopped: the Coach's risk assessment raised the safety tier to {safety.tier}"
                if on_status is not None:
                    on_status(st)
        entries = await anyio.to_thread.run_sync(self.board.read_turn, user, session, turn)
        arrived = tuple(n for n in launch if n in entries)
        result = TurnResult(
            turn_id=turn, coach_reply=delivered["reply"], synthesis="", synthesis_source="crisis", degraded=False,
            crisis_tier=safety.tier, agents=statuses, coach_reply_s=delivered["at"], synthesis_s=time.monotonic() - t0,
            coach_first_words_s=delivered.get("first_words_at"),
            safety_raises=list(safety.raises), safety_refused=list(safety.refused),
        )
        versions = {name: e.version for name, e in entries.items() if name in statuses}
        waited = WaitResult(arrived=arrived, missing=(), timed_out=False, waited_s=0.0)
        await self._finish(user, session, turn, result, launch, (waited, versions), started_at)
        return result

    async def _run_pineal(
        self,
        user: str,
        session: str,
        turn: str,
        views: Mapping[str, AgentView],
        statuses: dict[str, AgentStatus],
        brief: Brief,
        earlier_blocks: Sequence[Brief],
        packs: Mapping[str, Any],
        t0: float,
        invocation: Callable[[str, str, str], AgentInvocation],
        on_status: Callable[[AgentStatus], None] | None,
    ) -> tuple[SynthesisOutput | None, str]:
        v = views["pineal"]
        deadline_at = time.monotonic() + v.deadline_s
        brief_line = "The arbitrated brief for this turn (cite its sources with their versions):\n" + brief.to_json()
        if brief.sources:  # ready-made citation objects: copying beats composing them (small models get it wrong)
            cites = [{"agent": src.agent, "version": src.version} for src in brief.sources]
            brief_line += "\nCitations of these sources, to copy for the ones you rely on: " + json.dumps(cites)
        earlier = sorted({f"{b.id}: {b.description}" for eb in earlier_blocks for b in eb.blocked_moves})
        if earlier:
            brief_line += "\nMoves blocked earlier in this session (never suggest them):\n" + "\n".join(
                f"- {m}" for m in earlier
            )
        shared = next(iter(packs.values())).shared if packs else ""
        source = "model"
        problems: list[str] = []
        for attempt in (1, 2):
            extra = brief_line
            if attempt == 2:
                extra += (
                    "\nYour previous synthesis was NOT accepted. Fix exactly these problems and call "
                    f"{v.output_tool} again with the whole object:\n" + "\n".join(f"- {p}" for p in problems)
                )
            tail = _tail(v, turn, extra)
            self.directory.arm(user, session, turn, "pineal")
            try:
                await self.directory.synced()
                outcome = await run_agent(
                    self.runner, invocation("pineal", shared + tail, tail), v.output_tool, statuses["pineal"],
                    t0=t0, deadline_at=deadline_at, on_change=on_status,
                )
            finally:
                self.directory.disarm(user, session, turn, "pineal")
            entry = (await anyio.to_thread.run_sync(self.board.read_turn, user, session, turn)).get("pineal")
            calls = outcome.tool_calls if outcome is not None else []
            if entry is not None:
                # The entry is create-only: whatever is stored is final for this turn.
                try:
                    synthesis = SynthesisOutput.model_validate(entry.value)
                except ValueError as exc:
                    problems = [f"stored synthesis does not validate: {exc}"]
                    break
                problems = [f"{p.code}: {p.detail}" for p in validate_synthesis(synthesis, brief)]
                problems += blocked_problems(synthesis.text, brief, *earlier_blocks)
                if problems:
                    break
                server_brief = await anyio.to_thread.run_sync(self.board.brief, user, session, turn)
                if synthesis.text == fallback_synthesis(server_brief).text or any(
                    "synthesis_replaced_by_fallback" in c.result for c in calls
                ):
                    # The MCP server stored its deterministic fallback after a failed repair.
                    statuses["pineal"].status = "error"
                    statuses["pineal"].error = "synthesis rejected twice; the server stored the fallback"
                    return synthesis, "fallback"
                if any(c.name == v.output_tool and not c.ok for c in calls):
                    source = "repaired"
                return synthesis, source
            problems = [c.result[:600] for c in calls if c.name == v.output_tool and not c.ok] or [
                statuses["pineal"].error or f"no {v.output_tool} call was made"
            ]
            if attempt == 2 or deadline_at - time.monotonic() < max(self.settings.pineal_min_s, MIN_RETRY_S):
                break
            source = "repaired"
            statuses["pineal"].attempts = 0  # the repair is a new request, not a transient retry
        if statuses["pineal"].status == "ok":
            statuses["pineal"].status = "error"
            statuses["pineal"].error = "synthesis rejected: " + "; ".join(p[:120] for p in problems[:3])
        return None, "fallback"

    async def _finish(
        self,
        user: str,
        session: str,
        turn: str,
        result: TurnResult,
        launched: Sequence[str],
        waited_versions: tuple[Any, dict[str, int]] | None,
        started_at: float,
    ) -> None:
        store = self.board.store
        await write_entry(
            store, user, session, turn, "delivery",
            {
                "coach_reply": result.coach_reply, "synthesis": result.synthesis,
                "synthesis_source": result.synthesis_source, "degraded": result.degraded,
                "missing": list(result.missing),
                "agents": {n: s.to_json() for n, s in result.agents.items()},
            },
        )
        required = [n for n in launched if n in AGENT_ORDER]
        arrived: list[str] = []
        timed_out = False
        versions: dict[str, int] = {}
        if waited_versions is not None:
            waited, versions = waited_versions
            arrived = sorted(set(waited.arrived))
            timed_out = bool(waited.timed_out)
        record = TurnRecord.model_validate(
            {
                "user": user, "session": session, "turn": turn, "crisis_tier": result.crisis_tier,
                "required": required, "arrived": arrived,
                "missing": [m for m in result.missing if m in AGENT_ORDER],
                "timed_out": timed_out, "synthesis_source": result.synthesis_source,
                "entry_versions": versions, "started_at": started_at, "finished_at": time.time(),
                "safety_raises": list(result.safety_raises), "safety_refused": list(result.safety_refused),
            }
        )
        await anyio.to_thread.run_sync(self.board.write_turn_record, record)
        log.info(
            "turn %s/%s/%s done: source=%s degraded=%s missing=%s",
            user, session, turn, result.synthesis_source, result.degraded, ",".join(result.missing),
        )
