"""Safety-screen benchmark: per-message latency of the whole screen and its recall / false alarms on a
labelled set, each layer alone and all together, in one run.

Latency: every turn of every dialog goes through :func:`launcher.safety.screen` with its session's state
(the shipped configuration: rules, context, semantic layer), timed with ``time.perf_counter`` after one
warm-up call that loads the semantic model; p50 / p95 / max in milliseconds.
Quality: :func:`launcher.safety._evaluation.evaluate_labelled` per layer (definitions there and in
``docs/safety.md``). With ``--shared``, also the share of user turns of ../shared/data (ESConv, AnnoMI, UIC)
screened at tier 3 and at tier >= 2 (those corpora hold almost no real crises; see the note in
``docs/safety.md`` for the reviewed hits).

Last line, exactly: ``p95_ms=X recall_t3=X recall_t2plus=X false_alarms_per_1000=X`` (the ``all`` layer
on the chosen set; recalls as shares 0-1). The default set, ``bench/data/safety_fresh10``, is the
held-out set of round 11; ``bench/data/safety_fresh9`` … ``safety_fresh`` are development sets, and the
final messages of ``safety_fresh5`` … ``safety_fresh`` are training data of the semantic layer since round 7
(docs/safety.md). The latency line also gives the CPU time per
message (``time.thread_time``) and the load average, since the machine may be shared, and the latency
with the other BLAS thread count of the encoder (``[safety] encoder_threads`` 1 or 2) measured right
after, with the ratio of the two p95s.

Usage: .venv/bin/python bench/safety.py [--set bench/data/safety_fresh10] [--shared]
(``--set PREFIX`` reads PREFIX.dialogs.jsonl and PREFIX.labels.jsonl.) About 20-60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from launcher.cli.eval import evaluate, turns_from_file  # noqa: E402
from launcher.safety import SafetyConfig, SafetyState, screen  # noqa: E402
from launcher.safety._evaluation import LAYERS, evaluate_labelled, read_labelled  # noqa: E402

DEFAULT_SET = ROOT / "bench" / "data" / "safety_fresh10"
SHARED = ROOT.parent / "shared" / "data"
CORPORA = {
    "esconv": SHARED / "esconv" / "ESConv-test.jsonl",
    "annomi": SHARED / "annomi" / "AnnoMI-dev.csv",
    "uic": SHARED / "uic_health_coaching",
}


def latency_ms(dialogs: list[tuple[str, ...]], config: SafetyConfig) -> tuple[list[float], list[float]]:
    """``(wall, cpu)`` milliseconds per message: ``time.perf_counter`` and ``time.thread_time`` (the CPU
    the call used, which a shared machine's load does not inflate)."""
    screen("warm-up", None, config)  # loads the semantic model once
    wall: list[float] = []
    cpu: list[float] = []
    for turns in dialogs:
        state = SafetyState()
        for text in turns:
            t0, c0 = time.perf_counter(), time.thread_time()
            screen(text, state, config)
            wall.append(1000.0 * (time.perf_counter() - t0))
            cpu.append(1000.0 * (time.thread_time() - c0))
    return wall, cpu


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]


def shared_rates(config: SafetyConfig) -> None:
    for name, path in CORPORA.items():
        if not path.exists():
            print(f"{name}: {path} absent, skipped")
            continue
        report = evaluate(turns_from_file(path), config)
        n = report.turns
        t3, t2 = report.tiers[3], report.tiers[2] + report.tiers[3]
        print(
            f"{name}: {n} user turns; tier 3: {t3} ({1000 * t3 / n:.2f} per 1,000); tier >= 2: {t2} "
            f"({100 * t2 / n:.2f}%)"
        )
        for hit in report.hits:
            if hit.tier == 3:
                print(f"  tier 3 {hit.location} {', '.join(hit.reasons)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--set", type=Path, default=DEFAULT_SET, help="labelled set prefix (PREFIX.dialogs.jsonl)"
    )
    ap.add_argument("--shared", action="store_true", help="also screen every user turn of ../shared/data")
    args = ap.parse_args()
    prefix = str(args.set)
    pairs = read_labelled(Path(prefix + ".dialogs.jsonl"), Path(prefix + ".labels.jsonl"))
    config = SafetyConfig()
    load0 = os.getloadavg()[0]
    times, cpu = latency_ms([d.turns for d, _ in pairs], config)
    print(f"set: {prefix} ({len(pairs)} dialogs, {len(times)} messages screened)")
    print(
        f"latency per message: p50={statistics.median(times):.2f} ms p95={p95(times):.2f} ms max={max(times):.1f} ms; "
        f"CPU p50={statistics.median(cpu):.2f} ms p95={p95(cpu):.2f} ms; "
        f"load average {load0:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    other = 2 if config.encoder_threads == 1 else 1
    times2, _ = latency_ms([d.turns for d, _ in pairs], config.model_copy(update={"encoder_threads": other}))
    print(
        f"latency with encoder_threads={other} (configured: {config.encoder_threads}), measured right after: "
        f"p50={statistics.median(times2):.2f} ms p95={p95(times2):.2f} ms; "
        f"p95 ratio {p95(times2) / p95(times):.2f}"
    )
    print(f"{'layer':<10} {'recall_t3':>10} {'recall_t2plus':>14} {'false_alarms_per_1000':>22}")
    reports = {layer: evaluate_labelled(pairs, config, layer) for layer in LAYERS}
    for layer, r in reports.items():
        print(
            f"{layer:<10} {r.recall_t3 or 0:>10.3f} {r.recall_t2plus or 0:>14.3f} {r.false_alarms_per_1000 or 0:>22.1f}"
        )
    if args.shared:
        shared_rates(config)
    full = reports["all"]
    print(
        f"p95_ms={p95(times):.2f} recall_t3={full.recall_t3 or 0:.3f} recall_t2plus={full.recall_t2plus or 0:.3f} "
        f"false_alarms_per_1000={full.false_alarms_per_1000 or 0:.1f}"
    )


if __name__ == "__main__":
    main()
