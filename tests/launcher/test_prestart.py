"""Process start-up off the critical path: ``ClaudeAgentRunner.prestart`` (the SDK client doubled at the
SDK boundary), Pineal's process started while the specialists run, and ``Supervisor.prewarm`` when a
session opens (real blackboard, runner doubles)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import pytest
from claude_agent_sdk.types import ResultMessage

from blackboard import Blackboard
from launcher.agents._spec_view import view_of
from launcher.pipeline.supervisor import Supervisor
from launcher.pipeline.turn import _invocation
from launcher.runner._agent_runner import (
    AgentEvents,
    AgentInvocation,
    AgentOutcome,
    ClaudeAgentRunner,
    RunnerConfig,
)
from tests.launcher.fakes import FakeRunner, fake_screen, specs

pytestmark = pytest.mark.anyio


class GatedClient:
    """``ClaudeSDKClient`` double: ``connect`` waits for ``gate`` (when set up); records the order of
    connects and queries across instances."""

    instances: ClassVar[list[GatedClient]] = []
    log: ClassVar[list[str]] = []
    gate: ClassVar[anyio.Event | None] = None
    fail_connect: ClassVar[bool] = False

    def __init__(self, options: Any) -> None:
        self.options = options
        self.prompts: list[str] = []
        self.disconnected = False
        GatedClient.instances.append(self)

    async def connect(self) -> None:
        if GatedClient.gate is not None:
            await GatedClient.gate.wait()
        if GatedClient.fail_connect:
            raise RuntimeError("CLI exited during start-up")
        GatedClient.log.append("connect")

    async def query(self, prompt: str) -> None:
        GatedClient.log.append("query")
        self.prompts.append(prompt)

    async def receive_response(self) -> Any:
        yield ResultMessage(
            subtype="success",
            duration_ms=1,
            duration_api_ms=1,
            is_error=False,
            num_turns=1,
            session_id="s",
            result="Done.",
            usage={"input_tokens": 10, "output_tokens": 1},
        )

    async def disconnect(self) -> None:
        self.disconnected = True


class NoEvents:
    def on_started(self) -> None:
        pass

    def on_first_token(self) -> None:
        pass

    def on_tool_result(self, call: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def fake_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    import claude_agent_sdk

    GatedClient.instances, GatedClient.log, GatedClient.gate, GatedClient.fail_connect = [], [], None, False
    monkeypatch.setattr(claude_agent_sdk, "ClaudeSDKClient", GatedClient)


def inv(agent: str = "pineal", session: str = "s1", body: str = "You are Pineal.") -> AgentInvocation:
    return AgentInvocation(
        agent=agent,
        user="u1",
        session=session,
        turn="t000001",
        system_prompt=body,
        model="deep",
        tools=("write_synthesis",),
        max_output_tokens=100,
        context_budget_tokens=4000,
        prompt="FULL PACK",
        followup="FOLLOW-UP",
    )


async def test_a_prestarted_process_is_used_by_the_next_run_with_the_full_prompt() -> None:
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2)) as runner:
        assert await runner.prestart(inv()) is True
        assert GatedClient.log == ["connect"] and runner.warm_count() == 1
        assert await runner.prestart(inv()) is False  # already up: nothing started
        out = await runner.run(inv(), NoEvents())
        await runner.run(inv(), NoEvents())
        assert len(GatedClient.instances) == 1 and runner.started_processes == 1
        # the conversation was empty: the first run sends the whole pack, the next one the follow-up
        assert GatedClient.instances[0].prompts == ["FULL PACK", "FOLLOW-UP"]
        assert out.warm and GatedClient.log == ["connect", "query", "query"]
        # warm processes carry no turn header (the turn is resolved server-side)
        assert "x-coach-turn" not in GatedClient.instances[0].options.env["ANTHROPIC_CUSTOM_HEADERS"]


async def test_prestart_returns_once_the_processs_mcp_server_is_connected() -> None:
    statuses = iter(["pending", "pending", "connected"])

    async def get_mcp_status(self: GatedClient) -> dict[str, Any]:
        GatedClient.log.append("status")
        return {"mcpServers": [{"name": "coachboard", "status": next(statuses)}]}

    GatedClient.get_mcp_status = get_mcp_status  # type: ignore[attr-defined]
    try:
        async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2)) as runner:
            assert await runner.prestart(inv())
            assert GatedClient.log == ["connect", "status", "status", "status"]
    finally:
        del GatedClient.get_mcp_status  # type: ignore[attr-defined]


async def test_a_run_waits_for_its_prestart_still_connecting_instead_of_a_second_process() -> None:
    GatedClient.gate = anyio.Event()
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2)) as runner:
        outcomes: list[AgentOutcome] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.prestart, inv())
            await anyio.wait_all_tasks_blocked()

            async def run() -> None:
                outcomes.append(await runner.run(inv(), NoEvents()))

            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert GatedClient.log == [] and len(GatedClient.instances) == 1
            GatedClient.gate.set()
        assert len(GatedClient.instances) == 1 and GatedClient.log == ["connect", "query"]
        assert GatedClient.instances[0].prompts == ["FULL PACK"] and outcomes[0].warm


async def test_a_failed_prestart_is_discarded_and_the_run_starts_its_own_process() -> None:
    GatedClient.fail_connect = True
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2)) as runner:
        assert await runner.prestart(inv()) is False
        assert runner.warm_count() == 0
        GatedClient.fail_connect = False
        out = await runner.run(inv(), NoEvents())
        assert (
            len(GatedClient.instances) == 2
            and not out.warm
            and GatedClient.instances[1].prompts == ["FULL PACK"]
        )


async def test_prestart_respects_the_warm_limit_and_evicts_only_when_asked() -> None:
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=1)) as runner:
        assert await runner.prestart(inv(session="a"))
        assert await runner.prestart(inv(session="b"), evict=False) is False  # full: session a is kept
        assert runner.warm_count() == 1 and not GatedClient.instances[0].disconnected
        assert await runner.prestart(inv(session="b"), evict=True)  # the idle process of a is evicted
        await anyio.wait_all_tasks_blocked()
        assert runner.warm_count() == 1 and GatedClient.instances[0].disconnected
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=0)) as runner:
        assert await runner.prestart(inv()) is False and len(GatedClient.instances) == 2  # one-shot: none


async def test_a_stale_prestarted_process_is_replaced_when_the_agent_file_changed() -> None:
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=2)) as runner:
        assert await runner.prestart(inv())
        assert await runner.prestart(inv(body="You are Pineal, v2."))  # edited prompt: a new process
        await runner.run(inv(body="You are Pineal, v2."), NoEvents())
        assert len(GatedClient.instances) == 2 and GatedClient.instances[1].prompts == ["FULL PACK"]


@dataclass
class PrestartingRunner(FakeRunner):
    """FakeRunner plus ``prestart``: records it; Shadow's run ends only after Pineal was prestarted (so a
    prestart after the barrier would never come: the turn would hang, and ``fail_after`` fails it)."""

    prestarts: list[tuple[str, str, bool]] = field(default_factory=list)
    pineal_started: anyio.Event = field(default_factory=anyio.Event)

    async def prestart(self, invocation: AgentInvocation, *, evict: bool = True) -> bool:
        self.prestarts.append((invocation.agent, invocation.turn, evict))
        self.events.append((invocation.agent, "prestart"))
        if invocation.agent == "pineal":
            self.pineal_started.set()
        return True

    async def run(self, invocation: AgentInvocation, events: AgentEvents) -> AgentOutcome:
        if invocation.agent == "shadow" and invocation.turn:
            events.on_started()
            await self.pineal_started.wait()
        return await super().run(invocation, events)


async def test_pineal_is_prestarted_while_the_specialists_run(board: Blackboard) -> None:
    runner = PrestartingRunner(board)
    s = specs()
    sup = Supervisor(board, runner, lambda: s, screen=fake_screen)
    with anyio.fail_after(10):
        result = await sup.run_turn("u1", "s1", "I want to walk more.")
    assert result.synthesis_source == "model" and not result.degraded
    assert runner.prestarts == [("pineal", result.turn_id, True)]
    order = runner.events
    prestart_at = order.index(("pineal", "prestart"))
    # after every specialist started (no competition with their start-up), before Pineal's own run
    for name in ("persona", "plasticity", "stability"):
        assert order.index((name, "start")) < prestart_at
    assert prestart_at < order.index(("shadow", "wrote")) < order.index(("pineal", "start"))


async def test_prewarm_starts_the_sessions_processes_in_free_slots_coach_first(board: Blackboard) -> None:
    runner = PrestartingRunner(board)
    s = specs()
    sup = Supervisor(board, runner, lambda: s, screen=fake_screen)
    started = await sup.prewarm("u1", "s1")
    assert started == ["coach", "shadow", "persona", "plasticity", "stability", "pineal"]
    assert runner.prestarts[0] == ("coach", "", False) and all(not evict for _, _, evict in runner.prestarts)


async def test_prewarm_makes_the_first_turn_start_no_process(board: Blackboard) -> None:
    s = specs()
    async with ClaudeAgentRunner(RunnerConfig(proxy_url="p", mcp_url="m", max_warm=6)) as runner:
        sup = Supervisor(board, runner, lambda: s, screen=fake_screen)
        assert len(await sup.prewarm("u1", "s1")) == 6 and runner.started_processes == 6
        assert GatedClient.log == ["connect"] * 6
        assert await sup.prewarm("u1", "s1") == []  # idempotent: all up
        for name in ("coach", "shadow", "pineal"):  # what run_turn's agents do first
            ai = _invocation(view_of(s[name]), "u1", "s1", "t000001", "FULL PACK", "F")
            out = await runner.run(ai, NoEvents())
            assert out.warm
        assert runner.started_processes == 6
