"""Turn benchmark: one coaching turn through the six real agents, under the latency models of DESIGN.md.

Everything is real except the model: the shipped agent files, real ``claude`` processes
(claude-agent-sdk), the proxy and the streamable-HTTP MCP server in-process, SQLite; the scripted
upstream (testsupport, OpenAI protocol like vLLM) plays each agent's write under a latency model. The
latency models are ASSUMPTIONS (DESIGN.md, "Latency models for benchmarks"); every figure is printed
with the model it used. Agent output sizes (assumption, stated): Coach ~80 tokens, specialists ~300,
Pineal ~400. Thinking tokens of the seed's way are not simulated (its prompt size and extra calls are).

Per latency model, three sessions of two turns each (turn 1 starts cold processes, turn 2 is warm):

* parallel (ours): ``coach_first_token_s`` and ``synthesis_s`` of the warm turn; ``overhead_s`` = the
  warm turn's time to synthesis minus its critical path of model time (max over Coach and specialists
  of their model-call time, plus Pineal's), from the upstream's request log; ``warm_vs_cold`` = cold
  turn's time to synthesis / warm turn's;
* sequential: the same agents one after another (``SupervisorSettings(sequential=True)``);
  ``speedup_vs_sequential`` = sequential warm synthesis time / parallel warm synthesis time;
* the seed's way: Claude Code's default system prompt and built-in tools, thinking on, no forced output
  tool (no proxy force/stop policy): ``seed_way_synthesis_s`` of its warm turn.

The last line is exactly::

    model=qwen3-30b-a3b@2x4090 coach_first_token_s=X synthesis_s=X overhead_s=X speedup_vs_sequential=X warm_vs_cold=X seed_way_synthesis_s=X

Usage: ``.venv/bin/python bench/turn.py [--models qwen3-235b-a22b@a40,qwen3-30b-a3b@2x4090]
[--time-scale 1.0]`` (a smaller time scale only checks the plumbing: figures are real seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from blackboard import Blackboard  # noqa: E402
from launcher._agent_runner import ClaudeAgentRunner, RunnerConfig  # noqa: E402
from launcher._turn_scope import TurnDirectory  # noqa: E402
from launcher.agents import load_agents  # noqa: E402
from launcher.stack import running_stack  # noqa: E402
from launcher.supervisor import Supervisor, SupervisorSettings, TurnResult  # noqa: E402
from proxy import ModelPool, ProxyConfig  # noqa: E402
from testsupport.script import Step, Text, ToolCall  # noqa: E402
from testsupport.upstream import ScriptedUpstream  # noqa: E402

BRIEF_MARKER = "The arbitrated brief for this turn (cite its sources with their versions):\n"
DEFAULT_MODELS = ("qwen3-235b-a22b@a40", "qwen3-30b-a3b@2x4090")
_SENTENCE = "The user keeps a steady plan when the first step is small and the cue is fixed in the day. "


def _text(tokens: int) -> str:
    """About ``tokens`` tokens of prose (4 characters per token, the upstream's tokenizer)."""
    n = max(1, tokens * 4 // len(_SENTENCE))
    return (_SENTENCE * n).strip()[: tokens * 4]


def payloads() -> dict[str, dict[str, Any]]:
    """Schema-valid outputs of the stated sizes."""
    trait = {"score": 55, "confidence": 0.4, "evidence_count": 3}
    return {
        "coach": {"reply": _text(80)},
        "shadow": {"pattern_class": "insufficient_data", "commitments": {"due": 1, "completed": 1, "sessions": 1},
                   "summary": _text(280)[:1200]},
        "persona": {"traits": dict.fromkeys(("openness", "conscientiousness", "extraversion", "agreeableness",
                                             "neuroticism"), trait),
                    "goals": [{"description": "walk after lunch", "mentions": 2}],
                    "follow_through": {"due": 1, "completed": 1}, "summary": _text(260)[:1200]},
        "plasticity": {"strategy": _text(280)[:1200], "tone": "warm", "framing": "small steps"},
        "stability": {"moves": [{"id": "walk", "description": "a ten minute walk after lunch", "severity": 1,
                                 "occurrence": 2, "detection_difficulty": 1, "reversibility": 1}],
                      "summary": _text(260)[:1200]},
    }


def _messages_text(request: Any) -> str:
    parts: list[str] = []
    for m in request.messages:
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return "\n".join(parts)


def _synthesis(request: Any) -> dict[str, Any]:
    text = _messages_text(request)
    i = text.rfind(BRIEF_MARKER)
    brief = json.loads(text[i + len(BRIEF_MARKER):].split("\n", 1)[0]) if i >= 0 else {"sources": []}
    cites = [{"agent": s["agent"], "key": s["key"], "version": s["version"]} for s in brief["sources"]]
    return {"text": _text(400), "citations": cites}


def scripts() -> dict[str, Any]:
    """Step 0 of every agent's turn writes its output; later steps answer a short text."""
    data = payloads()
    tools = {"coach": "write_coach", "shadow": "write_shadow", "persona": "write_persona",
             "plasticity": "write_plasticity", "stability": "write_stability"}

    def make(agent: str) -> Any:
        def script(request: Any) -> Step:
            if request.step_index > 0:
                return Text("Done.")
            if agent == "pineal":
                return ToolCall("write_synthesis", _synthesis(request))
            return ToolCall(tools[agent], data[agent])

        return script

    return {a: make(a) for a in (*tools, "pineal")}


@dataclass
class Measured:
    results: list[TurnResult]
    critical_path_s: list[float]


def _critical_path(records: list[Any], start: float, end: float) -> float:
    model_time: dict[str, float] = {}
    for r in records:
        if r.agent and start <= r.arrived_at <= end and r.finished_at is not None:
            model_time[r.agent] = model_time.get(r.agent, 0.0) + (r.finished_at - r.arrived_at)
    first = max((t for a, t in model_time.items() if a != "pineal"), default=0.0)
    return first + model_time.get("pineal", 0.0)


async def run_session(
    latency: str, time_scale: float, *, seed_way: bool = False, sequential: bool = False, turns: int = 2
) -> Measured:
    """Run ``turns`` turns of one session; returns their results and model-time critical paths."""
    specs = load_agents(ROOT / "agents")
    policy_specs = (
        {n: s.model_copy(update={"force_output_tool": False}) for n, s in specs.items()} if seed_way else specs
    )
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        home = Path(tmp) / "claude-home"
        (home / ".claude").mkdir(parents=True)
        board = Blackboard(Path(tmp) / "data")
        directory = TurnDirectory()
        upstream = ScriptedUpstream(scripts(), latency=latency, time_scale=time_scale)
        upstream.start()
        try:
            pool = ModelPool(name="qwen3", aliases=["*"], kind="openai", replicas=[upstream.base_url])
            cfg = ProxyConfig(models=[pool], default_model="qwen3")
            async with running_stack(board=board, directory=directory, proxy_config=cfg, agents=policy_specs) as urls:
                rcfg = RunnerConfig(proxy_url=urls.proxy_url, mcp_url=urls.mcp_url, seed_way=seed_way, cwd=tmp,
                                    extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")})
                async with ClaudeAgentRunner(rcfg) as runner:
                    sup = Supervisor(board, runner, lambda: specs, directory=directory,
                                     settings=SupervisorSettings(sequential=sequential))
                    out = Measured([], [])
                    for i in range(turns):
                        start = time.monotonic()
                        res = await sup.run_turn("bench", "s1", f"turn {i}: I want to walk more after lunch")
                        out.results.append(res)
                        out.critical_path_s.append(_critical_path(upstream.requests, start, time.monotonic()))
                    return out
        finally:
            upstream.stop()
            board.close()


def _check(m: Measured, what: str) -> None:
    for r in m.results:
        if r.degraded:
            print(f"  warning: {what} turn {r.turn_id} was degraded (missing {', '.join(r.missing)})", flush=True)


async def bench_model(latency: str, time_scale: float) -> dict[str, float]:
    print(f"== latency model {latency} (assumption, DESIGN.md), time_scale={time_scale}", flush=True)
    par = await run_session(latency, time_scale)
    _check(par, "parallel")
    cold, warm = par.results
    print(f"  parallel: cold synthesis {cold.synthesis_s:.2f}s, warm synthesis {warm.synthesis_s:.2f}s, "
          f"warm critical path {par.critical_path_s[1]:.2f}s", flush=True)
    seq = await run_session(latency, time_scale, sequential=True)
    _check(seq, "sequential")
    print(f"  sequential: warm synthesis {seq.results[1].synthesis_s:.2f}s", flush=True)
    seed = await run_session(latency, time_scale, seed_way=True)
    _check(seed, "seed-way")
    print(f"  seed's way: cold synthesis {seed.results[0].synthesis_s:.2f}s, "
          f"warm synthesis {seed.results[1].synthesis_s:.2f}s", flush=True)
    assert warm.synthesis_s and cold.synthesis_s and seq.results[1].synthesis_s
    return {
        "coach_first_token_s": warm.agents["coach"].first_token_s or float("nan"),
        "synthesis_s": warm.synthesis_s,
        "overhead_s": warm.synthesis_s - par.critical_path_s[1],
        "speedup_vs_sequential": seq.results[1].synthesis_s / warm.synthesis_s,
        "warm_vs_cold": cold.synthesis_s / warm.synthesis_s,
        "seed_way_synthesis_s": seed.results[1].synthesis_s or float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated latency models; the last one is on the last line")
    ap.add_argument("--time-scale", type=float, default=1.0, help="real seconds per modelled second")
    args = ap.parse_args()
    lines = []
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        figures = anyio.run(bench_model, model, args.time_scale)
        lines.append(f"model={model} " + " ".join(f"{k}={v:.2f}" for k, v in figures.items()))
        print(lines[-1], flush=True)
    print(lines[-1])


if __name__ == "__main__":
    main()
