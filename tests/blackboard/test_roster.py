"""The agent roster (blackboard/_roster.py) is the one list of the agents: names, schemas, write tools,
stages and the supervisor's and MCP server's views of them all derive from it."""

from __future__ import annotations

from blackboard import (
    AGENT_NAMES,
    AGENT_ORDER,
    AGENT_OUTPUT_SCHEMAS,
    ROSTER,
    STAGE_OF,
    SYNTHESIS_INPUTS,
    WRITE_TOOL_NAMES,
    Stage,
    agents_at,
)


def test_the_roster_lists_six_agents_with_one_early_one_synthesis_and_four_specialists() -> None:
    assert [a.name for a in ROSTER] == ["shadow", "persona", "plasticity", "stability", "coach", "pineal"]
    assert agents_at(Stage.EARLY) == ("coach",)
    assert agents_at(Stage.SPECIALIST) == ("shadow", "persona", "plasticity", "stability")
    assert agents_at(Stage.SYNTHESIS) == ("pineal",)


def test_every_list_of_the_agents_derives_from_the_roster() -> None:
    assert AGENT_NAMES == tuple(a.name for a in ROSTER)
    assert AGENT_OUTPUT_SCHEMAS == {a.name: a.output_schema for a in ROSTER}
    assert WRITE_TOOL_NAMES == {a.name: a.write_tool for a in ROSTER}
    assert STAGE_OF == {a.name: a.stage for a in ROSTER}
    assert AGENT_ORDER == ("coach", "shadow", "persona", "plasticity", "stability", "pineal")
    assert SYNTHESIS_INPUTS == tuple(a.name for a in ROSTER if a.stage is not Stage.SYNTHESIS)


def test_the_mcp_server_and_the_agent_files_use_the_roster() -> None:
    from launcher.agents import AGENT_NAMES as FILE_NAMES
    from launcher.agents import EXPECTED_STAGE
    from launcher.pipeline.turn import EARLY, SPECIALISTS, SYNTHESIS
    from mcp_server import WRITE_TOOL_NAMES as SERVED
    from mcp_server import McpConfig

    assert SERVED == WRITE_TOOL_NAMES and FILE_NAMES == AGENT_NAMES
    assert EXPECTED_STAGE == {"coach": "early_reply", "pineal": "synthesis"} | dict.fromkeys(
        SPECIALISTS, "specialist"
    )
    assert (EARLY, SYNTHESIS) == (("coach",), "pineal")
    assert McpConfig().collect_agents == SYNTHESIS_INPUTS
