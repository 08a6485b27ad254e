"""A thin adapter from ``launcher.agents.AgentSpec`` to the fields the supervisor uses.

Keeps the supervisor independent of the spec's exact attribute names (the agent-file loader is owned
by another module); one place to adjust if they change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blackboard import STAGE_OF, WRITE_TOOL_NAMES, Stage

__all__ = ["AgentView", "view_of"]


@dataclass(frozen=True)
class AgentView:
    """What the supervisor needs of one agent file. Times in seconds, sizes in tokens."""

    name: str
    prompt: str
    stage: str
    output_tool: str
    force_output_tool: bool
    deadline_s: float
    max_output_tokens: int
    context_budget_tokens: int
    model_alias: str
    tools: tuple[str, ...]
    max_turns: int = 6


def _first(spec: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        v = getattr(spec, n, None)
        if v is not None:
            return v
    return default


def _bare(tool: str) -> str:
    return tool.rsplit("__", 1)[-1] if tool.startswith("mcp__") else tool


def view_of(spec: Any) -> AgentView:
    """Read an ``AgentSpec`` (or any object with the same attributes) into an :class:`AgentView`."""
    name = str(_first(spec, "name"))
    output_tool = _bare(str(_first(spec, "output_tool", default=WRITE_TOOL_NAMES.get(name, ""))))
    raw_tools = _first(spec, "mcp_tools", "tools", default=()) or ()
    if isinstance(raw_tools, str):
        raw_tools = [t.strip() for t in raw_tools.split(",") if t.strip()]
    tools = tuple(dict.fromkeys([output_tool, *(_bare(str(t)) for t in raw_tools if "__" in str(t) or t)]))
    stage = str(_first(spec, "stage", default="specialist")).replace("-", "_").replace(" ", "_")
    if STAGE_OF.get(name) is Stage.SYNTHESIS and "collect_turn" not in tools:  # it waits on the barrier
        tools = (*tools, "collect_turn")
    return AgentView(
        name=name,
        prompt=str(_first(spec, "prompt", "body", "system_prompt", default="")),
        stage=stage,
        output_tool=output_tool,
        force_output_tool=bool(_first(spec, "force_output_tool", "force_tool", default=False)),
        deadline_s=float(_first(spec, "deadline_s", "deadline", default=60.0)),
        max_output_tokens=int(_first(spec, "max_output_tokens", "max_tokens", default=1024)),
        context_budget_tokens=int(_first(spec, "context_budget_tokens", "context_budget", default=4000)),
        model_alias=str(_first(spec, "model_alias", "model", default="fast")),
        tools=tuple(t for t in tools if t),
        max_turns=int(_first(spec, "max_turns", default=6)),
    )
