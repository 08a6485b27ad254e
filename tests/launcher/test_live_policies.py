"""Agent-file hot reload reaches the in-process proxy's per-agent policies (not only the prompts):
``coach_runtime`` with its real in-process proxy and MCP server, a real agents folder edited on disk, and
the scripted upstream on a loopback port recording what the proxy sent."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from launcher.config import CoachConfig, DataConfig, UpstreamConfig
from launcher.pipeline._runtime import coach_runtime
from testsupport.script import Text
from testsupport.upstream import ScriptedUpstream

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]
HEADERS = {"x-coach-agent": "coach", "x-coach-user": "u1", "x-coach-session": "s1"}


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    up = ScriptedUpstream({"coach": lambda r: Text("hi")}, latency="instant", default_text="hi")
    up.start()
    yield up
    up.stop()


def _set_max_output_tokens(path: Path, value: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text(
        "".join(
            f"max_output_tokens: {value}\n" if ln.startswith("max_output_tokens:") else ln for ln in lines
        ),
        encoding="utf-8",
    )


async def _ask(c: httpx.AsyncClient) -> None:
    r = await c.post(
        "/v1/messages",
        headers=HEADERS,
        json={"model": "haiku", "max_tokens": 32000, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert r.status_code == 200, r.text


async def test_a_reloaded_max_output_tokens_caps_the_next_request(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    agents = tmp_path / "agents"
    shutil.copytree(REPO / "agents", agents)
    config = CoachConfig(
        data=DataConfig(dir=tmp_path / "data"), upstream=UpstreamConfig(url=upstream.base_url)
    )
    async with coach_runtime(config, agents_dir=agents) as rt:
        original = rt.registry.current()["coach"].max_output_tokens
        async with httpx.AsyncClient(base_url=rt.urls.proxy_url, timeout=30) as c:
            await _ask(c)
            _set_max_output_tokens(agents / "coach.md", 123)
            assert await anyio.to_thread.run_sync(rt.registry.reload)
            await _ask(c)  # reloaded, but no turn has asked for the agents yet: the proxy is not told
            specs = rt.supervisor._agents()  # what every turn does first
            assert specs["coach"].max_output_tokens == 123
            await _ask(c)
            _set_max_output_tokens(agents / "coach.md", 77)
            assert await anyio.to_thread.run_sync(rt.registry.reload)
            rt.current_agents()  # coach chat's reload reporter calls this at once
            await _ask(c)
    sent = [r.body["max_tokens"] for r in upstream.requests if r.path == "/v1/chat/completions"]
    assert sent == [original, original, 123, 77]


async def test_relative_data_dir_gives_agents_absolute_paths(
    tmp_path: Path, upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agents run with cwd = the data dir: a relative ``[data] dir`` passed on as is made Claude Code
    create ``<data>/.coachboard/data/claude-home`` inside the data dir (seen in a ``make demo`` run)."""
    monkeypatch.chdir(tmp_path)
    config = CoachConfig(
        data=DataConfig(dir=Path("rel") / "data"), upstream=UpstreamConfig(url=upstream.base_url)
    )
    async with coach_runtime(config, agents_dir=REPO / "agents") as rt:
        cfg = rt.runner.config
    data = (tmp_path / "rel" / "data").resolve()
    assert cfg.cwd == str(data)
    assert cfg.extra_env["CLAUDE_CONFIG_DIR"] == str(data / "claude-home" / ".claude")
    assert cfg.extra_env["XDG_CACHE_HOME"] == str(data / "claude-home" / ".cache")
    assert cfg.keep_claude_transcripts is False
