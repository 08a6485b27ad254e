"""PgBarrier beyond the contract suite: the entry write and the barrier mark are one transaction (a
rolled-back write leaves no mark), the Blackboard facade over PostgreSQL, and the periodic re-check
that finds a mark whose notification was lost."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from blackboard import Blackboard, turn_entry_key
from blackboard._pg_barrier import PgBarrier
from blackboard._pg_conn import connect
from blackboard._postgres import PostgresStore
from testsupport.postgres import PgTarget

from ._workers import SHADOW_PAYLOAD


@pytest.fixture
def board(pg_target: PgTarget) -> Iterator[Blackboard]:
    b = Blackboard(
        store=PostgresStore(pg_target.url, schema=pg_target.schema),
        sequencer=PgBarrier(pg_target.url, schema=pg_target.schema),
    )
    yield b
    b.close()
    b.sequencer.close()  # type: ignore[attr-defined]


def test_an_entry_write_marks_its_agent_in_the_same_transaction(board: Blackboard) -> None:
    turn = board.begin_turn("u", "s")
    tid = board.turn_id("u", "s", turn)
    board.store.write(
        turn_entry_key("u", "s", turn, "shadow"), SHADOW_PAYLOAD, expected_version=0, author="shadow"
    )
    assert board.sequencer.arrived(tid, ["shadow"]) == ["shadow"]  # no mark_written call was needed


def test_a_rolled_back_write_leaves_neither_entry_nor_mark(board: Blackboard, pg_target: PgTarget) -> None:
    import psycopg

    turn = board.begin_turn("u", "s")
    key = turn_entry_key("u", "s", turn, "shadow")
    conn = connect(pg_target.url)
    try:
        with pytest.raises(psycopg.errors.RaiseException), conn.transaction():  # a crash after the insert
            conn.execute(
                f'INSERT INTO "{pg_target.schema}".entries (key, value, version, author, created_at, '
                "updated_at, seq) VALUES (%s, '{}', 1, 'shadow', 0, 0, 0)",
                (key,),
            )
            conn.execute("DO $$ BEGIN RAISE EXCEPTION 'crash'; END $$")
    finally:
        conn.close()
    assert board.store.read(key) is None
    assert board.sequencer.arrived(board.turn_id("u", "s", turn), ["shadow"]) == []


def test_write_output_then_collect_on_postgresql(board: Blackboard) -> None:
    turn = board.begin_turn("u", "s")
    board.write_output("u", "s", turn, "shadow", SHADOW_PAYLOAD)
    brief, waited = board.collect("u", "s", turn, ["shadow"], 5.0)
    assert waited.arrived == ("shadow",) and "shadow" in brief.present_agents


def test_a_lost_notification_is_made_up_by_the_recheck(pg_target: PgTarget) -> None:
    barrier = PgBarrier(pg_target.url, schema=pg_target.schema, recheck_s=0.2)
    barrier.open_turn("u/s/t1")
    conn = connect(pg_target.url)
    try:  # a mark committed without its NOTIFY: as if the listener had been disconnected when it was sent
        conn.execute(f'ALTER TABLE "{pg_target.schema}".barrier_marks DISABLE TRIGGER notify_mark')
        timer = threading.Timer(0.3, lambda: barrier.mark_written("u/s/t1", "shadow"))
        timer.start()
        r = barrier.wait("u/s/t1", ["shadow"], 10.0)
        timer.join()
    finally:
        conn.close()
        barrier.close()
    assert r.arrived == ("shadow",) and not r.timed_out and r.waited_s < 2.0
