"""Session lifecycle through the CLI: a closed session takes no new turns (``coach run`` and ``coach
chat`` refuse before any agent runs), closing a session that never existed is an error that creates
nothing, ``coach chat`` closes an idle session (fake clock), prints model text verbatim, and reports an
unusable data dir plainly. The runtime is replaced at its boundary by the real supervisor over a fake
runner (the e2e suite runs the real stack); each case failed before its fix."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from blackboard import Blackboard, SessionClosedError, session_key
from launcher.cli import app
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import FakeRunner, fake_screen, specs

MARKUP = "Try [bold]this[/bold], [/x] and [link=http://a]x[/link] \\[ok] [red]"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A coach.toml, and a fake runtime recording every agent invocation."""
    data = tmp_path / "data"
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\n[agents]\nwatch = false\n')
    state = SimpleNamespace(cfg=cfg, data=data, calls=[], behaviours={}, pineal_text="A small step.")

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        from launcher.pipeline._data_dir import open_board

        board = open_board(config.data.dir)
        runner = FakeRunner(
            board, behaviours=state.behaviours, calls=state.calls, pineal_text=state.pineal_text
        )
        s = specs()
        sup = Supervisor(board, runner, lambda: s, screen=fake_screen)
        try:
            yield SimpleNamespace(
                board=board,
                runner=runner,
                supervisor=sup,
                current_agents=lambda: s,
                registry=SimpleNamespace(version=1, directory="agents"),
            )
        finally:
            board.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    return state


def _cli(*args: str, cfg: Path, **kw: Any) -> Any:
    return CliRunner().invoke(app, [*args, "--config", str(cfg)], env={"COLUMNS": "400"}, **kw)


def _session(data: Path, user: str, session: str) -> Any:
    board = Blackboard(data)
    try:
        return board.store.read(session_key(user, session))
    finally:
        board.close()


def test_run_on_a_closed_session_is_refused_before_any_agent(env: SimpleNamespace) -> None:
    assert _cli("run", "hi", "-u", "bob", "-s", "s1", cfg=env.cfg).exit_code == 0
    closed = _cli("session", "close", "-u", "bob", "-s", "s1", "--json", cfg=env.cfg)
    assert closed.exit_code == 0, closed.output
    env.calls.clear()
    before = _session(env.data, "bob", "s1")
    res = _cli("run", "again", "-u", "bob", "-s", "s1", cfg=env.cfg)
    assert res.exit_code == 2, res.output
    assert "session s1 of bob was closed at" in res.output and "--session NEW" in res.output
    assert env.calls == []  # no agent ran
    after = _session(env.data, "bob", "s1")
    assert after.version == before.version and after.value["turn_count"] == 1  # no turn t000002


def test_begin_turn_refuses_a_closed_session(tmp_path: Path) -> None:
    board = Blackboard(tmp_path)
    try:
        board.begin_turn("u", "s")
        entry = board.store.read(session_key("u", "s"))
        board.store.write(
            entry.key, {**entry.value, "closed_at": 1.0}, expected_version=entry.version, author="t"
        )
        with pytest.raises(SessionClosedError) as info:
            board.begin_turn("u", "s")
        assert info.value.code == "session_closed" and "1970-01-01 00:00:01 UTC" in str(info.value)
        board.check_session_open("u", "other")  # a new session is open
    finally:
        board.close()


def test_closing_a_session_that_never_existed_creates_nothing(env: SimpleNamespace) -> None:
    res = _cli("session", "close", "-u", "bob", "-s", "nope", cfg=env.cfg)
    assert res.exit_code == 2, res.output
    assert "no such session" in res.output
    assert _session(env.data, "bob", "nope") is None


def test_chat_on_a_closed_session_is_refused(env: SimpleNamespace) -> None:
    assert _cli("run", "hi", "-u", "bob", "-s", "s1", cfg=env.cfg).exit_code == 0
    assert _cli("session", "close", "-u", "bob", "-s", "s1", cfg=env.cfg).exit_code == 0
    env.calls.clear()
    res = _cli("chat", "-u", "bob", "-s", "s1", cfg=env.cfg, input="hello\n")
    assert res.exit_code == 2, res.output
    assert "session s1 of bob was closed at" in res.output and "--session NEW" in res.output
    assert env.calls == []


def test_chat_prints_model_text_verbatim(env: SimpleNamespace) -> None:
    env.behaviours["coach"] = lambda inv, n: {"reply": MARKUP}
    env.pineal_text = MARKUP
    res = _cli("chat", "-u", "bob", "-s", "s1", cfg=env.cfg, input="hello\n/quit\n")
    assert res.exit_code == 0, (res.output, res.exception)
    assert f"Coach: {MARKUP}" in res.output
    assert f"Synthesis: {MARKUP}" in res.output
    assert "session s1 closed (1 turn)" in res.output


def test_chat_without_turns_closes_nothing(env: SimpleNamespace) -> None:
    res = _cli("chat", "-u", "bob", "-s", "s1", cfg=env.cfg, input="/quit\n")
    assert res.exit_code == 0, (res.output, res.exception)
    assert "nothing to close" in res.output and _session(env.data, "bob", "s1") is None


