"""Session mode's two-step turn, in process: ``coach_turn`` returns the first reply while the specialists
are still running, ``coach_synthesis`` returns the synthesis; the safety screen's tiers 2 and 3; unknown
turns, timeouts and failures; and the idle close that moves new turns to a new session.

The pipeline is the real :class:`launcher.claude_code._pipeline_tool.HostedPipeline` with the real supervisor,
safety screen and blackboard (SQLite); the agent runner is the test double at the runner boundary
(``tests.launcher.fakes.FakeRunner``), gated by events so the order is fixed without sleeping.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult

from blackboard import Blackboard, profile_key, session_key, turn_entry_key
from launcher.claude_code._pipeline_tool import EarlyReply, HostedPipeline, TurnSummary
from launcher.claude_code.session import build_session_server, session_identity
from launcher.pipeline._screen import SafetyScreen
from launcher.pipeline.supervisor import Supervisor
from launcher.runner._agent_runner import AgentEvents, AgentInvocation, AgentOutcome
from tests.launcher.fakes import FakeRunner, specs
from tests.launcher.payloads import payload_for

pytestmark = pytest.mark.anyio

USER = "u1"
SESSION = "s1"
MESSAGE = "I keep skipping my runs."
TIER_2 = "sometimes I wish I was dead"
TIER_3 = "I want to die tonight and I have the pills"


class GatedRunner(FakeRunner):
    """FakeRunner whose Pineal waits for ``release`` (so the synthesis cannot exist before it is set)."""

    def __init__(self, board: Blackboard) -> None:
        super().__init__(board)
        self.release = anyio.Event()

    async def run(self, invocation: AgentInvocation, events: AgentEvents) -> AgentOutcome:
        if invocation.agent == "pineal":
            await self.release.wait()
        return await super().run(invocation, events)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Blackboard]:
    b = Blackboard(tmp_path / "data")
    try:
        yield b
    finally:
        b.close()


def _pipeline(board: Blackboard, runner: FakeRunner) -> HostedPipeline:
    agents = specs(pineal={"deadline_s": 60.0})

    @contextlib.asynccontextmanager
    async def runtime(config: Any) -> AsyncIterator[Any]:
        supervisor = Supervisor(board, runner, lambda: agents, screen=SafetyScreen())
        yield SimpleNamespace(
            board=board, runner=runner, supervisor=supervisor, registry=SimpleNamespace(reload=lambda: None)
        )

    return HostedPipeline(None, runtime=runtime)


def _server(board: Blackboard, pipeline: Any, **kwargs: Any) -> Any:
    identity = session_identity({}, user=USER, session=SESSION)
    lifespan = pipeline.lifespan if isinstance(pipeline, HostedPipeline) else None
    return build_session_server(board, identity, pipeline, lifespan=lifespan, **kwargs)


def _data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


async def test_reply_comes_back_before_the_synthesis_exists_and_coach_synthesis_returns_it(
    board: Blackboard,
) -> None:
    runner = GatedRunner(board)
    server, _ = _server(board, _pipeline(board, runner))
    async with Client(server) as client:
        with anyio.fail_after(20):  # Pineal is held: only the early reply can return here
            first = await client.call_tool("coach_turn", {"message": MESSAGE})
        data = _data(first)
        assert not first.is_error and data["ok"] is True
        turn = data["turn"]
        # Pineal is still held: no synthesis and no delivery exist while the reply is already here.
        stored = board.read_turn(USER, SESSION, turn)
        assert "pineal" not in stored and "delivery" not in stored
        assert data["coach_reply"] == stored["coach"].value["reply"]
        assert data["crisis_tier"] == 0 and data["synthesis_ready"] is False and "safety" not in data
        assert data["session"] == SESSION and turn in data["next"]
        assert (
            data["message"].startswith("Coach:\n" + data["coach_reply"])
            and "coach_synthesis" in data["message"]
        )

        pending = await client.call_tool("coach_synthesis", {"turn": turn, "wait_s": 0})
        assert pending.is_error
        assert _data(pending)["error"] == "synthesis_pending" and _data(pending)["retryable"] is True
        assert "again" in _data(pending)["what_to_do"]

        runner.release.set()
        done = await client.call_tool("coach_synthesis", {"turn": turn})
        synthesis = _data(done)
    assert not done.is_error
    pineal = board.read_turn(USER, SESSION, turn)["pineal"].value["text"]
    assert synthesis["turn"] == turn and pineal in synthesis["synthesis"]
    assert (
        synthesis["synthesis_source"] == "model" and not synthesis["degraded"] and synthesis["missing"] == []
    )
    assert {name: st["status"] for name, st in synthesis["agents"].items()} == dict.fromkeys(
        ["coach", "shadow", "persona", "plasticity", "stability", "pineal"], "ok"
    )
    assert synthesis["message"].startswith("Synthesis:\n")


async def test_tier_3_returns_the_crisis_response_and_no_agent_runs(board: Blackboard) -> None:
    runner = GatedRunner(board)
    server, _ = _server(board, _pipeline(board, runner))
    async with Client(server) as client:
        data = _data(await client.call_tool("coach_turn", {"message": TIER_3}))
        assert data["crisis_tier"] == 3 and data["safety"]["tier"] == 3 and "next" not in data
        assert data["synthesis_ready"] is True, (
            "a crisis turn is finished (and recorded) when the reply returns"
        )
        assert data["coach_reply"] == SafetyScreen()(TIER_3, None).response
        assert data["message"].startswith("Crisis response:\n")
        after = _data(await client.call_tool("coach_synthesis", {"turn": data["turn"]}))
    assert runner.calls == []
    assert after["synthesis_source"] == "crisis" and after["synthesis"] == "" and after["crisis_tier"] == 3


async def test_tier_2_returns_the_support_response_first_and_the_turn_goes_on(board: Blackboard) -> None:
    runner = GatedRunner(board)
    server, _ = _server(board, _pipeline(board, runner))
    async with Client(server) as client:
        data = _data(await client.call_tool("coach_turn", {"message": TIER_2}))
        assert (
            data["crisis_tier"] == 2 and data["safety"]["tier"] == 2 and "support" in data["safety"]["note"]
        )
        assert data["coach_reply"] == SafetyScreen()(TIER_2, None).response
        assert data["message"].startswith("Support:\n")
        runner.release.set()
        after = _data(await client.call_tool("coach_synthesis", {"turn": data["turn"]}))
    assert "coach" not in {c.agent for c in runner.calls}, "coaching paused: no Coach on tier 2"
    assert after["crisis_tier"] == 2 and after["synthesis"]


async def test_unknown_turn_and_bad_turn_ids_are_clear_errors(board: Blackboard) -> None:
    server, _ = _server(board, _pipeline(board, GatedRunner(board)))
    async with Client(server) as client:
        unknown = await client.call_tool("coach_synthesis", {"turn": "t999999"})
        bad = await client.call_tool("coach_synthesis", {"turn": "../etc", "wait_s": 0})
        too_long = await client.call_tool("coach_synthesis", {"turn": "t1", "wait_s": 100000})
    assert unknown.is_error and _data(unknown)["error"] == "unknown_turn"
    assert "coach_turn" in _data(unknown)["what_to_do"]
    assert bad.is_error and _data(bad)["error"] == "invalid_arguments"
    assert too_long.is_error and _data(too_long)["error"] == "invalid_arguments"


async def test_a_finished_turn_is_read_back_from_the_blackboard_after_a_restart(board: Blackboard) -> None:
    runner = GatedRunner(board)
    runner.release.set()
    server, _ = _server(board, _pipeline(board, runner))
    async with Client(server) as client:
        data = _data(await client.call_tool("coach_turn", {"message": MESSAGE, "wait_for_synthesis": True}))
    # The old one-call behaviour: reply and synthesis together, reply first.
    assert data["message"].index(data["coach_reply"]) < data["message"].index(data["synthesis"].strip())
    restarted, _ = _server(board, _pipeline(board, GatedRunner(board)))
    async with Client(restarted) as client:
        again = _data(await client.call_tool("coach_synthesis", {"turn": data["turn"], "wait_s": 0}))
    assert again["synthesis"] == data["synthesis"] and again["synthesis_source"] == "model"


class _FailsAfterReply:
    """A pipeline that gives the first reply, then fails (e.g. the store went away mid-turn)."""

    def __init__(self, board: Blackboard) -> None:
        self.board = board

    async def __call__(
        self, user: str, session: str, message: str, *, on_reply: Any = None, on_stream: Any = None
    ) -> TurnSummary:
        turn = self.board.begin_turn(user, session)
        on_reply(EarlyReply(turn, "a reply", 0))
        raise ConnectionError("upstream went away")


async def test_a_turn_that_fails_after_the_reply_gives_a_plain_error_from_coach_synthesis(
    board: Blackboard,
) -> None:
    server, _ = _server(board, _FailsAfterReply(board))
    async with Client(server) as client:
        data = _data(await client.call_tool("coach_turn", {"message": MESSAGE}))
        failed = await client.call_tool("coach_synthesis", {"turn": data["turn"]})
    assert data["coach_reply"] == "a reply"
    assert failed.is_error and _data(failed)["error"] == "pipeline_failed"
    assert "ConnectionError" in _data(failed)["message"]


async def test_idle_session_is_closed_into_the_profile_and_the_next_turn_starts_a_new_session(
    board: Blackboard,
) -> None:
    now = [1000.0]
    runner = GatedRunner(board)
    server, turns = _server(board, _pipeline(board, runner), idle_close_s=600, clock=lambda: now[0])
    assert turns.idle is not None
    async with Client(server) as client:
        first = _data(await client.call_tool("coach_turn", {"message": MESSAGE}))
        now[0] += 601
        assert await turns.idle.close_idle() == [], "not idle while the turn runs"
        runner.release.set()
        await client.call_tool("coach_synthesis", {"turn": first["turn"]})
        now[0] += 599
        assert await turns.idle.close_idle() == []
        now[0] += 2
        assert await turns.idle.close_idle() == [(USER, SESSION)]
        closed = board.store.read(session_key(USER, SESSION))
        assert closed is not None and closed.value.get("closed_at")
        profile = board.store.read(profile_key(USER))
        assert profile is not None, "the closed session was compacted into the profile"

        second = _data(await client.call_tool("coach_turn", {"message": "This week I ran once."}))
        assert second["session"] == f"{SESSION}-2" and turns.session == f"{SESSION}-2"
        assert board.store.read(turn_entry_key(USER, f"{SESSION}-2", second["turn"], "coach")) is not None
        # The new session's agents start from the profile (their context pack carries it).
        goal = payload_for("persona")["goals"][0]["description"]
        new_calls = [c for c in runner.calls if c.session == f"{SESSION}-2"]
        assert new_calls and all(goal in c.prompt for c in new_calls)
        # A standalone subagent write goes to the new session too.
        wrote = _data(await client.call_tool("write_persona", payload_for("persona")))
        assert board.store.read(turn_entry_key(USER, f"{SESSION}-2", wrote["turn"], "persona")) is not None


async def test_closed_session_at_start_moves_to_the_next_open_one(board: Blackboard) -> None:
    from launcher.pipeline.sessions import close_session

    board.begin_turn(USER, SESSION)
    await close_session(board, USER, SESSION)
    board.begin_turn(USER, f"{SESSION}-2")
    await close_session(board, USER, f"{SESSION}-2")
    runner = GatedRunner(board)
    runner.release.set()
    server, _ = _server(board, _pipeline(board, runner))
    async with Client(server) as client:
        data = _data(await client.call_tool("coach_turn", {"message": MESSAGE}))
    assert data["session"] == f"{SESSION}-3"


class _PrestartRecorder(FakeRunner):
    def __init__(self, board: Blackboard) -> None:
        super().__init__(board)
        self.prestarted: list[tuple[str, str, str]] = []
        self.all_up = anyio.Event()

    async def prestart(self, invocation: AgentInvocation, *, evict: bool = True) -> bool:
        self.prestarted.append((invocation.user, invocation.session, invocation.agent))
        if len(self.prestarted) == 6:
            self.all_up.set()
        return True


async def test_the_sessions_agent_processes_start_with_the_server_before_any_turn(board: Blackboard) -> None:
    runner = _PrestartRecorder(board)
    pipeline = _pipeline(board, runner)
    server, turns = _server(board, pipeline)
    pipeline.prewarm_for = lambda: (turns.user, turns.open_session())  # as session.main wires it
    async with Client(server):
        with anyio.fail_after(20):
            await runner.all_up.wait()
    assert {(u, s) for u, s, _ in runner.prestarted} == {(USER, SESSION)}
    assert runner.prestarted[0][2] == "coach" and runner.calls == [], "no turn ran"
