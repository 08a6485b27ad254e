"""Pineal's shared context is prefilled while the specialists work (launcher.pipeline._pineal_prefill): once per
turn, only after every other agent's first token, never holding up a specialist."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from blackboard import Blackboard
from launcher.pipeline.supervisor import Supervisor
from proxy import PREFILL_MARKER
from tests.launcher.fakes import FakeRunner, fake_screen, specs

pytestmark = pytest.mark.anyio
SPECIALISTS = ("shadow", "persona", "plasticity", "stability")


def slow_specialists(runner: FakeRunner, seconds: float) -> None:
    """Specialists that have their first token at once, then take ``seconds`` to write."""
    orig = runner.run

    async def run(inv: Any, events: Any) -> Any:
        if inv.agent in SPECIALISTS:
            events.on_started()
            events.on_first_token()
            runner.events.append((inv.agent, "first_token"))
            await anyio.sleep(seconds)
        return await orig(inv, events)

    runner.run = run  # type: ignore[method-assign]


def with_prefill(runner: FakeRunner, seconds: float = 0.0) -> list[tuple[Any, str]]:
    sent: list[tuple[Any, str]] = []

    async def prefill(inv: Any, text: str) -> bool:
        runner.events.append(("pineal", "prefill"))
        sent.append((inv, text))
        await anyio.sleep(seconds)
        runner.events.append(("pineal", "prefilled"))
        return True

    runner.prefill = prefill  # type: ignore[attr-defined]
    return sent


async def test_the_prefill_is_made_once_per_turn_after_every_first_token(board: Blackboard) -> None:
    runner = FakeRunner(board)
    slow_specialists(runner, 0.3)
    sent = with_prefill(runner)
    s = specs()
    sup = Supervisor(board, runner, lambda: s, screen=fake_screen)
    res = await sup.run_turn("u1", "s1", "I keep skipping my runs.")
    await sup.run_turn("u1", "s1", "Second turn.")
    assert res.synthesis_source == "model"
    assert len(sent) == 2 and [inv.turn for inv, _ in sent] == ["t000001", "t000002"], "once per turn"
    inv, text = sent[0]
    assert inv.agent == "pineal" and text.rstrip().endswith(PREFILL_MARKER)
    pineal = next(c for c in runner.calls if c.agent == "pineal" and c.turn == "t000001")
    shared = text[: -len(PREFILL_MARKER) - 1]
    assert pineal.prompt.startswith(shared) and "I keep skipping my runs." in shared
    assert (
        "arbitrated brief" not in shared and "arbitrated brief" in pineal.followup
    )  # entry-independent first
    first = runner.events[: runner.events.index(("pineal", "prefill"))]
    assert {a for a, what in first if what == "first_token"} == set(SPECIALISTS)


async def test_a_slow_prefill_never_delays_the_specialists(board: Blackboard) -> None:
    runner = FakeRunner(board)
    slow_specialists(runner, 0.2)
    with_prefill(runner, seconds=1.0)
    s = specs()
    res = await Supervisor(board, runner, lambda: s, screen=fake_screen).run_turn("u1", "s1", "hello")
    i = runner.events.index(("pineal", "prefill"))
    j = runner.events.index(("pineal", "prefilled"))
    wrote = [k for k, (a, what) in enumerate(runner.events) if a in SPECIALISTS and what == "wrote"]
    assert len(wrote) == 4 and all(i < k < j for k in wrote), runner.events
    assert all(res.agents[n].finished_s < 1.0 for n in SPECIALISTS)


async def test_no_prefill_when_the_specialists_are_already_done() -> None:
    from launcher.pipeline._pineal_prefill import prefill_pineal
    from launcher.pipeline._turn_status import AgentStatus

    sent: list[str] = []

    async def prefill(inv: Any, text: str) -> bool:
        sent.append(text)
        return True

    statuses = {n: AgentStatus(n, status="ok", first_token_s=0.1) for n in ("coach", *SPECIALISTS)}
    runner = type("R", (), {"prefill": staticmethod(prefill)})()
    assert not await prefill_pineal(runner, None, "context", statuses, ["coach", *SPECIALISTS], SPECIALISTS)
    statuses["persona"].status = "running"
    assert await prefill_pineal(runner, None, "context", statuses, ["coach", *SPECIALISTS], SPECIALISTS)
    assert sent == ["context" + PREFILL_MARKER + "\n"]


async def test_the_prefill_goes_out_once_every_agent_writes_at_the_model_before_claude_code_sees_it() -> None:
    # a forced tool call reaches Claude Code only whole, so "first token" there is nearly the agent's
    # end; the proxy's tap sees the call's first text at the model (ReplyTaps.watch) much earlier
    from launcher.pipeline._pineal_prefill import prefill_pineal
    from launcher.pipeline._turn_status import AgentStatus

    sent: list[str] = []

    async def prefill(inv: Any, text: str) -> bool:
        sent.append(text)
        return True

    names = ["coach", *SPECIALISTS]
    statuses = {n: AgentStatus(n, status="running") for n in names}  # no first token yet
    runner = type("R", (), {"prefill": staticmethod(prefill)})()
    at_model: set[str] = set(names[:-1])
    with anyio.move_on_after(0.3):
        await prefill_pineal(runner, None, "context", statuses, names, SPECIALISTS, at_model)
    assert sent == [], "one agent's prompt is not in yet"
    at_model.add(names[-1])
    assert await prefill_pineal(runner, None, "context", statuses, names, SPECIALISTS, at_model)
    assert len(sent) == 1


def test_the_taps_record_which_agents_of_a_watched_turn_write_at_the_model() -> None:
    from types import SimpleNamespace

    from launcher.pipeline._reply_stream import ReplyTaps

    taps = ReplyTaps()
    seen = taps.watch("u1", "s1", "t000001")
    for who in (
        ("u1", "s1", "t000001", "shadow"),
        ("u1", "s1", "t000002", "persona"),
        ("u2", "s1", "t000001", "coach"),
    ):
        taps.observe(SimpleNamespace(user=who[0], session=who[1], turn=who[2], agent=who[3]))
    assert seen == {"shadow"}, "only the watched turn's agents"
    taps.unwatch("u1", "s1", "t000001")
    taps.observe(SimpleNamespace(user="u1", session="s1", turn="t000001", agent="stability"))
    assert seen == {"shadow"} and taps.watch("u1", "s1", "t000001") == set()


async def test_pineal_is_armed_in_the_turn_while_its_prefill_is_sent(board: Blackboard) -> None:
    """The proxy meters a warm process's request under the turn its agent is armed in; Pineal's prefill
    went out unarmed, so under load (the prefill sent while the specialists still ran) it was metered
    with no turn. It is armed for the send now, and the arming counts, so an overlap with its own run
    cannot disarm that run."""
    runner = FakeRunner(board)
    slow_specialists(runner, 0.3)
    sup = Supervisor(board, runner, lambda: specs(), screen=fake_screen)
    seen: list[str | None] = []

    async def prefill(inv: Any, text: str) -> bool:
        seen.append(sup.directory.turn_for(inv.user, inv.session, "pineal"))
        return True

    runner.prefill = prefill  # type: ignore[attr-defined]
    await sup.run_turn("u1", "s1", "I keep skipping my runs.")
    assert seen == ["t000001"]
    assert sup.directory.turn_for("u1", "s1", "pineal") is None  # disarmed after the turn


def test_arming_counts_in_the_directory_and_the_proxys_table() -> None:
    from launcher.pipeline._turn_scope import TurnDirectory
    from proxy._turns import TurnChange, TurnTable

    d, table = TurnDirectory(), TurnTable()

    class Mirror:
        def changed(self, op: str, user: str, session: str, turn: str, agents: tuple[str, ...]) -> None:
            table.apply(TurnChange(op=op, user=user, session=session, turn=turn, agents=list(agents)))

        async def synced(self) -> None:
            return None

    d.add_listener(Mirror())
    d.open("u", "s", "t1")
    d.arm("u", "s", "t1", "pineal")  # the prefill
    d.arm("u", "s", "t1", "pineal")  # its own run, overlapping
    d.disarm("u", "s", "t1", "pineal")  # the prefill ends
    assert d.turn_for("u", "s", "pineal") == "t1" and table.turn_for("u", "s", "pineal") == "t1"
    d.disarm("u", "s", "t1", "pineal")
    d.disarm("u", "s", "t1", "pineal")  # one too many: no effect, and nothing told
    assert d.turn_for("u", "s", "pineal") is None and table.turn_for("u", "s", "pineal") is None
    d.arm("u", "s", "t1", "pineal")
    assert d.turn_for("u", "s", "pineal") == "t1" and table.turn_for("u", "s", "pineal") == "t1"
