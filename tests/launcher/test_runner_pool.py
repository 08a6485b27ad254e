"""The runner's warm-process pool with ``ClaudeSDKClient`` replaced by a double at the SDK boundary:
warm reuse with the short follow-up prompt, the warm limit (one-shot beyond it, LRU eviction of idle
processes), restart on an agent-file change or an outgrown context budget, error classification."""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import pytest
from claude_agent_sdk.types import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from launcher.errors import AgentFailedError
from launcher.runner._agent_runner import AgentInvocation, ClaudeAgentRunner, RunnerConfig, ToolCallRecord

pytestmark = pytest.mark.anyio

_ids = itertools.count(1)


class FakeClient:
    """Plays one write per query; records prompts; ``mode`` per class: ok | api500 | max_turns."""

    instances: ClassVar[list[FakeClient]] = []
    mode = "ok"
    input_tokens = 100

    def __init__(self, options: Any) -> None:
        self.options = options
        self.prompts: list[str] = []
        self.connected = False
        self.disconnected = False
        FakeClient.instances.append(self)

    async def connect(self) -> None:
        self.connected = True

    async def query(self, prompt: str) -> None:
        self.prompts.append(prompt)

    async def receive_response(self) -> Any:
        n = next(_ids)
        usage = {"input_tokens": FakeClient.input_tokens, "output_tokens": 7}
        yield StreamEvent(
            uuid="u", session_id="s", event={"type": "message_start", "message": {"usage": usage}}
        )
        yield StreamEvent(uuid="u", session_id="s", event={"type": "content_block_start"})
        tool = self.options.allowed_tools[0]
        yield AssistantMessage(
            content=[ToolUseBlock(id=f"t{n}", name=tool, input={"reply": "hi"})], model="m"
        )
        yield UserMessage(content=[ToolResultBlock(tool_use_id=f"t{n}", content="STORED.", is_error=False)])
        if FakeClient.mode == "api500":
            yield ResultMessage(
                subtype="success",
                duration_ms=1,
                duration_api_ms=1,
                is_error=True,
                num_turns=1,
                session_id="s",
                result="API Error: 500 boom",
                usage=usage,
            )
        else:
            yield ResultMessage(
                subtype="error_max_turns" if FakeClient.mode == "max_turns" else "success",
                duration_ms=1,
                duration_api_ms=1,
                is_error=FakeClient.mode == "max_turns",
                num_turns=1,
                session_id="s",
                result="Done.",
                usage=usage,
            )

    async def disconnect(self) -> None:
        self.disconnected = True


class Events:
    def __init__(self) -> None:
        self.first = 0
        self.calls: list[ToolCallRecord] = []

    def on_started(self) -> None:
        pass

    def on_first_token(self) -> None:
        self.first += 1

    def on_tool_result(self, call: ToolCallRecord) -> None:
        self.calls.append(call)


@pytest.fixture(autouse=True)
def fake_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    import claude_agent_sdk

    FakeClient.instances = []
    FakeClient.mode = "ok"
    FakeClient.input_tokens = 100
    monkeypatch.setattr(claude_agent_sdk, "ClaudeSDKClient", FakeClient)


def inv(
    agent: str = "coach", session: str = "s1", prompt_body: str = "You are the coach.", budget: int = 4000
) -> AgentInvocation:
    return AgentInvocation(
        agent=agent,
        user="u1",
        session=session,
        turn="t1",
        system_prompt=prompt_body,
        model="fast",
        tools=(f"write_{agent}",),
        max_output_tokens=100,
        context_budget_tokens=budget,
        prompt="FULL PACK",
        followup="FOLLOW-UP",
    )


async def test_warm_reuse_sends_the_follow_up_and_counts_tokens() -> None:
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2))
    ev = Events()
    first = await runner.run(inv(), ev)
    second = await runner.run(inv(), ev)
    assert len(FakeClient.instances) == 1 and FakeClient.instances[0].prompts == ["FULL PACK", "FOLLOW-UP"]
    assert not first.warm and second.warm and second.input_tokens == 100 and second.output_tokens == 7
    assert [c.name for c in ev.calls] == ["write_coach", "write_coach"] and ev.first == 2
    assert runner.warm_count() == 1
    await runner.aclose()
    assert FakeClient.instances[0].disconnected


async def test_beyond_the_warm_limit_idle_processes_are_evicted_lru() -> None:
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2))
    for session in ("a", "b", "c"):
        await runner.run(inv(session=session), Events())
    assert runner.warm_count() == 2
    await runner.aclose()
    assert FakeClient.instances[0].disconnected  # session a (least recently used) was evicted


async def test_zero_warm_limit_means_one_shot_processes() -> None:
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=0))
    await runner.run(inv(), Events())
    await runner.run(inv(), Events())
    await runner.aclose()
    assert len(FakeClient.instances) == 2 and all(c.prompts == ["FULL PACK"] for c in FakeClient.instances)
    assert all(c.disconnected for c in FakeClient.instances)
    # one-shot processes carry the turn header (the MCP server needs no directory for them)
    assert FakeClient.instances[0].options.mcp_servers["coachboard"]["headers"]["x-coach-turn"] == "t1"


async def test_agent_file_change_or_outgrown_budget_restarts_the_conversation() -> None:
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m"))
    await runner.run(inv(), Events())
    await runner.run(inv(prompt_body="You are the coach, v2."), Events())  # edited agent file
    assert len(FakeClient.instances) == 2 and FakeClient.instances[1].prompts == ["FULL PACK"]
    FakeClient.input_tokens = 5000
    await runner.run(inv(prompt_body="You are the coach, v2."), Events())  # reuse; now 5000 tokens in
    await runner.run(inv(prompt_body="You are the coach, v2.", budget=4000), Events())
    assert len(FakeClient.instances) == 3 and FakeClient.instances[2].prompts == ["FULL PACK"]
    await runner.aclose()


async def test_upstream_5xx_is_a_retryable_error_and_max_turns_returns_the_calls() -> None:
    runner = ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m"))
    FakeClient.mode = "api500"
    with pytest.raises(AgentFailedError) as err:
        await runner.run(inv(), Events())
    assert err.value.code == "upstream_error" and err.value.retryable and err.value.status == "error"
    assert runner.warm_count() == 0  # a failed process is not kept
    FakeClient.mode = "max_turns"
    out = await runner.run(inv(), Events())
    assert out.stopped == "max_turns" and out.tool_calls[0].ok
    await runner.aclose()
