"""Dead-lettering by real attempts (PostgreSQL), not by RabbitMQ's delivery count: a job that was only
waiting while connections dropped is queued again, never failed; a job that workers started more often
than ``delivery_limit`` is failed and not started again (real RabbitMQ and PostgreSQL; no agents run)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from blackboard._pg_jobs import TurnJobs
from blackboard._pg_lease import Leases
from launcher.scaleout.broker import AmqpBroker, BrokerTopology
from launcher.scaleout.jobs import JobMessage, decode, encode
from launcher.scaleout.worker import Worker
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix

pytestmark = pytest.mark.timeout(120)

LIMIT = 2


class _Incoming:
    def __init__(self) -> None:
        self.acked = False
        self.headers: dict[str, Any] = {}

    async def ack(self) -> None:
        self.acked = True


def _worker(jobs: TurnJobs, leases: Leases, broker: AmqpBroker) -> Worker:
    # no supervisor: a started turn would fail with AttributeError, so the tests see any start
    return Worker(SimpleNamespace(board=None), jobs, leases, broker, worker_id="w-test")


async def _drop_while_waiting(url: str, topology: BrokerTopology) -> int:
    """Take the job message and drop the connection without an ack (a worker whose connection dropped
    while it waited for the session's holder) until RabbitMQ dead-letters it; returns the drops."""
    import aio_pika

    drops = 0
    for _ in range(10):
        conn = await aio_pika.connect(url)
        ch = await conn.channel()
        _ex, queue, _dead = await AmqpBroker(url, topology).declare(ch)
        got = await queue.get(no_ack=False, fail=False)
        if got is None:
            await conn.close()
            return drops
        drops += 1
        await conn.close()  # unacknowledged: back to the queue, delivery count + 1
    raise AssertionError("never dead-lettered")


def test_a_job_that_only_waited_through_connection_drops_is_queued_again_not_failed() -> None:
    with fresh_schema("dl") as pg, fresh_prefix("dl") as (url, prefix):
        topology = BrokerTopology(prefix=prefix, delivery_limit=LIMIT)
        jobs = TurnJobs(pg.url, schema=pg.schema)
        leases = Leases(pg.url, schema=pg.schema, ttl_s=30)

        async def main() -> tuple[int, list[JobMessage], Worker]:
            broker = AmqpBroker(url, topology, name="test dead letters")
            job, _ = await asyncio.to_thread(jobs.create, "job-wait", "u1", "s1", "hello")
            await broker.publish(JobMessage(job.job_id, "u1", "s1", job.seq))
            drops = await _drop_while_waiting(url, topology)
            worker = _worker(jobs, leases, broker)
            delivered: list[JobMessage] = []
            back = asyncio.Event()

            async def on_job(msg: JobMessage, incoming: Any) -> None:
                delivered.append(msg)
                await incoming.ack()
                back.set()

            async def on_hint(msg: JobMessage, incoming: Any) -> None:
                await incoming.ack()

            task = asyncio.ensure_future(
                broker.consume_forever(
                    worker_id="w-test", prefetch=1, on_job=on_job, on_hint=on_hint, on_dead=worker.on_dead
                )
            )
            try:
                await asyncio.wait_for(back.wait(), 30)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await broker.close()
            return drops, delivered, worker

        try:
            drops, delivered, worker = asyncio.run(main())
            row = jobs.get("job-wait")
        finally:
            jobs.close()
            leases.close()
    assert drops == LIMIT + 1, "RabbitMQ dead-lettered the waiting job after limit + 1 returned deliveries"
    assert [(m.job_id, m.requeues) for m in delivered] == [("job-wait", 1)], "queued again, once"
    assert row is not None and (row.state, row.attempts, row.error) == ("queued", 0, None)
    assert worker.stats.requeued == 1 and worker.stats.turns_failed == 0


def test_a_job_started_more_than_the_limit_is_failed_and_not_started_again() -> None:
    with fresh_schema("dl") as pg:
        jobs = TurnJobs(pg.url, schema=pg.schema)
        leases = Leases(pg.url, schema=pg.schema, ttl_s=30)
        broker = AmqpBroker("amqp://guest:guest@127.0.0.1:1/", BrokerTopology(delivery_limit=LIMIT))
        try:
            worker = _worker(jobs, leases, broker)
            lease = leases.acquire("u1", "s1", "w-test")
            assert lease is not None
            for job_id in ("job-a", "job-b"):
                jobs.create(job_id, "u1", "s1", "hello")
                for _ in range(LIMIT + 1):  # LIMIT + 1 starts, each one crashed
                    jobs.claim(job_id, lease)
            asyncio.run(worker.run_job(jobs.get("job-a"), lease))  # type: ignore[arg-type]
            a = jobs.get("job-a")
            leases.release(lease)  # nobody holds the session: the dead-letter consumer fails job-b
            incoming = _Incoming()
            asyncio.run(worker.on_dead(JobMessage("job-b", "u1", "s1", 2), incoming))
            b = jobs.get("job-b")
        finally:
            jobs.close()
            leases.close()
    assert a is not None and a.state == "failed" and a.attempts == LIMIT + 1, "not started a 4th time"
    assert b is not None and b.state == "failed" and incoming.acked
    for row in (a, b):
        assert f"dead-lettered after {LIMIT + 1} attempts" in (row.error or "")
    assert worker.stats.turns_failed == 2 and worker.stats.requeued == 0


def test_the_requeue_count_travels_in_the_message_only_when_set() -> None:
    assert "requeues" not in encode(JobMessage("j1", "u1", "s1", 1)).decode()
    assert decode(encode(JobMessage("j1", "u1", "s1", 1, requeues=3))).requeues == 3
