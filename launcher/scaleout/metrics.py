"""``coach worker``'s ``GET /metrics`` (Prometheus text format): sessions held, warm processes, the
shared queue's depth, turn latency, and counters of done, failed, resumed and refused work."""

from __future__ import annotations

from typing import Any

__all__ = ["metrics_app", "render"]


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def render(worker: Any, runner: Any, queue_depth: int | None) -> str:
    st = worker.stats
    warm = len(getattr(runner, "_warm", {}) or {})
    lines = [
        "# HELP coach_worker_sessions_held Sessions whose lease this worker holds (warm processes kept for them).",
        "# TYPE coach_worker_sessions_held gauge",
        f'coach_worker_sessions_held{{worker="{worker.worker_id}"}} {worker.sessions_held}',
        "# HELP coach_worker_session_capacity Sessions this worker keeps warm at most (the broker prefetch).",
        "# TYPE coach_worker_session_capacity gauge",
        f'coach_worker_session_capacity{{worker="{worker.worker_id}"}} {worker.capacity}',
        "# HELP coach_worker_warm_processes Warm claude processes.",
        "# TYPE coach_worker_warm_processes gauge",
        f'coach_worker_warm_processes{{worker="{worker.worker_id}"}} {warm}',
        "# HELP coach_worker_turns_running Turns running now.",
        "# TYPE coach_worker_turns_running gauge",
        f'coach_worker_turns_running{{worker="{worker.worker_id}"}} {st.running}',
        "# HELP coach_queue_depth Turn jobs ready in the shared queue (-1: the broker did not answer).",
        "# TYPE coach_queue_depth gauge",
        f"coach_queue_depth {-1 if queue_depth is None else queue_depth}",
        "# HELP coach_worker_turn_seconds Turn latency on this worker (last 1000 turns).",
        "# TYPE coach_worker_turn_seconds summary",
    ]
    for q in (0.5, 0.9, 0.99):
        lines.append(
            f'coach_worker_turn_seconds{{worker="{worker.worker_id}",quantile="{q}"}} '
            f"{_quantile(st.latencies, q):.3f}"
        )
    lines += [
        f'coach_worker_turn_seconds_sum{{worker="{worker.worker_id}"}} {sum(st.latencies):.3f}',
        f'coach_worker_turn_seconds_count{{worker="{worker.worker_id}"}} {len(st.latencies)}',
    ]
    for name, value, help_ in (
        ("turns_done", st.turns_done, "Turn jobs this worker marked done."),
        ("turns_failed", st.turns_failed, "Dead-lettered turn jobs this worker marked failed."),
        ("turns_resumed", st.turns_resumed, "Turn jobs this worker resumed after another attempt."),
        ("duplicates_acked", st.duplicates_acked, "Messages of jobs already finished, acknowledged."),
        ("stale_refused", st.stale_refused, "Turns stopped because this worker's lease went stale."),
        ("hints_sent", st.hints_sent, "Hints sent to a session's lease holder."),
        (
            "requeued",
            st.requeued,
            "Dead-lettered jobs put back on the queue: fewer real attempts than the delivery limit.",
        ),
    ):
        lines += [
            f"# HELP coach_worker_{name}_total {help_}",
            f"# TYPE coach_worker_{name}_total counter",
            f'coach_worker_{name}_total{{worker="{worker.worker_id}"}} {value}',
        ]
    for name, attr, help_ in (
        ("processes_started", "started_processes", "claude processes this worker started."),
        (
            "processes_reset",
            "reset_processes",
            "Warm processes reset for another session ([agents] reuse_processes).",
        ),
        (
            "resets_failed",
            "reset_failures",
            "Resets not confirmed (those processes were stopped, not reused).",
        ),
    ):
        lines += [
            f"# HELP coach_worker_{name}_total {help_}",
            f"# TYPE coach_worker_{name}_total counter",
            f'coach_worker_{name}_total{{worker="{worker.worker_id}"}} {int(getattr(runner, attr, 0) or 0)}',
        ]
    return "\n".join(lines) + "\n"


def metrics_app(worker: Any, runner: Any, broker: Any) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def metrics(_request: Request) -> PlainTextResponse:
        depth = await broker.queue_depth()
        return PlainTextResponse(render(worker, runner, depth), media_type="text/plain; version=0.0.4")

    return Starlette(routes=[Route("/metrics", metrics)])
