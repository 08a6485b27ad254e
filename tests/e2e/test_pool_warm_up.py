"""A pooled process's warm-up leaves nothing for the session it is handed to, end to end: the real
``claude`` process warms up as the pool user (a fixed text ending with the prefill marker, then
``/clear``), is handed to a user's session, and its first request there carries only that session's
prompt: none of the warm-up's messages, no earlier reply, no other identity."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from blackboard import Blackboard
from launcher.pipeline._turn_scope import TurnDirectory
from launcher.pipeline.stack import running_stack
from launcher.pipeline.supervisor import pool_invocations
from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig
from launcher.runner._process_pool import POOL_USER, WARM_UP_TEXT, bindings_for
from proxy import PREFILL_MARKER, ModelPool, ProxyConfig
from proxy._prefill import PREFILL_REPLY
from tests.e2e.harness import all_text, e2e_specs, messages_of
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180), pytest.mark.anyio]

PROMPT = "# Context\nalice's own message for this session\n"


class _Events:
    def on_started(self) -> None: ...

    def on_first_token(self) -> None: ...

    def on_tool_result(self, call: object) -> None: ...


async def test_a_pooled_process_starts_its_session_with_an_empty_conversation(tmp_path: Path) -> None:
    specs = e2e_specs()
    home = tmp_path / "claude-home"
    (home / ".claude").mkdir(parents=True)
    board = Blackboard(tmp_path / "data")
    directory = TurnDirectory()
    upstream = ScriptedUpstream({}, latency="instant", default_text="Done.")
    upstream.start()
    try:
        pool = ModelPool(name="qwen3", aliases=["*"], kind="openai", replicas=[upstream.base_url])
        proxy_cfg = ProxyConfig(models=[pool], default_model="qwen3", max_attempts=1)
        async with running_stack(
            board=board, directory=directory, proxy_config=proxy_cfg, agents=specs
        ) as urls:
            cfg = RunnerConfig(
                proxy_url=urls.proxy_url,
                mcp_url=urls.mcp_url,
                max_warm=6,
                pool_size=1,
                cwd=str(tmp_path),
                extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            )
            async with ClaudeAgentRunner(cfg, bindings=bindings_for(directory)) as runner:
                (coach,) = pool_invocations(specs)[:1]
                assert await runner.fill_pool([coach]) == 1
                warm_up = list(upstream.model_calls())
                inv = dataclasses.replace(coach, user="alice", session="s1", turn="t000001", prompt=PROMPT)
                await runner.run(inv, _Events())
                assert runner.pool.handed_out == 1 and runner.started_processes == 0
                real = [r for r in upstream.model_calls() if r not in warm_up]
    finally:
        upstream.stop()
        board.close()
    # the warm-up: one prefill as the pool user (max_tokens 1), nobody's data
    (pre,) = warm_up
    assert pre.headers["x-coach-user"] == POOL_USER and pre.body["max_tokens"] == 1
    assert WARM_UP_TEXT.strip() in all_text(pre)
    # the session's first request: its own identity and prompt, nothing of the warm-up
    (first, *_) = real
    assert (first.headers["x-coach-user"], first.headers["x-coach-session"]) == ("alice", "s1")
    text = all_text(first)
    assert "alice's own message" in text
    assert WARM_UP_TEXT.strip() not in text and PREFILL_MARKER not in text
    assert "local-command" not in text and "/clear" not in text  # the proxy drops Claude Code's record
    assert [m["role"] for m in messages_of(first) if m["role"] != "system"] == ["user"]
    assert PREFILL_REPLY not in [str(m.get("content")) for m in messages_of(first)]


async def test_a_pooled_runtime_fills_its_pool_in_the_background(tmp_path: Path) -> None:
    # what coach worker runs: coach_runtime(pool=True), sized by [agents] warm_process_limit
    import anyio

    from launcher.config import AgentsConfig, CoachConfig, DataConfig, UpstreamConfig
    from launcher.pipeline._runtime import coach_runtime

    upstream = ScriptedUpstream({}, latency="instant", default_text="Done.")
    upstream.start()
    try:
        config = CoachConfig(
            data=DataConfig(dir=tmp_path / "data"),
            upstream=UpstreamConfig(url=upstream.base_url),
            agents=AgentsConfig(warm_process_limit=1, watch=False),
        )
        async with coach_runtime(config, pool=True) as rt:
            assert rt.runner.config.pool_size == 1 and rt.runner.pool.size == 1
            with anyio.fail_after(120):
                while rt.runner.pool.idle() < 1:  # noqa: ASYNC110 - the pool has no event to wait on
                    await anyio.sleep(0.1)
            assert rt.runner.started_processes == 0, "the pool's, not a turn's"
        calls = upstream.model_calls()
    finally:
        upstream.stop()
    assert [(r.agent, r.headers["x-coach-user"], r.body["max_tokens"]) for r in calls] == [
        ("coach", POOL_USER, 1)
    ]
