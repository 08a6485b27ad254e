"""Agent process wiring without starting processes: proxy policies from the agent files, the
claude-agent-sdk options (env, strict MCP config, tools, signed scope), and the turn directory scope."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher.agents import load_agents
from launcher.agents._spec_view import view_of
from launcher.agents.policies import policies_from_agents
from launcher.pipeline._turn_scope import DirectoryScope, TurnDirectory
from launcher.pipeline.turn import _tail
from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig
from mcp_server import SCOPE_TOKEN_HEADER, Scope, scope_token
from mcp_server.errors import ScopeError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def specs() -> dict:
    return load_agents(REPO / "agents")


def test_policies_follow_the_agent_files(specs: dict) -> None:
    pol = policies_from_agents(specs, token_budget=50_000)
    assert set(pol) == {"shadow", "persona", "plasticity", "stability", "coach", "pineal"}
    for name, spec in specs.items():
        p = pol[name]
        assert p.max_tokens == spec.max_output_tokens and p.model_alias == spec.model_alias
        assert p.token_budget == 50_000
        if spec.force_output_tool:
            assert p.force_tool == f"mcp__coachboard__{view_of(spec).output_tool}" and p.stop_after_tool
        else:
            assert p.force_tool is None and not p.stop_after_tool
    unforced = specs["persona"].model_copy(update={"force_output_tool": False})
    assert policies_from_agents([unforced])["persona"].force_tool is None


def test_duplicate_agent_names_are_refused(specs: dict) -> None:
    with pytest.raises(ValueError, match="two agent files"):
        policies_from_agents([specs["coach"], specs["coach"]])


def _invocation(specs: dict, agent: str = "persona"):
    from launcher.runner._agent_runner import AgentInvocation

    v = view_of(specs[agent])
    return AgentInvocation(
        agent=agent,
        user="u1",
        session="s1",
        turn="t000003",
        system_prompt=v.prompt,
        model=v.model_alias,
        tools=v.tools,
        max_output_tokens=v.max_output_tokens,
        context_budget_tokens=v.context_budget_tokens,
        prompt="full",
        followup="short",
        tool_timeout_s=v.deadline_s,
    )


def test_sdk_options_make_a_plain_strict_agent(specs: dict) -> None:
    runner = ClaudeAgentRunner(
        RunnerConfig(proxy_url="http://127.0.0.1:1", mcp_url="http://127.0.0.1:2/mcp", mcp_secret="s3")
    )
    inv = _invocation(specs)
    warm = runner.options(inv, one_shot=False, stderr=lambda _: None)
    assert warm.system_prompt == specs["persona"].prompt  # Claude Code's default prompt replaced
    assert warm.tools == [] and warm.allowed_tools == ["mcp__coachboard__write_persona"]
    assert warm.permission_mode == "bypassPermissions" and warm.env["IS_SANDBOX"] == "1"
    assert warm.strict_mcp_config and warm.setting_sources == []
    assert warm.model == specs["persona"].model_alias
    env = warm.env
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == str(specs["persona"].max_output_tokens)
    for k in (
        "CLAUDE_CODE_MODEL_CAPABILITIES",
        "ENABLE_TOOL_SEARCH",
        "CLAUDE_CODE_ATTRIBUTION_HEADER",
        "CLAUDE_CODE_DISABLE_THINKING",
        "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    ):
        assert k in env
    assert env["ANTHROPIC_CUSTOM_HEADERS"].splitlines() == [
        "x-coach-agent: persona",
        "x-coach-user: u1",
        "x-coach-session: s1",
    ]
    server = warm.mcp_servers["coachboard"]
    assert server["type"] == "http" and server["url"] == "http://127.0.0.1:2/mcp"
    headers = server["headers"]
    assert "x-coach-turn" not in headers  # warm: the turn comes from the supervisor's directory
    # The token is in the process environment, not in --mcp-config (argv is visible to every local user
    # through ps); Claude Code expands ${COACH_MCP_SCOPE_TOKEN} in the header value.
    assert headers[SCOPE_TOKEN_HEADER] == "${COACH_MCP_SCOPE_TOKEN}"
    assert env["COACH_MCP_SCOPE_TOKEN"] == scope_token("s3", Scope.create("u1", "s1", None, "persona"))
    assert env["COACH_MCP_SCOPE_TOKEN"] not in json.dumps(warm.mcp_servers)
    cold = runner.options(inv, one_shot=True, stderr=lambda _: None)
    assert cold.mcp_servers["coachboard"]["headers"]["x-coach-turn"] == "t000003"
    assert cold.env["COACH_MCP_SCOPE_TOKEN"] == scope_token(
        "s3", Scope.create("u1", "s1", "t000003", "persona")
    )
    assert cold.env["COACH_MCP_SCOPE_TOKEN"] not in json.dumps(cold.mcp_servers)
    assert "x-coach-turn: t000003" in cold.env["ANTHROPIC_CUSTOM_HEADERS"]
    json.dumps(cold.mcp_servers)  # what the SDK passes to --mcp-config


def test_directory_scope_fills_the_turn_only_for_armed_agents() -> None:
    d = TurnDirectory()
    scopes = DirectoryScope(d, secret="k")

    def headers(agent: str, user: str = "u1", turn: str | None = None) -> dict[str, str]:
        h = {"x-coach-user": user, "x-coach-session": "s1", "x-coach-agent": agent}
        if turn:
            h["x-coach-turn"] = turn
        h[SCOPE_TOKEN_HEADER] = scope_token("k", Scope.create(user, "s1", turn, agent))
        return h

    assert scopes.scope_for(headers("shadow")).turn is None  # no open turn: read-only
    d.open("u1", "s1", "t000001", ["shadow", "coach"])
    assert scopes.scope_for(headers("shadow")).turn == "t000001"
    assert scopes.scope_for(headers("pineal")).turn is None  # not armed
    assert scopes.scope_for(headers("shadow", user="u2")).turn is None  # other user's session
    d.disarm("u1", "s1", "t000001", "shadow")
    assert scopes.scope_for(headers("shadow")).turn is None  # finished: a late write gets no turn
    d.arm("u1", "s1", "t000001", "pineal")
    assert scopes.scope_for(headers("pineal")).turn == "t000001"
    assert (
        scopes.scope_for(headers("pineal", turn="t000009")).turn == "t000009"
    )  # signed one-shot header kept
    d.close("u1", "s1", "t000001")
    assert scopes.scope_for(headers("pineal")).turn is None
    forged = headers("coach")
    forged["x-coach-user"] = "someone-else"
    with pytest.raises(ScopeError):
        scopes.scope_for(forged)


def test_tail_names_the_agent_tool_and_forbids_ids(specs: dict) -> None:
    t = _tail(view_of(specs["stability"]), "t000002")
    assert "write_stability exactly once" in t and "Never pass user, session or turn ids" in t


def test_seed_way_options_keep_claude_codes_defaults(specs: dict) -> None:
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp", seed_way=True))
    opts = runner.options(_invocation(specs), one_shot=True, stderr=lambda _: None)
    assert opts.system_prompt["type"] == "preset" and opts.system_prompt["append"] == specs["persona"].prompt
    assert opts.tools is None and "CLAUDE_CODE_DISABLE_THINKING" not in opts.env


def test_inherited_anthropic_settings_are_blanked(specs: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-something")
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp"))
    env = runner.options(_invocation(specs), one_shot=True, stderr=lambda _: None).env
    assert env["ANTHROPIC_MODEL"] == "" and env["CLAUDE_CODE_USE_BEDROCK"] == ""
    assert env["ANTHROPIC_BASE_URL"] == "http://p"
