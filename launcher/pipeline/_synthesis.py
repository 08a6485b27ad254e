"""Pineal's synthesis of a turn (the step ``Turn.synthesise`` hands over once Shadow's entry is in):
one request on the arbitrated brief, checked again once stored, repaired once when rejected (time
permitting), and the last check before it is shown (:func:`checked_synthesis`: the deterministic
fallback when there is none or it names a blocked move)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from blackboard import Brief, Stage, SynthesisOutput, agents_at, fallback_synthesis, validate_synthesis
from launcher.pipeline._agent_task import MIN_RETRY_S, run_agent
from launcher.pipeline._fallbacks import SAFE_SYNTHESIS_TEXT, blocked_problems

if TYPE_CHECKING:
    from launcher.pipeline.turn import Turn

__all__ = ["SAFETY_SOURCES", "PinealRun", "checked_synthesis"]

log = logging.getLogger(__name__)

#: The synthesis agent (Pineal).
(SYNTHESIS,) = agents_at(Stage.SYNTHESIS)

#: Synthesis sources where a safety response replaced the synthesis (no Pineal, no degraded note).
SAFETY_SOURCES: frozenset[str] = frozenset({"crisis", "support"})


def checked_synthesis(
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


class PinealRun:
    """Pineal's synthesis for one turn (:meth:`run` once, on the brief)."""

    def __init__(self, turn: Turn) -> None:
        self.t = turn

    def _synthesis_prompt(self, brief: Brief) -> str:
        line = (
            "The arbitrated brief for this turn (cite its sources with their versions):\n" + brief.to_json()
        )
        if (
            brief.sources
        ):  # ready-made citation objects: copying beats composing them (small models get it wrong)
            cites = [{"agent": src.agent, "version": src.version} for src in brief.sources]
            line += "\nCitations of these sources, to copy for the ones you rely on: " + json.dumps(cites)
        earlier = sorted(
            {f"{b.id}: {b.description}" for eb in self.t.earlier_blocks for b in eb.blocked_moves}
        )
        if earlier:
            line += "\nMoves blocked earlier in this session (never suggest them):\n" + "\n".join(
                f"- {m}" for m in earlier
            )
        return line

    async def run(self, brief: Brief) -> tuple[SynthesisOutput | None, str]:
        """Pineal on the brief; a rejected or missing synthesis is repaired once (time permitting)."""
        v = self.t.views[SYNTHESIS]
        status = self.t.statuses[SYNTHESIS]
        deadline_at = time.monotonic() + v.deadline_s
        brief_line = self._synthesis_prompt(brief)
        shared = next(iter(self.t.packs.values())).shared if self.t.packs else ""
        source = "model"
        problems: list[str] = []
        for attempt in (1, 2):
            extra = brief_line
            if attempt == 2:
                extra += (
                    "\nYour previous synthesis was NOT accepted. Fix exactly these problems and call "
                    f"{v.output_tool} again with the whole object:\n" + "\n".join(f"- {p}" for p in problems)
                )
            calls, entry = await self._synthesis_attempt(shared, self.t.tail(SYNTHESIS, extra), deadline_at)
            if entry is not None:
                # The entry is create-only: whatever is stored is final for this turn.
                return await self._stored_synthesis(entry, brief, calls, source)
            problems = [c.result[:600] for c in calls if c.name == v.output_tool and not c.ok] or [
                status.error or f"no {v.output_tool} call was made"
            ]
            if attempt == 2 or deadline_at - time.monotonic() < max(
                self.t.settings.pineal_min_s, MIN_RETRY_S
            ):
                break
            source = "repaired"
            status.attempts = 0  # the repair is a new request, not a transient retry
        return self._rejected(problems)

    async def _synthesis_attempt(self, shared: str, tail: str, deadline_at: float) -> tuple[list[Any], Any]:
        """One Pineal request: its tool calls and the stored synthesis entry (None when none was stored).
        A resumed turn (a redelivered job) whose synthesis is written does not run Pineal again."""
        outcome = None
        if await self.t.resume.dispatch(SYNTHESIS):
            outcome = await self._synthesis_request(shared, tail, deadline_at)
        else:
            self.t.statuses[SYNTHESIS].status = "ok"
        entry = (
            await anyio.to_thread.run_sync(self.t.board.read_turn, self.t.user, self.t.session, self.t.turn)
        ).get(SYNTHESIS)
        return (outcome.tool_calls if outcome is not None else []), entry

    async def _synthesis_request(self, shared: str, tail: str, deadline_at: float) -> Any:
        """Pineal's run (armed in the turn directory while it runs)."""
        v = self.t.views[SYNTHESIS]
        self.t.directory.arm(self.t.user, self.t.session, self.t.turn, SYNTHESIS)
        try:
            await self.t.directory.synced()
            return await run_agent(
                self.t.sup.runner,
                self.t._invocation(SYNTHESIS, shared + tail, tail),
                v.output_tool,
                self.t.statuses[SYNTHESIS],
                t0=self.t.t0,
                deadline_at=deadline_at,
                on_change=self.t.on_status,
            )
        finally:
            self.t.directory.disarm(self.t.user, self.t.session, self.t.turn, SYNTHESIS)

    async def _stored_synthesis(
        self, entry: Any, brief: Brief, calls: Sequence[Any], source: str
    ) -> tuple[SynthesisOutput | None, str]:
        """The stored synthesis checked again: rejected (problems), the server's fallback after a failed
        repair, or accepted (``repaired`` when a write was refused first)."""
        v = self.t.views[SYNTHESIS]
        status = self.t.statuses[SYNTHESIS]
        try:
            synthesis = SynthesisOutput.model_validate(entry.value)
        except ValueError as exc:
            return self._rejected([f"stored synthesis does not validate: {exc}"])
        problems = [f"{p.code}: {p.detail}" for p in validate_synthesis(synthesis, brief)]
        problems += blocked_problems(synthesis.text, brief, *self.t.earlier_blocks)
        if problems:
            return self._rejected(problems)
        server_brief = await anyio.to_thread.run_sync(
            self.t.board.brief, self.t.user, self.t.session, self.t.turn
        )
        if synthesis.text == fallback_synthesis(server_brief).text or any(
            "synthesis_replaced_by_fallback" in c.result for c in calls
        ):
            # The MCP server stored its deterministic fallback after a failed repair.
            status.status = "error"
            status.error = "synthesis rejected twice; the server stored the fallback"
            return synthesis, "fallback"
        if any(c.name == v.output_tool and not c.ok for c in calls):
            source = "repaired"
        return synthesis, source

    def _rejected(self, problems: Sequence[str]) -> tuple[None, str]:
        status = self.t.statuses[SYNTHESIS]
        if status.status == "ok":
            status.status = "error"
            status.error = "synthesis rejected: " + "; ".join(p[:120] for p in problems[:3])
        return None, "fallback"
