"""The benchmark's output: one table per latency model and the last line (its exact format is pinned by
``tests/bench/test_turn_bench.py``)."""

from __future__ import annotations

from collections.abc import Callable

from .figures import ModelRun, TurnFigures


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