def test_chat_closes_an_idle_session(env: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a turn, no input for longer than [agents] idle_close_s (a fake clock jumps past it): the
    session is compacted into the profile and the chat ends."""
    env.cfg.write_text(env.cfg.read_text() + "idle_close_s = 0.05\n")
    now = [0.0]
    turn_done = [False]

    class Reader:
        """One line, then no input ever (the user walked away); the clock jumps once the turn is done."""

        def __init__(self) -> None:
            self.lines = ["hello"]

        async def read(self) -> str | None:
            if self.lines:
                return self.lines.pop()
            turn_done[0] = True
            now[0] += 3600.0
            await anyio.sleep_forever()
            return None  # pragma: no cover

    monkeypatch.setattr("launcher.cli.chat._READER", Reader)
    monkeypatch.setattr("launcher.cli.chat._CLOCK", lambda: now[0])
    res = _cli("chat", "-u", "bob", "-s", "s1", cfg=env.cfg)
    assert res.exit_code == 0, (res.output, res.exception)
    assert turn_done[0] and "was idle for 0.05s and was closed (1 turn): merged persona, shadow" in res.output
    assert _session(env.data, "bob", "s1").value["closed_at"]


@pytest.mark.parametrize("command", [["chat"], ["run", "hi"]])
def test_unusable_data_dir_in_the_runtime_is_a_plain_error(tmp_path: Path, command: list[str]) -> None:
    """coach_runtime itself (chat, replay, demo, MCP session mode) reports a data dir that is a file and
    a corrupt store plainly (exit 2, no traceback), and leaves the file alone."""
    a_file = tmp_path / "afile"
    a_file.write_text("keep me")
    res = CliRunner().invoke(
        app, [*command, "-u", "u1", "-s", "s1"], env={"COACH_DATA_DIR": str(a_file), "COLUMNS": "400"}
    )
    assert res.exit_code == 2, (res.output, res.exception)
    assert isinstance(res.exception, SystemExit)
    assert f"the data directory {a_file} cannot be used" in res.output
    assert a_file.read_text() == "keep me"


def test_corrupt_store_in_the_runtime_is_a_plain_error(tmp_path: Path) -> None:
    import launcher.pipeline._runtime as rt_mod
    from launcher.config import CoachConfig
    from launcher.errors import DataDirError

    data = tmp_path / "data"
    data.mkdir()
    junk = b"not a database" * 400
    (data / "blackboard.sqlite3").write_bytes(junk)
    config = CoachConfig.model_validate({"data": {"dir": str(data)}})

    async def main() -> None:
        async with rt_mod.coach_runtime(config, proxy_url="http://127.0.0.1:1", mcp_url="http://127.0.0.1:1"):
            raise AssertionError("must not start")  # pragma: no cover

    with pytest.raises(DataDirError) as info:
        anyio.run(main)
    assert info.value.code == "store_unavailable" and "move it aside" in str(info.value)
    assert (data / "blackboard.sqlite3").read_bytes() == junk
    assert json.dumps(info.value.code)


def test_serve_closes_sessions_without_mcp_requests_for_the_idle_timeout(tmp_path: Path) -> None:
    """coach serve's MCP scope source marks each request's session active; a session without a request
    for [agents] idle_close_s (fake clock) is compacted and closed; an active one stays open."""
    from launcher.cli.serve import idle_closing_scopes
    from mcp_server import HeaderScope

    now = [0.0]
    board = Blackboard(tmp_path)
    try:
        for s in ("quiet", "busy"):
            board.begin_turn("bob", s)
        scopes, idle = idle_closing_scopes(board, HeaderScope(), 60.0, clock=lambda: now[0])
        assert idle is not None
        for s in ("quiet", "busy"):
            scopes.scope_for({"x-coach-user": "bob", "x-coach-session": s})
        now[0] = 50.0
        scopes.scope_for({"x-coach-user": "bob", "x-coach-session": "busy"})
        now[0] = 61.0
        assert anyio.run(idle.close_idle) == [("bob", "quiet")]
        assert board.store.read(session_key("bob", "quiet")).value.get("closed_at")
        assert not board.store.read(session_key("bob", "busy")).value.get("closed_at")
        assert idle_closing_scopes(board, HeaderScope(), 0)[1] is None  # 0: never
    finally:
        board.close()


def test_agents_check_on_a_file_says_it_is_not_a_directory(tmp_path: Path) -> None:
    a_file = tmp_path / "agents.md"
    a_file.write_text("x")
    res = CliRunner().invoke(app, ["agents", "check", "--dir", str(a_file)], env={"COLUMNS": "400"})
    assert res.exit_code == 1
    assert f"the agents directory {a_file} is not a directory (it is a file)" in res.output
    res = CliRunner().invoke(
        app, ["agents", "check", "--dir", str(tmp_path / "nope")], env={"COLUMNS": "400"}
    )
    assert "nope does not exist" in res.output


def test_session_closed_while_the_runtime_starts_is_a_plain_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real runtime runs the turn inside task groups, which wrap what it raises in an exception
    group: the refusal reached the user as a traceback (exit 1). Here the session is closed by "another
    process" after the early check, inside a task group, so begin_turn's refusal must come through."""
    from launcher.pipeline.sessions import close_session

    data = tmp_path / "data"
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\n')
    board = Blackboard(data)
    board.begin_turn("bob", "s1")
    board.close()
    calls: list[Any] = []

    @contextlib.asynccontextmanager
    async def grouped_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        b = Blackboard(config.data.dir)
        await close_session(b, "bob", "s1")
        runner = FakeRunner(b, calls=calls)
        try:
            async with anyio.create_task_group():
                yield SimpleNamespace(supervisor=Supervisor(b, runner, lambda: specs(), screen=fake_screen))
        finally:
            b.close()

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", grouped_runtime)
    res = _cli("run", "again", "-u", "bob", "-s", "s1", cfg=cfg)
    assert res.exit_code == 2, (res.output, res.exception)
    assert isinstance(res.exception, SystemExit)
    assert "session s1 of bob was closed at" in res.output and calls == []
