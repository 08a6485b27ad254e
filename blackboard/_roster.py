"""The six agents, listed once: name, stage, write tool and output schema. Every other list of the
agents (names, schemas, write tools, the supervisor's stages, the agents Pineal reads) derives from
:data:`ROSTER` (docs/layout.md, "The agent roster")."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import get_args

from pydantic import BaseModel

from ._schema_agents import CoachOutput, PersonaOutput, PlasticityOutput, SynthesisOutput
from ._schema_common import AgentName
from ._schema_shadow import ShadowOutput
from ._schema_stability import StabilityOutput

__all__ = [
    "AGENT_NAMES",
    "AGENT_ORDER",
    "ROSTER",
    "STAGE_OF",
    "SYNTHESIS_INPUTS",
    "WRITE_TOOL_NAMES",
    "AgentSpec",
    "Stage",
    "agents_at",
]


class Stage(Enum):
    """When an agent runs in a turn (docs/architecture.md, "One coaching turn, as data"); the value is what
    an agent file's ``stage:`` says."""

    #: First, its reply shown to the user at once (the Coach).
    EARLY = "early_reply"
    #: Alongside the early agent, each with its own deadline (Shadow, Persona, Plasticity, Stability).
    SPECIALIST = "specialist"
    #: After the barrier, from the brief of the others' entries (Pineal).
    SYNTHESIS = "synthesis"


@dataclass(frozen=True)
class AgentSpec:
    """One agent of the roster: its ``name`` (lowercase everywhere), its :class:`Stage`, the MCP tool it
    writes its output with, and the pydantic schema that output is validated against."""

    name: str
    stage: Stage
    write_tool: str
    output_schema: type[BaseModel]


#: The six agents, in the blackboard's order (entries, schemas, briefs).
ROSTER: tuple[AgentSpec, ...] = (
    AgentSpec("shadow", Stage.SPECIALIST, "write_shadow", ShadowOutput),
    AgentSpec("persona", Stage.SPECIALIST, "write_persona", PersonaOutput),
    AgentSpec("plasticity", Stage.SPECIALIST, "write_plasticity", PlasticityOutput),
    AgentSpec("stability", Stage.SPECIALIST, "write_stability", StabilityOutput),
    AgentSpec("coach", Stage.EARLY, "write_coach", CoachOutput),
    AgentSpec("pineal", Stage.SYNTHESIS, "write_synthesis", SynthesisOutput),
)


def agents_at(stage: Stage) -> tuple[str, ...]:
    """The names of the roster's agents at ``stage``, in roster order."""
    return tuple(a.name for a in ROSTER if a.stage is stage)


AGENT_NAMES: tuple[str, ...] = tuple(a.name for a in ROSTER)
#: The agents in the order a turn runs them (early, specialists, synthesis): how statuses are shown.
AGENT_ORDER: tuple[str, ...] = tuple(n for stage in Stage for n in agents_at(stage))
#: The agents whose entries Pineal's brief is built from: every agent before the synthesis.
SYNTHESIS_INPUTS: tuple[str, ...] = tuple(a.name for a in ROSTER if a.stage is not Stage.SYNTHESIS)
#: agent -> its stage.
STAGE_OF: dict[str, Stage] = {a.name: a.stage for a in ROSTER}
#: agent -> its write tool (Pineal writes the synthesis).
WRITE_TOOL_NAMES: dict[str, str] = {a.name: a.write_tool for a in ROSTER}

assert AGENT_NAMES == get_args(AgentName), "the AgentName literal must list the roster"
