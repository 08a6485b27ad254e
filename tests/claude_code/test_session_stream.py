"""The session mode's streamed reply: ``coach_turn`` sends the Coach's words as MCP progress
notifications of the call while the reply is written (launcher.claude_code._reply_progress).

A real MCP client (``mcp.Client``) calls the real session server, both in process (mcp's direct
dispatcher) and over JSON-RPC messages (``InMemoryTransport``: the framing of stdio, progress tokens
included), over the real
:class:`HostedPipeline`, supervisor, safety screen and blackboard; the Coach is the fake runner at the
runner boundary, feeding its ``write_coach`` arguments in small chunks through the proxy's real tool tap
(what the in-process proxy does as the upstream streams), as in tests/launcher/test_reply_stream.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp_types import CallToolResult

from blackboard import Blackboard, turn_entry_key
from launcher.claude_code._pipeline_tool import HostedPipeline
from launcher.claude_code._reply_progress import RETRACTED
from launcher.claude_code.session import build_session_server, session_identity
from launcher.pipeline._fallbacks import FALLBACK_COACH_REPLY
from launcher.pipeline._reply_stream import taps_for
from launcher.pipeline._screen import SafetyScreen
from launcher.pipeline.supervisor import Supervisor
from launcher.safety import crisis_response
from proxy._tool_tap import ToolTap
from tests.launcher.fakes import FakeRunner, specs
from tests.launcher.payloads import stability_blocking

pytestmark = pytest.mark.anyio

USER = "u1"
SESSION = "s1"
NO_RISK = {"tier": 0, "family": "none", "quote": ""}
REPLY = (
    "It sounds like running really matters to you, and it is frustrating when the plan slips. "
    "You have already noticed the pattern. Which day would give one run the best odds?"
)
RAISE_MESSAGE = "I sorted out the last few things today, it's all arranged for Friday."
RAISE_QUOTE = "it's all arranged for Friday"
TIER_3 = "I want to die tonight and I have the pills"


class StreamingRunner(FakeRunner):
    """FakeRunner whose Coach streams its payload (JSON, 7 characters at a time) through the proxy's
    tool tap into the supervisor's reply taps before writing it; ``coach`` is the next payload."""

    def __init__(self, board: Blackboard, coach: dict[str, Any]) -> None:
        super().__init__(board, behaviours={"coach": lambda inv, n: self.coach})
        self.coach = coach
        self.supervisor: Supervisor | None = None

    async def run(self, invocation: Any, events: Any) -> Any:
        if invocation.agent == "coach":
            assert self.supervisor is not None
            who = SimpleNamespace(
                agent="coach", user=invocation.user, session=invocation.session, turn=invocation.turn
            )
            tap = ToolTap(
                taps_for(self.supervisor.directory).observe,
                who,
                f"msg_{invocation.turn}",
                "write_coach",
                ("risk", "reply"),
                lambda n: n,
            )
            raw = json.dumps(self.coach)
            for i in range(0, len(raw), 7):
                tap.feed(0, "write_coach", raw[i : i + 7])
                await anyio.lowlevel.checkpoint()
        return await super().run(invocation, events)


@pytest.fixture(params=["direct", "jsonrpc"])
def connect(request: pytest.FixtureRequest) -> Any:
    """``connect(server) -> Client``: in process, or over JSON-RPC messages."""
    if request.param == "direct":
        return Client
    return lambda server, **kw: Client(InMemoryTransport(server), **kw)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Blackboard]:
    b = Blackboard(tmp_path / "data")
    try:
        yield b
    finally:
        b.close()


def _server(board: Blackboard, runner: StreamingRunner) -> Any:
    agents = specs()

    @contextlib.asynccontextmanager
    async def runtime(config: Any) -> AsyncIterator[Any]:
        runner.supervisor = Supervisor(board, runner, lambda: agents, screen=SafetyScreen())
        yield SimpleNamespace(
            board=board,
            runner=runner,
            supervisor=runner.supervisor,
            registry=SimpleNamespace(reload=lambda: None),
        )

    pipeline = HostedPipeline(None, runtime=runtime)
    identity = session_identity({}, user=USER, session=SESSION)
    server, _ = build_session_server(board, identity, pipeline, lifespan=pipeline.lifespan)
    return server


