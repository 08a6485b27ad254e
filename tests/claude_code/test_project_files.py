"""The Claude Code project and plugin files: one copy of each agent, valid manifests whose paths exist, a
launcher script that finds ``coach``, and settings without secrets."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.claude_code._support import AGENTS, REPO_ROOT

TOOLS = (
    "coach_turn",
    "coach_synthesis",
    "write_shadow",
    "write_persona",
    "write_plasticity",
    "write_stability",
    "write_coach",
    "write_synthesis",
    "read_entry",
    "list_entries",
    "get_profile",
    "get_session_history",
    "collect_turn",
)


def _json(rel: str) -> dict:
    return json.loads((REPO_ROOT / rel).read_text(encoding="utf-8"))


def _front_matter(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    block = text[4 : text.index("\n---\n", 4)]
    return {
        k.strip(): v.strip()
        for k, _, v in (line.partition(":") for line in block.splitlines() if ":" in line)
    }


def test_project_subagents_are_relative_symlinks_to_the_one_copy_in_agents() -> None:
    found = sorted(p.name for p in (REPO_ROOT / ".claude" / "agents").iterdir())
    assert found == sorted(f"{a}.md" for a in AGENTS)
    for agent in AGENTS:
        link = REPO_ROOT / ".claude" / "agents" / f"{agent}.md"
        assert link.is_symlink(), f"{link} must be a symlink, not a copy"
        assert not os.path.isabs(os.readlink(link)), "relative, so clones and copies keep working"
        assert link.resolve() == (REPO_ROOT / "agents" / f"{agent}.md").resolve()


def test_mcp_json_starts_the_session_server_through_the_launcher_script() -> None:
    server = _json(".mcp.json")["mcpServers"]["coachboard"]
    assert server["type"] == "stdio"
    # Project servers start in the project root; a relative path keeps the file free of machine paths.
    assert server["command"] == "./.claude-plugin/coach-mcp.sh"
    script = REPO_ROOT / server["command"]
    assert script.is_file() and os.access(script, os.X_OK)


def test_launcher_script_finds_coach_mcp() -> None:
    script = REPO_ROOT / ".claude-plugin" / "coach-mcp.sh"
    done = subprocess.run([str(script), "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--data-dir" in done.stdout and "--session" in done.stdout


def test_plugin_manifest_points_at_the_same_files() -> None:
    manifest = _json(".claude-plugin/plugin.json")
    assert manifest["name"] == "coachboard" and re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["description"]
    assert sorted(manifest["agents"]) == sorted(f"./agents/{a}.md" for a in AGENTS)
    for rel in [*manifest["agents"], *manifest["commands"]]:
        assert (REPO_ROOT / rel).is_file(), rel
    assert {Path(c).parent for c in manifest["commands"]} == {Path("./.claude/commands")}, "no second copy"
    server = manifest["mcpServers"]["coachboard"]
    assert server["command"] == "${CLAUDE_PLUGIN_ROOT}/.claude-plugin/coach-mcp.sh"


def test_commands_call_the_pipeline_and_read_tools_under_both_names() -> None:
    coach = _front_matter(REPO_ROOT / ".claude" / "commands" / "coach.md")
    allowed = {t.strip() for t in coach["allowed-tools"].split(",")}
    assert allowed == {
        f"{prefix}{tool}"
        for prefix in ("mcp__coachboard__", "mcp__plugin_coachboard_coachboard__")
        for tool in ("coach_turn", "coach_synthesis")
    }
    assert "$ARGUMENTS" in (REPO_ROOT / ".claude" / "commands" / "coach.md").read_text(encoding="utf-8")
    board = _front_matter(REPO_ROOT / ".claude" / "commands" / "coach-board.md")
    for name in (t.strip() for t in board["allowed-tools"].split(",")):
        assert name.rsplit("__", 1)[-1] in ("get_profile", "get_session_history"), name


def test_settings_hold_no_secrets_and_allow_only_existing_read_tools() -> None:
    settings = _json(".claude/settings.json")
    text = json.dumps(settings).lower()
    for word in ("api_key", "apikey", "token", "secret", "password", "anthropic_"):
        assert word not in text, word
    assert settings["enabledMcpjsonServers"] == ["coachboard"]
    for rule in settings["permissions"]["allow"]:
        prefix, _, tool = rule.rpartition("__")
        assert prefix == "mcp__coachboard" and tool in TOOLS, rule
        assert not tool.startswith("write_"), "writes stay with the subagents that own them"


def test_agent_files_name_only_existing_tools_of_the_project_server() -> None:
    for agent in AGENTS:
        tools = [t.strip() for t in _front_matter(REPO_ROOT / "agents" / f"{agent}.md")["tools"].split(",")]
        assert tools, agent
        for tool in tools:
            server, _, name = tool.removeprefix("mcp__").rpartition("__")
            assert server in ("coachboard", "plugin_coachboard_coachboard") and name in TOOLS, tool
