"""Running one agent inside a turn: its deadline, one retry on a transient failure, its status.

The deadline is absolute (a ``time.monotonic()`` instant) and covers both attempts. An attempt counts
as successful only when the agent's output tool call succeeded (its entry is on the blackboard); an
attempt that ended without calling it is an ``error``, retried once (small models sometimes forget); an
attempt whose call was rejected is an ``error`` not retried here (the supervisor repairs Pineal once,
with the problems).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio

from launcher.errors import AgentFailedError
from launcher.pipeline._turn_status import AgentStatus
from launcher.runner._agent_runner import AgentInvocation, AgentOutcome, AgentRunner, ToolCallRecord

__all__ = ["MIN_RETRY_S", "prestart_agent", "run_agent"]

log = logging.getLogger(__name__)

#: No retry is started with less than this many seconds left before the deadline.
MIN_RETRY_S = 0.5


class _Events:
    def __init__(
        self,
        status: AgentStatus,
        t0: float,
        on_tool_result: Callable[[ToolCallRecord], None] | None,
        on_change: Callable[[AgentStatus], None] | None,
        on_started: Callable[[], None] | None = None,
    ) -> None:
        self.status = status
        self.t0 = t0
        self._on_tool_result = on_tool_result
        self._on_change = on_change
        self._on_started = on_started

    def on_started(self) -> None:
        if self._on_started:
            self._on_started()

    def on_first_token(self) -> None:
        if self.status.first_token_s is None:
            self.status.first_token_s = time.monotonic() - self.t0
            if self._on_change:
                self._on_change(self.status)

    def on_tool_result(self, call: ToolCallRecord) -> None:
        if self._on_tool_result:
            self._on_tool_result(call)


async def run_agent(
    runner: AgentRunner,
    invocation: AgentInvocation,
    output_tool: str,
    status: AgentStatus,
    *,
    t0: float,
    deadline_at: float,
    on_tool_result: Callable[[ToolCallRecord], None] | None = None,
    on_change: Callable[[AgentStatus], None] | None = None,
    on_started: Callable[[], None] | None = None,
) -> AgentOutcome | None:
    """Run ``invocation`` until ``deadline_at``; update ``status``; never raise for agent failures.

    Returns the successful attempt's outcome, or None (status says why: ``error``, ``timeout`` or
    ``crashed``). ``on_started`` is called when an attempt's process is up and prompted.
    Cancellation from outside (the turn being cancelled) propagates.
    """
    events = _Events(status, t0, on_tool_result, on_change, on_started)
    while True:
        now = time.monotonic()
        remaining = deadline_at - now
        if remaining <= 0:
            status.status = "timeout"
            status.error = status.error or "deadline passed before the agent could start"
            break
        status.attempts += 1
        status.status = "running"
        if status.started_s is None:
            status.started_s = now - t0
        if on_change:
            on_change(status)
        failure: AgentFailedError | None = None
        outcome: AgentOutcome | None = None
        with anyio.move_on_after(remaining) as scope:
            try:
                outcome = await runner.run(invocation, events)
            except AgentFailedError as exc:
                failure = exc
        if scope.cancelled_caught:
            status.status = "timeout"
            status.error = f"no result within the deadline ({deadline_at - t0:.1f}s after the turn started)"
            break
        if outcome is not None:
            status.input_tokens += outcome.input_tokens
            status.output_tokens += outcome.output_tokens
            status.warm = outcome.warm
            if any(c.name == output_tool and c.ok for c in outcome.tool_calls):
                status.status = "ok"
                status.error = None
                status.finished_s = time.monotonic() - t0
                if on_change:
                    on_change(status)
                return outcome
            rejected = [c for c in outcome.tool_calls if c.name == output_tool and not c.ok]
            # A rejected write already went back to the model as a tool error (and the proxy forced the
            # tool again): repeating the same request blindly would not help. No call at all: retry once.
            failure = AgentFailedError(
                invocation.agent,
                f"its {output_tool} call was rejected"
                if rejected
                else f"finished without a {output_tool} call",
                status="error",
                code="output_rejected" if rejected else "no_output",
                retryable=not rejected,
            )
        assert failure is not None
        status.status = "crashed" if failure.status == "crashed" else "error"
        status.error = failure.message
        log.info("agent %s attempt %d failed: %s", invocation.agent, status.attempts, failure.code)
        if not failure.retryable or status.attempts >= 2 or deadline_at - time.monotonic() < MIN_RETRY_S:
            break
    status.finished_s = time.monotonic() - t0
    if on_change:
        on_change(status)
    return None


async def prestart_agent(runner: AgentRunner, inv: AgentInvocation, *, evict: bool, limit_s: float) -> bool:
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
