"""The turns of one latency model (cold, warm, sequential, prewarmed, the seed's way) and of a whole
run."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from .figures import ModelRun, measure
from .inputs import MESSAGES, OPTIONS, PREWARM_MESSAGE, ROOT, TYPING_S, USER
from .payloads import PAYLOADS, SECOND_CALL_THINK_TOKENS, THINK_TOKENS, check_payloads, output_tokens
from .scripts import scripts
from .stack import stack


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
