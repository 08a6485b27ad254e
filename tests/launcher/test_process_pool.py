"""launcher.runner._process_pool: started idle processes for new sessions, each handed out once, never used
before, bound for good to the session it went to (the MCP scope and the proxy translate its identity)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from launcher.pipeline._turn_scope import DirectoryScope, TurnDirectory
from launcher.pipeline.supervisor import pool_invocations
from launcher.runner._agent_runner import (
    AgentInvocation,
    ClaudeAgentRunner,
    RunnerConfig,
    _fingerprint,
    _Warm,
)
from launcher.runner._process_pool import (
    POOL_USER,
    Bindings,
    PooledProcess,
    bindings_for,
    memory_room,
)
from mcp_server import Scope


def inv(agent: str = "coach", user: str = "u1", session: str = "s1") -> AgentInvocation:
    return AgentInvocation(
        agent=agent,
        user=user,
        session=session,
        turn="",
        system_prompt="You are the Coach.",
        model="fast",
        tools=("write_coach",),
        max_output_tokens=400,
        context_budget_tokens=4000,
        prompt="",
        followup="",
    )


def runner_with_idle(directory: TurnDirectory, n: int = 1) -> tuple[ClaudeAgentRunner, list[Any]]:
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", pool_size=6)
    runner = ClaudeAgentRunner(cfg, bindings=bindings_for(directory))
    clients = [SimpleNamespace(name=f"proc{i}") for i in range(n)]
    runner.pool._idle[_fingerprint(inv())] = [
        PooledProcess(c, _fingerprint(inv()), f"p{i:024x}", None) for i, c in enumerate(clients)
    ]
    return runner, clients


def test_a_pooled_process_is_handed_out_once_and_bound_to_that_session_for_good() -> None:
    directory = TurnDirectory()
    runner, clients = runner_with_idle(directory, n=1)
    runner.pool._schedule_refill = lambda: None  # type: ignore[method-assign]
    first, second = _Warm(client=None, fingerprint=""), _Warm(client=None, fingerprint="")
    assert runner.pool.hand_out(inv(user="alice", session="s1"), first)
    assert first.client is clients[0] and first.pool_session is not None
    assert not runner.pool.hand_out(inv(user="bob", session="s9"), second), "never handed out twice"
    b = bindings_for(directory)
    assert b.resolve(POOL_USER, first.pool_session) == ("alice", "s1")
    with pytest.raises(ValueError):
        b.bind(first.pool_session, "bob", "s9")  # never rebound
    runner.pool.revoke(first.client)  # its process is stopped
    assert b.resolve(POOL_USER, first.pool_session) == (POOL_USER, first.pool_session)


def test_other_agents_settings_never_get_the_process() -> None:
    runner, _ = runner_with_idle(TurnDirectory())
    other = _Warm(client=None, fingerprint="")
    import dataclasses

    assert not runner.pool.hand_out(dataclasses.replace(inv(agent="persona"), system_prompt="other"), other)


def test_the_mcp_scope_of_a_pooled_process_is_its_bound_session_and_nobodys_before() -> None:
    directory = TurnDirectory()
    scopes = DirectoryScope(directory)
    headers = {"x-coach-user": POOL_USER, "x-coach-session": "p" + "0" * 24, "x-coach-agent": "coach"}
    before = scopes.scope_for(headers)
    assert (before.user, before.session) == (POOL_USER, "p" + "0" * 24)  # the pool user owns no data
    bindings_for(directory).bind("p" + "0" * 24, "alice", "s1")
    directory.open("alice", "s1", "t000001", ["coach"])
    assert scopes.scope_for(headers) == Scope.create("alice", "s1", "t000001", "coach")


def test_ordinary_identities_are_never_translated() -> None:
    b = Bindings()
    b.bind("p1", "alice", "s1")
    assert b.resolve("bob", "p1") == ("bob", "p1")


def test_the_pool_is_off_without_bindings_or_with_one_shot_processes() -> None:
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", pool_size=6)
    assert ClaudeAgentRunner(cfg).pool.size == 0
    d = TurnDirectory()
    assert (
        ClaudeAgentRunner(
            RunnerConfig(proxy_url="p", mcp_url="m", pool_size=6, mcp_turn_header=True),
            bindings=bindings_for(d),
        ).pool.size
        == 0
    )
    assert ClaudeAgentRunner(cfg, bindings=bindings_for(d)).pool.size == 6
    assert memory_room() >= 0


def test_pool_invocations_are_one_per_agent_with_no_user_and_no_prompt() -> None:
    from launcher.agents import load_agents

    invs = pool_invocations(load_agents("agents"))
    assert [i.agent for i in invs] == ["coach", "shadow", "persona", "plasticity", "stability", "pineal"]
    assert all(i.user == POOL_USER and i.prompt == "" and i.followup == "" for i in invs)
    assert len({i.session for i in invs}) == 6


def _refill_runner(
    monkeypatch: pytest.MonkeyPatch, directory: TurnDirectory, busy: list[int]
) -> tuple[ClaudeAgentRunner, list[tuple[str, int]]]:
    """A runner whose pool refills at once (idle bar 0.05 s) with fake starts, recorded as (agent, starts
    running at once); ``busy[0]`` is its busy-process count."""
    import anyio

    import launcher.runner._process_pool as pp

    monkeypatch.setattr(pp, "REFILL_IDLE_S", 0.05)
    monkeypatch.setattr(pp, "_POLL_S", 0.01)
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", pool_size=6, max_warm=12)
    runner = ClaudeAgentRunner(cfg, bindings=bindings_for(directory))
    runner.busy_count = lambda: busy[0]  # type: ignore[method-assign]
    started: list[tuple[str, int]] = []
    running = [0]

    async def start(template: AgentInvocation) -> bool:
        running[0] += 1
        started.append((template.agent, running[0]))
        await anyio.sleep(0.01)
        fp = _fingerprint(template)
        runner.pool._idle.setdefault(fp, []).append(PooledProcess(object(), fp, "p" + "0" * 24, None))
        runner.pool.started += 1
        running[0] -= 1
        return True

    monkeypatch.setattr(runner.pool, "_start", start)
    return runner, started


@pytest.mark.anyio
async def test_the_pool_fills_one_process_at_a_time_only_while_no_agent_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyio

    from launcher.agents import load_agents

    busy = [1]
    runner, started = _refill_runner(monkeypatch, TurnDirectory(), busy)
    invs = pool_invocations(load_agents("agents"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.pool.fill_when_idle, invs)
        await anyio.sleep(0.3)
        assert started == [], "a turn's agent runs: nothing starts"
        busy[0] = 0
    assert [a for a, _ in started] == [i.agent for i in invs] and all(n == 1 for _, n in started)
    assert runner.pool.idle() == 6


@pytest.mark.anyio
async def test_an_open_turn_holds_the_refill_even_while_no_agent_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # between two steps of a turn (its Coach done, its specialists not yet checked out) no process is
    # busy, but a start-up then would compete with the turn and take the slot its Pineal is about to use
    import anyio

    from launcher.agents import load_agents

    directory = TurnDirectory()
    runner, started = _refill_runner(monkeypatch, directory, [0])
    directory.open("u1", "s1", "t000001", ["coach"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.pool.fill_when_idle, pool_invocations(load_agents("agents")))
        await anyio.sleep(0.3)
        assert started == [], "a turn is open: nothing starts"
        directory.close("u1", "s1", "t000001")
    assert len(started) == 6


@pytest.mark.anyio
async def test_an_open_turn_holds_the_refill_back_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # with many sessions some turn is nearly always open: the pool must still refill
    import anyio

    import launcher.runner._process_pool as pp
    from launcher.agents import load_agents

    directory = TurnDirectory()
    runner, started = _refill_runner(monkeypatch, directory, [0])
    monkeypatch.setattr(pp, "REFILL_OPEN_TURN_S", 0.2)
    directory.open("u1", "s1", "t000001", ["coach"])
    with anyio.fail_after(5):
        await runner.pool.fill_when_idle(pool_invocations(load_agents("agents")))
    assert len(started) == 6 and directory.open_turns() == 1


def test_the_bindings_do_not_keep_their_directory_alive() -> None:
    import gc
    import weakref

    directory = TurnDirectory()
    bindings = bindings_for(directory)
    directory.open("u1", "s1", "t000001")
    assert bindings.turns_open() == 1
    ref = weakref.ref(directory)
    del directory
    gc.collect()
    assert ref() is None and bindings.turns_open() == 0


def _other_agent() -> AgentInvocation:
    import dataclasses

    return dataclasses.replace(inv(agent="persona"), system_prompt="You are Persona.")


def test_the_warm_limit_counts_the_pools_idle_processes() -> None:
    # max_warm counts pooled processes too: with 2 pooled idle processes (of another agent) and
    # max_warm 3, a third warm entry for a new agent evicts a pooled process, not a session's process
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", pool_size=6, max_warm=3)
    runner = ClaudeAgentRunner(cfg, bindings=bindings_for(TurnDirectory()))
    pooled = [SimpleNamespace(name=f"pooled{i}") for i in range(2)]
    runner.pool._idle[_fingerprint(inv())] = [
        PooledProcess(c, _fingerprint(inv()), f"p{i:024x}", None) for i, c in enumerate(pooled)
    ]
    runner._warm[("u1", "s0", "stability")] = _Warm(client=SimpleNamespace(name="warm"), fingerprint="x")
    to_close: list[_Warm] = []
    assert runner._make_room(to_close, _other_agent())
    assert [w.client for w in to_close] == [pooled[1]], "a pooled process goes first"
    assert runner.pool.idle() == 1 and len(runner._warm) == 1, "the session's warm process stays"


def test_the_process_handed_out_to_the_invocation_is_not_counted_twice() -> None:
    # the pooled process of inv's own agent becomes the new warm entry: warm 1 + pooled 1 - 1 < 2
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", pool_size=6, max_warm=2)
    runner = ClaudeAgentRunner(cfg, bindings=bindings_for(TurnDirectory()))
    runner.pool._idle[_fingerprint(inv())] = [
        PooledProcess(SimpleNamespace(), _fingerprint(inv()), "p0", None)
    ]
    runner._warm[("u1", "s0", "stability")] = _Warm(client=SimpleNamespace(), fingerprint="x")
    to_close: list[_Warm] = []
    assert runner._make_room(to_close, inv()) and to_close == []


def test_no_room_when_every_process_is_busy_and_the_pool_is_empty() -> None:
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", max_warm=1)
    runner = ClaudeAgentRunner(cfg)
    runner._warm[("u1", "s0", "coach")] = _Warm(client=SimpleNamespace(), fingerprint="x", busy=True)
    assert not runner._make_room([], inv())


@pytest.mark.anyio
async def test_a_prestart_without_eviction_counts_the_pool_too() -> None:
    # warm 1 + pooled 1 (of another agent) fills max_warm 2: a prestart that may not evict starts nothing
    cfg = RunnerConfig(proxy_url="http://proxy", mcp_url="http://mcp/mcp", pool_size=6, max_warm=2)
    runner = ClaudeAgentRunner(cfg, bindings=bindings_for(TurnDirectory()))
    runner.pool._idle[_fingerprint(inv())] = [
        PooledProcess(SimpleNamespace(), _fingerprint(inv()), "p0", None)
    ]
    runner._warm[("u1", "s0", "stability")] = _Warm(client=SimpleNamespace(), fingerprint="x")
    assert not await runner.prestart(_other_agent(), evict=False)
    assert runner.pool.idle() == 1 and len(runner._warm) == 1
