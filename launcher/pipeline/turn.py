"""One coaching turn as an object: :class:`Turn` runs the steps of ``Supervisor.run_turn`` (see
:mod:`launcher.pipeline.supervisor` and docs/architecture.md, "One coaching turn, as data"), one method
per step:

* :meth:`Turn.screen`: the session's context and the deterministic safety screen;
* :meth:`Turn.open`: the blackboard turn, the message entry, the agents to launch;
* :meth:`Turn.dispatch`: the early agent and the specialists concurrently (Pineal's process started
  once they are up), while :meth:`Turn.deliver_coach_reply` shows the Coach's reply the moment it is
  written;
* :meth:`Turn.barrier`: Shadow written and everyone done or past their deadline, then the brief;
* :meth:`Turn.synthesise`: Stability's raise, else Pineal (one repair), else the fallback;
* :meth:`Turn.finish`: the :class:`TurnResult`, the delivery entry and the turn record.

The pipeline branches on an agent's stage (``blackboard.Stage``), not its name: the early agent's reply
is shown first, the specialists run beside it, the synthesis agent runs after the barrier.

A turn job of ``coach worker`` may be a redelivery: its ``hooks`` resume the turn already begun, keeping
every entry already written (:mod:`launcher.pipeline._turn_resume`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from blackboard import (
    AGENT_ORDER,
    Brief,
    Stage,
    SynthesisOutput,
    WaitResult,
    agents_at,
    build_brief,
    turn_entry_key,
)
from launcher.agents._spec_view import AgentView, view_of
from launcher.pipeline._agent_task import run_agent
from launcher.pipeline._context_pack import (
    AgentPackSpec,
    ContextPack,
    PackInputs,
    build_followups,
    build_packs,
)
from launcher.pipeline._fallbacks import (
    FALLBACK_COACH_REPLY,
    blocked_problems,
    degraded_note,
)
from launcher.pipeline._model_raise import StopCoaching, TurnSafety, raise_fn_of, risk_of
from launcher.pipeline._pineal_prefill import prestart_synthesis
from launcher.pipeline._reply_stream import (
    ReplyEvent,
    ReplyStream,
    add_stability_blocks,
    close_stream,
    open_stream,
)
from launcher.pipeline._screen import ScreenOutcome
from launcher.pipeline._synthesis import SAFETY_SOURCES, PinealRun, checked_synthesis
from launcher.pipeline._turn_io import SessionContext, load_context, write_message
from launcher.pipeline._turn_resume import TurnResume
from launcher.pipeline._turn_status import AgentStatus, TurnResult
from launcher.runner._agent_runner import AgentInvocation, ToolCallRecord

if TYPE_CHECKING:
    from launcher.pipeline.supervisor import Supervisor

__all__ = ["EARLY", "SPECIALISTS", "SYNTHESIS", "Turn"]

log = logging.getLogger(__name__)

#: The agent whose reply the user sees first (the Coach).
EARLY: tuple[str, ...] = agents_at(Stage.EARLY)
#: The agents that run beside it, each with its own deadline.
SPECIALISTS: tuple[str, ...] = agents_at(Stage.SPECIALIST)
#: The synthesis agent (Pineal): runs after the barrier.
(SYNTHESIS,) = agents_at(Stage.SYNTHESIS)


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


def _invocation(
    v: AgentView, user: str, session: str, turn: str, prompt: str = "", followup: str = ""
) -> AgentInvocation:
    """The runner's invocation for agent view ``v`` (empty prompts: a prestart, which only connects)."""
    return AgentInvocation(
        agent=v.name,
        user=user,
        session=session,
        turn=turn,
        system_prompt=v.prompt,
        model=v.model_alias,
        tools=v.tools,
        max_output_tokens=v.max_output_tokens,
        context_budget_tokens=v.context_budget_tokens,
        prompt=prompt,
        followup=followup,
        tool_timeout_s=v.deadline_s,
        max_turns=v.max_turns,
    )


