"""Proxy overhead benchmark: our proxy vs calling the upstream directly vs LiteLLM's proxy.

One run, one scripted upstream (testsupport.ScriptedUpstream, real uvicorn process) playing a FIXED
delay model (named below; an assumption, not a measurement of any GPU), three paths:

  direct   client -> upstream /v1/chat/completions (OpenAI SSE)
  ours     client -> coach proxy /v1/messages (Anthropic SSE) -> upstream
  litellm  client -> LiteLLM proxy /v1/messages (Anthropic SSE) -> upstream
           (LiteLLM from PyPI in a separate virtualenv .bench-venv/, created here when absent)

Measured: time to first content token (TTFB of the first text delta) and total time per request,
sequentially (p50 of N requests each, interleaved), then requests/s with 32 concurrent streams.
Every server runs in its own process; the client is this process (httpx). All share this machine's CPUs.

Last line, exactly: ``added_ttfb_ms_p50=X ratio_vs_direct=X ratio_vs_litellm=X`` where
added_ttfb = p50(ours TTFB) - p50(direct TTFB), ratio = p50(our total) / p50(their total).
If LiteLLM cannot be installed or started, it says so and prints ``ratio_vs_litellm=unavailable``.

Usage: .venv/bin/python bench/proxy.py [--requests 40] [--concurrency 32] [--rounds 4] [--skip-litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = ROOT / ".bench-venv"
LITELLM_SPEC = "litellm[proxy]"
REPLY = (
    "The coach listens first, then reflects what it heard, names one small next step and asks how "
    "confident the person feels about it on a scale from one to ten, before closing the turn. "
) * 1
FIXED = {"name": "fixed-50ms-ttft-200tok/s", "ttft_base_s": 0.05, "decode_tokens_per_s": 200.0}
BODY_ANTHROPIC = {
    "model": "qwen3",
    "max_tokens": 256,
    "stream": True,
    "system": "You are a concise coach.",
    "messages": [{"role": "user", "content": "Help me start running."}],
}
BODY_OPENAI = {
    "model": "qwen3",
    "max_tokens": 256,
    "stream": True,
    "stream_options": {"include_usage": True},
    "messages": [
        {"role": "system", "content": "You are a concise coach."},
        {"role": "user", "content": "Help me start running."},
    ],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_upstream(port: int) -> None:
    """(subprocess) the scripted upstream under the fixed delay model."""
    import math

    import uvicorn

    sys.path.insert(0, str(ROOT))
    from testsupport import LatencyModel, ScriptedUpstream

    model = LatencyModel(
        name=FIXED["name"],
        ttft_base_s=FIXED["ttft_base_s"],
        prefill_tokens_per_s=math.inf,
        decode_tokens_per_s=FIXED["decode_tokens_per_s"],
        concurrency_penalty=0.0,
    )
    up = ScriptedUpstream(latency=model, default_text=REPLY.strip(), model_name="qwen3")
    uvicorn.run(up.app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def start(
    cmd: list[str], env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen[bytes]:
    out = open(log, "wb") if log else subprocess.DEVNULL
    return subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=out, stderr=subprocess.STDOUT
    )


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def ensure_litellm() -> tuple[Path | None, str]:
    """The litellm executable in .bench-venv (created and installed from PyPI when absent)."""
    exe = BENCH_VENV / "bin" / "litellm"
    if exe.exists():
        return exe, "present"
    print(
        f"installing {LITELLM_SPEC} into {BENCH_VENV} (separate virtualenv; one-time, needs PyPI) ...",
        flush=True,
    )
    try:
        if not (BENCH_VENV / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True, timeout=300)
        subprocess.run(
            [str(BENCH_VENV / "bin" / "python"), "-m", "pip", "install", "-q", LITELLM_SPEC],
            check=True,
            timeout=1800,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"install failed: {exc}"
    return (exe, "installed") if exe.exists() else (None, "install finished but no litellm executable")


LITELLM_KEY = "sk-coachboard-bench-local-only"


async def one(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], anthropic: bool
) -> tuple[float, float]:
    t0 = time.perf_counter()
    first: float | None = None
    headers = {"authorization": f"Bearer {LITELLM_KEY}"} if anthropic else {}
    async with client.stream("POST", url, json=body, headers=headers) as r:
        if r.status_code != 200:
            raise RuntimeError(f"{url} answered {r.status_code}: {(await r.aread())[:300]!r}")
        async for line in r.aiter_lines():
            if first is None and line.startswith("data:"):
                if anthropic and '"text_delta"' in line:
                    first = time.perf_counter() - t0
                elif not anthropic and line[5:].strip() != "[DONE]":
                    ch = json.loads(line[5:])
                    if any((c.get("delta") or {}).get("content") for c in ch.get("choices") or []):
                        first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    if first is None:
        raise RuntimeError(f"{url}: no content in the stream")
    return first, total


async def sequential(
    targets: dict[str, tuple[str, dict[str, Any], bool]], n: int
) -> dict[str, list[tuple[float, float]]]:
    res: dict[str, list[tuple[float, float]]] = {k: [] for k in targets}
    async with httpx.AsyncClient(timeout=60) as c:
        for url, body, anth in targets.values():  # warm-up
            for _ in range(3):
                await one(c, url, body, anth)
        for _ in range(n):
            for name, (url, body, anth) in targets.items():
                res[name].append(await one(c, url, body, anth))
    return res


async def throughput(url: str, body: dict[str, Any], anth: bool, conc: int, rounds: int) -> float:
    limits = httpx.Limits(max_connections=conc * 2, max_keepalive_connections=conc * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as c:
        await asyncio.gather(*(one(c, url, body, anth) for _ in range(conc)))  # warm-up
        total = conc * rounds
        sem = asyncio.Semaphore(conc)

        async def task() -> None:
            async with sem:
                await one(c, url, body, anth)

        t0 = time.perf_counter()
        await asyncio.gather(*(task() for _ in range(total)))
        return total / (time.perf_counter() - t0)


def p50(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--skip-litellm", action="store_true")
    ap.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return 0

    tmp = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        up_port, our_port, lite_port = free_port(), free_port(), free_port()
        up = start([sys.executable, __file__, "--serve-upstream", str(up_port)], log=tmp / "upstream.log")
        procs.append(up)
        upstream = f"http://127.0.0.1:{up_port}"
        if not wait_ready(upstream + "/health", up, 60):
            print("scripted upstream did not start; see", tmp / "upstream.log")
            return 1
        cfg = tmp / "proxy.toml"
        cfg.write_text(
            f'[proxy]\nport = {our_port}\ndefault_model = "qwen3"\nping_interval_s = 5.0\n'
            f'[[proxy.models]]\nname = "qwen3"\nreplicas = ["{upstream}"]\n'
        )
        ours = start(
            [
                sys.executable,
                "-c",
                "from launcher.cli import app; app()",
                "proxy",
                "--config",
                str(cfg),
                "--log-level",
                "warning",
            ],
            env={"PYTHONPATH": str(ROOT)},
            log=tmp / "ours.log",
        )
        procs.append(ours)
        if not wait_ready(f"http://127.0.0.1:{our_port}/health", ours, 60):
            print("coach proxy did not start; see", tmp / "ours.log")
            return 1
        targets: dict[str, tuple[str, dict[str, Any], bool]] = {
            "direct": (upstream + "/v1/chat/completions", BODY_OPENAI, False),
            "ours": (f"http://127.0.0.1:{our_port}/v1/messages", BODY_ANTHROPIC, True),
        }
        litellm_note = "skipped (--skip-litellm)"
        if not args.skip_litellm:
            exe, how = ensure_litellm()
            if exe is None:
                litellm_note = f"UNAVAILABLE: {how}"
            else:
                lcfg = tmp / "litellm.yaml"
                lcfg.write_text(
                    "model_list:\n  - model_name: qwen3\n    litellm_params:\n      model: hosted_vllm/qwen3\n"
                    f"      api_base: {upstream}/v1\n      api_key: none\n"
                    "litellm_settings:\n  telemetry: false\n"
                )
                lite = start(
                    [
                        str(exe),
                        "--config",
                        str(lcfg),
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(lite_port),
                        "--num_workers",
                        "1",
                    ],
                    env={
                        "LITELLM_LOG": "ERROR",
                        "LITELLM_TELEMETRY": "False",
                        "NO_DOCS": "True",
                        "LITELLM_MASTER_KEY": LITELLM_KEY,
                    },
                    log=tmp / "litellm.log",
                )
                procs.append(lite)
                if wait_ready(f"http://127.0.0.1:{lite_port}/health/liveliness", lite, 180):
                    targets["litellm"] = (f"http://127.0.0.1:{lite_port}/v1/messages", BODY_ANTHROPIC, True)
                    litellm_note = f"litellm ({how}) on :{lite_port}"
                else:
                    tail = (tmp / "litellm.log").read_text(errors="replace")[-800:]
                    litellm_note = f"UNAVAILABLE: LiteLLM proxy did not start; log tail:\n{tail}"
        try:
            asyncio.run(one_check(targets))
        except RuntimeError as exc:
            if "litellm" in targets and str(lite_port) in str(exc):
                litellm_note = f"UNAVAILABLE: LiteLLM proxy failed a request: {exc}"
                targets.pop("litellm", None)
            else:
                raise

        print(f"latency model: {FIXED['name']} (fixed delay; an assumption, not a GPU measurement)")
        print(f"reply: {len(REPLY.strip())} chars (~{len(REPLY.strip()) // 4} tokens); peer: {litellm_note}")
        seq = asyncio.run(sequential(targets, args.requests))
        print(f"\nsequential, {args.requests} requests each (interleaved), milliseconds:")
        print(f"{'path':8} {'ttfb p50':>9} {'ttfb p90':>9} {'total p50':>10} {'total p90':>10}")
        stats: dict[str, tuple[float, float]] = {}
        for name, rows in seq.items():
            ttfb, total = [r[0] * 1000 for r in rows], [r[1] * 1000 for r in rows]
            q = statistics.quantiles
            stats[name] = (p50(ttfb), p50(total))
            print(
                f"{name:8} {p50(ttfb):9.1f} {q(ttfb, n=10)[-1]:9.1f} {p50(total):10.1f} {q(total, n=10)[-1]:10.1f}"
            )
        print(f"\nthroughput, {args.concurrency} concurrent streams x {args.rounds} rounds:")
        rps: dict[str, float] = {}
        for name, (url, body, anth) in targets.items():
            rps[name] = asyncio.run(throughput(url, body, anth, args.concurrency, args.rounds))
            print(f"{name:8} {rps[name]:8.1f} requests/s")
        added = stats["ours"][0] - stats["direct"][0]
        r_direct = stats["ours"][1] / stats["direct"][1]
        r_lite = f"{stats['ours'][1] / stats['litellm'][1]:.3f}" if "litellm" in stats else "unavailable"
        if "litellm" not in stats:
            print(f"\nLiteLLM comparison NOT measured: {litellm_note}")
        print(f"added_ttfb_ms_p50={added:.1f} ratio_vs_direct={r_direct:.3f} ratio_vs_litellm={r_lite}")
        return 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


async def one_check(targets: dict[str, tuple[str, dict[str, Any], bool]]) -> None:
    async with httpx.AsyncClient(timeout=60) as c:
        for url, body, anth in targets.values():
            await one(c, url, body, anth)


if __name__ == "__main__":
    sys.exit(main())
