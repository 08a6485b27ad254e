"""Turn benchmark: one coaching turn through the six agents, under each latency model of docs/latency.md.

What it runs, the figures it prints and what each means: the package ``bench/turnbench`` (its
docstring). The last line is exactly ``model=qwen3-30b-a3b@2x4090 coach_first_token_s=X synthesis_s=X
overhead_s=X speedup_vs_sequential=X warm_vs_cold=X seed_way_synthesis_s=X first_words_s=X``.

Usage: .venv/bin/python bench/turn.py [--models NAME ...] [--time-scale 1.0] [--skip-seed]
       [--skip-sequential] [--no-prefill] [--json FILE]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/blackboard.py and bench/proxy.py would shadow the packages of the same names: the repo root first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.turnbench.cli import main, parse_args  # noqa: E402
from bench.turnbench.figures import ModelRun, TurnFigures, measure  # noqa: E402
from bench.turnbench.payloads import PAYLOADS, check_payloads, output_tokens  # noqa: E402
from bench.turnbench.report import print_table, summary_line  # noqa: E402
from bench.turnbench.run import bench_specs, run_model  # noqa: E402
from bench.turnbench.scripts import scripts  # noqa: E402
from bench.turnbench.stack import stack  # noqa: E402

__all__ = [
    "PAYLOADS",
    "ModelRun",
    "TurnFigures",
    "bench_specs",
    "check_payloads",
    "main",
    "measure",
    "output_tokens",
    "parse_args",
    "print_table",
    "run_model",
    "scripts",
    "stack",
    "summary_line",
]

if __name__ == "__main__":
    raise SystemExit(main())
