"""Test doubles at the runner boundary for supervisor unit tests (the blackboard is real)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from blackboard import Blackboard, SchemaValidationError
from launcher.errors import AgentFailedError
from launcher.pipeline.supervisor import ScreenOutcome
from launcher.runner._agent_runner import AgentEvents, AgentInvocation, AgentOutcome, ToolCallRecord
from mcp_server import WRITE_TOOL_NAMES
from tests.launcher.payloads import payload_for, synthesis_citing

#: agent -> its output (write) tool, as the MCP server names them.
OUTPUT_TOOLS = WRITE_TOOL_NAMES


@dataclass
class FakeSpec:
    """Quacks like ``launcher.agents.AgentSpec`` for the fields the supervisor reads."""

    name: str
    prompt: str = "You are an agent."
    output_tool: str = ""
    force_output_tool: bool = True
    deadline_s: float = 5.0
    max_output_tokens: int = 512
    context_budget_tokens: int = 3000
    model_alias: str = "fast"
    stage: str = "specialist"

    def __post_init__(self) -> None:
        self.output_tool = self.output_tool or OUTPUT_TOOLS[self.name]


def specs(**overrides: dict[str, Any]) -> dict[str, FakeSpec]:
    out = {}
    for name in OUTPUT_TOOLS:
        out[name] = FakeSpec(name=name, **overrides.get(name, {}))
    return out


Behaviour = Callable[[AgentInvocation, int], Any]
"""(invocation, attempt number for this agent this turn) -> "ok" | "hang" | "error" | "crash" |
"silent" | a payload dict to write."""


@dataclass
class FakeRunner:
    """Writes each agent's payload through the real ``Blackboard.write_output`` (what the MCP tool
    does), so the sequencer and the store see real writes."""

    board: Blackboard
    behaviours: dict[str, Behaviour] = field(default_factory=dict)
    calls: list[AgentInvocation] = field(default_factory=list)
    events: list[tuple[str, str]] = field(default_factory=list)
    pineal_text: str = "Here is a small, reversible next step: a ten-minute walk."

    async def run(self, invocation: AgentInvocation, events: AgentEvents) -> AgentOutcome:
        inv = invocation
        self.calls.append(inv)
        attempt = sum(1 for c in self.calls if c.agent == inv.agent and c.turn == inv.turn)
        how = self.behaviours.get(inv.agent, lambda i, n: "ok")(inv, attempt)
        self.events.append((inv.agent, "start"))
        if how == "hang":
            await anyio.sleep_forever()
        if how == "error":
            raise AgentFailedError(
                inv.agent, "upstream answered HTTP 400", status="error", code="agent_error", retryable=False
            )
        if how == "crash":
            raise AgentFailedError(
                inv.agent, "process died", status="crashed", code="agent_crashed", retryable=True
            )
        events.on_started()
        events.on_first_token()
        if how == "silent":
            return AgentOutcome(text="I forgot the tool", input_tokens=7, output_tokens=3)
        if isinstance(how, dict):
            payload = how
        elif inv.agent == "pineal":
            brief = await anyio.to_thread.run_sync(self.board.brief, inv.user, inv.session, inv.turn)
            payload = synthesis_citing(brief, self.pineal_text)
        else:
            payload = payload_for(inv.agent)
        tool = OUTPUT_TOOLS[inv.agent]
        agent = inv.agent
        try:
            await anyio.to_thread.run_sync(
                partial(self.board.write_output, inv.user, inv.session, inv.turn, agent, payload)
            )
            rec = ToolCallRecord(tool, payload, ok=True, result="STORED.")
        except SchemaValidationError as exc:
            rec = ToolCallRecord(tool, payload, ok=False, result=str(exc))
        self.events.append((inv.agent, "wrote" if rec.ok else "rejected"))
        events.on_tool_result(rec)
        return AgentOutcome(tool_calls=[rec], input_tokens=100, output_tokens=20)

    async def close_session(self, user: str, session: str) -> None:
        return None

    async def aclose(self) -> None:
        return None


CRISIS_TEXT = "This is the crisis response. Call 988 now."


def fake_screen(text: str, earlier: Any) -> ScreenOutcome:
    """Tier 3 when the message contains 'CRISIS' (a double for the safety screen)."""
    if "CRISIS" in text:
        return ScreenOutcome(3, CRISIS_TEXT)
    return ScreenOutcome(0, None)
