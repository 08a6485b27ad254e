"""RabbitMQ for the scale-out tests: the test broker's URL, a unique name prefix per test (so runs never
see each other's queues), and its queues and exchanges deleted afterwards.

The broker is ``COACH_TEST_BROKER_URL`` (default ``amqp://guest:guest@127.0.0.1:5672/``). When it cannot
be reached, :func:`require_rabbitmq` skips the test with one line saying how to start it; under
``CI=true`` it fails instead (CI must run these tests), the rule ``testsupport.postgres`` applies to
PostgreSQL.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

__all__ = [
    "DEFAULT_TEST_BROKER_URL",
    "broker_problem",
    "delete_topology",
    "fresh_prefix",
    "require_rabbitmq",
    "test_broker_url",
]

DEFAULT_TEST_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672/"


def test_broker_url() -> str:
    return os.environ.get("COACH_TEST_BROKER_URL") or DEFAULT_TEST_BROKER_URL


@lru_cache(maxsize=4)
def broker_problem(url: str) -> str | None:
    """None when ``url``'s host accepts an AMQP connection, else one line saying how to start RabbitMQ."""
    import asyncio

    import aio_pika

    async def probe() -> None:
        conn = await aio_pika.connect(url, timeout=3)
        await conn.close()

    try:
        asyncio.run(probe())
    except (Exception, socket.error) as exc:  # noqa: UP024
        why = " ".join(str(exc).split())[:200] or type(exc).__name__
        return (
            f"RabbitMQ test skipped: no broker at {url.split('@')[-1]} ({why}); start it with "
            "`rabbitmq-server -detached` (then `rabbitmqctl await_startup`) or point COACH_TEST_BROKER_URL at one"
        )
    return None


def require_rabbitmq(url: str | None = None) -> str:
    """The test broker's URL; skips the calling test when it is unreachable (fails under CI=true)."""
    import pytest

    url = url or test_broker_url()
    problem = broker_problem(url)
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and RabbitMQ is required: {problem}")
        pytest.skip(problem)
    return url


def delete_topology(url: str, prefix: str) -> None:
    """Delete the queues and exchanges ``launcher.scaleout.broker`` declares under ``prefix``."""
    import asyncio
    import contextlib

    import aio_pika

    async def drop() -> None:
        conn = await aio_pika.connect(url, timeout=5)
        try:
            for q in (f"{prefix}.turns", f"{prefix}.turns.dead"):
                ch = await conn.channel()
                with contextlib.suppress(Exception):
                    await ch.queue_delete(q)
                with contextlib.suppress(Exception):
                    await ch.close()
            for ex in (f"{prefix}.turns", f"{prefix}.dead"):
                ch = await conn.channel()
                with contextlib.suppress(Exception):
                    await ch.exchange_delete(ex)
                with contextlib.suppress(Exception):
                    await ch.close()
        finally:
            await conn.close()

    with contextlib.suppress(Exception):
        asyncio.run(drop())


@contextmanager
def fresh_prefix(tag: str = "t") -> Iterator[tuple[str, str]]:
    """``(broker url, a unique prefix)``; the prefix's queues and exchanges are deleted on exit."""
    url = require_rabbitmq()
    prefix = f"test.{tag}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        yield url, prefix
    finally:
        delete_topology(url, prefix)
