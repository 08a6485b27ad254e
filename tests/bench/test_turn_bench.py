"""Smoke tests of ``bench/turn.py`` (the benchmark itself is not part of the suite): its arguments, its
payloads, the exact format of its last line, and one tiny real run at a high time_scale."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
LAST_LINE = re.compile(
    r"^model=(\S+) coach_first_token_s=(\d+\.\d\d) synthesis_s=(\d+\.\d\d) overhead_s=(-?\d+\.\d\d) "
    r"speedup_vs_sequential=(\d+\.\d\d|n/a) warm_vs_cold=(\d+\.\d\d) seed_way_synthesis_s=(\d+\.\d\d|n/a) "
    r"first_words_s=(\d+\.\d\d|n/a)$"
)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_turn", REPO / "bench" / "turn.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_turn"] = mod  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


def test_defaults_run_both_models_with_the_report_model_last(bench: ModuleType) -> None:
    args = bench.parse_args([])
    assert args.models == ["qwen3-235b-a22b@a40", "qwen3-30b-a3b@2x4090"]
    assert args.time_scale == 1.0 and not args.skip_seed and not args.skip_sequential


@pytest.mark.parametrize("argv", [["--time-scale", "0"], ["--models", "gpt-9@moon"], ["--time-scale", "x"]])
def test_bad_arguments_exit_2(bench: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(argv)
    assert exc.value.code == 2


def test_payloads_are_schema_valid_and_of_realistic_length(bench: ModuleType) -> None:
    bench.check_payloads()
    toks = bench.output_tokens()
    assert set(toks) == {"coach", "shadow", "persona", "plasticity", "stability", "pineal"}
    assert all(80 <= n <= 600 for n in toks.values()), toks


def test_summary_line_format(bench: ModuleType) -> None:
    run = bench.ModelRun("qwen3-30b-a3b@2x4090")
    run.turns["cold"] = bench.TurnFigures(
        "ours cold", coach_first_token_s=1.234, synthesis_s=9.5, overhead_s=2.0, coach_first_words_s=0.876
    )
    run.turns["warm"] = bench.TurnFigures("ours warm", synthesis_s=5.0)
    line = bench.summary_line(run)
    m = LAST_LINE.match(line)
    assert m, line
    assert m.group(7) == "n/a" and m.group(5) == "n/a" and m.group(6) == "1.90" and m.group(8) == "0.88"


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_tiny_real_run_prints_the_last_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "turn.py"),
            "--models",
            "qwen3-30b-a3b@2x4090",
            "--time-scale",
            "0.02",
            "--skip-seed",
            "--json",
            str(tmp_path / "b.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    m = LAST_LINE.match(last)
    assert m and m.group(1) == "qwen3-30b-a3b@2x4090", out.stdout[-3000:]
    assert m.group(7) == "n/a" and m.group(5) != "n/a" and m.group(8) != "n/a"
    assert "warning:" not in out.stdout, out.stdout[-3000:]  # no degraded turn
