"""How an agent's failed run is reported: the proxy's own statuses said from the user's side."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.errors import AgentFailedError
from launcher.runner._agent_runner import AgentInvocation, ClaudeAgentRunner, RunnerConfig, _result_error
from testsupport.script import Error
from testsupport.upstream import ScriptedUpstream


def test_proxy_statuses_name_the_model_server_not_a_raw_code() -> None:
    down = _result_error(
        "coach", "success", 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'
    )
    assert "no model server could be reached" in down.message and "COACH_UPSTREAM_URL" in down.message
    assert down.code == "upstream_error" and down.retryable
    garbage = _result_error("shadow", "success", "API Error: 502 upstream sent garbage")
    assert "unusable answer" in garbage.message and garbage.retryable
    other = _result_error("persona", "success", "API Error: 418 teapot")
    assert other.message.endswith("the proxy answered HTTP 418") and not other.retryable


def test_a_transport_error_without_status_is_transient() -> None:
    err = _result_error("stability", "error_during_execution", "API Error: Connection refused (ECONNREFUSED)")
    assert err.code == "upstream_error" and err.retryable
    assert "error_during_execution" in err.message and "ECONNREFUSED" in err.message


class _Events:
    def __init__(self) -> None:
        self.first_tokens = 0

    def on_started(self) -> None: ...

    def on_first_token(self) -> None:
        self.first_tokens += 1

    def on_tool_result(self, call: object) -> None: ...


@pytest.mark.e2e
@pytest.mark.anyio
@pytest.mark.timeout(120)
async def test_a_failed_request_is_no_first_token(tmp_path: Path, free_port: int) -> None:
    """Real ``claude``: a model server answering HTTP 500 makes Claude Code emit a synthetic "API Error"
    assistant message; the timeline must not show it as the agent's first token."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    upstream = ScriptedUpstream({"coach": [Error(500)] * 4}, latency="instant")
    upstream.start()
    events = _Events()
    try:
        cfg = RunnerConfig(
            proxy_url=upstream.base_url,
            mcp_url=f"http://127.0.0.1:{free_port}/mcp",
            max_warm=0,
            cwd=str(tmp_path),
            extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
        )
        async with ClaudeAgentRunner(cfg) as runner:
            with pytest.raises(AgentFailedError) as info:
                await runner.run(
                    AgentInvocation(
                        agent="coach",
                        user="u",
                        session="s1",
                        turn="t000001",
                        system_prompt="You are the coach.",
                        model="qwen3",
                        tools=(),
                        max_output_tokens=200,
                        context_budget_tokens=100_000,
                        prompt="hello",
                        followup="hello",
                    ),
                    events,
                )
    finally:
        upstream.stop()
    assert upstream.model_calls("coach"), "the upstream was never asked"
    assert info.value.code == "upstream_error" and "500" in info.value.message
    assert events.first_tokens == 0
