"""Turns of warm agent processes behind an external proxy (``coach serve``), end to end.

Real processes: ``coach serve`` (its proxy, with a usage log), the supervisor's runtime in this process
(``coach_runtime`` with ``proxy_url`` = that proxy, so its MCP server is in-process and its agents run in
warm ``claude`` processes), SQLite, the scripted upstream. A warm process keeps the
``ANTHROPIC_CUSTOM_HEADERS`` it started with, which name no turn; the in-process proxy resolves the turn
from the supervisor's turn directory, an external one could not: every model call of a warm agent was
metered with ``"turn": ""`` and reached the upstream without ``x-coach-turn``. The supervisor now
mirrors its turn directory to the external proxy (``POST /coach/turns``, authenticated with a token
derived from the data directory's secret), so each call is metered under its own turn.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from launcher.config import load_config
from launcher.pipeline._runtime import coach_runtime
from tests.e2e.harness import REPO, agent_script
from tests.launcher.fakes import OUTPUT_TOOLS
from testsupport.child_output import OutputLines, interrupt, start_coach_serve
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.anyio]


def _agents_with_long_deadlines(dst: Path) -> None:
    """The shipped agent files, deadlines raised to 60 s (six cold processes share 2 cores here)."""
    shutil.copytree(REPO / "agents", dst)
    for f in dst.glob("*.md"):
        f.write_text(
            "".join(
                "deadline_s: 60\n" if ln.startswith("deadline_s:") else ln
                for ln in f.read_text(encoding="utf-8").splitlines(keepends=True)
            ),
            encoding="utf-8",
        )


def _forced(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice") or {}
    return choice.get("type") == "tool"


@dataclass
class Served:
    proxy_url: str
    config: Path
    usage: Path
    upstream: ScriptedUpstream


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """``coach serve`` (a real subprocess, its proxy writing a usage log) over the scripted upstream."""
    up = ScriptedUpstream({a: agent_script(a) for a in OUTPUT_TOOLS}, latency="instant", time_scale=0.02)
    up.start()
    agents, data, usage = tmp_path / "agents", tmp_path / "data", tmp_path / "usage.jsonl"
    _agents_with_long_deadlines(agents)
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{data}"\n[agents]\ndir = "{agents}"\n[upstream]\nurl = "{up.base_url}"\n'
        f'kind = "anthropic"\n[proxy]\nusage_log = "{usage}"\n'
    )
    proc = start_coach_serve(cfg, cwd=REPO)
    try:
        proxy_url = OutputLines(proc).expect(r"coach serve: ready: proxy (\S+)").group(1)
        yield Served(proxy_url, cfg, usage, up)
    finally:
        up.stop()
        interrupt(proc)


async def test_warm_agents_behind_coach_serve_are_metered_under_their_turn(served: Served) -> None:
    config = load_config(served.config, env={})
    async with coach_runtime(config, proxy_url=served.proxy_url) as rt:
        assert rt.urls.in_process_mcp  # so the agents run in warm processes
        first = await rt.supervisor.run_turn("u-ext", "s1", "I keep skipping my runs.")
        second = await rt.supervisor.run_turn("u-ext", "s1", "I ran once this week.")
    assert not first.degraded and not second.degraded
    assert all(st.warm for st in second.agents.values()), "the second turn ran in warm processes"
    by_turn: dict[str, set[str]] = {}
    for x in (json.loads(line) for line in served.usage.read_text().splitlines()):
        assert x["session"] == "s1" and x["user"] == "u-ext"
        if x["status"] in ("ok", "local"):
            by_turn.setdefault(x["turn"], set()).add(x["agent"])
    # every agent's model calls of each turn are metered under that turn (none without a turn)
    assert by_turn == {first.turn_id: set(OUTPUT_TOOLS), second.turn_id: set(OUTPUT_TOOLS)}
    calls = [r for r in served.upstream.model_calls() if r.agent == "persona"]
    assert {r.headers.get("x-coach-turn") for r in calls} == {first.turn_id, second.turn_id}
    # the per-agent policy (forced output tool on the first model call of each turn) holds in both turns
    assert [_forced(r.body) for r in calls] == [True, True]
