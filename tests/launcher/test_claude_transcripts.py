"""The agents' Claude Code processes keep no transcript of the user's messages on disk.

Real ``claude`` binary (claude-agent-sdk's bundled one) in the runner's warm pool, talking straight to the
scripted upstream (Anthropic kind); the MCP URL points at a closed port (the process carries on without
its tools). By default (``--no-session-persistence``) nothing under ``$CLAUDE_CONFIG_DIR`` holds the
user's text, and a warm second query still continues the same in-process conversation;
``keep_claude_transcripts=True`` restores Claude Code's ``projects/*.jsonl`` transcripts (the control
that shows the first assertion can fail).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.runner._agent_runner import AgentInvocation, ClaudeAgentRunner, RunnerConfig, ToolCallRecord
from testsupport import Text
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.timeout(120)]

_FIRST = "MARKER-first-message-7f3a I keep skipping my runs"
_SECOND = "MARKER-second-message-7f3a I ran once"


class _Events:
    def on_started(self) -> None: ...

    def on_first_token(self) -> None: ...

    def on_tool_result(self, call: ToolCallRecord) -> None: ...


def _invocation() -> AgentInvocation:
    return AgentInvocation(
        agent="coach",
        user="u-hyg",
        session="s1",
        turn="t000001",
        system_prompt="You are the coach.",
        model="qwen3",
        tools=(),
        max_output_tokens=200,
        context_budget_tokens=100_000,
        prompt=_FIRST,
        followup=_SECOND,
    )


def _files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


async def _two_warm_turns(tmp_path: Path, free_port: int, *, keep: bool) -> tuple[Path, list[int], bool]:
    """Run the Coach twice in one warm process; returns the config dir, the message counts of the
    upstream's requests, and whether the second run was warm."""
    home = tmp_path / "home"
    config_dir = home / ".claude"
    config_dir.mkdir(parents=True)
    upstream = ScriptedUpstream({"coach": [Text("first reply"), Text("second reply")]}, latency="instant")
    upstream.start()
    try:
        cfg = RunnerConfig(
            proxy_url=upstream.base_url,
            mcp_url=f"http://127.0.0.1:{free_port}/mcp",
            max_warm=2,
            cwd=str(tmp_path),
            keep_claude_transcripts=keep,
            extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(config_dir)},
        )
        async with ClaudeAgentRunner(cfg) as runner:
            await runner.run(_invocation(), _Events())
            second = await runner.run(_invocation(), _Events())
            assert runner.started_processes == 1
        counts = [len(r.body.get("messages") or []) for r in upstream.model_calls("coach")]
    finally:
        upstream.stop()
    return config_dir, counts, second.warm


def test_no_session_persistence_is_the_default_and_can_be_turned_off() -> None:
    inv = _invocation()
    default = ClaudeAgentRunner(RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp"))
    assert default.options(inv, one_shot=False, stderr=lambda _: None).extra_args == {
        "no-session-persistence": None
    }
    keep = ClaudeAgentRunner(
        RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp", keep_claude_transcripts=True)
    )
    assert keep.options(inv, one_shot=True, stderr=lambda _: None).extra_args == {}


async def test_warm_agent_writes_no_transcript_and_keeps_its_conversation(
    tmp_path: Path, free_port: int
) -> None:
    config_dir, counts, warm = await _two_warm_turns(tmp_path, free_port, keep=False)
    assert warm
    # the second query continued the first conversation in the process: prompt, reply, follow-up
    assert counts == [1, 3]
    assert not list(config_dir.rglob("*.jsonl")), "Claude Code saved a session transcript"
    # nor anywhere else under the process's HOME (CLAUDE_CONFIG_DIR, ~/.cache MCP logs, ...)
    assert not _files_holding(config_dir.parent, "MARKER-"), "the user's text was written to disk"


async def test_keep_claude_transcripts_restores_them(tmp_path: Path, free_port: int) -> None:
    config_dir, counts, warm = await _two_warm_turns(tmp_path, free_port, keep=True)
    assert warm and counts == [1, 3]
    transcripts = list((config_dir / "projects").rglob("*.jsonl"))
    assert transcripts and {p for p in transcripts if _SECOND.encode() in p.read_bytes()}


def test_agents_keep_claude_transcripts_config_key(tmp_path: Path) -> None:
    from launcher.config import CoachConfig, load_config

    assert CoachConfig().agents.keep_claude_transcripts is False
    path = tmp_path / "coach.toml"
    path.write_text("[agents]\nkeep_claude_transcripts = true\n")
    assert load_config(path).agents.keep_claude_transcripts is True
