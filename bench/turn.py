"""Turn benchmark: one coaching turn through the six agents, under each latency model of docs/latency.md.

Everything is real except the model: the supervisor, real ``claude`` processes (claude-agent-sdk), the
proxy and the streamable-HTTP MCP server (in this process), SQLite; the model is the scripted upstream
(``testsupport.ScriptedUpstream`` on a loopback port, in its own thread and event loop) playing a named
latency model at time_scale 1 (assumptions from docs/latency.md, not measurements of any GPU). Scripts write schema-valid outputs of realistic lengths
(token counts printed). The proxy talks OpenAI ``/v1/chat/completions`` to it, as it would to vLLM.

Per latency model, one run of each:

  ours, cold        turn 1 of a new session (our prompts, forced tool): its six processes come from the
                    runner's process pool (launcher.runner._process_pool), filled when the stack started and
                    TYPING_S before the turn (a running service has them long before); none is started
                    on the critical path. The pool's fill also warmed the model server's cache of each
                    agent's prompt head (system prompt and tools: the same for every session), as other
                    sessions' traffic keeps it on a running server; the user's context is not cached
  ours, warm        turn 2 of that session: warm processes (persistent ClaudeSDKClient)
  ours, sequential  turn 3 of that session, warm, but the six agents run one after another
                    (``SupervisorSettings(sequential=True)``): the "no parallel dispatch" baseline
  ours, prewarmed   turn 1 of another new session (a new message, so no prefix-cache head start) after
                    ``Supervisor.prewarm`` started its six processes, as ``coach chat`` does while the
                    user types (the first session's processes are stopped first to free the warm slots);
                    the message is sent TYPING_S (10 s, an assumption: typing it takes about a minute)
                    after the chat opened, or when the prewarm ended if that is later
  seed's way        turn 1 of a new session with Claude Code's default system prompt and tools (the
                    agent prompt appended), thinking on, no forced output tool and no local stop after
                    the write (so each agent makes a second model call), cold processes

Figures (seconds since the turn started, wall clock):

  coach_first_token_s  the Coach's first streamed token as Claude Code sees it (AgentStatus.first_token_s),
                       cold turn. The proxy emits a tool call whole when its stream ends, so for the
                       Coach (whose reply is its write_coach call) this is when the reply is complete;
                       the table also shows the first token at the model (upstream first byte).
  Pineal's prefill     Pineal's shared context is prefilled while the specialists run (launcher.pipeline._pineal_prefill:
                       a max_tokens 1 request marked x-coach-prefill): it is not counted in the critical
                       path (its row says when it was done); it is counted in "prompt tokens from prefix
                       cache" (the share of every prompt token processed, the prefill's included), and
                       "of Pineal's first call" is the share of Pineal's real first call found cached
  first_words_s        the Coach's first words shown to the user (TurnResult.coach_first_words_s: the
                       reply streams to the front end while write_coach's arguments arrive at the proxy,
                       once its risk assessment is complete; launcher.pipeline._reply_stream), cold turn
  synthesis_s          the synthesis delivered (TurnResult.synthesis_s), cold turn
  overhead_s           synthesis_s minus the critical path of model time, cold turn. Critical path =
                       max over Coach + the four specialists of the sum of their model-call durations
                       at the upstream (arrival to last byte, so concurrency slow-down counts as model
                       time), plus Pineal's (the sequential turn: the sum over all agents). Overhead =
                       processes, MCP, proxy, sequencer, supervisor, and this machine's CPU contention.
  speedup_vs_sequential  sequential synthesis_s / warm parallel synthesis_s
  warm_vs_cold         cold synthesis_s / warm synthesis_s (how much faster a warm turn is)
  seed_way_synthesis_s synthesis_s of the seed's way (cold, like our cold turn)

Assumptions for the seed's way (stated in the output): thinking tokens per model call are scripted as a
``<think>`` preamble (Qwen3 style; the proxy turns it into a thinking block): Coach 250, specialists
500, Pineal 600, and 40 on the second call. Our proxy strips Claude Code's per-request billing header,
so even the seed's way gets prefix-cache hits here (the cached share is printed); the seed's own stack
did not, so its real figures were worse than this replay.

Deadlines are raised to 600 s (this measures speed, not deadlines). The last line is exactly
``model=qwen3-30b-a3b@2x4090 coach_first_token_s=X synthesis_s=X overhead_s=X speedup_vs_sequential=X
warm_vs_cold=X seed_way_synthesis_s=X first_words_s=X`` (the figures of that latency model).

Usage: .venv/bin/python bench/turn.py [--models NAME ...] [--time-scale 1.0] [--skip-seed]
       [--skip-sequential] [--no-prefill] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import secrets
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# bench/blackboard.py and bench/proxy.py would shadow the packages of the same names: the repo root first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import anyio.to_thread  # noqa: E402

MODELS = ("qwen3-30b-a3b@2x4090", "qwen3-235b-a22b@a40")
REPORT_MODEL = "qwen3-30b-a3b@2x4090"
MODEL_PATHS = ("/v1/chat/completions", "/v1/messages")
USER = "bench-user"
MESSAGES = (
    "I keep planning to run three times a week and then skipping it. Work has been intense and by "
    "the evening I just collapse on the sofa. I feel like I'm letting myself down.",
    "This week I managed one run, on Sunday morning, and it actually felt good. Weekdays are still "
    "impossible though. Maybe I'm just not a morning person?",
    "My sister suggested we run together on Saturdays. I like the idea but I'm worried I'll slow her down.",
)
#: Assumed seconds between the chat opening and the prewarmed turn's message being sent: PREWARM_MESSAGE
#: is 38 words, about a minute at 40 words per minute, so 10 s is conservative (the turn starts later if the
#: prewarm takes longer). Scaled by --time-scale like the model's times.
TYPING_S = 10.0
#: Set from the command line (--no-prefill).
OPTIONS: dict[str, Any] = {"prefill": True}
PREWARM_MESSAGE = (
    "I signed up for a 5k in two months and now I'm panicking a bit. I've never trained for anything and "
    "I'm not sure where to start, or whether I should just pull out before I embarrass myself."
)

# ----- realistic, schema-valid outputs (what each agent's model writes) ------------------------------

_EV = [
    {"session": "s-prev", "turn": "t000002", "note": "said evenings are for running, skipped twice"},
    {"session": "s-prev", "turn": "t000004", "note": "described collapsing after work again"},
]
PAYLOADS: dict[str, dict[str, Any]] = {
    "coach": {
        "risk": {"tier": 0, "family": "none", "quote": ""},
        "reply": (
            "It sounds like running three times a week really matters to you, and it is frustrating when the plan "
            "slips. You have already noticed the pattern, which is a real first step. What tends to happen on the "
            "days you skip: is it time, energy, or something else competing for that slot? If we picked just one "
            "run this week, which day would give it the best odds?"
        ),
    },
    "shadow": {
        "pattern_class": "insufficient_data",
        "commitments": {"due": 2, "completed": 1, "sessions": 1},
        "patterns": [
            {
                "stated": "wants to run three evenings a week",
                "revealed": "evenings go to recovering from work; the one completed run was on a weekend morning",
                "hypothesis": "protecting rest after demanding workdays may compete with the evening plan",
                "evidence": _EV,
            },
            {
                "stated": "says consistency is the main goal",
                "revealed": "plans are ambitious (three runs) while recent weeks held at most one",
                "hypothesis": "the plan's size, not the wish to run, may be what keeps breaking",
                "evidence": _EV,
            },
        ],
        "follow_through": {
            "features": {
                "has_if_then_plan": False,
                "change_talk_share": 0.6,
                "sustain_talk": True,
                "goal_growth": False,
            }
        },
        "summary": (
            "Two sessions of evidence only, so no pattern class yet. Stated goal (three evening runs) "
            "and revealed priority (rest after work) diverge; weekend mornings look more reliable."
        ),
    },
    "persona": {
        "traits": {
            "openness": {"score": 58, "confidence": 0.3, "evidence_count": 2},
            "conscientiousness": {"score": 52, "confidence": 0.35, "evidence_count": 3},
            "extraversion": {"score": 47, "confidence": 0.25, "evidence_count": 2},
            "agreeableness": {"score": 63, "confidence": 0.3, "evidence_count": 2},
            "neuroticism": {"score": 55, "confidence": 0.3, "evidence_count": 3},
        },
        "goals": [
            {"description": "run three times a week", "mentions": 3},
            {"description": "feel less drained after work", "mentions": 2},
            {"description": "run with my sister on Saturdays", "mentions": 1},
        ],
        "follow_through": {"due": 2, "completed": 1},
        "growth_areas": [
            "sizing plans to the week that is actually available",
            "self-talk after a missed session",
            "protecting energy on workdays",
        ],
        "readiness_stage": "preparation",
        "summary": (
            "Moderate, low-confidence trait estimates from few observations. Clear, repeated running "
            "goal; follow-through not yet measurable (2 commitments due). Self-criticism after misses."
        ),
    },
    "plasticity": {
        "strategy": (
            "Reflect the effort and the frustration first, then shrink the plan: one anchored run at "
            "the most reliable time (weekend morning) before adding weekday runs. Evoke the user's "
            "own reasons; avoid prescribing a schedule."
        ),
        "tone": "warm, plain, unhurried",
        "framing": "experiments to learn what fits, not tests to pass",
        "do": [
            "reflect the feeling before any suggestion",
            "ask one open question at a time",
            "offer a choice between two small options",
        ],
        "dont": [
            "stack several suggestions in one reply",
            "use words like should or failure",
            "assume mornings suit the user",
        ],
        "readiness_stage": "preparation",
    },
    "stability": {
        "moves": [
            {
                "id": "anchor-weekend-run",
                "description": "schedule one run on Saturday or Sunday morning",
                "keywords": ["weekend run", "saturday run"],
                "severity": 2,
                "occurrence": 2,
                "detection_difficulty": 2,
                "reversibility": 1,
                "rationale": "low effort, easy to undo",
            },
            {
                "id": "buddy-run",
                "description": "run together with the sister on Saturdays",
                "keywords": ["run with your sister"],
                "severity": 2,
                "occurrence": 3,
                "detection_difficulty": 2,
                "reversibility": 1,
                "rationale": "social support; mild risk of pace pressure, easy to adjust",
            },
        ],
        "summary": "Both candidate moves are low risk and reversible; nothing blocked this turn.",
    },
    "pineal": {
        "text": (
            "You have been carrying a plan of three evening runs through weeks that leave you drained, and it "
            "makes sense that it keeps slipping; that says more about the plan's size than about you. Your one "
            "run this week happened on a weekend morning and felt good, which is useful information.\n\n"
            "A small experiment for the coming week: keep one anchored run on Saturday or Sunday morning and let "
            "the weekday runs be optional extras rather than promises. If your sister's Saturday idea appeals, it "
            "could be that anchor; agree beforehand that either of you can set the pace, so neither feels held "
            "back.\n\nAfter the week, notice what made the run easier or harder: time of day, company, how "
            "tired you were. We can build on whatever worked. Which of the two options feels more like you?"
        ),
        "citations": [{"agent": a, "version": 1} for a in ("shadow", "persona", "plasticity", "stability")],
    },
}
WRITE_TOOL = {
    "shadow": "write_shadow",
    "persona": "write_persona",
    "plasticity": "write_plasticity",
    "stability": "write_stability",
    "coach": "write_coach",
    "pineal": "write_synthesis",
}
THINK_TOKENS = {
    "coach": 250,
    "shadow": 500,
    "persona": 500,
    "plasticity": 500,
    "stability": 500,
    "pineal": 600,
}
SECOND_CALL_THINK_TOKENS = 40


def _thinking(tokens: int) -> str:
    """About ``tokens`` tokens of plausible reasoning text (4 characters per token, testsupport's rule)."""
    base = (
        "The user wants consistency but the evidence shows evenings are consumed by recovery from work. "
        "I should check the schema fields, keep confidence low with so few observations, and avoid "
        "prescribing. "
    )
    text = (base * (tokens * 4 // len(base) + 1))[: tokens * 4]
    return f"<think>{text}</think>"


def _text_of(message: dict[str, Any]) -> str:
    c = message.get("content")
    if isinstance(c, str):
        return c
    return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict)) if isinstance(c, list) else ""


def _wrote(request: Any, tool: str) -> bool:
    """True when the agent already called ``tool`` in this turn: after the latest user message naming
    the turn (the supervisor's task tail says "(turn tNNNNNN)"; a warm conversation holds earlier turns)."""
    msgs = request.messages
    start = max(
        (i for i, m in enumerate(msgs) if m.get("role") == "user" and "(turn t" in _text_of(m)), default=-1
    )
    for m in msgs[start + 1 :]:
        if m.get("role") != "assistant":
            continue
        for c in m.get("tool_calls") or []:  # OpenAI shape (the proxy talks OpenAI to the upstream)
            if str((c.get("function") or {}).get("name", "")).endswith("__" + tool):
                return True
        for b in m.get("content") if isinstance(m.get("content"), list) else []:  # Anthropic shape
            if (
                isinstance(b, dict)
                and b.get("type") == "tool_use"
                and str(b.get("name", "")).endswith("__" + tool)
            ):
                return True
    return False


def scripts(seed_way: bool) -> dict[str, Callable[[Any], Any]]:
    """Per-agent scripts (callables over the request, not step counts: in the seed's way Claude Code
    adds a user-role environment note after the tool result, and makes a tool-less side call):

    * a request advertising no tools (Claude Code's side calls, e.g. a session title): a short text;
    * the agent's write not yet in the conversation: the write (after a thinking preamble, seed's way);
    * otherwise: "Done." (after a short thinking preamble, seed's way).
    """
    from testsupport.script import Reply, Text, ToolCall

    def make(agent: str) -> Callable[[Any], Any]:
        tool = WRITE_TOOL[agent]
        call = ToolCall(tool, PAYLOADS[agent])

        def script(request: Any) -> Any:
            if not request.tool_names:
                return Text("Coaching check-in")
            if _wrote(request, tool):
                return Text(_thinking(SECOND_CALL_THINK_TOKENS) + "Done.") if seed_way else Text("Done.")
            return Reply(_thinking(THINK_TOKENS[agent]), (call,)) if seed_way else call

        return script

    return {agent: make(agent) for agent in PAYLOADS}


def output_tokens() -> dict[str, int]:
    """Approximate output tokens of each agent's write (tool-call arguments as sent)."""
    from testsupport.latency import approx_token_count

    return {
        a: approx_token_count(json.dumps(p, ensure_ascii=False, separators=(",", ":")))
        for a, p in PAYLOADS.items()
    }


def check_payloads() -> None:
    """Fail fast if a payload does not validate against its agent's schema."""
    from blackboard import AGENT_OUTPUT_SCHEMAS

    for agent, payload in PAYLOADS.items():
        AGENT_OUTPUT_SCHEMAS[agent].model_validate(payload)


# ----- runners ------------------------------------------------------------------------------------------


def seed_runner_class() -> type:
    """The runner's own seed's-way mode (``RunnerConfig(seed_way=True)``: Claude Code's default system
    prompt with the agent prompt appended, default tools, thinking on), minus the per-agent output-token
    cap: the seed did not cap its agents, and thinking tokens count against the cap."""
    from launcher.runner._agent_runner import ClaudeAgentRunner

    class SeedWayRunner(ClaudeAgentRunner):
        def options(self, inv: Any, *, one_shot: bool, stderr: Callable[[str], None]) -> Any:
            opts = super().options(inv, one_shot=one_shot, stderr=stderr)
            env = {k: v for k, v in opts.env.items() if k != "CLAUDE_CODE_MAX_OUTPUT_TOKENS"}
            return dataclasses.replace(opts, env=env)

    return SeedWayRunner


# ----- one stack, one turn ----------------------------------------------------------------------------


@dataclass
class Stack:
    supervisor: Any
    serial_supervisor: Any
    runner: Any


@contextlib.asynccontextmanager
async def stack(
    upstream_url: str, specs: dict[str, Any], work: Path, *, seed_way: bool
) -> AsyncIterator[Stack]:
    from blackboard import Blackboard
    from launcher.pipeline._turn_scope import TurnDirectory
    from launcher.pipeline.stack import running_stack
    from launcher.pipeline.supervisor import Supervisor, SupervisorSettings
    from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig
    from proxy import ModelPool, ProxyConfig

    home = work / "home"
    await anyio.to_thread.run_sync(lambda: (home / ".claude").mkdir(parents=True, exist_ok=True))
    board = Blackboard(work / "data")
    directory = TurnDirectory()
    pool = ModelPool(name="qwen3", aliases=["*"], kind="openai", replicas=[upstream_url])
    proxy_cfg = ProxyConfig(models=[pool], default_model="qwen3", max_attempts=1)
    secret = secrets.token_hex(16)
    try:
        async with running_stack(
            board=board,
            directory=directory,
            proxy_config=proxy_cfg,
            agents=None if seed_way else specs,
            mcp_secret=secret,
        ) as urls:
            cfg = RunnerConfig(
                proxy_url=urls.proxy_url,
                mcp_url=urls.mcp_url,
                max_warm=6,
                mcp_secret=secret,
                seed_way=seed_way,
                pool_size=0 if seed_way else 6,
                cwd=str(work),
                extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            )
            runner_cls = seed_runner_class() if seed_way else ClaudeAgentRunner
            from launcher.runner._process_pool import bindings_for

            async with runner_cls(cfg, bindings=bindings_for(directory)) as runner:
                sup = Supervisor(
                    board,
                    runner,
                    lambda: specs,
                    directory=directory,
                    settings=SupervisorSettings(pineal_prefill=OPTIONS["prefill"]),
                )
                serial = Supervisor(
                    board,
                    runner,
                    lambda: specs,
                    directory=directory,
                    settings=SupervisorSettings(sequential=True),
                )
                yield Stack(sup, serial, runner)
    finally:
        board.close()


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


async def run_model(
    model: str, time_scale: float, specs: dict[str, Any], work: Path, *, seed: bool, sequential: bool
) -> ModelRun:
    from testsupport.upstream import ScriptedUpstream

    run = ModelRun(model)
    upstream = ScriptedUpstream(
        scripts(seed_way=False), latency=model, time_scale=time_scale, default_text="Done."
    )
    await anyio.to_thread.run_sync(upstream.start)
    try:
        print(
            f"[{model}] ours: cold turn, warm turn{', sequential turn' if sequential else ''}, prewarmed turn ...",
            flush=True,
        )
        async with stack(upstream.base_url, specs, work / f"{_slug(model)}-ours", seed_way=False) as st:
            from launcher.pipeline.supervisor import pool_invocations

            t = time.monotonic()
            n = await st.runner.fill_pool(pool_invocations(specs))
            await st.supervisor.warm_up()  # as a service does once at start (the safety screen's first call)
            print(
                f"[{model}] process pool: {n} idle processes started in {time.monotonic() - t:.1f}s, before the "
                f"service's first session, which comes {TYPING_S * time_scale:.0f}s later (a running service has "
                "them long before)",
                flush=True,
            )
            await anyio.sleep(TYPING_S * time_scale)
            run.turns["cold"] = await measure(
                "ours cold", st.supervisor, st.runner, upstream, "s-ours", MESSAGES[0]
            )
            run.turns["warm"] = await measure(
                "ours warm", st.supervisor, st.runner, upstream, "s-ours", MESSAGES[1]
            )
            if sequential:
                run.turns["sequential"] = await measure(
                    "ours sequential",
                    st.serial_supervisor,
                    st.runner,
                    upstream,
                    "s-ours",
                    MESSAGES[2],
                    serial=True,
                )
            await st.runner.close_session(USER, "s-ours")  # free the warm slots, as a closed chat would
            t = time.monotonic()
            started = await st.supervisor.prewarm(USER, "s-prewarm")
            took, typing = time.monotonic() - t, TYPING_S * time_scale
            print(
                f"[{model}] prewarm: {len(started)} processes started in {took:.1f}s; the turn starts "
                f"{max(took, typing):.1f}s after the chat opened (typing time assumed: {typing:.1f}s)",
                flush=True,
            )
            await anyio.sleep(max(0.0, typing - took))
            run.turns["prewarmed"] = await measure(
                "ours prewarmed", st.supervisor, st.runner, upstream, "s-prewarm", PREWARM_MESSAGE
            )
        if seed:
            print(f"[{model}] the seed's way: cold turn ...", flush=True)
            for agent, script in scripts(seed_way=True).items():
                upstream.set_script(agent, script)
            async with stack(upstream.base_url, specs, work / f"{_slug(model)}-seed", seed_way=True) as st:
                run.turns["seed"] = await measure(
                    "seed's way cold", st.supervisor, st.runner, upstream, "s-seed", MESSAGES[0]
                )
    finally:
        await anyio.to_thread.run_sync(upstream.stop)
    return run


def _slug(model: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in model)


# ----- output -----------------------------------------------------------------------------------------


def _f(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def print_table(run: ModelRun, time_scale: float) -> None:
    from rich.console import Console
    from rich.table import Table

    cols = [k for k in ("cold", "warm", "sequential", "prewarmed", "seed") if k in run.turns]
    table = Table(
        title=f"one coaching turn, latency model {run.model} (scripted upstream, time_scale {time_scale})"
    )
    table.add_column("figure (seconds unless noted)")
    for k in cols:
        table.add_column(run.turns[k].label, justify="right")
    rows: list[tuple[str, Callable[[TurnFigures], str]]] = [
        ("Coach first token at the model", lambda t: _f(t.coach_first_token_model_s)),
        ("Coach first token seen by Claude Code", lambda t: _f(t.coach_first_token_s)),
        ("Coach first words shown", lambda t: _f(t.coach_first_words_s)),
        ("Coach reply shown", lambda t: _f(t.coach_reply_s)),
        ("synthesis delivered", lambda t: _f(t.synthesis_s)),
        ("critical path of model time", lambda t: _f(t.critical_path_s)),
        ("  of it Pineal's model calls", lambda t: _f(t.pineal_model_s)),
        ("Pineal's prefix prefilled (done at)", lambda t: _f(t.prefill_s)),
        ("orchestration overhead", lambda t: _f(t.overhead_s)),
        ("model calls", lambda t: str(t.model_calls)),
        ("mean prompt tokens / request", lambda t: f"{t.prompt_tokens_mean:.0f}"),
        ("  of an agent's first call", lambda t: f"{t.first_call_prompt_tokens_mean:.0f}"),
        ("prompt tokens from prefix cache", lambda t: f"{t.cached_share:.0%}"),
        ("  of Pineal's first call", lambda t: f"{t.pineal_cached_share:.0%}"),
        ("output tokens (all calls)", lambda t: str(t.output_tokens)),
        ("claude processes started", lambda t: str(t.processes_started)),
        ("  taken from the pool instead", lambda t: str(t.pooled_processes)),
        ("synthesis source / degraded", lambda t: f"{t.source} / {'yes' if t.degraded else 'no'}"),
    ]
    for name, fn in rows:
        table.add_row(name, *(fn(run.turns[k]) for k in cols))
    console = Console(width=140, highlight=False)
    console.print(table)
    seq, warm_cold = run.ratio("sequential", "warm"), run.ratio("cold", "warm")
    seed, cold = run.turns.get("seed"), run.turns.get("cold")
    console.print(f"[{run.model}] speedup vs sequential (sequential / warm parallel synthesis): {_f(seq)}x")
    console.print(f"[{run.model}] warm vs cold (cold / warm synthesis): {_f(warm_cold)}x")
    if seed and cold and seed.synthesis_s and cold.synthesis_s:
        console.print(
            f"[{run.model}] seed's way / ours, cold turn: {seed.synthesis_s / cold.synthesis_s:.2f}x"
        )


def summary_line(run: ModelRun) -> str:
    cold = run.turns.get("cold") or TurnFigures("cold")
    seed = run.turns.get("seed")
    return (
        f"model={run.model} coach_first_token_s={_f(cold.coach_first_token_s)} synthesis_s={_f(cold.synthesis_s)} "
        f"overhead_s={_f(cold.overhead_s)} speedup_vs_sequential={_f(run.ratio('sequential', 'warm'))} "
        f"warm_vs_cold={_f(run.ratio('cold', 'warm'))} "
        f"seed_way_synthesis_s={_f(seed.synthesis_s if seed else None)} "
        f"first_words_s={_f(cold.coach_first_words_s)}"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="See the module docstring for what each figure means."
    )
    ap.add_argument(
        "--models",
        nargs="+",
        default=list(MODELS),
        choices=MODELS,
        metavar="MODEL",
        help=f"latency models to run (default: all): {', '.join(MODELS)}",
    )
    ap.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="real seconds per modelled second (1.0 = the latency model in real time)",
    )
    ap.add_argument("--skip-seed", action="store_true", help="skip the seed's-way turn")
    ap.add_argument("--skip-sequential", action="store_true", help="skip the sequential turn")
    ap.add_argument(
        "--no-prefill",
        action="store_true",
        help="do not prefill Pineal's shared context (to measure what the prefill saves)",
    )
    ap.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    args = ap.parse_args(argv)
    if args.time_scale <= 0:
        ap.error(f"--time-scale must be > 0, got {args.time_scale}")
    args.models = sorted(
        set(args.models), key=lambda m: (m == REPORT_MODEL, MODELS.index(m))
    )  # report model last
    return args


def bench_specs() -> dict[str, Any]:
    from launcher.agents import load_agents

    specs = load_agents(ROOT / "agents")
    return {n: s.model_copy(update={"deadline_s": 600.0}) for n, s in specs.items()}


async def amain(args: argparse.Namespace) -> list[ModelRun]:
    check_payloads()
    OPTIONS["prefill"] = not args.no_prefill
    specs = bench_specs()
    toks = output_tokens()
    print(
        "scripted output tokens per write (approx., 4 chars/token): "
        + ", ".join(f"{a}={toks[a]}" for a in PAYLOADS)
        + "; seed's way adds thinking: "
        + ", ".join(f"{a}={THINK_TOKENS[a]}" for a in THINK_TOKENS)
        + f" (+{SECOND_CALL_THINK_TOKENS} on its second call)",
        flush=True,
    )
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        for model in args.models:
            t = time.monotonic()
            runs.append(
                await run_model(
                    model,
                    args.time_scale,
                    specs,
                    Path(tmp),
                    seed=not args.skip_seed,
                    sequential=not args.skip_sequential,
                )
            )
            print(
                f"[{model}] measured in {time.monotonic() - t:.0f}s wall; load average now "
                f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (others' work on this machine counts as "
                "overhead)",
                flush=True,
            )
    return runs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("IS_SANDBOX", "1")
    runs = anyio.run(amain, args)
    for run in runs:
        print_table(run, args.time_scale)
    if args.json:
        args.json.write_text(
            json.dumps(
                {r.model: {k: dataclasses.asdict(v) for k, v in r.turns.items()} for r in runs}, indent=2
            )
        )
    for run in runs:
        print(summary_line(run), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
