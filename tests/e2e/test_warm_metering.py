"""Per-turn metering of warm agent processes, end to end: real ``claude`` processes (kept warm across the
session's turns, so their ``x-coach-*`` headers carry no turn), the real in-process proxy with a usage
log and the real MCP server, SQLite, the scripted upstream. The proxy resolves each request's turn from
the supervisor's turn directory, so the usage log of the warm second turn names the second turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blackboard import Blackboard
from launcher.pipeline._turn_scope import TurnDirectory
from launcher.pipeline.stack import running_stack
from launcher.pipeline.supervisor import Supervisor
from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig
from proxy import ModelPool, ProxyConfig
from tests.e2e.harness import agent_script, e2e_specs
from tests.launcher.fakes import OUTPUT_TOOLS
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.anyio]


async def test_usage_log_of_a_warm_second_turn_carries_its_turn_id(tmp_path: Path) -> None:
    specs = e2e_specs()
    home = tmp_path / "claude-home"
    (home / ".claude").mkdir(parents=True)
    log = tmp_path / "usage.jsonl"
    board = Blackboard(tmp_path / "data")
    directory = TurnDirectory()
    upstream = ScriptedUpstream(
        {a: agent_script(a) for a in OUTPUT_TOOLS}, latency="instant", time_scale=0.02
    )
    upstream.start()
    try:
        pool = ModelPool(name="qwen3", aliases=["*"], kind="anthropic", replicas=[upstream.base_url])
        proxy_cfg = ProxyConfig(models=[pool], default_model="qwen3", max_attempts=1, usage_log=str(log))
        async with running_stack(
            board=board, directory=directory, proxy_config=proxy_cfg, agents=specs
        ) as urls:
            cfg = RunnerConfig(
                proxy_url=urls.proxy_url,
                mcp_url=urls.mcp_url,
                max_warm=6,
                cwd=str(tmp_path),
                extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            )
            async with ClaudeAgentRunner(cfg) as runner:
                sup = Supervisor(board, runner, lambda: specs, directory=directory)
                first = await sup.run_turn("u-meter", "s1", "I keep skipping my runs.")
                second = await sup.run_turn("u-meter", "s1", "I ran once this week.")
    finally:
        upstream.stop()
        board.close()
    assert not first.degraded and not second.degraded
    assert all(st.warm for st in second.agents.values()), "the second turn ran in warm processes"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    by_turn: dict[str, set[str]] = {}
    for x in lines:
        assert x["session"] == "s1" and x["user"] == "u-meter"
        if x["status"] in ("ok", "local"):
            by_turn.setdefault(x["turn"], set()).add(x["agent"])
    # every agent's model calls of each turn are metered under that turn (none left without a turn)
    assert by_turn == {first.turn_id: set(OUTPUT_TOOLS), second.turn_id: set(OUTPUT_TOOLS)}
    # the upstream saw the resolved turn too (the proxy forwards x-coach-turn)
    turns = {r.headers.get("x-coach-turn") for r in upstream.model_calls() if r.agent == "persona"}
    assert turns == {first.turn_id, second.turn_id}
