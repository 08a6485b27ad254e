"""Run the scripted upstream as its own process (benchmarks, manual checks).

``python -m testsupport [--host H] [--port 0] [--latency NAME] [--time-scale X] [--scripts FILE.json]
[--default-text T] [--model-name M]``

Prints ``LISTENING http://H:PORT`` on stdout once serving (port 0 => a free one), then serves until
SIGTERM/SIGINT. Scripts use the JSON form of :func:`testsupport.script.step_from_json`; more can be
posted to ``/_scripted/scripts`` and records read from ``/_scripted/requests``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from .errors import TestSupportError
from .latency import LATENCY_MODELS
from .script import scripts_from_json
from .upstream import ScriptedUpstream


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testsupport", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", default="instant", choices=sorted(LATENCY_MODELS))
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--scripts", type=Path, help="JSON file: {agent: [step, ...]}")
    parser.add_argument("--default-text", default="ok")
    parser.add_argument("--model-name", default=None)
    args = parser.parse_args(argv)
    try:
        scripts = scripts_from_json(json.loads(args.scripts.read_text())) if args.scripts else {}
        upstream = ScriptedUpstream(
            scripts,
            latency=args.latency,
            time_scale=args.time_scale,
            default_text=args.default_text,
            model_name=args.model_name,
        )
        url = upstream.start(args.host, args.port)
    except (OSError, ValueError, TestSupportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"LISTENING {url}", flush=True)
    stop.wait()
    upstream.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
