"""Helpers for the Claude Code integration tests: a working copy of the repository, the environment of
the outer ``claude`` session, and a scripted outer model.

The outer session's model requests carry ``x-coach-agent: outer`` (``ANTHROPIC_CUSTOM_HEADERS``), so the
scripted upstream plays :func:`outer_script` for them; the pipeline's agents run through the proxy with
their own ``x-coach-agent`` headers and play their own scripts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from testsupport import Step, Text, ToolCall
from testsupport.claude import plain_claude_env

REPO_ROOT = Path(__file__).resolve().parents[2]
AGENTS = ("shadow", "persona", "plasticity", "stability", "coach", "pineal")
OUTER = "outer"
PLUGIN_SERVER = "plugin:coachboard:coachboard"
PLUGIN_TOOL_PREFIX = "mcp__plugin_coachboard_coachboard__"

#: The agent files' deadlines are multiplied by this in the test copy: six cold ``claude`` processes on
#: two shared cores take 10-25 s to their first token, past the Coach's real 20 s deadline.
DEADLINE_FACTOR = 6


def copy_repo(dst: Path, *, deadline_factor: int = DEADLINE_FACTOR) -> Path:
    """Copy what a clone of the working tree holds (tracked and not-ignored files, symlinks kept as
    symlinks) to ``dst``, link the repository's ``.venv``, and scale the agents' ``deadline_s``."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        src, out = REPO_ROOT / rel, dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        elif src.is_file():
            shutil.copy2(src, out)
    if not (dst / ".venv").exists():
        os.symlink((REPO_ROOT / ".venv").resolve(), dst / ".venv")
    for agent in AGENTS:
        path = dst / "agents" / f"{agent}.md"
        text = path.read_text(encoding="utf-8")
        text = re.sub(
            r"(?m)^deadline_s:\s*([0-9.]+)\s*$",
            lambda m: f"deadline_s: {float(m.group(1)) * deadline_factor:g}",
            text,
            count=1,
        )
        path.write_text(text, encoding="utf-8")
    return dst


def write_coach_toml(path: Path, *, upstream_url: str, data_dir: Path) -> Path:
    """A ``coach.toml`` pointing the pipeline at the scripted upstream (Anthropic kind) and ``data_dir``."""
    path.write_text(
        f'[upstream]\nurl = "{upstream_url}"\nkind = "anthropic"\n\n[data]\ndir = "{data_dir}"\n',
        encoding="utf-8",
    )
    return path


def trust_project(home: Path, project: Path) -> None:
    """Mark ``project`` trusted in the test HOME's Claude config, as the interactive trust dialog does,
    so the project's ``permissions`` apply."""
    config = home / ".claude" / ".claude.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}), encoding="utf-8"
    )


def session_env(
    upstream_url: str, home: Path, *, user: str, session: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The outer session's environment: plain requests to the scripted upstream, tagged ``outer``; the
    coaching user and session for the MCP server; MCP servers connected before the first request."""
    env = plain_claude_env(
        upstream_url,
        headers={"x-coach-agent": OUTER},
        home=home,
        extra={
            "COACH_USER": user,
            "COACH_SESSION": session,
            "MCP_CONNECTION_NONBLOCKING": "false",
            "CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "60000",
        },
    )
    for var in ("COACH_CONFIG", "COACH_DATA_DIR", "COACH_UPSTREAM_URL", "COACH_MCP_SESSION"):
        env.pop(var, None)
    env.update(extra or {})
    return env


def tool_results(request: Any) -> list[str]:
    """The text of every ``tool_result`` block in the request's messages, oldest first."""
    out: list[str] = []
    for message in request.messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    out.append(inner)
                elif isinstance(inner, list):
                    out.append("".join(str(b.get("text", "")) for b in inner if isinstance(b, dict)))
    return out


def outer_script(
    steps: Sequence[Callable[[Any], Step]],
    *,
    sub_agents: Mapping[str, Callable[[Any], Step]] | None = None,
    seen: list[Any] | None = None,
) -> Callable[[Any], Step]:
    """The outer model: plays ``steps`` one per request (each after the previous tool result), then
    answers "DONE:" + the tool results joined by newlines (what the session shows). Requests whose
    system prompt is a subagent's (``"You are <Name>"``) go to ``sub_agents[name]`` instead. Every
    request is appended to ``seen``."""
    state = {"next": 0}

    def script(request: Any) -> Step:
        if seen is not None:
            seen.append(request)
        for name, sub in (sub_agents or {}).items():
            if f"You are {name.capitalize()}" in request.system_text:
                return sub(request)
        if state["next"] < len(steps):
            state["next"] += 1
            return steps[state["next"] - 1](request)
        return Text("DONE:" + "\n".join(tool_results(request)))

    return script


def write_then_stop(tool: str, payload: Mapping[str, Any]) -> Callable[[Any], Step]:
    """A subagent's script: call ``tool`` with ``payload`` once, then end with a short text."""

    def script(request: Any) -> Step:
        if not tool_results(request):
            return ToolCall(tool, dict(payload))
        return Text("rated")

    return script


def request_tool_names(requests: Sequence[Any]) -> set[str]:
    return {name for r in requests for name in r.tool_names}
