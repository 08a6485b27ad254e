"""End to end: real ``claude`` processes, the real proxy, the real streamable-HTTP MCP server and SQLite,
against the scripted upstream (instant latency model, time_scale 0.02: a Delay(10) is 0.2 s real).

One stack serves the whole module (warm processes are reused within a session, as in production);
each test uses its own user or session and restores the scripts it changed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from blackboard import turn_entry_key
from launcher.pipeline._fallbacks import FALLBACK_COACH_REPLY
from launcher.pipeline._screen import SafetyScreen
from launcher.pipeline.sessions import close_session
from launcher.pipeline.supervisor import TurnResult
from launcher.safety import crisis_response
from tests.e2e.harness import (
    Harness,
    agent_script,
    all_text,
    brief_from_request,
    delayed,
    harness,
    messages_of,
)
from tests.launcher.fakes import OUTPUT_TOOLS
from tests.launcher.payloads import BLOCKED_MOVE, payload_for, stability_blocking, synthesis_citing
from testsupport.script import Error, Hang, Step, Text, ToolCall

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

AGENTS = tuple(OUTPUT_TOOLS)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingPortal, Harness]]:
    tmp = tmp_path_factory.mktemp("e2e")
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(harness(tmp)) as h:
        yield portal, h


@pytest.fixture
def h(stack: tuple[BlockingPortal, Harness]) -> Iterator[Harness]:
    _, hh = stack
    saved = dict(hh.specs)
    yield hh
    hh.specs.update(saved)
    for a in AGENTS:
        hh.upstream.set_script(a, agent_script(a))


def turn(
    stack: tuple[BlockingPortal, Harness],
    user: str,
    session: str,
    text: str,
    on_reply: Callable[[str], None] | None = None,
) -> TurnResult:
    portal, h = stack
    result: TurnResult = portal.call(
        lambda: h.supervisor.run_turn(user, session, text, on_coach_reply=on_reply)
    )
    return result


def set_deadline(h: Harness, agent: str, seconds: float) -> None:
    h.specs[agent] = h.specs[agent].model_copy(update={"deadline_s": seconds})


def calls_of(h: Harness, session: str, agent: str | None = None) -> list[Any]:
    return [r for r in h.upstream.model_calls(agent) if r.headers.get("x-coach-session") == session]


def test_coach_reply_is_delivered_before_the_synthesis(stack: Any, h: Harness) -> None:
    for a in ("shadow", "persona", "plasticity", "stability"):  # specialists take 0.4 s real
        h.upstream.set_script(a, agent_script(a, lambda r, a=a: _delay(20, a)))
    shown: list[float] = []
    t0 = time.monotonic()
    res = turn(
        stack, "u-order", "s1", "I keep skipping my runs", on_reply=lambda r: shown.append(time.monotonic())
    )
    assert len(shown) == 1 and res.coach_reply == payload_for("coach")["reply"]
    pineal = calls_of(h, "s1", "pineal")
    assert pineal, "Pineal ran"
    assert shown[0] < pineal[0].arrived_at, "the Coach reply reached the user before Pineal even started"
    assert res.coach_reply_s is not None and res.synthesis_s is not None
    assert res.coach_reply_s < res.synthesis_s <= time.monotonic() - t0
    assert res.synthesis_source == "model" and not res.degraded


def _delay(seconds: float, agent: str) -> Step:
    from testsupport.script import Delay

    return Delay(seconds, then=ToolCall(OUTPUT_TOOLS[agent], payload_for(agent)))


def _collect_then_write(request: Any) -> Step:
    """Pineal: collect_turn first, then a synthesis citing the collected brief."""
    if request.step_index == 0:
        return ToolCall("collect_turn", {})
    if request.step_index == 1:
        result = _last_tool_result(request)
        data = _json_in(result)
        return ToolCall("write_synthesis", synthesis_citing(data["brief"]))
    return Text("done")


def _last_tool_result(request: Any) -> str:
    for m in reversed(messages_of(request)):
        c = m.get("content")
        if m.get("role") == "user" and isinstance(c, list):
            for b in c:
                if b.get("type") == "tool_result":
                    inner = b.get("content")
                    if isinstance(inner, list):
                        return "\n".join(str(x.get("text", "")) for x in inner if isinstance(x, dict))
                    return str(inner)
    raise AssertionError("no tool result in the request")


def _json_in(text: str) -> dict[str, Any]:
    start = text.find("{")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    if "brief" not in obj:  # the result may wrap the data
        for v in obj.values():
            if isinstance(v, dict) and "brief" in v:
                return dict(v)
    return dict(obj)


def test_pineal_never_collects_before_shadow_writes_over_20_turns(stack: Any, h: Harness) -> None:
    rng = random.Random(5)
    for a in ("shadow", "persona", "plasticity", "stability", "coach"):
        h.upstream.set_script(a, delayed(a, rng, 15.0))  # 0-0.3 s real, Shadow often last
    h.upstream.set_script("pineal", _collect_then_write)
    user, session = "u-order20", "s20"
    for i in range(20):
        res = turn(stack, user, session, f"turn {i}: how do I keep going?")
        entries = h.board.read_turn(user, session, res.turn_id)
        assert res.agents["shadow"].status == "ok", res.agents["shadow"].error
        assert res.synthesis_source == "model", (i, res.to_json())
        # commit order: Shadow's entry was committed before Pineal's synthesis
        assert entries["shadow"].seq < entries["pineal"].seq
    # Each Pineal collect_turn result already contained Shadow's entry (collected after it was written).
    second_steps = [r for r in calls_of(h, session, "pineal") if r.step_index == 1]
    assert len(second_steps) == 20
    for r in second_steps:
        data = _json_in(_last_tool_result(r))
        assert "shadow" in data["arrived"] and data["versions"]["shadow"] >= 1
    # Warm processes: 6 agents started once for 20 turns.
    assert all(s.warm for s in res.agents.values())


def test_failing_hanging_and_killed_specialists_degrade_but_never_stop_the_turn(
    stack: Any, h: Harness
) -> None:
    portal, _ = stack
    user, session = "u-fail", "s1"
    turn(stack, user, session, "warm-up turn")  # start warm processes
    h.upstream.set_script("persona", lambda r: Error(500))
    h.upstream.set_script("stability", lambda r: Hang())
    h.upstream.set_script("plasticity", lambda r: Hang())
    saved = dict(h.specs)
    set_deadline(h, "stability", 4.0)
    set_deadline(h, "plasticity", 30.0)
    before = len(calls_of(h, session, "plasticity"))
    t0 = time.monotonic()
    fut = portal.start_task_soon(lambda: h.supervisor.run_turn(user, session, "second turn"))
    for n in (1, 2):  # kill the process mid-turn, then its retry too
        assert h.upstream.wait_for(lambda rs, n=n: len(calls_of(h, session, "plasticity")) >= before + n, 30)
        pid = h.runner.pid_of(user, session, "plasticity")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    res: TurnResult = fut.result(timeout=60)
    wall = time.monotonic() - t0
    assert res.coach_reply == payload_for("coach")["reply"]
    assert res.agents["persona"].status == "error"
    assert res.agents["stability"].status == "timeout"
    assert res.agents["stability"].finished_s is not None and res.agents["stability"].finished_s < 4.0 + 1.5
    assert res.agents["plasticity"].status == "crashed" and res.agents["plasticity"].attempts == 2
    assert res.degraded and {"persona", "stability", "plasticity"} <= set(res.missing)
    for a in ("persona", "stability", "plasticity"):
        assert a in res.synthesis  # the synthesis names what was missing
    assert res.agents["pineal"].status == "ok" and res.synthesis_source == "model"
    assert wall < 30.0 + 5, wall  # within the deadlines (plasticity's 30 s bounds the join)
    # The next turn works again with fresh processes.
    for a in ("persona", "stability", "plasticity"):
        h.upstream.set_script(a, agent_script(a))
    h.specs.update(saved)
    again = turn(stack, user, session, "third turn")
    assert not again.degraded, again.to_json()


def test_blocked_move_in_synthesis_is_repaired_or_replaced_never_delivered(stack: Any, h: Harness) -> None:
    user, session = "u-block", "s1"
    bad = "A simple idea: stop taking your medication for a week."
    h.upstream.set_script(
        "stability", agent_script("stability", lambda r: ToolCall("write_stability", stability_blocking()))
    )
    n = {"calls": 0}

    def pineal(request: Any) -> Step:
        n["calls"] += 1
        brief = brief_from_request(request)
        text = bad if n["calls"] == 1 else "Let's plan one ten-minute walk you can undo any time."
        return ToolCall("write_synthesis", synthesis_citing(brief, text))

    h.upstream.set_script("pineal", pineal)
    res = turn(stack, user, session, "should I change my meds?")
    assert res.synthesis_source in ("model", "repaired")
    assert n["calls"] >= 2, "the first synthesis was rejected at write time and repaired"
    stored = h.board.store.read(turn_entry_key(user, session, res.turn_id, "pineal"))
    assert stored is not None and "medication" not in stored.value["text"].lower()
    # Always blocked => the deterministic fallback, still without the move.
    h.upstream.set_script(
        "pineal", lambda r: ToolCall("write_synthesis", synthesis_citing(brief_from_request(r), bad))
    )
    res2 = turn(stack, user, session, "and now?")
    assert res2.synthesis_source == "fallback" and res2.degraded
    for text in (res.synthesis, res2.synthesis, res.coach_reply, res2.coach_reply):
        assert "stop taking your medication" not in text.lower()
        for kw in BLOCKED_MOVE["keywords"]:
            assert kw not in text.lower()
    # A Coach reply naming a move blocked earlier in the session never reaches the user.
    h.upstream.set_script(
        "coach", agent_script("coach", lambda r: ToolCall("write_coach", {"reply": "Maybe quit your meds?"}))
    )
    shown: list[str] = []
    res3 = turn(stack, user, session, "third", on_reply=shown.append)
    assert shown == [FALLBACK_COACH_REPLY] and res3.coach_fallback


def test_crisis_message_gets_only_the_crisis_response(stack: Any, h: Harness) -> None:
    started = h.runner.started_processes
    shown: list[str] = []
    res = turn(stack, "u-crisis", "s1", "i w4nt to k1ll my self tonight", on_reply=shown.append)
    assert res.crisis_tier == 3
    assert shown == [crisis_response("en-US")] and res.coach_reply == shown[0] and res.synthesis == ""
    assert h.runner.started_processes == started, "no agent process was launched"
    assert calls_of(h, "s1") == [] or all(
        r.headers.get("x-coach-user") != "u-crisis" for r in calls_of(h, "s1")
    )
    assert res.synthesis_source == "crisis" and all(s.status == "skipped" for s in res.agents.values())


#: A message the deterministic screen misses (no risk words) whose words a model may judge preparatory.
RAISE_MESSAGE = "I sorted out the last few things today, it's all arranged for Friday."
RAISE_REPLY = "It sounds like Friday matters a lot to you. What are you hoping it brings?"


def _coach_writes(risk: dict[str, Any]) -> Any:
    return agent_script("coach", lambda r: ToolCall("write_coach", {"risk": risk, "reply": RAISE_REPLY}))


def test_coach_risk_assessment_raises_the_tier_to_3_and_the_crisis_response_replaces_its_reply(
    stack: Any, h: Harness
) -> None:
    assert SafetyScreen()(RAISE_MESSAGE, None).tier <= 1, "premise: the deterministic screen alone misses it"
    h.upstream.set_script(
        "coach", _coach_writes({"tier": 3, "family": "preparatory", "quote": "it's all arranged for Friday"})
    )
    user, session = "u-raise", "s1"
    shown: list[str] = []
    res = turn(stack, user, session, RAISE_MESSAGE, on_reply=shown.append)
    assert shown == [crisis_response("en-US")] and res.coach_reply == shown[0], (
        "the crisis response, not the reply"
    )
    assert RAISE_REPLY not in res.coach_reply and RAISE_REPLY not in res.synthesis
    assert res.crisis_tier == 3 and res.synthesis == "" and res.synthesis_source == "crisis"
    assert (
        res.safety_raises == ["model.coach.raised_t3", "model.family.preparatory"]
        and res.safety_refused == []
    )
    assert res.agents["coach"].status == "ok" and res.agents["pineal"].status == "skipped"
    mine = [r for r in calls_of(h, session, "pineal") if r.headers.get("x-coach-user") == user]
    assert mine == [], "no coaching synthesis was asked of the model"
    entries = h.board.read_turn(user, session, res.turn_id)
    assert entries["coach"].value["reply"] == RAISE_REPLY  # written through the real MCP tool, never shown
    assert entries["record"].value["safety_raises"] == ["model.coach.raised_t3", "model.family.preparatory"]
    assert (
        entries["message"].value["safety_state"]["crisis_turns_left"] >= 1
    )  # the post-crisis window started


def test_coach_raise_whose_quote_is_not_in_the_message_is_refused_and_the_reply_is_shown(
    stack: Any, h: Harness
) -> None:
    h.upstream.set_script(
        "coach", _coach_writes({"tier": 3, "family": "plan", "quote": "I will do it on Friday"})
    )
    shown: list[str] = []
    res = turn(stack, "u-raise-refused", "s1", RAISE_MESSAGE, on_reply=shown.append)
    assert shown == [RAISE_REPLY] and res.coach_reply == RAISE_REPLY
    assert res.crisis_tier <= 1 and res.synthesis_source == "model" and res.synthesis and not res.degraded
    assert res.safety_raises == [] and res.safety_refused == ["model.coach.refused_quote_not_in_message"]
    record = h.board.read_turn("u-raise-refused", "s1", res.turn_id)["record"].value
    assert record["safety_refused"] == ["model.coach.refused_quote_not_in_message"]


def test_second_session_agents_receive_the_compacted_profile(stack: Any, h: Harness) -> None:
    portal, _ = stack
    user = "u-profile"
    persona = payload_for("persona")
    persona["traits"]["openness"] = {"score": 90, "confidence": 0.6, "evidence_count": 6}
    persona["goals"] = [{"description": "swim before work", "mentions": 2}]
    h.upstream.set_script("persona", agent_script("persona", lambda r: ToolCall("write_persona", persona)))
    turn(stack, user, "sA", "I want to swim before work")
    closed = portal.call(lambda: close_session(h.board, user, "sA", runner=h.runner))
    assert closed.merged == ("persona", "shadow") and closed.profile_version >= 1
    profile = h.board.read_profile(user)
    assert profile is not None and profile.traits is not None and profile.traits.openness.score == 90
    h.upstream.set_script("persona", agent_script("persona"))
    turn(stack, user, "sB", "new week")
    for agent in ("shadow", "persona", "coach"):
        first = next(r for r in calls_of(h, "sB", agent) if r.headers.get("x-coach-user") == user)
        text = all_text(first)
        assert "swim before work" in text and '"sessions_seen":1' in text, agent
