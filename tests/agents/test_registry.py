"""Hot reload: a valid edit is used from the next current(); an invalid edit keeps the old version."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from launcher.agents import AgentRegistry, AgentSpecError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    d = tmp_path / "agents"
    shutil.copytree(REPO / "agents", d)
    return d


def replace_atomically(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text.replace(old, new, 1), encoding="utf-8")
    os.replace(tmp, path)


def test_invalid_at_start_raises(agents_dir: Path) -> None:
    (agents_dir / "coach.md").unlink()
    with pytest.raises(AgentSpecError):
        AgentRegistry(agents_dir)


def test_reload_without_watcher(agents_dir: Path) -> None:
    seen: list[tuple[int, bool]] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append((v, err is None)))
    assert reg.reload() is False  # nothing changed
    replace_atomically(agents_dir / "coach.md", "deadline_s: 20", "deadline_s: 21")
    assert reg.reload() is True
    assert reg.current()["coach"].deadline_s == 21 and reg.version == 2
    replace_atomically(agents_dir / "coach.md", "deadline_s: 21", "deadline_s: soon")
    assert reg.reload() is False
    assert reg.current()["coach"].deadline_s == 21 and reg.version == 2
    assert reg.last_error is not None and "coach.md" in str(reg.last_error)
    assert seen == [(2, True), (2, False)]


@pytest.mark.anyio
async def test_watcher_applies_valid_edit_and_keeps_old_version_on_invalid_edit(agents_dir: Path) -> None:
    reg = AgentRegistry(agents_dir)
    coach = agents_dir / "coach.md"
    stop, ready = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: reg.watch(stop_event=stop, ready=ready, debounce_ms=50))
        with anyio.fail_after(20):
            await ready.wait()

            changed = reg.next_change()
            replace_atomically(coach, "max_output_tokens: 400", "max_output_tokens: 333")
            await changed.wait()
            assert reg.current()["coach"].max_output_tokens == 333
            assert reg.last_error is None and reg.version == 2

            changed = reg.next_change()
            replace_atomically(coach, "model_alias: fast", "model_alias: [fast")
            await changed.wait()
            assert reg.last_error is not None
            assert str(coach) in str(reg.last_error)
            assert reg.current()["coach"].max_output_tokens == 333  # previous version still in use
            assert reg.current()["coach"].model_alias == "fast"

            changed = reg.next_change()
            replace_atomically(coach, "model_alias: [fast", "model_alias: fast")
            await changed.wait()
            assert reg.last_error is None
        stop.set()
