"""``[agents] reuse_processes`` and the pieces of ``launcher.runner._reset`` without a real process: where
reuse is turned on, what counts as a confirmed reset, and that a bound pool session cannot be released."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from claude_agent_sdk.types import ConversationResetMessage, ResultMessage

from launcher.config import CoachConfig
from launcher.pipeline._runtime import _reuse_settings
from launcher.runner._process_pool import Bindings
from launcher.runner._protocol import RunnerConfig
from launcher.runner._reset import reset_conversation


def _config(reuse: bool) -> Any:
    c = CoachConfig()
    return c.model_copy(update={"agents": c.agents.model_copy(update={"reuse_processes": reuse})})


def test_reuse_is_off_by_default_and_on_only_with_the_in_process_proxy_and_mcp_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp")
    assert CoachConfig().agents.reuse_processes is False
    assert _reuse_settings(_config(False), base, in_process=True) == base
    cfg = _reuse_settings(_config(True), base, in_process=True)
    assert cfg.reuse_processes and cfg.pool_size == 6
    # A larger pool (coach worker's, sized by warm_process_limit) is kept.
    bigger = RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp", pool_size=12)
    assert _reuse_settings(_config(True), bigger, in_process=True).pool_size == 12
    with caplog.at_level(logging.WARNING):
        assert _reuse_settings(_config(True), base, in_process=False) == base
    assert "reuse_processes is off" in caplog.text


def _result(session: str, *, turns: int = 0, error: bool = False) -> ResultMessage:
    return ResultMessage(
        subtype="success",
        duration_ms=1,
        duration_api_ms=0,
        is_error=error,
        num_turns=turns,
        session_id=session,
    )


class _Client:
    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages
        self.sent: list[str] = []

    async def query(self, text: str) -> None:
        self.sent.append(text)

    async def receive_response(self) -> Any:
        for m in self.messages:
            yield m


_RESET = ConversationResetMessage(new_conversation_id="c2", uuid="c2", session_id="old")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("messages", "confirmed"),
    [
        ([_RESET, _result("new")], True),
        ([_result("new")], False),  # no reset message
        ([_RESET, _result("old")], False),  # the same conversation
        ([_RESET, _result("new", turns=1)], False),  # a model turn: the command was taken as a prompt
        ([_RESET, _result("new", error=True)], False),
        ([_RESET], False),  # no result
    ],
)
async def test_a_reset_is_confirmed_only_by_a_reset_message_and_a_zero_turn_result_in_a_new_session(
    messages: list[Any], confirmed: bool
) -> None:
    client = _Client(messages)
    assert await reset_conversation(client) is confirmed
    assert client.sent == ["/clear"]


def test_a_bound_pool_session_cannot_be_released_only_a_revoked_one() -> None:
    b = Bindings()
    b.bind("p1", "alice", "s1")
    with pytest.raises(ValueError):
        b.release("p1")
    b.revoke("p1")
    with pytest.raises(ValueError):
        b.bind("p1", "bob", "s2")  # revoked is not released
    b.release("p1")
    b.bind("p1", "bob", "s2")
    assert b.resolve("_pool", "p1") == ("bob", "s2")


@pytest.mark.anyio
async def test_a_process_past_max_resets_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    from launcher.runner import _reset
    from launcher.runner._agent_runner import ClaudeAgentRunner, _Warm

    cfg = RunnerConfig(proxy_url="http://p", mcp_url="http://m/mcp", pool_size=6, reuse_processes=True)
    runner = ClaudeAgentRunner(cfg, bindings=Bindings())
    monkeypatch.setattr("launcher.runner._process_pool.memory_room", lambda *a: 100)
    client = _Client([_RESET, _result("new")])
    runner.pool._bindings.bind("p1", "alice", "s1")  # type: ignore[union-attr]
    runner.pool._bound[id(client)] = "p1"
    entry = _Warm(client=client, fingerprint="f", pool_session="p1")
    monkeypatch.setitem(_reset._RESETS, client, _reset.MAX_RESETS)
    assert not await _reset.recycle(runner, entry)
    assert client.sent == [] and runner.pool.idle() == 0
    assert runner.pool._bindings.resolve("_pool", "p1") == ("_pool", "p1")  # type: ignore[union-attr]
    _reset._RESETS[client] = _reset.MAX_RESETS - 1
    runner.pool._bindings.release("p1")  # type: ignore[union-attr]
    runner.pool._bindings.bind("p1", "bob", "s2")  # type: ignore[union-attr]
    runner.pool._bound[id(client)] = "p1"
    assert await _reset.recycle(runner, entry)
    assert (
        client.sent == ["/clear"]
        and runner.pool.idle() == 1
        and _reset.resets_of(client) == _reset.MAX_RESETS
    )


def test_sessions_that_fit_follow_the_measured_rss_and_keep_a_reserve() -> None:
    from launcher.scaleout.capacity import RESERVE_MIB, sessions_that_fit

    assert sessions_that_fit(24 * 1024, reuse=False) == 16  # (24,576 - 1,024) // 1,403
    assert sessions_that_fit(24 * 1024, reuse=True) == 14  # (24,576 - 1,024) // 1,623
    assert sessions_that_fit(RESERVE_MIB, reuse=False) == 0 and sessions_that_fit(0, reuse=True) == 0


def test_coach_worker_warns_when_its_sessions_do_not_fit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from launcher.cli import worker
    from launcher.scaleout import capacity

    monkeypatch.setattr(capacity, "mem_available_mib", lambda: 4096)
    worker._warn_if_too_many(2, reuse=False)
    assert capsys.readouterr().err == ""
    worker._warn_if_too_many(3, reuse=True)
    err = capsys.readouterr().err
    assert "--sessions 3 may not fit" in err and "about 1 warm sessions" in err


def test_chat_with_a_running_proxy_says_on_stderr_that_reuse_is_off_and_what_to_do(tmp_path: Any) -> None:
    """The runtime's warning goes to chat.log in a chat, unseen: the chat says it on its own stderr."""
    from typer.testing import CliRunner

    from launcher.cli import app

    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\nreuse_processes = true\n')
    args = ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg), "--proxy-url", "http://127.0.0.1:1"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "400"}, input="")
    out = " ".join(res.output.split())
    assert "warning: [agents] reuse_processes is off in this chat" in out
    assert "drop --proxy-url/--mcp-url to reuse processes, or set reuse_processes = false" in out
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n')
    res = CliRunner().invoke(app, args, env={"COLUMNS": "400"}, input="")
    assert "reuse_processes" not in res.output, "no warning when reuse is not asked for"
