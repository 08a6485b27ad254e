"""launcher.runner._reset: a pooled warm process reset with Claude Code's ``/clear`` serves the next
session with nothing of the previous one reachable; a reset that is not confirmed stops the process.

Real ``claude`` binary (claude-agent-sdk's bundled one) straight to the scripted upstream (Anthropic kind),
which records every request body; the MCP URL points at a closed port (the Coach carries on without its
tools). A token planted in session A's user message and in the model's answer must appear in no part
(messages, system prompt) of session B's request from the same process, nor in any file under its HOME;
the control (A's own follow-up in the same process, no reset) shows the check finds it when it is there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from launcher.runner import _reset
from launcher.runner._agent_runner import AgentInvocation, ClaudeAgentRunner, RunnerConfig, ToolCallRecord
from launcher.runner._process_pool import POOL_USER, Bindings
from testsupport import Text
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.timeout(180)]

TOKEN = "PLANTED-5e0c9a"


class _Events:
    def on_started(self) -> None: ...

    def on_first_token(self) -> None: ...

    def on_tool_result(self, call: ToolCallRecord) -> None: ...


def _inv(user: str, session: str, prompt: str, followup: str = "") -> AgentInvocation:
    return AgentInvocation(
        agent="coach",
        user=user,
        session=session,
        turn="t000001",
        system_prompt="You are the coach.",
        model="qwen3",
        tools=(),
        max_output_tokens=200,
        context_budget_tokens=100_000,
        prompt=prompt,
        followup=followup,
    )


def _answer(request: Any) -> Text:
    """The model: repeats the planted token when its request holds it, else knows nothing."""
    if TOKEN in json.dumps(request.body if hasattr(request, "body") else request.messages):
        return Text(f"Your secret is {TOKEN}-answer.")
    return Text("I know nothing about a secret.")


def _holds_token(request: Any) -> bool:
    return TOKEN in json.dumps(request.body)


async def _runner(
    tmp_path: Path, upstream: ScriptedUpstream, port: int, bindings: Bindings
) -> ClaudeAgentRunner:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    cfg = RunnerConfig(
        proxy_url=upstream.base_url,
        mcp_url=f"http://127.0.0.1:{port}/mcp",
        max_warm=6,
        pool_size=6,
        reuse_processes=True,
        cwd=str(tmp_path),
        extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
    )
    runner = ClaudeAgentRunner(cfg, bindings=bindings)
    assert await runner.pool.fill([_inv(POOL_USER, "", "")]) == 1
    return runner


@pytest.fixture
def model() -> Any:
    up = ScriptedUpstream({"coach": _answer}, latency="instant")
    up.start()
    try:
        yield up
    finally:
        up.stop()


async def test_a_fact_planted_in_one_session_is_not_found_by_the_next_after_reset(
    tmp_path: Path, free_port: int, model: ScriptedUpstream
) -> None:
    bindings = Bindings()
    async with await _runner(tmp_path, model, free_port, bindings) as runner:
        a = _inv("alice", "sA", f"My secret is {TOKEN}-user.", followup="What is my secret?")
        await runner.run(a, _Events())
        pid = runner.pid_of("alice", "sA", "coach")
        pool_session = runner._warm[("alice", "sA", "coach")].pool_session
        assert pool_session is not None and bindings.resolve(POOL_USER, pool_session) == ("alice", "sA")
        control = await runner.run(a, _Events())  # A's own next turn: the conversation holds the fact
        assert TOKEN in control.text and _holds_token(model.model_calls("coach")[-1])

        await runner.close_session("alice", "sA")
        assert runner.reset_processes == 1 and runner.reset_failures == 0
        assert bindings.resolve(POOL_USER, pool_session) == (POOL_USER, pool_session)  # acts for nobody

        before = len(model.model_calls("coach"))
        b = await runner.run(_inv("bob", "sB", "What is my secret?"), _Events())
        assert runner.pid_of("bob", "sB", "coach") == pid, "the reset process served the next session"
        assert runner.started_processes == 0 and runner.pool.started == 1
        assert bindings.resolve(POOL_USER, pool_session) == ("bob", "sB")
        calls = model.model_calls("coach")[before:]
        assert calls and not any(_holds_token(r) for r in calls), "session B's request holds A's fact"
        assert len(calls[0].body["messages"]) == 1  # only B's message: no earlier turn
        assert calls[0].body.get("system") == model.model_calls("coach")[0].body.get("system")
        assert TOKEN not in b.text
    home = tmp_path / "home"
    leaked = [p for p in home.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert not leaked, "the planted fact was written under the process's HOME"


async def test_a_reset_that_is_not_confirmed_stops_the_process_and_never_reuses_it(
    tmp_path: Path, free_port: int, model: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an ordinary prompt instead of /clear: a model turn, no conversation reset -> not confirmed
    monkeypatch.setattr(_reset, "RESET_COMMAND", "Please forget everything.")
    bindings = Bindings()
    async with await _runner(tmp_path, model, free_port, bindings) as runner:
        await runner.run(_inv("alice", "sA", f"My secret is {TOKEN}-user."), _Events())
        pid = runner.pid_of("alice", "sA", "coach")
        pool_session = runner._warm[("alice", "sA", "coach")].pool_session
        assert pool_session is not None
        await runner.close_session("alice", "sA")
        assert runner.reset_failures == 1 and runner.reset_processes == 0
        assert runner.pool.idle() == 0, "an unconfirmed process went back to the pool"
        assert bindings.resolve(POOL_USER, pool_session) == (POOL_USER, pool_session)
        before = len(model.model_calls("coach"))
        await runner.run(_inv("bob", "sB", "What is my secret?"), _Events())
        assert runner.pid_of("bob", "sB", "coach") != pid and runner.started_processes == 1
        assert not any(_holds_token(r) for r in model.model_calls("coach")[before:])


async def test_reset_conversation_is_false_for_a_process_that_is_gone(
    tmp_path: Path, free_port: int, model: ScriptedUpstream
) -> None:
    from launcher.runner._claude_process import kill_process

    bindings = Bindings()
    async with await _runner(tmp_path, model, free_port, bindings) as runner:
        proc = next(iter(runner.pool._idle.values()))[0]
        kill_process(proc.client)
        assert not await _reset.reset_conversation(proc.client, limit_s=5)
