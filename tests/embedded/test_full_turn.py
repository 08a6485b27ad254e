"""One full turn of the six real agents on the embedded model: real ``claude`` processes, the real agent
files, the real proxy (policies from the agent files), the real streamable-HTTP MCP server, SQLite, and
llama-server serving SmolLM2-135M (real tokens, real tool calls).

Run twice, sharing one llama-server: the proxy translating to the model server's OpenAI-compatible
``/v1/chat/completions`` (the path vLLM users take), and passing through to its ``/v1/messages``.

Checks: every specialist's entry exists, was written by that agent (the MCP server is the only writer
that uses agent names as authors) and validates against its schema; the proxy's usage log shows each
agent's forced calls within its ``max_output_tokens`` cap, followed by the local stop (which the proxy
answers only after a *successful* result of that tool); Pineal's entry was committed after Shadow's (``Entry.seq``)
and Pineal's first model call came after Shadow's entry existed; the turn finished within a generous
bound (CPU inference on a shared 2-core machine).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from blackboard import AGENT_OUTPUT_SCHEMAS
from launcher.agents import AgentRegistry
from launcher.cli.demo import (
    demo_embedded_config,
    demo_supervisor_settings,
    embedded_runtime_config,
    scaled_agents,
)
from launcher.config import CoachConfig, DataConfig
from launcher.embedded import (
    EmbeddedError,
    EmbeddedModelServer,
    find_llama_server,
    find_model,
)

pytestmark = [pytest.mark.embedded, pytest.mark.e2e, pytest.mark.timeout(1500)]

SPECIALISTS = ("shadow", "persona", "plasticity", "stability")
TURN_BOUND_S = 900.0  # generous: about 1-2 min on an idle 2-core machine, several times that when shared
DEADLINE_SCALE = 12.0
MESSAGE = (
    "I mean, I smoke a little less than a pack a day. It's not too bad. I could quit if I wanted to, "
    "but I don't really want to right now."
)  # AnnoMI transcript 24, utterance 5 (examples/)


@pytest.fixture(scope="module")
def model_server() -> Iterator[EmbeddedModelServer]:
    try:
        find_llama_server(), find_model()
    except EmbeddedError as exc:
        pytest.fail(f"the embedded model is not installed (make embedded): {exc}", pytrace=False)
    server = EmbeddedModelServer(demo_embedded_config(CoachConfig()), progress=None)  # as make demo
    with server:
        yield server
    assert server.pid is None


async def _one_turn(config: CoachConfig, user: str, session: str) -> tuple[Any, dict[str, Any], float]:
    from launcher.pipeline._runtime import coach_runtime
    from launcher.pipeline._screen import SafetyScreen
    from launcher.pipeline.supervisor import Supervisor

    async with coach_runtime(config) as rt:
        agents = scaled_agents(rt.registry.current, DEADLINE_SCALE, config.embedded.agent_output_caps)
        sup = Supervisor(
            rt.board,
            rt.runner,
            agents,
            screen=SafetyScreen(config.safety),
            directory=rt.supervisor.directory,
            settings=demo_supervisor_settings(),
        )  # as make demo
        t0 = time.monotonic()
        result = await sup.run_turn(user, session, MESSAGE)
        elapsed = time.monotonic() - t0
        entries = rt.board.read_turn(user, session, result.turn_id)
    return result, entries, elapsed


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_full_turn_of_six_agents_on_the_embedded_model(
    kind: str, model_server: EmbeddedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TIMEOUT_MS", "1800000")  # as coach demo: queued CPU prefills outlast 10 min
    usage_log = tmp_path / "usage.jsonl"
    base = CoachConfig(data=DataConfig(dir=tmp_path / "data"))
    base = base.model_copy(update={"proxy": base.proxy.model_copy(update={"usage_log": str(usage_log)})})
    config = embedded_runtime_config(
        base, model_server.base_url, "anthropic" if kind == "anthropic" else "openai"
    )

    result, entries, elapsed = anyio.run(_one_turn, config, "u-embedded", f"s-{kind}")
    doc = json.dumps(result.to_json(), indent=1)

    # every specialist: status ok, entry written by that agent through its MCP tool, schema-valid
    for agent in SPECIALISTS:
        assert result.agents[agent].status == "ok", f"{agent} did not finish ok:\n{doc}"
        entry = entries.get(agent)
        assert entry is not None, f"no {agent} entry on the blackboard:\n{doc}"
        assert entry.author == agent and entry.version == 1
        AGENT_OUTPUT_SCHEMAS[agent].model_validate(entry.value)
    assert result.agents["coach"].status == "ok" and not result.coach_fallback, doc
    assert (
        entries["coach"].author == "coach" and result.coach_reply == entries["coach"].value["reply"].strip()
    )  # delivered stripped

    # the proxy saw each agent's forced write end in tool_use, then answered the follow-up locally
    records = [json.loads(line) for line in usage_log.read_text().splitlines()]
    specs = AgentRegistry(config.agents.resolved_dir()).current()
    for agent in (*SPECIALISTS, "coach"):
        mine = [r for r in records if r["agent"] == agent]
        calls = [r for r in mine if r["status"] == "ok"]
        assert calls and calls[-1]["stop_reason"] in ("tool_use", "max_tokens"), (agent, mine)
        assert any(r["status"] == "local" for r in mine), (
            f"{agent}: no successful write ended its turn: {mine}"
        )
        cap = min(specs[agent].max_output_tokens, config.embedded.agent_output_caps.get(agent, 10**9))
        assert all(r["output_tokens"] <= cap for r in calls), (agent, cap, mine)  # the max_tokens cap held

    # Pineal ran after Shadow wrote: commit order, and its first model call came later
    assert "pineal" in entries, f"no synthesis entry:\n{doc}"
    assert entries["shadow"].seq < entries["pineal"].seq
    # (its prefill, the shared context sent ahead while the specialists work, is no call of its own)
    pineal_calls = [r["ts"] for r in records if r["agent"] == "pineal" and not r["prefill"]]
    assert pineal_calls and min(pineal_calls) >= entries["shadow"].updated_at
    assert result.synthesis and result.synthesis_source in ("model", "repaired", "fallback")
    assert result.synthesis_s is not None and result.synthesis_s < TURN_BOUND_S
    assert elapsed < TURN_BOUND_S
