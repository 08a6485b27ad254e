"""Supervisor unit tests: real blackboard (SQLite + file-lock sequencer), fake runner at the runner
boundary. Deadlines are short real times; nothing sleeps."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from blackboard import Blackboard, turn_entry_key
from launcher.pipeline._fallbacks import FALLBACK_COACH_REPLY
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import CRISIS_TEXT, FakeRunner, fake_screen, specs
from tests.launcher.payloads import BLOCKED_MOVE, stability_blocking

pytestmark = pytest.mark.anyio


def make(board: Blackboard, runner: FakeRunner, **spec_overrides: dict[str, Any]) -> Supervisor:
    s = specs(**spec_overrides)
    return Supervisor(board, runner, lambda: s, screen=fake_screen)


async def test_happy_turn_delivers_coach_first_then_valid_synthesis(board: Blackboard) -> None:
    runner = FakeRunner(board)
    sup = make(board, runner)
    order: list[str] = []
    res = await sup.run_turn("u1", "s1", "I want to run more", on_coach_reply=lambda r: order.append("coach"))
    order.append("synthesis")
    assert order == ["coach", "synthesis"]
    assert res.coach_reply.startswith("It sounds like running matters")
    assert res.synthesis_source == "model" and not res.degraded and res.missing == []
    assert {n: s.status for n, s in res.agents.items()} == dict.fromkeys(
        ["coach", "shadow", "persona", "plasticity", "stability", "pineal"], "ok"
    )
    assert (
        res.coach_reply_s is not None and res.synthesis_s is not None and res.coach_reply_s <= res.synthesis_s
    )
    # Pineal started only after every launched agent finished (barrier + join).
    starts = [a for a, what in runner.events if what == "start"]
    assert starts[-1] == "pineal"
    # record + delivery + message written
    entries = board.read_turn("u1", "s1", res.turn_id)
    assert {"message", "delivery", "record", "pineal", "shadow"} <= set(entries)
    assert entries["record"].value["synthesis_source"] == "model"
    assert "I want to run more" not in str(entries["record"].value)
    # Pineal's prompt carries the brief and ready-made citations of exactly its sources, at their versions
    (pineal,) = [c for c in runner.calls if c.agent == "pineal"]
    line = next(ln for ln in pineal.followup.splitlines() if ln.startswith("Citations of these sources"))
    cites = json.loads(line.split(": ", 1)[1])
    assert sorted(c["agent"] for c in cites) == ["coach", "persona", "plasticity", "shadow", "stability"]
    assert all(c["version"] == entries[c["agent"]].version for c in cites)


async def test_shared_context_is_first_and_identical_across_agents(board: Blackboard) -> None:
    runner = FakeRunner(board)
    sup = make(board, runner, shadow={"context_budget_tokens": 900}, coach={"context_budget_tokens": 5000})
    await sup.run_turn("u1", "s1", "first message " * 5)
    await sup.run_turn("u1", "s1", "second message")
    turn2 = [c for c in runner.calls if c.turn == "t000002" and c.agent != "pineal"]
    heads = {c.prompt.split("# Your task")[0] for c in turn2}
    assert len(heads) == 1, "the shared part must be byte-identical across agents"
    head = heads.pop()
    assert "first message" in head and "second message" in head  # history + this turn's message
    for c in turn2:
        assert c.prompt.startswith(head)
        assert f"You are the {c.agent} agent" in c.prompt[len(head) :]


async def test_failing_specialist_still_gives_reply_and_degraded_synthesis(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"persona": lambda inv, n: "error"})
    res = await make(board, runner).run_turn("u1", "s1", "hello")
    assert res.coach_reply and not res.coach_fallback
    assert res.degraded and res.missing == ["persona"]
    assert res.agents["persona"].status == "error" and res.agents["persona"].attempts == 1
    assert "persona" in res.synthesis  # the synthesis says what was missing
    assert res.agents["pineal"].status == "ok"


async def test_hanging_specialist_times_out_within_its_deadline(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"stability": lambda inv, n: "hang"})
    sup = make(board, runner, stability={"deadline_s": 0.8})
    t0 = time.monotonic()
    res = await sup.run_turn("u1", "s1", "hello")
    assert time.monotonic() - t0 < 5
    assert res.agents["stability"].status == "timeout"
    assert res.degraded and "stability" in res.missing


async def test_crash_is_retried_once(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"plasticity": lambda inv, n: "crash" if n == 1 else "ok"})
    res = await make(board, runner).run_turn("u1", "s1", "hello")
    assert res.agents["plasticity"].status == "ok" and res.agents["plasticity"].attempts == 2
    assert not res.degraded


async def test_crash_twice_is_crashed(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"plasticity": lambda inv, n: "crash"})
    res = await make(board, runner).run_turn("u1", "s1", "hello")
    assert res.agents["plasticity"].status == "crashed" and res.agents["plasticity"].attempts == 2
    assert res.missing == ["plasticity"]


async def test_missing_shadow_means_no_pineal_and_fallback(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"shadow": lambda inv, n: "error"})
    res = await make(board, runner).run_turn("u1", "s1", "hello")
    assert not any(c.agent == "pineal" for c in runner.calls)
    assert res.synthesis_source == "fallback" and res.degraded
    assert res.agents["pineal"].status == "skipped"
    assert "shadow" in res.missing


async def test_coach_failure_gets_fallback_reply(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"coach": lambda inv, n: "silent"})
    got: list[str] = []
    res = await make(board, runner).run_turn("u1", "s1", "hello", on_coach_reply=got.append)
    assert got == [FALLBACK_COACH_REPLY] and res.coach_fallback and res.degraded
    assert res.agents["coach"].status == "error"


async def test_blocked_synthesis_is_repaired_once(board: Blackboard) -> None:
    bad = "You could stop taking your medication for a week."
    runner = FakeRunner(board, behaviours={"stability": lambda inv, n: stability_blocking()})
    state = {"n": 0}

    def pineal(inv: Any, n: int) -> str:
        state["n"] += 1
        runner.pineal_text = bad if state["n"] == 1 else "Let's plan one ten-minute walk."
        return "ok"

    runner.behaviours["pineal"] = pineal
    res = await make(board, runner).run_turn("u1", "s1", "hello")
    assert res.synthesis_source == "repaired"
    assert "medication" not in res.synthesis.lower()
    repair = [c for c in runner.calls if c.agent == "pineal"][-1]
    assert "NOT accepted" in repair.followup and "blocked_move" in repair.followup


async def test_blocked_synthesis_twice_is_replaced_by_fallback(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"stability": lambda inv, n: stability_blocking()})
    runner.pineal_text = "Try to quit your meds and see."
    res = await make(board, runner).run_turn("u1", "s1", "hello")
    assert res.synthesis_source == "fallback" and res.degraded
    for kw in BLOCKED_MOVE["keywords"]:
        assert kw not in res.synthesis.lower()
    assert len([c for c in runner.calls if c.agent == "pineal"]) == 2


async def test_coach_reply_with_blocked_move_from_earlier_turn_is_never_shown(board: Blackboard) -> None:
    runner = FakeRunner(board, behaviours={"stability": lambda inv, n: stability_blocking()})
    sup = make(board, runner)
    await sup.run_turn("u1", "s1", "first")
    runner.behaviours["coach"] = lambda inv, n: {"reply": "Maybe stop taking your medication?"}
    got: list[str] = []
    res = await sup.run_turn("u1", "s1", "second", on_coach_reply=got.append)
    assert got == [FALLBACK_COACH_REPLY] and res.coach_fallback


async def test_crisis_replaces_everything_and_launches_nothing(board: Blackboard) -> None:
    runner = FakeRunner(board)
    got: list[str] = []
    res = await make(board, runner).run_turn("u1", "s1", "CRISIS now", on_coach_reply=got.append)
    assert runner.calls == []
    assert got == [CRISIS_TEXT] and res.coach_reply == CRISIS_TEXT and res.synthesis == ""
    assert res.crisis_tier == 3 and res.synthesis_source == "crisis"
    assert all(s.status == "skipped" for s in res.agents.values())
    rec = board.store.read(turn_entry_key("u1", "s1", res.turn_id, "record"))
    assert rec is not None and rec.value["crisis_tier"] == 3


async def test_json_document_shape(board: Blackboard) -> None:
    res = await make(board, FakeRunner(board)).run_turn("u1", "s1", "hello")
    doc = res.to_json()
    assert {"turn_id", "coach_reply", "synthesis", "degraded", "crisis_tier", "agents"} <= set(doc)
    for a in doc["agents"].values():
        assert {
            "status",
            "started_s",
            "first_token_s",
            "finished_s",
            "input_tokens",
            "output_tokens",
            "error",
        } <= set(a)


async def test_real_screen_crisis_then_post_crisis_window_pauses(board: Blackboard) -> None:
    runner = FakeRunner(board)
    s = specs()
    sup = Supervisor(board, runner, lambda: s)  # the real deterministic SafetyScreen
    res = await sup.run_turn("u1", "s1", "i w4nt to k1ll my self tonight")
    assert res.crisis_tier == 3 and runner.calls == []
    assert "988" in res.coach_reply and res.synthesis == ""
    # The safety state is kept on the blackboard: the next turn is inside the post-crisis window.
    res2 = await sup.run_turn("u1", "s1", "ok. what about my running plan?")
    assert res2.crisis_tier >= 2
    assert not any(c.agent == "coach" for c in runner.calls)  # coaching paused: no Coach reply
    assert res2.agents["coach"].status == "skipped" and "coach" not in res2.missing


async def test_close_session_compacts_profile_once_and_next_session_starts_from_it(board: Blackboard) -> None:
    from launcher.pipeline.sessions import close_session

    runner = FakeRunner(board)
    sup = make(board, runner)
    await sup.run_turn("u1", "s1", "I want to run more")
    res = await close_session(board, "u1", "s1", runner=runner)
    assert res.merged == ("persona", "shadow") and res.profile_version == 1 and not res.already_closed
    again = await close_session(board, "u1", "s1")
    assert again.already_closed and again.profile_version == 1  # never merged twice
    prof = board.read_profile("u1")
    assert (
        prof is not None and prof.sessions_seen == 1 and prof.goals[0].description == "run three times a week"
    )
    await sup.run_turn("u1", "s2", "new session")
    first = next(c for c in runner.calls if c.session == "s2" and c.agent == "persona")
    assert "run three times a week" in first.prompt.split("## This session so far")[0]


async def test_idle_sessions_close_after_timeout() -> None:
    from launcher.pipeline.sessions import IdleSessions

    now = [0.0]
    closed: list[tuple[str, str]] = []

    async def close(u: str, s: str) -> None:
        closed.append((u, s))

    idle = IdleSessions(close, 10.0, clock=lambda: now[0])
    idle.touch("u", "a")
    now[0] = 5.0
    idle.touch("u", "b")
    now[0] = 12.0
    assert await idle.close_idle() == [("u", "a")]
    assert closed == [("u", "a")]


async def test_turns_of_one_session_run_one_at_a_time(board: Blackboard) -> None:
    import anyio

    runner = FakeRunner(board)
    sup = make(board, runner)
    results: list[Any] = []

    async def one(text: str) -> None:
        results.append(await sup.run_turn("u1", "s1", text))

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "first")
        tg.start_soon(one, "second")
    assert sorted(r.turn_id for r in results) == ["t000001", "t000002"]
    assert all(r.synthesis_source == "model" and not r.degraded for r in results)
    # no interleaving: every agent of turn 1 started before any agent of turn 2
    turns = [c.turn for c in runner.calls]
    assert turns == sorted(turns)


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "agents"
    shutil.copytree(Path(__file__).resolve().parents[2] / "agents", target)
    return target


async def test_agent_file_edits_apply_next_turn_and_invalid_edits_keep_the_old_version(
    board: Blackboard, agents_dir: Path
) -> None:
    from launcher.agents import AgentRegistry

    registry = AgentRegistry(agents_dir)
    runner = FakeRunner(board)
    sup = Supervisor(board, runner, registry.current, screen=fake_screen)

    def coach_prompt(turn: str) -> str:
        return next(c.system_prompt for c in runner.calls if c.agent == "coach" and c.turn == turn)

    await sup.run_turn("u1", "s1", "one")
    path = agents_dir / "coach.md"
    original = path.read_text()
    path.write_text(original.rstrip("\n") + "\nAlways end with the word MARKER-V2.\n")
    assert registry.reload()
    await sup.run_turn("u1", "s1", "two")
    assert "MARKER-V2" not in coach_prompt("t000001") and "MARKER-V2" in coach_prompt("t000002")
    path.write_text(original.replace("deadline_s: 20", "deadline_s: -5") + "MARKER-V3\n")
    assert not registry.reload() and registry.last_error is not None
    res = await sup.run_turn("u1", "s1", "three")
    assert "MARKER-V2" in coach_prompt("t000003") and "MARKER-V3" not in coach_prompt("t000003")
    assert res.agents["coach"].status == "ok"


async def test_broken_callbacks_never_stop_the_turn(board: Blackboard) -> None:
    def boom(*_: Any) -> None:
        raise RuntimeError("display broke")

    res = await make(board, FakeRunner(board)).run_turn(
        "u1", "s1", "hello", on_coach_reply=boom, on_status=boom
    )
    assert res.synthesis_source == "model" and not res.degraded


async def test_coach_reply_is_checked_against_this_turns_stability_if_already_written(
    board: Blackboard,
) -> None:
    import anyio

    stability_done = anyio.Event()

    runner = FakeRunner(
        board,
        behaviours={
            "stability": lambda inv, n: stability_blocking(),
            "coach": lambda inv, n: {"reply": "You could stop taking your medication."},
        },
    )
    # Run Stability before the Coach writes: give the Coach no head start and let Stability go first.
    orig = runner.run

    async def ordered(inv: Any, events: Any) -> Any:
        if inv.agent == "coach":
            await stability_done.wait()
        out = await orig(inv, events)
        if inv.agent == "stability":
            stability_done.set()
        return out

    runner.run = ordered  # type: ignore[method-assign]
    shown: list[str] = []
    from launcher.pipeline.supervisor import SupervisorSettings

    s = specs()
    sup = Supervisor(
        board, runner, lambda: s, screen=fake_screen, settings=SupervisorSettings(coach_head_start_s=0)
    )
    res = await sup.run_turn("u1", "s1", "hello", on_coach_reply=shown.append)
    assert shown == [FALLBACK_COACH_REPLY] and res.coach_fallback


async def test_sequential_mode_runs_one_agent_at_a_time(board: Blackboard) -> None:
    from launcher.pipeline.supervisor import SupervisorSettings

    runner = FakeRunner(board)
    s = specs()
    sup = Supervisor(
        board, runner, lambda: s, screen=fake_screen, settings=SupervisorSettings(sequential=True)
    )
    res = await sup.run_turn("u1", "s1", "hello")
    assert not res.degraded
    ev = runner.events
    for i in range(0, len(ev), 2):  # start, wrote, start, wrote, ...
        assert ev[i][1] == "start" and ev[i + 1] == (ev[i][0], "wrote")
    assert [a for a, w in ev if w == "start"] == [
        "coach",
        "shadow",
        "persona",
        "plasticity",
        "stability",
        "pineal",
    ]


async def test_without_a_coach_file_the_fallback_reply_is_shown_at_once(board: Blackboard) -> None:
    s = specs()
    del s["coach"]
    got: list[str] = []
    res = await Supervisor(board, FakeRunner(board), lambda: s, screen=fake_screen).run_turn(
        "u1", "s1", "hello", on_coach_reply=got.append
    )
    assert got == [FALLBACK_COACH_REPLY] and res.coach_fallback and res.synthesis_source == "model"


class _SlowFirstToken(FakeRunner):
    """The Coach is up and prompted, then its first token comes only once every other task is blocked;
    records which specialists had started by then."""

    started_before_coach_token: list[str] | None = None

    async def run(self, invocation: Any, events: Any) -> Any:
        if invocation.agent == "coach":
            events.on_started()
            await anyio.wait_all_tasks_blocked()
            self.started_before_coach_token = [a for a, what in self.events if what == "start"]
        return await super().run(invocation, events)


@pytest.mark.parametrize(("until", "specialists_first"), [("started", True), ("first_token", False)])
async def test_specialists_can_wait_for_the_coachs_first_token(
    board: Blackboard, until: str, specialists_first: bool
) -> None:
    from launcher.pipeline.supervisor import SupervisorSettings

    runner = _SlowFirstToken(board)
    settings = SupervisorSettings(coach_head_start_s=30.0, coach_head_start_until=until)  # type: ignore[arg-type]
    sup = Supervisor(board, runner, lambda: specs(), screen=fake_screen, settings=settings)
    res = await sup.run_turn("u1", "s1", "I want to run more")
    assert res.synthesis_source == "model" and not res.degraded
    assert runner.started_before_coach_token is not None
    assert bool(runner.started_before_coach_token) is specialists_first


@pytest.mark.parametrize("text", ["caf\udce9 run", "nul\x00here"])
async def test_a_message_that_is_not_utf8_or_holds_a_nul_is_refused_before_anything_runs(
    board: Blackboard, text: str
) -> None:
    """Bytes that are not UTF-8 on stdin become lone surrogates; the safety screen's tokenizer then
    failed with a TypeError traceback in ``coach chat`` / ``coach run``."""
    from blackboard import InvalidValueError

    runner = FakeRunner(board)
    with pytest.raises(InvalidValueError) as info:
        await make(board, runner).run_turn("u1", "s1", text)
    assert info.value.code == "invalid_value" and not info.value.retryable
    assert "caf" not in str(info.value) and "nul" not in str(info.value).replace("NUL", "")
    assert runner.calls == [] and board.store.list("users/u1/") == [], "no agent ran, nothing stored"
