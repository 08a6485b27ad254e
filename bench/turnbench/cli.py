"""``bench/turn.py``'s command line: its arguments and ``main``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

import anyio

from . import __doc__ as PACKAGE_DOC
from .inputs import MODELS, REPORT_MODEL
from .report import print_table, summary_line
from .run import amain


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=(PACKAGE_DOC or "").split("\n\n")[0],
        epilog="See bench/turnbench/__init__.py for what each figure means.",
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
