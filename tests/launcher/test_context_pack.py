"""Context packs: shared part first and byte-identical, cut to each agent's budget in the right order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.pipeline._context_pack import (
    AgentPackSpec,
    HistoryItem,
    PackInputs,
    build_followups,
    build_packs,
    estimate_tokens,
)

PROFILE = {"user": "u1", "goals": [{"description": "run three times a week", "mentions": 3}]}


def history(n: int) -> list[HistoryItem]:
    return [
        HistoryItem(turn=f"t{i:06d}", user_text=f"message {i} " + "x" * 200, coach_reply=f"reply {i}")
        for i in range(1, n + 1)
    ]


def test_shared_part_is_identical_and_first_for_every_agent() -> None:
    inputs = PackInputs(
        message="hello",
        profile=PROFILE,
        history=history(3),
        entries={"turns/t000003/stability": {"moves": []}},
    )
    packs = build_packs(
        inputs,
        {
            "coach": AgentPackSpec(4000, "# Your task\nYou are the coach agent.\n"),
            "shadow": AgentPackSpec(8000, "# Your task\nYou are the shadow agent, longer tail.\n"),
        },
    )
    assert packs["coach"].shared == packs["shadow"].shared
    for name, pack in packs.items():
        assert pack.text.startswith(pack.shared) and pack.text.endswith(pack.tail)
        assert f"You are the {name} agent" in pack.tail
    shared = packs["coach"].shared
    assert (
        shared.index("## User profile")
        < shared.index("## This session so far")
        < shared.index("## Relevant blackboard entries")
        < shared.index("## The user's message")
    )


def test_cutting_drops_oldest_history_first_and_keeps_the_message() -> None:
    inputs = PackInputs(message="the newest message", profile=PROFILE, history=history(30))
    packs = build_packs(inputs, {"a": AgentPackSpec(600, "tail\n"), "b": AgentPackSpec(5000, "tail\n")})
    pack = packs["a"]
    assert pack.tokens <= 600
    assert "history" in pack.cut
    assert "message 30" in pack.shared and "message 1 " not in pack.shared  # newest kept, oldest dropped
    assert "the newest message" in pack.shared and "run three times a week" in pack.shared
    assert packs["b"].shared == pack.shared  # cut to the smallest budget: still identical


def test_entries_then_profile_are_cut_before_the_message() -> None:
    big = {"turns/t1/persona": {"summary": "y" * 4000}}
    inputs = PackInputs(message="keep me", profile={"notes": "p" * 3000}, entries=big)
    pack = build_packs(inputs, {"a": AgentPackSpec(700, "tail\n")})["a"]
    assert pack.tokens <= 700
    assert "entries" in pack.cut and "profile" in pack.cut and "message" not in pack.cut
    assert "keep me" in pack.shared


def test_followups_carry_the_new_message_but_not_the_history() -> None:
    ups = build_followups(
        "second message",
        {"turns/t1/stability": {"moves": []}},
        {"coach": "tail-c\n", "shadow": "tail-s\n"},
        2000,
    )
    assert ups["coach"].removesuffix("tail-c\n") == ups["shadow"].removesuffix("tail-s\n")
    assert "second message" in ups["coach"] and "## This session so far" not in ups["coach"]


def test_bad_budgets_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one agent"):
        build_packs(PackInputs(message="m"), {})
    with pytest.raises(ValueError, match="context budget"):
        build_packs(PackInputs(message="m"), {"a": AgentPackSpec(0, "t")})


@settings(max_examples=40, deadline=None)
@given(
    n_hist=st.integers(0, 25),
    budget=st.integers(300, 6000),
    message=st.text(min_size=1, max_size=3000),
)
def test_every_pack_fits_its_budget(n_hist: int, budget: int, message: str) -> None:
    inputs = PackInputs(message=message, profile=PROFILE, history=history(n_hist))
    packs = build_packs(
        inputs, {"a": AgentPackSpec(budget, "# Your task\nx\n"), "b": AgentPackSpec(budget * 2, "t\n")}
    )
    assert packs["a"].tokens <= budget + 8  # +8: the cut marker rounding
    assert packs["a"].shared == packs["b"].shared
    assert estimate_tokens(packs["a"].text) == packs["a"].tokens
