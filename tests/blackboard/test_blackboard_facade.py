"""The Blackboard facade over a real SQLite store and sequencer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from blackboard import (
    Blackboard,
    InvalidValueError,
    MemoryStore,
    SchemaValidationError,
    Sequencer,
    TurnAlreadyOpenError,
    TurnNotOpenError,
    TurnRecord,
    VersionConflictError,
    fallback_synthesis,
    turn_entry_key,
)

from .payloads import payload


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Blackboard]:
    b = Blackboard(tmp_path)
    yield b
    b.close()


def test_begin_turn_allocates_sequential_ids_and_opens_the_shadow_barrier(board: Blackboard) -> None:
    assert [board.begin_turn("u", "s") for _ in range(3)] == ["t000001", "t000002", "t000003"]
    assert board.begin_turn("u", "other") == "t000001"
    assert board.sequencer.is_open(board.turn_id("u", "s", "t000002"))
    with pytest.raises(TurnAlreadyOpenError):
        board.sequencer.open_turn(board.turn_id("u", "s", "t000002"))
    assert board.read_turn("u", "s", "t000001")["meta"].value["required"] == ["shadow"]


def test_concurrent_begin_turn_gives_distinct_ids(tmp_path: Path) -> None:
    boards = [Blackboard(tmp_path) for _ in range(4)]
    got: list[str] = []
    lock = threading.Lock()

    def run(b: Blackboard) -> None:
        for _ in range(10):
            t = b.begin_turn("u", "s")
            with lock:
                got.append(t)

    threads = [threading.Thread(target=run, args=(b,)) for b in boards]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(got) == [f"t{i:06d}" for i in range(1, 41)]
    for b in boards:
        b.close()


def test_write_output_validates_gates_and_is_create_only(board: Blackboard) -> None:
    t = board.begin_turn("u", "s")
    stab = payload("stability")
    stab["moves"][1]["blocked"] = False
    e = board.write_output("u", "s", t, "stability", stab)
    assert e.key == turn_entry_key("u", "s", t, "stability") and e.author == "stability" and e.version == 1
    assert e.value["moves"][1]["blocked"] is True  # the gate, not the model
    with pytest.raises(VersionConflictError):
        board.write_output("u", "s", t, "stability", payload("stability"))
    with pytest.raises(SchemaValidationError) as info:
        board.write_output("u", "s", t, "persona", {"traits": {}})
    assert len(info.value.problems) >= 2  # every problem listed
    assert "persona" not in board.read_turn("u", "s", t)  # nothing stored


def test_write_to_a_turn_never_begun_is_refused(board: Blackboard) -> None:
    with pytest.raises(TurnNotOpenError):
        board.write_output("u", "s", "t000009", "coach", payload("coach"))


def test_collect_waits_for_shadow_and_builds_the_brief(board: Blackboard) -> None:
    t = board.begin_turn("u", "s")
    board.write_output("u", "s", t, "stability", payload("stability"))
    brief, waited = board.collect("u", "s", t, ["stability", "persona"], 0.1)
    assert waited.timed_out and set(waited.missing) == {"shadow", "persona"}
    assert brief.missing_agents == ["shadow", "persona"] and brief.present_agents == ["stability"]

    def shadow_later() -> None:
        board.write_output("u", "s", t, "shadow", payload("shadow"))

    th = threading.Thread(target=shadow_later)
    th.start()
    brief, waited = board.collect("u", "s", t, ["stability"], 10)
    th.join()
    assert not waited.timed_out and "shadow" in brief.present_agents


def test_pineal_write_is_checked_against_the_brief(board: Blackboard) -> None:
    t = board.begin_turn("u", "s")
    for agent in ("shadow", "stability", "coach"):
        board.write_output("u", "s", t, agent, payload(agent))
    bad = {"text": "Try a water fast.", "citations": [{"agent": "persona", "version": 1}]}
    with pytest.raises(SchemaValidationError) as info:
        board.write_output("u", "s", t, "pineal", bad)
    assert {p.split(":")[0] for p in info.value.problems} == {"blocked_move", "citation_missing_entry"}
    fb = fallback_synthesis(board.brief("u", "s", t))
    assert board.write_output("u", "s", t, "pineal", fb.model_dump(mode="json")).version == 1


def test_crisis_tier_is_kept_with_the_turn(board: Blackboard) -> None:
    t = board.begin_turn("u", "s", crisis_tier=3)
    board.write_output("u", "s", t, "stability", payload("stability"))
    assert board.brief("u", "s", t).mode == "crisis"
    with pytest.raises(InvalidValueError):
        board.begin_turn("u", "s", crisis_tier=5)


def test_raise_crisis_tier_only_raises_the_briefs_tier(board: Blackboard) -> None:
    t = board.begin_turn("u", "s", crisis_tier=1)
    assert board.raise_crisis_tier("u", "s", t, 2) == 2
    assert board.brief("u", "s", t).mode == "pause"
    assert board.raise_crisis_tier("u", "s", t, 0) == 2  # never lowered
    meta = board.store.read(turn_entry_key("u", "s", t, "meta"))
    assert meta is not None and meta.version == 2 and meta.value["crisis_tier"] == 2
    assert board.raise_crisis_tier("u", "s", t, 3) == 3 and board.brief("u", "s", t).mode == "crisis"
    with pytest.raises(InvalidValueError):
        board.raise_crisis_tier("u", "s", t, 4)
    with pytest.raises(TurnNotOpenError):
        board.raise_crisis_tier("u", "s", "t999999", 3)


def test_turn_record_and_profile(board: Blackboard) -> None:
    t = board.begin_turn("u", "s")
    rec = TurnRecord(
        user="u", session="s", turn=t, required=["shadow"], arrived=["shadow"], synthesis_source="fallback"
    )
    assert board.write_turn_record(rec).key.endswith(f"/{t}/record")
    assert rec.safety_raises == [] and rec.safety_refused == []  # records written before the fields exist
    raised = TurnRecord(
        user="u",
        session="s",
        turn=t,
        safety_raises=["model.coach.raised_t3", "model.family.plan"],
        safety_refused=["model.stability.refused_quote_not_in_message"],
        synthesis_source="support",
    )
    assert TurnRecord.model_validate(raised.model_dump(mode="json")) == raised
    with pytest.raises(ValueError):  # rule ids only, never text
        TurnRecord(user="u", session="s", turn=t, safety_raises=["the user said: I have a plan"])
    assert board.read_profile("u") is None
    board.update_profile("u", "s", {"persona": payload("persona")})
    e = board.update_profile("u", "s2", {"persona": payload("persona")})
    prof = board.read_profile("u")
    assert e.version == 2 and prof is not None and prof.sessions_seen == 2


def test_explicit_store_and_sequencer(tmp_path: Path) -> None:
    b = Blackboard(store=MemoryStore(), sequencer=Sequencer(tmp_path))
    t = b.begin_turn("u", "s")
    b.write_output("u", "s", t, "shadow", payload("shadow"))
    assert b.collect("u", "s", t, [], 1)[1].arrived == ("shadow",)
    with pytest.raises(InvalidValueError):
        Blackboard(store=MemoryStore())


def test_a_retried_write_after_a_lost_mark_still_releases_waiters(board: Blackboard) -> None:
    t = board.begin_turn("u", "s")
    # simulate a write that committed but whose mark_written never happened
    board.store.write(
        turn_entry_key("u", "s", t, "shadow"), payload("shadow"), expected_version=0, author="shadow"
    )
    with pytest.raises(VersionConflictError):
        board.write_output("u", "s", t, "shadow", payload("shadow"))
    assert board.collect("u", "s", t, [], 0)[1].arrived == ("shadow",)
