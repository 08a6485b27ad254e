"""The proxy's per-agent policies, generated from the agent files (one source of truth).

For each agent: ``force_tool`` = ``mcp__coachboard__<output tool>`` when the agent file sets
``force_output_tool`` (a forced tool call on the agent's first model call gives one schema-valid call
even from a very small model: docs/embedded.md "Embedded default"); ``stop_after_tool`` likewise (once that
tool succeeded the proxy ends the agent's turn locally instead of paying for another model call), and
``forced_tool_only`` (the forced call carries that tool alone: its other tools are prompt tokens only;
not for the synthesis stage, whose prompt head is prefilled);
``max_tokens`` = the agent's max output tokens; ``model_alias`` = the agent's model alias.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from launcher.agents._spec_view import view_of
from proxy.config import AgentPolicy

__all__ = ["policies_from_agents"]


def policies_from_agents(
    specs: Mapping[str, Any] | Iterable[Any],
    *,
    server_name: str = "coachboard",
    token_budget: int | None = None,
) -> dict[str, AgentPolicy]:
    """One :class:`proxy.config.AgentPolicy` per agent, keyed by agent name.

    Args:
        specs: the loaded agent specs (``launcher.agents.AgentSpec``), as a mapping or an iterable.
        server_name: the MCP server name in the agents' MCP config (tool prefix ``mcp__<name>__``).
        token_budget: per-session input+output token budget for every agent (None: unlimited).

    Raises:
        ValueError: when two specs have the same name.
    """
    items = list(specs.values()) if isinstance(specs, Mapping) else list(specs)
    out: dict[str, AgentPolicy] = {}
    for spec in items:
        v = view_of(spec)
        if v.name in out:
            raise ValueError(f"two agent files define the agent {v.name!r}; rename or remove one")
        forced = f"mcp__{server_name}__{v.output_tool}" if (v.force_output_tool and v.output_tool) else None
        out[v.name] = AgentPolicy(
            force_tool=forced,
            stop_after_tool=forced is not None,
            # Pineal keeps its other tools (collect_turn, the reads): its prompt head is prefilled
            # while the specialists work, so they cost it next to nothing.
            forced_tool_only=forced is not None and v.stage != "synthesis",
            max_tokens=v.max_output_tokens,
            token_budget=token_budget,
            model_alias=v.model_alias,
        )
    return out
