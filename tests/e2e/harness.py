"""End-to-end harness: the real ``claude`` processes (claude-agent-sdk), the real proxy and the real
streamable-HTTP MCP server (in-process, uvicorn), SQLite, against the scripted upstream.

Scripts write through the real MCP tools: step 0 of each agent's turn is its ``write_<agent>`` tool
call; the proxy (force_tool + stop_after_tool from the agent specs) ends the turn after a successful
write. Pineal's script reads the arbitrated brief from its prompt and cites every source.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blackboard import Blackboard
from launcher.agents import load_agents
from launcher.pipeline._turn_scope import TurnDirectory
from launcher.pipeline.stack import running_stack
from launcher.pipeline.supervisor import Supervisor
from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig
from proxy import ModelPool, ProxyConfig
from tests.launcher.fakes import OUTPUT_TOOLS
from tests.launcher.payloads import payload_for, synthesis_citing
from testsupport.script import Delay, Step, Text, ToolCall
from testsupport.upstream import ScriptedUpstream

BRIEF_MARKER = "The arbitrated brief for this turn (cite its sources with their versions):\n"

REPO = Path(__file__).resolve().parents[2]


def e2e_specs() -> dict[str, Any]:
    """The shipped agent files (``agents/*.md``), deadlines raised to at least 60 s: the e2e machine is
    a shared 2-core box where six cold Claude Code processes start at once."""
    specs = load_agents(REPO / "agents")
    return {n: s.model_copy(update={"deadline_s": max(s.deadline_s, 60.0)}) for n, s in specs.items()}


def messages_of(request: Any) -> list[dict[str, Any]]:
    """Messages of a ``ModelRequest`` (script callables) or a ``RecordedRequest`` (the log)."""
    msgs = getattr(request, "messages", None)
    if msgs is None:
        msgs = request.body.get("messages") or []
    return [m for m in msgs if isinstance(m, dict)]


def all_text(request: Any) -> str:
    parts: list[str] = []
    for m in messages_of(request):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return "\n".join(parts)


def brief_from_request(request: Any) -> dict[str, Any]:
    """The brief JSON the supervisor put in Pineal's latest prompt."""
    text = all_text(request)
    i = text.rfind(BRIEF_MARKER)
    assert i >= 0, "Pineal's prompt must carry the brief"
    line = text[i + len(BRIEF_MARKER) :].split("\n", 1)[0]
    return dict(json.loads(line))


def write_step(agent: str, payload: dict[str, Any] | None = None) -> ToolCall:
    return ToolCall(OUTPUT_TOOLS[agent], payload if payload is not None else payload_for(agent))


def agent_script(agent: str, first: Callable[[Any], Step] | None = None) -> Callable[[Any], Step]:
    """Step 0: ``first(request)`` (default: the agent's write); later steps: a short text."""

    def script(request: Any) -> Step:
        if request.step_index == 0:
            if first is not None:
                return first(request)
            if agent == "pineal":
                return ToolCall("write_synthesis", synthesis_citing(brief_from_request(request)))
            return write_step(agent)
        return Text("done")

    return script


def delayed(agent: str, rng: random.Random, max_s: float) -> Callable[[Any], Step]:
    """The agent's normal write after a random delay in [0, max_s] model seconds."""

    def first(request: Any) -> Step:
        inner = agent_script(agent)(request)
        return Delay(rng.uniform(0, max_s), then=inner)

    return agent_script(agent, first)


@dataclass
class Harness:
    upstream: ScriptedUpstream
    board: Blackboard
    supervisor: Supervisor
    runner: ClaudeAgentRunner
    specs: dict[str, Any]
    data_dir: Path
    extra: dict[str, Any] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def harness(
    tmp_path: Path,
    scripts: dict[str, Any] | None = None,
    *,
    specs: dict[str, Any] | None = None,
    max_warm: int = 6,
    time_scale: float = 0.02,
    latency: str = "instant",
    board: Blackboard | None = None,
    reuse_processes: bool = False,
) -> AsyncIterator[Harness]:
    """Everything started; stopped on exit (processes, servers, store). ``board``: the blackboard to use
    (e.g. on PostgreSQL); default a SQLite one in ``tmp_path / "data"``. ``reuse_processes``: warm
    processes start under pool identities and a closed session's are reset for the next
    (``RunnerConfig.reuse_processes``, with the pool on)."""
    specs = specs or e2e_specs()
    scripts = scripts if scripts is not None else {a: agent_script(a) for a in OUTPUT_TOOLS}
    data_dir = tmp_path / "data"
    home = tmp_path / "claude-home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    board = board if board is not None else Blackboard(data_dir)
    directory = TurnDirectory()
    upstream = ScriptedUpstream(scripts, latency=latency, time_scale=time_scale)
    upstream.start()
    try:
        pool = ModelPool(
            name="qwen3", aliases=["fast", "deep", "*"], kind="anthropic", replicas=[upstream.base_url]
        )
        proxy_cfg = ProxyConfig(models=[pool], default_model="qwen3", max_attempts=1)
        async with running_stack(
            board=board, directory=directory, proxy_config=proxy_cfg, agents=specs
        ) as urls:
            cfg = RunnerConfig(
                proxy_url=urls.proxy_url,
                mcp_url=urls.mcp_url,
                max_warm=max_warm,
                cwd=str(tmp_path),
                extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
                pool_size=6 if reuse_processes else 0,
                reuse_processes=reuse_processes,
            )
            from launcher.runner._process_pool import bindings_for

            bindings = bindings_for(directory) if reuse_processes else None
            async with ClaudeAgentRunner(cfg, bindings=bindings) as runner:
                sup = Supervisor(board, runner, lambda: specs, directory=directory)
                yield Harness(upstream, board, sup, runner, specs, data_dir)
    finally:
        upstream.stop()
        board.close()
