"""One turn run and measured: the figures of ``bench/turn.py``'s table (see the package docstring)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .inputs import MODEL_PATHS, USER


@dataclass
class TurnFigures:
    label: str
    coach_first_token_s: float | None = None
    coach_first_token_model_s: float | None = None
    coach_reply_s: float | None = None
    coach_first_words_s: float | None = None
    synthesis_s: float | None = None
    critical_path_s: float = 0.0
    overhead_s: float | None = None
    model_calls: int = 0
    prompt_tokens_mean: float = 0.0
    first_call_prompt_tokens_mean: float = 0.0
    cached_share: float = 0.0
    pineal_cached_share: float = 0.0
    prefill_s: float | None = None
    pineal_model_s: float = 0.0
    output_tokens: int = 0
    processes_started: int = 0
    pooled_processes: int = 0
    degraded: bool = False
    source: str = ""
    agents: dict[str, Any] = field(default_factory=dict)


async def measure(
    label: str, sup: Any, runner: Any, upstream: Any, session: str, text: str, *, serial: bool = False
) -> TurnFigures:
    """Run one turn and measure it (see the module docstring). ``serial``: the agents ran one after
    another, so the critical path of model time is the sum of every agent's model time."""
    before = len(upstream.requests)
    started = runner.started_processes
    pooled = runner.pool.handed_out
    t_start = time.monotonic()  # the in-process upstream records times on this same clock
    result = await sup.run_turn(
        USER, session, text, on_reply_stream=lambda event: None
    )  # a front end that streams
    calls = [
        r
        for r in upstream.requests[before:]
        if r.path in MODEL_PATHS and r.headers.get("x-coach-session") == session and r.finished_at is not None
    ]
    # Pineal's prefill (x-coach-prefill: max_tokens 1 while the specialists work) is not a model call of the
    # critical path; it is counted in the prompt tokens and the cached share, and shown on its own row.
    prefills = [r for r in calls if r.headers.get("x-coach-prefill")]
    calls = [r for r in calls if not r.headers.get("x-coach-prefill")]
    per_agent: dict[str, float] = {}
    for r in calls:
        per_agent[r.agent or "?"] = per_agent.get(r.agent or "?", 0.0) + r.finished_at - r.arrived_at
    before_pineal = max((v for a, v in per_agent.items() if a != "pineal"), default=0.0)
    path = sum(per_agent.values()) if serial else before_pineal + per_agent.get("pineal", 0.0)
    prompt = [int(r.prompt_tokens or 0) for r in calls]
    first = [int(r.prompt_tokens or 0) for r in calls if r.step_index == 0 and r.body.get("tools")]
    cached = sum(int(r.cached_tokens or 0) for r in calls + prefills)
    processed = sum(int(r.prompt_tokens or 0) for r in calls + prefills)
    pineal = [r for r in calls if r.agent == "pineal" and r.body.get("tools")]
    coach_bytes = [
        r.first_byte_at for r in calls if r.agent == "coach" and r.body.get("tools") and r.first_byte_at
    ]
    fig = TurnFigures(
        label=label,
        coach_first_token_s=result.agents["coach"].first_token_s if "coach" in result.agents else None,
        coach_first_token_model_s=min(coach_bytes) - t_start if coach_bytes else None,
        coach_reply_s=result.coach_reply_s,
        coach_first_words_s=result.coach_first_words_s,
        synthesis_s=result.synthesis_s,
        critical_path_s=path,
        overhead_s=None if result.synthesis_s is None else result.synthesis_s - path,
        model_calls=len(calls),
        prompt_tokens_mean=sum(prompt) / len(prompt) if prompt else 0.0,
        first_call_prompt_tokens_mean=sum(first) / len(first) if first else 0.0,
        cached_share=cached / processed if processed else 0.0,
        pineal_cached_share=(
            sum(int(r.cached_tokens or 0) for r in pineal[:1])
            / max(1, sum(int(r.prompt_tokens or 0) for r in pineal[:1]))
        )
        if pineal
        else 0.0,
        prefill_s=(max(r.finished_at for r in prefills) - t_start) if prefills else None,
        pineal_model_s=per_agent.get("pineal", 0.0),
        output_tokens=sum(int(r.output_tokens or 0) for r in calls),
        processes_started=runner.started_processes - started,
        pooled_processes=runner.pool.handed_out - pooled,
        degraded=result.degraded,
        source=result.synthesis_source,
        agents={n: s.to_json() for n, s in result.agents.items()},
    )
    if result.degraded:
        missing = ", ".join(
            f"{n}: {s.status} {s.error or ''}".strip() for n, s in result.agents.items() if s.status != "ok"
        )
        print(f"  warning: {label} was degraded ({result.synthesis_source}; {missing})", flush=True)
    return fig


@dataclass
class ModelRun:
    model: str
    turns: dict[str, TurnFigures] = field(default_factory=dict)

    def ratio(self, a: str, b: str) -> float | None:
        x, y = self.turns.get(a), self.turns.get(b)
        if x is None or y is None or not x.synthesis_s or not y.synthesis_s:
            return None
        return x.synthesis_s / y.synthesis_s
