"""The Coach's reply streamed to the front end while it is written (launcher.pipeline._reply_stream): the real
supervisor and blackboard, the fake runner at the runner boundary, and the proxy's real tool tap fed
the write_coach arguments in small chunks (what the in-process proxy does as the upstream streams)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from blackboard import Blackboard, build_brief, shown_prefix, turn_entry_key
from launcher.pipeline._fallbacks import FALLBACK_COACH_REPLY, blocked_problems
from launcher.pipeline._reply_stream import ReplyEvent, taps_for
from launcher.pipeline.supervisor import Supervisor, SupervisorSettings
from launcher.safety import crisis_response
from proxy._tool_tap import ToolTap
from tests.launcher.fakes import FakeRunner, fake_screen, specs
from tests.launcher.payloads import BLOCKED_MOVE, stability_blocking

pytestmark = pytest.mark.anyio

TOOL = "write_coach"
NO_RISK = {"tier": 0, "family": "none", "quote": ""}
REPLY = (
    "It sounds like running really matters to you, and it is frustrating when the plan slips. "
    "You have already noticed the pattern. Which day would give one run the best odds?"
)
MESSAGE = "I sorted out the last few things today, it's all arranged for Friday."
QUOTE = "it's all arranged for Friday"


class Screen:
    """What the front end shows, rebuilt from the events; every state it went through is kept."""

    def __init__(self) -> None:
        self.events: list[ReplyEvent] = []
        self.text = ""
        self.states: list[str] = []

    def __call__(self, ev: ReplyEvent) -> None:
        self.events.append(ev)
        if ev.kind == "delta":
            self.text += ev.text
        elif ev.kind == "retract":
            self.text = ""
        self.states.append(self.text)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


def streaming(
    board: Blackboard,
    payload: dict[str, Any],
    *,
    chunk: int = 7,
    before_write: Any = None,
    properties: tuple[str, ...] = ("risk", "reply"),
) -> tuple[FakeRunner, dict[str, Any]]:
    """A fake runner whose Coach streams ``payload`` (as JSON, ``chunk`` characters at a time) through
    the proxy's tool tap into the supervisor's taps before writing it. ``seen`` records what the
    screen showed at the moment of the write."""
    runner = FakeRunner(board, behaviours={"coach": lambda inv, n: payload})
    orig = runner.run
    seen: dict[str, Any] = {}

    async def run(inv: Any, events: Any) -> Any:
        if inv.agent == "coach":
            sup: Supervisor = seen["sup"]
            who = SimpleNamespace(agent="coach", user=inv.user, session=inv.session, turn=inv.turn)
            tap = ToolTap(
                taps_for(sup.directory).observe, who, f"msg_{inv.turn}", TOOL, properties, lambda n: n
            )
            raw = json.dumps(payload)
            for i in range(0, len(raw), chunk):
                tap.feed(0, TOOL, raw[i : i + chunk])
                await anyio.lowlevel.checkpoint()
            if before_write is not None:
                await before_write()
            seen["at_write"] = seen["screen"].text
        return await orig(inv, events)

    runner.run = run  # type: ignore[method-assign]
    return runner, seen


def supervisor(board: Blackboard, runner: FakeRunner, seen: dict[str, Any], **settings: Any) -> Supervisor:
    s = specs()
    sup = Supervisor(board, runner, lambda: s, screen=fake_screen, settings=SupervisorSettings(**settings))
    seen["sup"] = sup
    seen["screen"] = Screen()
    return sup


async def test_streamed_words_equal_the_start_of_the_stored_reply(board: Blackboard) -> None:
    runner, seen = streaming(board, {"risk": NO_RISK, "reply": REPLY})
    sup = supervisor(board, runner, seen)
    final: list[str] = []
    res = await sup.run_turn("u1", "s1", "hello", on_reply_stream=seen["screen"], on_coach_reply=final.append)
    screen: Screen = seen["screen"]
    stored = board.store.read(turn_entry_key("u1", "s1", res.turn_id, "coach"))
    assert stored is not None and stored.value["reply"] == REPLY == res.coach_reply == final[0]
    assert seen["at_write"] and REPLY.startswith(seen["at_write"]), (
        "words were shown before the call was complete"
    )
    assert len(seen["at_write"]) >= len(REPLY) - 1
    assert all(REPLY.startswith(s) for s in screen.states)
    assert "retract" not in screen.kinds() and screen.kinds()[-1] == "end" and screen.events[-1].text == REPLY
    assert screen.text == REPLY
    assert res.coach_first_words_s is not None and res.coach_first_words_s <= res.coach_reply_s


async def test_a_crisis_raise_is_never_shown(board: Blackboard) -> None:
    reply = "It sounds like Friday matters to you. What are you hoping for?"
    runner, seen = streaming(
        board, {"risk": {"tier": 3, "family": "preparatory", "quote": QUOTE}, "reply": reply}
    )
    runner.behaviours.update(
        {n: (lambda inv, k: "hang") for n in ("shadow", "persona", "plasticity", "stability")}
    )
    sup = supervisor(board, runner, seen)
    res = await sup.run_turn("u1", "s1", MESSAGE, on_reply_stream=seen["screen"])
    screen: Screen = seen["screen"]
    assert res.crisis_tier == 3 and res.coach_reply == crisis_response("en-US")
    assert seen["at_write"] == ""
    assert all(s == "" or s == res.coach_reply for s in screen.states), screen.states
    assert not any("Friday matters" in e.text for e in screen.events)
    assert screen.kinds() == ["delta", "end"] and screen.text == res.coach_reply


async def test_a_reply_written_before_its_risk_assessment_is_not_streamed(board: Blackboard) -> None:
    runner, seen = streaming(board, {"reply": REPLY, "risk": NO_RISK})
    sup = supervisor(board, runner, seen)
    res = await sup.run_turn("u1", "s1", "hello", on_reply_stream=seen["screen"])
    assert seen["at_write"] == "" and res.coach_reply == REPLY
    assert seen["screen"].kinds() == ["delta", "end"]


async def test_a_schema_without_risk_streams_at_once(board: Blackboard) -> None:
    runner, seen = streaming(board, {"reply": REPLY}, properties=("reply",))
    sup = supervisor(board, runner, seen)
    await sup.run_turn("u1", "s1", "hello", on_reply_stream=seen["screen"])
    assert REPLY.startswith(seen["at_write"]) and len(seen["at_write"]) > len(REPLY) // 2


async def test_a_move_blocked_earlier_in_the_session_is_never_shown(board: Blackboard) -> None:
    reply = (
        "That sounds exhausting, and you have carried it for weeks. Some people in your place "
        "decide to stop taking your medication for a while. What would help most?"
    )
    runner, seen = streaming(board, {"risk": NO_RISK, "reply": REPLY}, chunk=3)
    runner.behaviours["stability"] = lambda inv, n: stability_blocking()
    sup = supervisor(board, runner, seen)
    await sup.run_turn("u1", "s1", "first", on_reply_stream=Screen())
    runner2, seen2 = streaming(board, {"risk": NO_RISK, "reply": reply}, chunk=3)
    sup2 = supervisor(board, runner2, seen2)
    res = await sup2.run_turn("u1", "s1", "second", on_reply_stream=seen2["screen"])
    screen: Screen = seen2["screen"]
    blocks = build_brief({"stability": board.store.read(turn_entry_key("u1", "s1", "t000001", "stability"))})
    assert res.coach_reply == FALLBACK_COACH_REPLY and res.coach_fallback
    assert all(not blocked_problems(s, blocks) for s in screen.states)
    assert seen2["at_write"].startswith("That sounds exhausting"), "the words well before the move were shown"
    assert "stop" not in seen2["at_write"] and "decide" not in seen2["at_write"], "a tail was held back"
    assert screen.kinds()[-3:] == ["retract", "delta", "end"] and screen.text == FALLBACK_COACH_REPLY


async def test_shown_words_are_retracted_when_stability_blocks_them_mid_turn(board: Blackboard) -> None:
    reply = "You could stop taking your medication for a week and see how it feels."
    stability_done = anyio.Event()
    runner, seen = streaming(board, {"risk": NO_RISK, "reply": reply}, before_write=stability_done.wait)
    runner.behaviours["stability"] = lambda inv, n: stability_blocking()
    orig = runner.run

    async def ordered(inv: Any, events: Any) -> Any:
        if inv.agent == "stability":
            await coach_streamed.wait()
        out = await orig(inv, events)
        if inv.agent == "stability":
            stability_done.set()
        return out

    coach_streamed = anyio.Event()
    sup = supervisor(board, runner, seen, coach_head_start_s=0)

    def screen_and_signal(ev: ReplyEvent) -> None:
        seen["screen"](ev)
        if seen["screen"].text.endswith("feels."):
            coach_streamed.set()

    runner.run = ordered  # type: ignore[method-assign]
    res = await sup.run_turn("u1", "s1", "hello", on_reply_stream=screen_and_signal)
    screen: Screen = seen["screen"]
    assert reply in screen.states, "no blocked move was known while it streamed"
    assert res.coach_reply == FALLBACK_COACH_REPLY
    assert "retract" in screen.kinds() and screen.kinds()[-1] == "end" and screen.text == FALLBACK_COACH_REPLY


async def test_nothing_streams_on_a_crisis_screen_and_the_response_still_ends_the_stream(
    board: Blackboard,
) -> None:
    runner, seen = streaming(board, {"risk": NO_RISK, "reply": REPLY})
    sup = supervisor(board, runner, seen)
    res = await sup.run_turn("u1", "s1", "CRISIS now", on_reply_stream=seen["screen"])
    assert runner.calls == [] and seen["screen"].kinds() == ["delta", "end"]
    assert seen["screen"].text == res.coach_reply


def test_shown_prefix_holds_back_a_tail_a_later_word_could_complete_into_a_blocked_move() -> None:
    brief = build_brief(
        {
            "stability": SimpleNamespace(
                value=stability_blocking(), version=1, key="users/u/sessions/s/turns/t000001/stability"
            )
        }
    )
    assert brief.blocked_moves and brief.blocked_moves[0].id == BLOCKED_MOVE["id"]
    text = "Some people decide to stop taking"
    shown = shown_prefix(text, brief)
    assert shown is not None and "stop" not in shown and text.startswith(shown)
    assert shown_prefix(text + " your medication", brief) is None
    assert shown_prefix("A short walk helps. ", brief, complete=True) == "A short walk helps."
    assert shown_prefix("A short walk helps. ") == "A short walk helps."
