"""Session leases and turn-job rows in the real PostgreSQL: compare-and-swap takeover with an epoch,
stale holders' writes refused (and logged), the Coach reply and the result recorded once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from blackboard._pg_jobs import TurnJobs
from blackboard._pg_lease import Leases, StaleLeaseError
from blackboard.errors import InvalidValueError


@pytest.fixture
def db(pg_target: Any) -> Iterator[tuple[Leases, TurnJobs]]:
    leases = Leases(pg_target.url, schema=pg_target.schema, ttl_s=0.6)
    jobs = TurnJobs(pg_target.url, schema=pg_target.schema)
    yield leases, jobs
    leases.close()
    jobs.close()


def test_acquire_is_compare_and_swap_and_a_new_holder_bumps_the_epoch(db: tuple[Leases, TurnJobs]) -> None:
    leases, _ = db
    a = leases.acquire("u", "s", "wa")
    assert a is not None and a.epoch == 1
    assert leases.acquire("u", "s", "wb") is None, "held by wa and not expired"
    again = leases.acquire("u", "s", "wa")
    assert again is not None and again.epoch == 1, "the holder renews under the same epoch"
    time.sleep(0.7)
    assert not leases.check(a) and leases.renew(a) is None, "an expired lease cannot be revived"
    b = leases.acquire("u", "s", "wb")
    assert b is not None and b.epoch == 2
    assert leases.holder("u", "s") == b


def test_racing_acquirers_get_exactly_one_lease(db: tuple[Leases, TurnJobs]) -> None:
    leases, _ = db
    got: list[Any] = []
    barrier = threading.Barrier(8)

    def take(i: int) -> None:
        barrier.wait()
        got.append(leases.acquire("u", "race", f"w{i}"))

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [g for g in got if g is not None]
    assert len(won) == 1 and won[0].epoch == 1


def test_stale_epoch_writes_are_refused_and_logged(db: tuple[Leases, TurnJobs]) -> None:
    leases, jobs = db
    job, created = jobs.create("j1", "u", "s", "secret message")
    assert created and job.state == "queued"
    assert jobs.create("j1", "u", "s", "secret message")[1] is False, "create-only"
    with pytest.raises(InvalidValueError, match="another message") as refused:
        jobs.create("j1", "u", "s", "other text")  # following j1 with other text would drop the text
    assert "secret" not in str(refused.value) and "other text" not in str(refused.value)
    with pytest.raises(InvalidValueError):
        jobs.create("j1", "u", "other", "x")
    old = leases.acquire("u", "s", "wa")
    assert old is not None
    running = jobs.claim("j1", old)
    assert running.state == "running" and running.attempts == 1 and running.epoch == 1
    assert jobs.set_turn("j1", old, "t000001") == "t000001"
    time.sleep(0.7)  # wa pauses past its lease; wb takes the session over
    new = leases.acquire("u", "s", "wb")
    assert new is not None and new.epoch == 2
    for write in (
        lambda: jobs.record_coach_reply("j1", old, "stale reply"),
        lambda: jobs.finish("j1", old, result="{}", coach_reply="stale", synthesis="stale"),
        lambda: jobs.claim("j1", old),
    ):
        with pytest.raises(StaleLeaseError):
            write()
    assert [r["what"] for r in leases.refusals()] == ["coach_reply", "finish", "claim"]
    assert all(r["epoch"] == 1 and r["worker_id"] == "wa" for r in leases.refusals())
    claimed = jobs.claim("j1", new)
    assert claimed.epoch == 2 and claimed.attempts == 2 and claimed.turn_id == "t000001", (
        "the turn is resumed"
    )
    assert jobs.record_coach_reply("j1", new, "reply one")
    assert not jobs.record_coach_reply("j1", new, "reply two"), "one Coach reply per job"
    done = jobs.finish("j1", new, result='{"ok": 1}', coach_reply="ignored", synthesis="syn")
    assert done is not None and done.state == "done" and done.coach_reply == "reply one"
    assert jobs.finish("j1", new, result="{}", coach_reply="x", synthesis="again") is None, (
        "one result per job"
    )
    assert jobs.get("j1").synthesis == "syn"  # type: ignore[union-attr]
    assert not jobs.fail("j1", "late"), "a done job is never failed"


def test_wait_wakes_on_a_change(db: tuple[Leases, TurnJobs]) -> None:
    leases, jobs = db
    job, _ = jobs.create("j2", "u", "s2", "hello")
    lease = leases.acquire("u", "s2", "wa")
    assert lease is not None
    t = threading.Timer(0.3, lambda: jobs.claim("j2", lease))
    t.start()
    t0 = time.monotonic()
    seen = jobs.wait("j2", 5, seen=job.updated_at)
    t.join()
    assert seen is not None and seen.state == "running" and time.monotonic() - t0 < 2
    assert [j.job_id for j in jobs.pending("u", "s2", seen.seq)] == ["j2"]