class Turn:
    """One turn of ``Supervisor.run_turn`` (one instance per turn; :meth:`run` once)."""

    def __init__(
        self,
        supervisor: Supervisor,
        user: str,
        session: str,
        text: str,
        on_coach_reply: Callable[[str], None] | None,
        on_status: Callable[[AgentStatus], None] | None,
        on_reply_stream: Callable[[ReplyEvent], None] | None = None,
        hooks: Any = None,
    ) -> None:
        self.sup = supervisor
        self.board = supervisor.board
        self.settings = supervisor.settings
        self.directory = supervisor.directory
        self.user, self.session, self.text = user, session, text
        self.on_coach_reply = on_coach_reply
        self.on_status = on_status
        self.on_reply_stream = on_reply_stream
        self.stream: ReplyStream | None = None  # the reply shown while the Coach writes it
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self.views: dict[str, AgentView] = {}
        self.turn = ""
        self.delivered: dict[str, Any] = {}
        self.launch: list[str] = []
        self.statuses: dict[str, AgentStatus] = {}
        self.stop = StopCoaching()
        self.earlier_blocks: list[Brief] = []
        self.packs: dict[str, ContextPack] = {}
        self.followups: dict[str, str] = {}
        self._candidate: dict[str, str] = {}
        self._reply_ready = anyio.Event()
        self._early_up = anyio.Event()
        self._early_token = anyio.Event()
        self._specialists_up = anyio.Event()
        self._not_up: set[str] = set()
        self.resume = TurnResume(hooks)  # a turn job that may be a redelivery (coach worker)

    async def run(self) -> TurnResult:
        """All the steps; see the module docstring."""
        ctx, verdict = await self.screen()
        try:
            await self.open(ctx, verdict)
            return await self._run_opened(ctx, verdict)
        finally:
            close_stream(self.directory, self.user, self.session, self.turn, self.stream)

    async def _run_opened(self, ctx: SessionContext, verdict: ScreenOutcome) -> TurnResult:
        if verdict.tier >= 3:
            return await self.crisis()
        self.directory.open(self.user, self.session, self.turn, self.launch)
        try:
            await self.directory.synced()  # an external proxy knows the turn before the agents' first call
            self.prepare(ctx)
            await self.dispatch()
            if self.stop.stopped:
                return await self.stopped()
            brief, waited, entries = await self.barrier()
            synthesis, source = await self.synthesise(brief, waited, entries)
            return await self.finish(synthesis, source, brief, waited, entries)
        finally:
            self.directory.close(self.user, self.session, self.turn)

    # -- screen and open -------------------------------------------------------------------------------

    async def screen(self) -> tuple[SessionContext, ScreenOutcome]:
        """The current agent views (hot reload), the session's context, and the screen's verdict."""
        self.views = {name: view_of(spec) for name, spec in self.sup._agents().items()}
        ctx = await load_context(
            self.board.store, self.user, self.session, self.resume.turn, self.settings.history_turns
        )
        return ctx, await self.sup.screen(self.text, ctx.safety_state)

    async def open(self, ctx: SessionContext, verdict: ScreenOutcome) -> None:
        """Begin the blackboard turn, store the message, and choose the agents to launch; at tier 2 the
        support response is the first reply and the early agent does not run."""
        self.turn = await self.resume.begin(self.board, self.user, self.session, verdict.tier)
        if "message" not in self.resume.done:
            await write_message(self.board.store, (self.user, self.session, self.turn), self.text, verdict)
        self.safety: TurnSafety = TurnSafety(
            self.board, self.user, self.session, self.turn, self.text, verdict, raise_fn_of(self.sup._screen)
        )
        self.statuses = {n: AgentStatus(n) for n in AGENT_ORDER if n in self.views}
        self.stream = open_stream(
            self.directory,
            self.user,
            self.session,
            self.turn,
            self.text,
            verdict.tier,
            self.t0,
            self.on_reply_stream,
        )
        if verdict.tier == 2:
            # Coaching pauses: the deterministic support response is the first reply; the specialists
            # and Pineal still run, in the brief's "pause" mode.
            self.deliver(verdict.response or "", fallback=False)
            for name in EARLY:
                if name in self.statuses:
                    self.statuses[name].status = "skipped"
        early = () if verdict.tier == 2 else EARLY
        self.launch = [n for n in (*early, *SPECIALISTS) if n in self.views]

    def deliver(self, reply: str, *, fallback: bool) -> None:
        """Show the first reply (once; later calls are ignored)."""
        if "reply" in self.delivered:
            return
        self.delivered.update(reply=reply, fallback=fallback, at=time.monotonic() - self.t0)
        if self.stream is not None:  # streamed words: completed, or retracted first when the reply differs
            self.stream.final(reply)
            self.delivered["first_words_at"] = self.stream.first_words_s
        if self.on_coach_reply:
            try:
                self.on_coach_reply(reply)
            except Exception:  # a broken display must not stop the turn
                log.exception("on_coach_reply callback failed")

    async def crisis(self) -> TurnResult:
        """Screen tier 3: the crisis response is the whole answer; no agent starts."""
        for st in self.statuses.values():
            st.status = "skipped"
        self.deliver(self.safety.screened.response or "", fallback=False)
        result = self._result(synthesis="", source="crisis", synthesis_s=None)
        await self._record(result, [], None)
        return result

    # -- dispatch --------------------------------------------------------------------------------------

    def prepare(self, ctx: SessionContext) -> None:
        """One context pack and one follow-up per launched agent, with the task tail; the moves blocked
        in earlier turns of the session (they stay blocked: checked on every final text)."""
        self.earlier_blocks = [build_brief({"stability": e}) for e in ctx.earlier_stability]
        if self.stream is not None:
            self.stream.add_blocks(*self.earlier_blocks)
        screened = self.safety.screened.tier
        safety_line = (
            "Safety screen: tier 2. Pause coaching: reflect, ask directly about safety, offer resources."
            if screened == 2
            else ""
        )
        tails = {n: _tail(self.views[n], self.turn, safety_line) for n in self.views}
        self.packs = build_packs(
            PackInputs(message=self.text, profile=ctx.profile, history=ctx.history, entries=ctx.relevant),
            {n: AgentPackSpec(self.views[n].context_budget_tokens, tails[n]) for n in self.launch},
        )
        self.followups = build_followups(
            self.text,
            ctx.relevant,
            {n: tails[n] for n in self.launch},
            min(self.views[n].context_budget_tokens for n in self.launch),
        )

    def tail(self, name: str, extra: str = "") -> str:
        """The task tail of agent ``name``'s prompt for this turn (``extra``: a line more)."""
        return _tail(self.views[name], self.turn, extra)

    def _invocation(self, name: str, prompt: str, followup: str) -> AgentInvocation:
        return _invocation(self.views[name], self.user, self.session, self.turn, prompt, followup)

    async def dispatch(self) -> None:
        """Run the launched agents concurrently (one after another with ``settings.sequential``); the
        specialists start once the early agent is up (at most ``coach_head_start_s`` later)."""
        early_launched = any(n in self.launch for n in EARLY)
        if not early_launched or self.settings.coach_head_start_s <= 0:
            self._early_up.set()
            self._early_token.set()
        if not early_launched and "reply" not in self.delivered:
            self.deliver(
                FALLBACK_COACH_REPLY, fallback=True
            )  # no Coach agent file: the fallback reply at once
        self._not_up = {n for n in self.launch if n not in EARLY}
        if not self._not_up:
            self._specialists_up.set()
        async with anyio.create_task_group() as tg:
            if early_launched:
                tg.start_soon(self.deliver_coach_reply)
            if SYNTHESIS in self.views and not self.settings.sequential:
                tg.start_soon(self._prestart_synthesis)
            for name in self.launch:
                if self.settings.sequential:
                    await self._run_one(name)
                else:
                    tg.start_soon(self._run_one, name)

    def _early_tool(self, call: ToolCallRecord) -> None:
        (early,) = EARLY
        if call.name != self.views[early].output_tool or not call.ok:
            return
        reply = str(call.input.get("reply", "")).strip()
        if reply:
            self._candidate.setdefault("reply", reply)
            self._reply_ready.set()

    def _early_status(self, st: AgentStatus) -> None:
        if st.first_token_s is not None:
            self._early_token.set()
        if self.on_status is not None:
            self.on_status(st)

    def _up(self, name: str) -> None:
        self._not_up.discard(name)
        if not self._not_up:
            self._specialists_up.set()

    async def _prestart_synthesis(self) -> None:
        """Pineal's process started once the specialists are up, then its shared context sent ahead
        (:func:`launcher.pipeline._pineal_prefill.prestart_synthesis`)."""
        await prestart_synthesis(self)

    async def _run_one(self, name: str) -> None:
        if name in EARLY:
            await self._run_early(name)
        else:
            await self._run_specialist(name)

    async def _run_early(self, name: str) -> None:
        try:
            await self._run_agent(
                name,
                on_tool_result=self._early_tool,
                on_change=self._early_status,
                on_started=self._early_up.set,
            )
        finally:
            self._early_up.set()
            self._early_token.set()
            self._reply_ready.set()  # no reply written: the deliverer shows the fallback reply
            self.directory.disarm(self.user, self.session, self.turn, name)

    async def _run_specialist(self, name: str) -> None:
        head_start = (
            self._early_token if self.settings.coach_head_start_until == "first_token" else self._early_up
        )
        try:
            with self.stop.scope(name):  # a crisis stops the others
                with anyio.move_on_after(self.settings.coach_head_start_s):
                    await head_start.wait()
                await self._run_agent(
                    name, on_tool_result=None, on_change=self.on_status, on_started=partial(self._up, name)
                )
                if name == "stability":  # its blocked moves hold from now on over the streamed reply
                    key = turn_entry_key(self.user, self.session, self.turn, name)
                    await add_stability_blocks(self.stream, self.board.store, key)
        finally:
            self._up(name)
            self.directory.disarm(self.user, self.session, self.turn, name)

    async def _run_agent(
        self,
        name: str,
        *,
        on_tool_result: Callable[[ToolCallRecord], None] | None,
        on_change: Callable[[AgentStatus], None] | None,
        on_started: Callable[[], None],
    ) -> None:
        if not await self.resume.dispatch(name):  # a redelivered turn: this agent's entry is written
            self._reuse(name)
            return
        v = self.views[name]
        await run_agent(
            self.sup.runner,
            self._invocation(name, self.packs[name].text, self.followups[name]),
            v.output_tool,
            self.statuses[name],
            t0=self.t0,
            deadline_at=(time.monotonic() if self.settings.sequential else self.t0) + v.deadline_s,
            on_tool_result=on_tool_result,
            on_change=on_change,
            on_started=on_started,
        )

    def _reuse(self, name: str) -> None:
        """An agent of a resumed turn whose entry is on the board: done; the early agent's reply is the
        stored one."""
        self.statuses[name].status = "ok"
        if name in EARLY:
            self._candidate.setdefault("reply", str(self.resume.done[name].value.get("reply", "")).strip())
            self._reply_ready.set()

    async def deliver_coach_reply(self) -> None:
        """Deliver the Coach's reply the moment it is written, unless its risk assessment raised the
        tier to 2 or 3 (then the support or crisis response; at 3 the coaching stops), or it names a
        move blocked earlier in the session or by this turn's Stability entry (then the fallback)."""
        (early,) = EARLY
        await self._reply_ready.wait()
        written = await self._read_entry(early)
        response = await self.safety.raise_from(early, risk_of(written.value if written else None))
        if response is not None:
            self.deliver(response, fallback=False)
            if self.safety.tier >= 3:
                self.stop.stop()
            return
        reply = self._candidate.get("reply")
        if reply is None:
            self.deliver(FALLBACK_COACH_REPLY, fallback=True)
            return
        current = await self._read_entry("stability")
        blocks = (
            [*self.earlier_blocks, build_brief({"stability": current})] if current else self.earlier_blocks
        )
        if blocked_problems(reply, *blocks):
            log.warning("coach reply named a blocked move; the fallback reply is shown instead")
            self.deliver(FALLBACK_COACH_REPLY, fallback=True)
        else:
            self.deliver(reply, fallback=False)

    async def _read_entry(self, kind: str) -> Any:
        key = turn_entry_key(self.user, self.session, self.turn, kind)
        return await anyio.to_thread.run_sync(self.board.store.read, key)

    async def stopped(self) -> TurnResult:
        """The end of a turn whose coaching the Coach's raise to tier 3 stopped: the crisis response was
        shown instead of the reply, the agents still running were cancelled, no synthesis (as on a
        screen tier-3 turn)."""
        for st in self.statuses.values():
            if st.status in ("pending", "running"):
                st.status = "skipped"
                st.error = (
                    f"stopped: the Coach's risk assessment raised the safety tier to {self.safety.tier}"
                )
                if self.on_status is not None:
                    self.on_status(st)
        entries = await anyio.to_thread.run_sync(self.board.read_turn, self.user, self.session, self.turn)
        arrived = tuple(n for n in self.launch if n in entries)
        result = self._result(synthesis="", source="crisis", synthesis_s=time.monotonic() - self.t0)
        versions = {name: e.version for name, e in entries.items() if name in self.statuses}
        waited = WaitResult(arrived=arrived, missing=(), timed_out=False, waited_s=0.0)
        await self._record(result, self.launch, (waited, versions), resumed=True)
        return result

    # -- barrier and synthesis -------------------------------------------------------------------------

    async def barrier(self) -> tuple[Brief, WaitResult, Mapping[str, Any]]:
        """Shadow written (sequencer) and everyone done or past their deadline (the join of
        :meth:`dispatch`): the brief, the wait's outcome and the turn's entries."""
        waited_for = [n for n in self.launch if n not in EARLY] + [n for n in self.launch if n in EARLY]
        brief, waited = await anyio.to_thread.run_sync(
            partial(
                self.board.collect,
                self.user,
                self.session,
                self.turn,
                waited_for,
                self.settings.collect_grace_s,
            )
        )
        entries = await anyio.to_thread.run_sync(self.board.read_turn, self.user, self.session, self.turn)
        return brief, waited, entries

    async def synthesise(
        self, brief: Brief, waited: WaitResult, entries: Mapping[str, Any]
    ) -> tuple[SynthesisOutput | None, str]:
        """Stability's raise to 2 or 3 makes its response the synthesis (no Pineal); else Pineal runs when
        Shadow's entry arrived; else there is none (the fallback follows)."""
        stability = entries.get("stability")
        replaced = await self.safety.raise_from("stability", risk_of(stability.value if stability else None))
        pineal = self.statuses.get(SYNTHESIS)
        if replaced is not None:
            if pineal is not None:
                pineal.status = "skipped"
                pineal.error = (
                    f"not started: Stability's risk assessment raised the tier to {self.safety.tier}"
                )
            return SynthesisOutput(text=replaced), "crisis" if self.safety.tier >= 3 else "support"
        if SYNTHESIS in self.views and "shadow" in set(waited.arrived):
            return await PinealRun(self).run(brief)
        if pineal is not None:
            pineal.status = "skipped"
            pineal.error = "not started: Shadow's entry is missing (the barrier never opened)"
        return None, "fallback"

    # -- finish ----------------------------------------------------------------------------------------

    def _missing(self, source: str) -> list[str]:
        """The agents the turn lacked, leaving out those not run on purpose (the early agent at screen
        tier 2, Pineal when a safety response is the synthesis); Pineal is added when the fallback is
        shown."""
        missing = [n for n in AGENT_ORDER if n in self.statuses and self.statuses[n].status != "ok"]
        if self.safety.screened.tier == 2:
            missing = [n for n in missing if n not in EARLY]  # not launched on purpose
        if source in SAFETY_SOURCES and SYNTHESIS in missing:
            missing.remove(SYNTHESIS)  # not started on purpose
        if source == "fallback" and SYNTHESIS not in missing and SYNTHESIS in self.statuses:
            missing.append(SYNTHESIS)
        return missing

    async def finish(
        self,
        synthesis: SynthesisOutput | None,
        source: str,
        brief: Brief,
        waited: WaitResult,
        entries: Mapping[str, Any],
    ) -> TurnResult:
        """The checked synthesis with the degraded note, the result, the delivery and turn record."""
        synthesis, source = checked_synthesis(synthesis, source, brief, self.earlier_blocks)
        missing = self._missing(source)
        degraded = bool(missing) or source == "fallback" or bool(self.delivered.get("fallback"))
        text_out = synthesis.text
        if source not in SAFETY_SOURCES:
            text_out += degraded_note(missing, source == "fallback")
        result = self._result(
            synthesis=text_out,
            source=source,
            synthesis_s=time.monotonic() - self.t0,
            degraded=degraded,
            missing=missing,
            citations=[c.model_dump(mode="json") for c in synthesis.citations],
        )
        versions = {name: e.version for name, e in entries.items() if name in self.statuses}
        await self._record(result, self.launch, (waited, versions))
        return result

    def _result(
        self,
        *,
        synthesis: str,
        source: str,
        synthesis_s: float | None,
        degraded: bool = False,
        missing: Sequence[str] = (),
        citations: Sequence[dict[str, Any]] = (),
    ) -> TurnResult:
        """The :class:`TurnResult` of this turn (every ending builds it here)."""
        return TurnResult(
            turn_id=self.turn,
            coach_reply=self.delivered["reply"],
            synthesis=synthesis,
            synthesis_source=source,
            degraded=degraded,
            crisis_tier=self.safety.tier,
            missing=list(missing),
            agents=self.statuses,
            coach_fallback=bool(self.delivered.get("fallback")),
            coach_reply_s=self.delivered["at"],
            coach_first_words_s=self.delivered.get("first_words_at"),
            synthesis_s=synthesis_s,
            synthesis_citations=list(citations),
            safety_raises=list(self.safety.raises),
            safety_refused=list(self.safety.refused),
        )

    async def _record(
        self,
        result: TurnResult,
        launched: Sequence[str],
        waited_versions: tuple[WaitResult, dict[str, int]] | None,
        *,
        resumed: bool | None = None,
    ) -> None:
        """The delivery entry and the turn record (the audit of what ran and what arrived; each only if
        missing on a resumed turn)."""
        where = (self.user, self.session, self.turn)
        await self.resume.record(
            self.board, where, result, launched, waited_versions, self.started_at, resumed
        )
