"""The broker layer against the real RabbitMQ: ids-only messages, confirmed publish, consuming, hints to a
worker's own queue, and errors that name the URL and how to start RabbitMQ."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from launcher.scaleout.broker import AmqpBroker, BrokerError, BrokerTopology
from launcher.scaleout.jobs import JobMessage, decode, encode
from testsupport.rabbitmq import fresh_prefix


def test_a_job_message_carries_ids_only_and_bad_ones_are_refused() -> None:
    msg = JobMessage("j1", "u1", "s1", 7)
    assert decode(encode(msg)) == msg
    assert set(__import__("json").loads(encode(msg))) == {"v", "job_id", "user", "session", "seq", "kind"}
    for bad in (
        b"not json",
        b'{"v": 2}',
        b'{"v": 1, "job_id": "../x", "user": "u", "session": "s", "seq": 1}',
    ):
        with pytest.raises(ValueError):
            decode(bad)


def test_an_unreachable_broker_names_the_url_without_its_password_and_the_fix() -> None:
    broker = AmqpBroker("amqp://guest:s3cret@127.0.0.1:1/", connect_timeout_s=2)
    with pytest.raises(BrokerError) as info:
        asyncio.run(broker.check())
    text = str(info.value)
    assert "amqp://guest@127.0.0.1:1/" in text and "s3cret" not in text
    assert "rabbitmq-server -detached" in text and "COACH_BROKER_URL" in text


def test_publish_consume_and_hint_on_the_real_broker() -> None:
    with fresh_prefix("broker") as (url, prefix):
        got: list[tuple[str, Any]] = []

        async def main() -> None:
            consumer = AmqpBroker(url, BrokerTopology(prefix=prefix, delivery_limit=2), name="test consumer")
            publisher = AmqpBroker(
                url, BrokerTopology(prefix=prefix, delivery_limit=2), name="test publisher"
            )
            done = asyncio.Event()

            async def on_job(msg: JobMessage, incoming: Any) -> None:
                got.append(("job", msg))
                await incoming.ack()
                assert await publisher.hint("w-test", msg), "the worker's hint queue exists"

            async def on_hint(msg: JobMessage, incoming: Any) -> None:
                got.append(("hint", msg))
                await incoming.ack()
                done.set()

            async def on_dead(msg: JobMessage, incoming: Any) -> None:
                await incoming.ack()

            task = asyncio.ensure_future(
                consumer.consume_forever(
                    worker_id="w-test", prefetch=1, on_job=on_job, on_hint=on_hint, on_dead=on_dead
                )
            )
            await asyncio.wait_for(consumer.connected.wait(), 20)
            await publisher.publish(JobMessage("j1", "u1", "s1", 1))
            await asyncio.wait_for(done.wait(), 20)
            assert not await publisher.hint("w-nobody", JobMessage("j1", "u1", "s1", 1)), (
                "no such worker: False"
            )
            assert await publisher.queue_depth() == 0
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await publisher.close()

        asyncio.run(main())
    assert [k for k, _ in got] == ["job", "hint"]
    assert got[1][1].kind == "hint" and got[1][1].job_id == "j1"
