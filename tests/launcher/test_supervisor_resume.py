"""``Supervisor.run_turn(hooks=TurnHooks(...))``: a turn job delivered again after its worker died mid-turn
resumes the same blackboard turn; agents whose entries are written are not run again and no entry gets
a second version (real SQLite blackboard, fake runner)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from blackboard import Blackboard
from launcher.pipeline.supervisor import Supervisor
from launcher.scaleout.hooks import TurnHooks
from tests.launcher.fakes import FakeRunner, fake_screen, specs

pytestmark = pytest.mark.anyio


def _versions(board: Blackboard, user: str, session: str, turn: str) -> dict[str, int]:
    return {k: len(board.store.history(e.key)) for k, e in board.read_turn(user, session, turn).items()}


async def test_a_redelivered_turn_runs_only_what_is_missing_and_writes_nothing_twice(
    board: Blackboard,
) -> None:
    s = specs()
    begun: list[str] = []

    async def on_begun(turn: str) -> str:
        begun.append(turn)
        return turn

    # First delivery: Persona hangs; the "worker" dies (the turn is cancelled) once the others wrote.
    first = FakeRunner(board, behaviours={"persona": lambda i, n: "hang"})
    sup = Supervisor(board, first, lambda: s, screen=fake_screen)
    with anyio.move_on_after(1.5):
        await sup.run_turn("u1", "s1", "I want to run more", hooks=TurnHooks(on_begun=on_begun))
    (turn,) = begun
    partial = board.read_turn("u1", "s1", turn)
    assert {"message", "coach", "shadow", "plasticity", "stability"} <= set(partial)
    assert "persona" not in partial and "delivery" not in partial

    # Redelivery, on "another worker": only Persona and Pineal run; each check came before its dispatch.
    checked: list[str] = []

    async def check(agent: str) -> None:
        checked.append(agent)

    second = FakeRunner(board)
    sup2 = Supervisor(board, second, lambda: s, screen=fake_screen)
    replies: list[str] = []
    res = await sup2.run_turn(
        "u1",
        "s1",
        "I want to run more",
        on_coach_reply=replies.append,
        hooks=TurnHooks(resume_turn=turn, before_dispatch=check),
    )
    assert res.turn_id == turn
    assert sorted(c.agent for c in second.calls) == ["persona", "pineal"]
    assert sorted(checked) == ["persona", "pineal"]
    assert replies == [res.coach_reply] and res.coach_reply == partial["coach"].value["reply"]
    assert res.synthesis_source == "model" and not res.degraded
    assert all(n == 1 for n in _versions(board, "u1", "s1", turn).values()), "no entry written twice"
    assert board.store.read("users/u1/sessions/s1").value["turn_count"] == 1, "no second turn begun"

    # A third delivery of a finished turn runs nothing and writes nothing.
    third = FakeRunner(board)
    res3 = await Supervisor(board, third, lambda: s, screen=fake_screen).run_turn(
        "u1", "s1", "I want to run more", hooks=TurnHooks(resume_turn=turn)
    )
    assert third.calls == [] and res3.coach_reply == res.coach_reply
    assert all(n == 1 for n in _versions(board, "u1", "s1", turn).values())


async def test_a_stale_lease_stops_the_turn_before_the_next_dispatch(board: Blackboard) -> None:
    s = specs()

    class Stale(Exception):
        pass

    async def check(agent: str) -> None:
        if agent != "coach":
            raise Stale(agent)

    runner = FakeRunner(board)
    sup = Supervisor(
        board,
        runner,
        lambda: s,
        screen=fake_screen,
    )
    with pytest.raises(BaseException) as info:
        await sup.run_turn("u1", "s1", "hello", hooks=TurnHooks(before_dispatch=check))
    got: Any = info.value
    assert isinstance(got, Stale) or any(isinstance(e, Stale) for e in getattr(got, "exceptions", []))
    assert {c.agent for c in runner.calls} <= {"coach"}
