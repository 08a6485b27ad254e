"""Metering (tokens, time to first token), token budgets, the JSONL usage log and Prometheus text.

Budgets count input + output tokens (cached input included: it still occupies the context) of finished
requests. ``session_token_budget`` applies to all agents of one ``x-coach-session`` together;
``AgentPolicy.token_budget`` to one agent within one session (or within the proxy's lifetime when the
request names no session). A request is refused when the budget cannot fit its estimated input plus one
output token; otherwise its max_tokens is lowered to what is left. Counters survive restarts by replaying
the usage log at start-up.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from .config import ProxyConfig
from .errors import BudgetExceededError

log = logging.getLogger("proxy.metering")

# Prometheus histogram buckets for time to first token, seconds.
TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass
class Who:
    """The caller, from the x-coach-agent / x-coach-user / x-coach-session / x-coach-turn headers."""

    agent: str = ""
    user: str = ""
    session: str = ""
    turn: str = ""


@dataclass
class UsageRecord:
    """One line of the usage log (JSONL). Tokens are counts; times in milliseconds."""

    ts: float
    id: str
    agent: str
    user: str
    session: str
    turn: str
    model: str
    replica: str
    status: str  # "ok", "local", "error:<type>", "cancelled"
    stream: bool
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    ttft_ms: float | None = None
    total_ms: float = 0.0
    stop_reason: str | None = None
    attempts: int = 0
    #: A prefill (an agent's context sent ahead with max_tokens 1, ``proxy._prefill``), not a model call
    #: of the agent's own: its tokens count, but it is no step of the agent's conversation.
    prefill: bool = False


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kw: str) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kw.items()) + "}"


class Meter:
    """In-memory counters + the append-only usage log."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.log_path = Path(config.usage_log) if config.usage_log else None
        self.session_used: dict[str, int] = defaultdict(int)
        self.retry_warned: dict[
            tuple[str, str], float
        ] = {}  # (replica, error code) -> last warning (monotonic s)
        self.agent_used: dict[tuple[str, str], int] = defaultdict(int)
        self.tokens: dict[tuple[str, str, str], int] = defaultdict(int)  # (agent, session, kind)
        self.requests: dict[tuple[str, str, str], int] = defaultdict(int)  # (agent, model, status)
        self.ttft_sum: dict[tuple[str, str], float] = defaultdict(float)  # (agent, session)
        self.ttft_count: dict[tuple[str, str], int] = defaultdict(int)
        self.ttft_buckets: dict[str, list[int]] = defaultdict(lambda: [0] * len(TTFT_BUCKETS))
        self.ttft_agent_sum: dict[str, float] = defaultdict(float)
        self.ttft_agent_count: dict[str, int] = defaultdict(int)
        self.retries: dict[str, int] = defaultdict(int)
        self.invalid_tool_arguments = 0  # responses refused: a finished tool call with invalid arguments
        self.dropped_tool_calls = 0  # tool calls cut by max_tokens, dropped from the response
        self.truncated_streams: dict[str, int] = defaultdict(int)  # replica -> streams ended without a finish
        self.refused: dict[tuple[str, str], int] = defaultdict(int)  # (agent, budget kind)
        self.on_record: Callable[[UsageRecord], None] | None = None  # e.g. settling shared budgets
        if self.log_path is not None:
            self._replay()

    def _replay(self) -> None:
        assert self.log_path is not None
        if not self.log_path.exists():
            return
        with self.log_path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    r = json.loads(line)
                    used = (
                        int(r.get("input_tokens", 0))
                        + int(r.get("cached_tokens", 0))
                        + int(r.get("output_tokens", 0))
                    )
                    self._charge(str(r.get("agent", "")), str(r.get("session", "")), used)
                except (ValueError, TypeError, AttributeError):
                    log.warning("usage log %s line %d is not a usage record; skipped", self.log_path, n)

    def _charge(self, agent: str, session: str, used: int) -> None:
        if session:
            self.session_used[session] += used
        if agent:
            self.agent_used[(session, agent)] += used

    def check_budget(self, who: Who, agent_budget: int | None, est_input: int, max_tokens: int) -> int:
        """Return max_tokens lowered to fit the budgets; raise BudgetExceededError naming the budget and
        its numbers when not even one output token fits."""
        limits: list[tuple[str, str, int, int]] = []
        if self.config.session_token_budget is not None and who.session:
            limits.append(
                (
                    "session",
                    f"session {who.session!r}",
                    self.config.session_token_budget,
                    self.session_used[who.session],
                )
            )
        if agent_budget is not None and who.agent:
            scope = f" in session {who.session!r}" if who.session else ""
            limits.append(
                (
                    "agent",
                    f"agent {who.agent!r}{scope}",
                    agent_budget,
                    self.agent_used[(who.session, who.agent)],
                )
            )
        for kind, name, limit, used in limits:
            left = limit - used
            if left < est_input + 1:
                self.refused[(who.agent, kind)] += 1
                raise BudgetExceededError(
                    f"token budget exhausted: the {kind} budget of {name} is {limit} tokens, {used} are used, "
                    f"{max(left, 0)} are left and this request needs about {est_input} input tokens plus at "
                    "least 1 output token; raise the budget in the proxy config or start a new session",
                    budget=name,
                    limit=limit,
                    used=used,
                    requested=est_input + 1,
                )
            max_tokens = min(max_tokens, left - est_input)
        return max_tokens

    def record(self, rec: UsageRecord) -> None:
        """Count a finished request and append it to the usage log."""
        a, s = rec.agent, rec.session
        used = rec.input_tokens + rec.cached_tokens + rec.output_tokens
        self._charge(a, s, used)
        self.tokens[(a, s, "input")] += rec.input_tokens
        self.tokens[(a, s, "cached")] += rec.cached_tokens
        self.tokens[(a, s, "output")] += rec.output_tokens
        self.requests[(a, rec.model, rec.status)] += 1
        if rec.ttft_ms is not None:
            sec = rec.ttft_ms / 1000
            self.ttft_sum[(a, s)] += sec
            self.ttft_count[(a, s)] += 1
            self.ttft_agent_sum[a] += sec
            self.ttft_agent_count[a] += 1
            buckets = self.ttft_buckets[a]
            for i, le in enumerate(TTFT_BUCKETS):
                if sec <= le:
                    buckets[i] += 1
        if self.log_path is not None:
            try:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                with self.log_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(asdict(rec), separators=(",", ":")) + "\n")
            except OSError as exc:
                log.error("cannot append to usage log %s: %s", self.log_path, exc)
        if self.on_record is not None:
            self.on_record(rec)

    def prometheus(self, replicas: list[tuple[str, str, int, bool]]) -> str:
        """Prometheus text exposition (format 0.0.4). ``replicas``: (pool, url, outstanding, available)."""
        out: list[str] = []

        def family(name: str, kind: str, help_: str) -> None:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")

        family(
            "coach_proxy_requests_total",
            "counter",
            "Finished /v1/messages requests by agent, model and status.",
        )
        for (a, m, st), v in sorted(self.requests.items()):
            out.append(f"coach_proxy_requests_total{_labels(agent=a, model=m, status=st)} {v}")
        family(
            "coach_proxy_tokens_total",
            "counter",
            "Tokens by agent, session and kind (input excludes cached).",
        )
        for (a, s, k), n in sorted(self.tokens.items()):
            out.append(f"coach_proxy_tokens_total{_labels(agent=a, session=s, kind=k)} {n}")
        family(
            "coach_proxy_session_ttft_seconds",
            "summary",
            "Time to first upstream token by agent and session.",
        )
        for (a, s), sec in sorted(self.ttft_sum.items()):
            out.append(f"coach_proxy_session_ttft_seconds_sum{_labels(agent=a, session=s)} {sec:.6f}")
            out.append(
                f"coach_proxy_session_ttft_seconds_count{_labels(agent=a, session=s)} {self.ttft_count[(a, s)]}"
            )
        family("coach_proxy_ttft_seconds", "histogram", "Time to first upstream token by agent.")
        for a, buckets in sorted(self.ttft_buckets.items()):
            for le, c in zip(TTFT_BUCKETS, buckets, strict=True):
                out.append(f"coach_proxy_ttft_seconds_bucket{_labels(agent=a, le=str(le))} {c}")
            out.append(
                f"coach_proxy_ttft_seconds_bucket{_labels(agent=a, le='+Inf')} {self.ttft_agent_count[a]}"
            )
            out.append(f"coach_proxy_ttft_seconds_sum{_labels(agent=a)} {self.ttft_agent_sum[a]:.6f}")
            out.append(f"coach_proxy_ttft_seconds_count{_labels(agent=a)} {self.ttft_agent_count[a]}")
        family("coach_proxy_budget_refusals_total", "counter", "Requests refused by a token budget.")
        for (a, k), v in sorted(self.refused.items()):
            out.append(f"coach_proxy_budget_refusals_total{_labels(agent=a, budget=k)} {v}")
        family("coach_proxy_upstream_retries_total", "counter", "Upstream attempts retried, by replica.")
        for url, v in sorted(self.retries.items()):
            out.append(f"coach_proxy_upstream_retries_total{_labels(replica=url)} {v}")
        family(
            "coach_proxy_invalid_tool_arguments_total",
            "counter",
            "Tool calls whose JSON arguments could not be repaired (outcome: error = the response was refused "
            "with an error the client can retry; dropped = cut by max_tokens and left out).",
        )
        out.append(
            f"coach_proxy_invalid_tool_arguments_total{_labels(outcome='error')} {self.invalid_tool_arguments}"
        )
        out.append(
            f"coach_proxy_invalid_tool_arguments_total{_labels(outcome='dropped')} {self.dropped_tool_calls}"
        )
        family(
            "coach_proxy_truncated_streams_total",
            "counter",
            "Upstream streams that ended with no finish reason and no [DONE] (sent to the client as an error).",
        )
        for url, v in sorted(self.truncated_streams.items()):
            out.append(f"coach_proxy_truncated_streams_total{_labels(replica=url)} {v}")
        family("coach_proxy_outstanding_requests", "gauge", "Requests in flight per replica.")
        for pool, url, n, _ in replicas:
            out.append(f"coach_proxy_outstanding_requests{_labels(pool=pool, replica=url)} {n}")
        family("coach_proxy_replica_up", "gauge", "1 when the replica is considered healthy.")
        for pool, url, _, ok in replicas:
            out.append(f"coach_proxy_replica_up{_labels(pool=pool, replica=url)} {int(ok)}")
        return "\n".join(out) + "\n"


def now_ms(t0: float) -> float:
    return round((time.monotonic() - t0) * 1000, 3)
