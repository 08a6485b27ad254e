"""Hot reload: a valid edit is used from the next current(); an invalid edit keeps the old version."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from launcher.agents import AgentRegistry, AgentSpecError


def replace_atomically(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text.replace(old, new, 1), encoding="utf-8")
    os.replace(tmp, path)


@contextlib.asynccontextmanager
async def watching(reg: AgentRegistry, timeout_s: float = 20) -> AsyncIterator[None]:
    """``reg``'s watcher running and ready for the body (the whole bounded by ``timeout_s``), stopped
    after it."""
    stop, ready = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: reg.watch(stop_event=stop, ready=ready, debounce_ms=50))
        with anyio.fail_after(timeout_s):
            await ready.wait()
            yield
        stop.set()


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
    async with watching(reg):
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


def save_in_place_in_pieces(path: Path, text: str, pause_s: float) -> None:
    """Save the way many editors do: truncate the file, then write it in several writes."""
    cut = text.index("\n---", 4) + len("\n---\n") + 40  # front matter whole, the prompt cut short
    with path.open("w", encoding="utf-8") as f:
        f.flush()
        time.sleep(pause_s)
        f.write(text[:cut])
        f.flush()
        time.sleep(pause_s)
        f.write(text[cut:])


@pytest.mark.anyio
async def test_watcher_reloads_a_file_saved_in_place_in_pieces_once(agents_dir: Path) -> None:
    """An empty file and a half-written prompt are on disk for a moment each; the watcher must wait
    for the save to finish: one new version with the whole text, no "invalid" report in between."""
    seen: list[tuple[int, bool]] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append((v, err is None)))
    persona = agents_dir / "persona.md"
    edited = persona.read_text(encoding="utf-8").rstrip("\n") + "\nEDITED: one new sentence.\n"
    async with watching(reg):
        changed = reg.next_change()
        await anyio.to_thread.run_sync(save_in_place_in_pieces, persona, edited, 0.06)
        await changed.wait()
        await anyio.sleep(1.0)  # a second reload of the same save would come within this
    assert seen == [(2, True)]
    assert reg.current()["persona"].prompt.rstrip().endswith("EDITED: one new sentence.")


def test_reload_installs_nothing_when_the_files_change_while_being_read(
    agents_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import launcher.agents as agents_mod

    reg = AgentRegistry(agents_dir)
    replace_atomically(agents_dir / "coach.md", "deadline_s: 20", "deadline_s: 21")
    real_load = agents_mod.load_agents

    def load_then_edit(directory: Any) -> Any:
        specs = real_load(directory)
        replace_atomically(agents_dir / "coach.md", "deadline_s: 21", "deadline_s: 22")
        return specs

    monkeypatch.setattr(agents_mod, "load_agents", load_then_edit)
    assert reg.reload() is False and reg.version == 1  # parsed bytes are already stale
    monkeypatch.setattr(agents_mod, "load_agents", real_load)
    assert reg.reload() is True
    assert reg.current()["coach"].deadline_s == 22 and reg.version == 2


@pytest.mark.anyio
async def test_watcher_ignores_an_editors_lock_file(agents_dir: Path) -> None:
    """Opening persona.md in Emacs and typing creates ``.#persona.md``: no reload, no "invalid" report;
    the save that follows is one new version."""
    seen: list[tuple[int, bool]] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append((v, err is None)))
    async with watching(reg):
        (agents_dir / ".#persona.md").symlink_to("someone@host.1234:1700000000")
        await anyio.sleep(1.0)
        assert seen == []
        changed = reg.next_change()
        replace_atomically(agents_dir / "persona.md", "deadline_s:", "deadline_s: 31 #")
        await changed.wait()
    assert seen == [(2, True)] and reg.current()["persona"].deadline_s == 31


@pytest.mark.anyio
async def test_watcher_gives_one_version_for_a_file_deleted_then_written_again(agents_dir: Path) -> None:
    """``rm persona.md`` then ``cp`` a new one 0.6 s later (longer than the settle time): one new
    version with the new text, no "agent file is missing" report in between."""
    seen: list[tuple[int, bool]] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append((v, err is None)))
    persona = agents_dir / "persona.md"
    edited = persona.read_text(encoding="utf-8").replace("deadline_s: 60", "deadline_s: 61")
    async with watching(reg):
        changed = reg.next_change()
        persona.unlink()
        await anyio.sleep(0.6)  # the user's pause between the two commands
        persona.write_text(edited, encoding="utf-8")
        await changed.wait()
        await anyio.sleep(1.0)  # a second report of the same edit would come within this
    assert seen == [(2, True)] and reg.current()["persona"].deadline_s == 61


@pytest.mark.anyio
async def test_watcher_ignores_a_scratch_file_removed_at_once_and_still_reports_a_real_problem(
    agents_dir: Path,
) -> None:
    """A ``notes.md`` that lives 0.6 s changes nothing: no report, no new version. One that stays is
    reported (once), and removing it gives the next version."""
    seen: list[tuple[int, bool]] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append((v, err is None)))
    notes = agents_dir / "notes.md"
    async with watching(reg):
        notes.write_text("todo\n", encoding="utf-8")
        await anyio.sleep(0.6)
        notes.unlink()
        await anyio.sleep(2.0)  # past the time an invalid folder is reported
        assert seen == [] and reg.version == 1 and reg.last_error is None

        changed = reg.next_change()
        notes.write_text("todo\n", encoding="utf-8")
        await changed.wait()
        assert seen == [(1, False)] and "notes.md" in str(reg.last_error)
        changed = reg.next_change()
        notes.unlink()
        await changed.wait()
    assert seen == [(1, False), (2, True)] and reg.last_error is None


def test_reload_can_leave_invalid_files_unreported(agents_dir: Path) -> None:
    seen: list[int] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append(v))
    (agents_dir / "coach.md").unlink()
    assert reg.reload(report_invalid=False) is False and reg.last_error is None and seen == []
    assert reg.reload() is False and reg.last_error is not None and seen == [1]


@pytest.mark.anyio
async def test_watcher_started_while_the_folder_is_away_waits_for_it(agents_dir: Path) -> None:
    """The folder is renamed between start-up and the watcher's start (watchfiles cannot watch a
    missing path): the watcher reports it, keeps the last version, and follows the folder once it
    is back, instead of crashing the chat or the server."""
    seen: list[tuple[int, bool]] = []
    reg = AgentRegistry(agents_dir, on_change=lambda v, err: seen.append((v, err is None)))
    away = agents_dir.with_name("agents.away")
    os.rename(agents_dir, away)
    async with watching(reg):
        changed = reg.next_change()
        await changed.wait()
        assert seen == [(1, False)] and "does not exist" in str(reg.last_error)
        assert reg.current()["persona"].deadline_s == 60

        changed = reg.next_change()
        replace_atomically(away / "persona.md", "deadline_s: 60", "deadline_s: 61")
        os.rename(away, agents_dir)
        await changed.wait()
        assert reg.last_error is None and reg.current()["persona"].deadline_s == 61
    assert seen == [(1, False), (2, True)]


def test_a_failing_listener_does_not_stop_reloads(agents_dir: Path) -> None:
    calls: list[int] = []

    def listener(version: int, error: object) -> None:
        calls.append(version)
        raise BrokenPipeError("stdout closed")  # e.g. `coach serve | head` after head exited

    reg = AgentRegistry(agents_dir, on_change=listener)
    replace_atomically(agents_dir / "coach.md", "deadline_s: 20", "deadline_s: 21")
    assert reg.reload() is True
    replace_atomically(agents_dir / "coach.md", "deadline_s: 21", "deadline_s: 22")
    assert reg.reload() is True
    assert calls == [2, 3] and reg.current()["coach"].deadline_s == 22