class Progress:
    """The client's progress callback: every notification's (progress, message)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, message))

    @property
    def text(self) -> str:
        return "".join(m or "" for _, m in self.seen)


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error and result.structured_content is not None
    return dict(result.structured_content)


async def _turn(client: Client, message: str, progress: Progress | None) -> dict[str, Any]:
    with anyio.fail_after(30):
        result = await client.call_tool("coach_turn", {"message": message}, progress_callback=progress)
    return _data(result)


async def test_the_progress_text_is_the_start_of_the_stored_reply(board: Blackboard, connect: Any) -> None:
    runner = StreamingRunner(board, {"risk": NO_RISK, "reply": REPLY})
    progress = Progress()
    async with connect(_server(board, runner)) as client:
        data = await _turn(client, "I keep skipping my runs.", progress)
    stored = board.store.read(turn_entry_key(USER, SESSION, data["turn"], "coach"))
    assert stored is not None and stored.value["reply"] == REPLY == data["coach_reply"]
    assert len(progress.seen) > 1, "the reply came in one piece, not as it was written"
    assert REPLY.startswith(progress.text) and len(progress.text) > len(REPLY) // 2
    assert [p for p, _ in progress.seen] == sorted({p for p, _ in progress.seen}), "progress must rise"


async def test_a_coach_raise_to_tier_3_sends_no_reply_text(board: Blackboard, connect: Any) -> None:
    coach_words = "It sounds like Friday matters to you. What are you hoping for?"
    runner = StreamingRunner(
        board, {"risk": {"tier": 3, "family": "preparatory", "quote": RAISE_QUOTE}, "reply": coach_words}
    )
    runner.behaviours.update(
        {n: (lambda inv, k: "hang") for n in ("shadow", "persona", "plasticity", "stability")}
    )
    progress = Progress()
    async with connect(_server(board, runner)) as client:
        data = await _turn(client, RAISE_MESSAGE, progress)
    assert data["crisis_tier"] == 3 and data["coach_reply"] == crisis_response("en-US")
    assert progress.seen == []


async def test_a_crisis_screen_sends_no_progress_and_the_result_is_the_crisis_response(
    board: Blackboard, connect: Any
) -> None:
    runner = StreamingRunner(board, {"risk": NO_RISK, "reply": REPLY})
    progress = Progress()
    async with connect(_server(board, runner)) as client:
        data = await _turn(client, TIER_3, progress)
    assert data["crisis_tier"] == 3 and runner.calls == []
    assert progress.seen == []


async def test_a_blocked_move_is_never_sent_and_words_sent_before_it_are_withdrawn(
    board: Blackboard, connect: Any
) -> None:
    runner = StreamingRunner(board, {"risk": NO_RISK, "reply": REPLY})
    runner.behaviours["stability"] = lambda inv, n: stability_blocking()
    first, second = Progress(), Progress()
    async with connect(_server(board, runner)) as client:
        turn = (await _turn(client, "first", first))["turn"]
        with anyio.fail_after(30):  # the first turn ends: its Stability entry blocks the move from now on
            _data(await client.call_tool("coach_synthesis", {"turn": turn}))
        runner.coach = {
            "risk": NO_RISK,
            "reply": "That sounds exhausting, and you have carried it for weeks. Some people in your place "
            "decide to stop taking your medication for a while. What would help most?",
        }
        data = await _turn(client, "second", second)
    assert data["coach_reply"] == FALLBACK_COACH_REPLY
    sent = [m or "" for _, m in second.seen]
    assert sent and sent[-1] == RETRACTED, "the words sent were not withdrawn"
    shown = "".join(sent[:-1])
    assert shown.startswith("That sounds exhausting")
    assert "medication" not in shown and "stop" not in shown and "decide" not in shown


async def test_without_a_progress_token_nothing_is_sent(board: Blackboard, connect: Any) -> None:
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    runner = StreamingRunner(board, {"risk": NO_RISK, "reply": REPLY})
    async with connect(_server(board, runner), message_handler=on_message) as client:
        data = await _turn(client, "I keep skipping my runs.", None)
        during_first = list(notes)
        with_token = Progress()
        await _turn(client, "and again today.", with_token)
    assert data["coach_reply"] == REPLY
    assert during_first == [], "a notification reached a caller that asked for no progress"
    assert with_token.seen, "the call with a progress callback got no progress"
