"""A stand-in ``coach worker`` for front-end tests: it consumes the real broker's turn queue and moves the
real job rows in PostgreSQL (lease, claim, turn id, Coach reply, done) the way the worker does, but runs
no agents: the reply and the synthesis are made from the job id. Front ends cannot tell the difference
(they only read the rows), and a test runs in seconds instead of minutes."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from blackboard._pg_jobs import TurnJobs
from blackboard._pg_lease import Leases
from launcher.scaleout.broker import AmqpBroker, BrokerTopology
from launcher.scaleout.jobs import JobMessage


def reply_of(job_id: str) -> str:
    return f"reply of {job_id}"


def synthesis_of(job_id: str) -> str:
    return f"synthesis of {job_id}"


class FakeWorker:
    """Runs in a thread with its own event loop; ``turns`` counts the jobs it finished."""

    def __init__(self, pg: Any, broker_url: str, prefix: str, *, worker_id: str = "fake") -> None:
        self.jobs = TurnJobs(pg.url, schema=pg.schema)
        self.leases = Leases(pg.url, schema=pg.schema, ttl_s=30)
        self.broker = AmqpBroker(broker_url, BrokerTopology(prefix=prefix), name="fake worker")
        self.worker_id = worker_id
        self.turns = 0
        self._loop = asyncio.new_event_loop()
        self._task: Any = None

    def _run_session(self, msg: JobMessage) -> None:
        lease = self.leases.acquire(msg.user, msg.session, self.worker_id)
        assert lease is not None
        for job in self.jobs.pending(msg.user, msg.session, msg.seq):
            claimed = self.jobs.claim(job.job_id, lease)
            turn = self.jobs.set_turn(job.job_id, lease, f"t{claimed.seq:06d}")
            self.jobs.record_coach_reply(job.job_id, lease, reply_of(job.job_id))
            doc = {
                "turn_id": turn,
                "coach_reply": reply_of(job.job_id),
                "synthesis": synthesis_of(job.job_id),
                "synthesis_source": "model",
                "degraded": False,
                "crisis_tier": 0,
                "agents": {},
            }
            import json

            self.jobs.finish(
                job.job_id,
                lease,
                result=json.dumps(doc),
                coach_reply=doc["coach_reply"],
                synthesis=doc["synthesis"],
            )
            self.turns += 1

    async def _on_job(self, msg: JobMessage, incoming: Any) -> None:
        await asyncio.to_thread(self._run_session, msg)
        await incoming.ack()

    async def _ignore(self, msg: JobMessage, incoming: Any) -> None:
        await incoming.ack()

    def __enter__(self) -> FakeWorker:
        threading.Thread(target=self._loop.run_forever, daemon=True).start()

        async def start() -> None:
            self._task = asyncio.ensure_future(
                self.broker.consume_forever(
                    worker_id=self.worker_id,
                    prefetch=1,
                    on_job=self._on_job,
                    on_hint=self._ignore,
                    on_dead=self._ignore,
                )
            )
            await asyncio.wait_for(self.broker.connected.wait(), 20)

        asyncio.run_coroutine_threadsafe(start(), self._loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            await self.broker.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self.jobs.close()
        self.leases.close()
