"""RabbitMQ for turn jobs (aio-pika, asyncio): the topology, publishing with confirms, consuming with a
reconnect loop of our own (docs/scale-out.md).

Topology (names start with ``prefix``, default ``coach``):

* exchange ``{p}.turns`` (direct, durable);
* queue ``{p}.turns`` (quorum, durable; ``x-delivery-limit``; dead-letters to ``{p}.dead``), bound with
  routing key ``turn``: every job is published here, persistent, with publisher confirms;
* exchange ``{p}.dead`` (fanout) and queue ``{p}.turns.dead`` (quorum): jobs the broker gave up on (a
  consumer died holding them more than the delivery limit allows); a worker consumes it and marks the
  job ``failed``;
* queue ``{p}.w.{worker_id}`` (classic, exclusive, auto-delete), bound with key ``w.{worker_id}``:
  hints for the worker that holds a session's lease. A hint is disposable: its loss costs latency only
  (the waiting worker re-sends it), never a turn.

Reconnecting: aio-pika's ``connect_robust`` re-creates channels after a broker restart, but consumers
are not always restored (a known failure mode), so :class:`AmqpBroker.consume_forever` uses plain
connections and, on every (re)connect, declares the topology and starts its consumers itself. A
message being handled when the connection drops cannot be acknowledged any more; the broker has
returned it to the queue by then, and its redelivery finds the job's state in PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from launcher.errors import LauncherError
from launcher.scaleout.jobs import JobMessage, decode, encode

__all__ = ["AmqpBroker", "Broker", "BrokerError", "BrokerTopology", "describe_url", "topology_of"]

log = logging.getLogger(__name__)

START_HINT = "rabbitmq-server -detached"
DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/"


class BrokerError(LauncherError):
    """RabbitMQ could not be reached, or refused a publish."""


def describe_url(url: str) -> str:
    """``amqp://user@host:port/vhost`` of ``url`` without its password."""
    try:
        from yarl import URL

        u = URL(url)
        user = f"{u.user}@" if u.user else ""
        return f"{u.scheme}://{user}{u.host}:{u.port or 5672}{u.path or '/'}"
    except Exception:
        return "(unparsable broker URL)"


_WHERE = "[broker] url / COACH_BROKER_URL / --broker"


def _vhost(url: str) -> str:
    """The AMQP virtual host of ``url``: its path without the leading slash, ``/`` when empty."""
    from yarl import URL

    try:
        return URL(url).path[1:] or "/"
    except ValueError:
        return "?"


def unreachable(url: str, exc: BaseException) -> BrokerError:
    """The error for a failed connect or publish, by what went wrong (the exception's type, not its text):
    login refused (``code="broker_login_refused"``), virtual host refused during the handshake
    (``broker_vhost_refused``), else not reachable (``broker_unreachable``, retryable), each with its fix."""
    from aiormq.exceptions import InvalidFrameError, ProbableAuthenticationError

    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200] or type(exc).__name__
    where = describe_url(url)
    if isinstance(exc, ProbableAuthenticationError):
        return BrokerError(
            f"RabbitMQ at {where} refused the login ({first}). Fix: correct the user and password in "
            f"{_WHERE}, or create the user (rabbitmqctl add_user USER PASSWORD)",
            code="broker_login_refused",
        )
    if isinstance(exc, InvalidFrameError):  # the broker closed the connection at Connection.Open: the vhost
        return BrokerError(
            f"RabbitMQ at {where} refused the virtual host {_vhost(url)!r} (it does not exist, or the user "
            f"may not use it). Fix: correct the vhost (the path) in {_WHERE}, or create it "
            "(rabbitmqctl add_vhost VHOST; rabbitmqctl set_permissions -p VHOST USER '.*' '.*' '.*')",
            code="broker_vhost_refused",
        )
    return BrokerError(
        f"cannot reach RabbitMQ at {where} ({first}). Fix: start it ({START_HINT}; "
        f"`rabbitmqctl await_startup` waits until it is up), or correct {_WHERE}",
        code="broker_unreachable",
        retryable=True,
    )


@dataclass(frozen=True)
class BrokerTopology:
    prefix: str = "coach"
    delivery_limit: int = 5

    @property
    def exchange(self) -> str:
        return f"{self.prefix}.turns"

    @property
    def queue(self) -> str:
        return f"{self.prefix}.turns"

    @property
    def dead_exchange(self) -> str:
        return f"{self.prefix}.dead"

    @property
    def dead_queue(self) -> str:
        return f"{self.prefix}.turns.dead"

    def worker_queue(self, worker_id: str) -> str:
        return f"{self.prefix}.w.{worker_id}"


def topology_of(config: Any) -> BrokerTopology:
    """The topology ``[broker] prefix`` / ``delivery_limit`` of a ``CoachConfig`` name (every front end and
    worker of a deployment must use the same)."""
    return BrokerTopology(prefix=config.broker.prefix, delivery_limit=config.broker.delivery_limit)


class Broker(Protocol):
    """What front ends and workers need of the broker."""

    async def check(self) -> None: ...

    async def publish(self, msg: JobMessage) -> None: ...

    async def hint(self, worker_id: str, msg: JobMessage) -> bool: ...

    async def queue_depth(self) -> int | None: ...

    async def close(self) -> None: ...


Handler = Callable[[JobMessage, Any], Awaitable[None]]
"""``handler(message, incoming)``; the handler acks ``incoming`` (``await incoming.ack()``) itself."""


class AmqpBroker:
    """One AMQP connection for publishing (opened on first use, re-opened after a drop) and, with
    :meth:`consume_forever`, a consuming connection that reconnects by itself."""

    def __init__(
        self,
        url: str,
        topology: BrokerTopology | None = None,
        *,
        connect_timeout_s: float = 5.0,
        name: str = "coach",
    ) -> None:
        self.url = url
        self.name = name  # the connections' connection_name (rabbitmqctl list_connections client_properties)
        self.topology = topology or BrokerTopology()
        self.connect_timeout_s = connect_timeout_s
        self._pub: Any = None
        self._pub_channel: Any = None
        self._pub_lock = asyncio.Lock()
        self.connected = asyncio.Event()
        self.reconnects = 0

    async def _connect(self) -> Any:
        import aio_pika

        try:
            return await aio_pika.connect(
                self.url, timeout=self.connect_timeout_s, client_properties={"connection_name": self.name}
            )
        except (TimeoutError, OSError, Exception) as exc:  # aiormq raises its own types too
            raise unreachable(self.url, exc) from None

    async def declare(self, channel: Any) -> tuple[Any, Any, Any]:
        """Declare the shared topology on ``channel``; returns (exchange, queue, dead queue). Raises
        BrokerError (``broker_topology_mismatch``) when a queue or exchange of that name exists with other
        arguments (another ``[broker] delivery_limit``, or another deployment's names)."""
        from aiormq.exceptions import ChannelPreconditionFailed

        try:
            return await self._declare(channel)
        except ChannelPreconditionFailed as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            t = self.topology
            raise BrokerError(
                f"RabbitMQ at {describe_url(self.url)} has {t.queue} (or its exchanges) with other settings "
                f"than this configuration ({' '.join(first.split())}). Fix: use the same [broker] delivery_limit "
                "as the deployment's other workers and front ends, or another [broker] prefix; or, with nothing "
                f"queued, delete the old queues (rabbitmqctl delete_queue {t.queue}; rabbitmqctl delete_queue "
                f"{t.dead_queue})",
                code="broker_topology_mismatch",
            ) from None

    async def _declare(self, channel: Any) -> tuple[Any, Any, Any]:
        import aio_pika

        t = self.topology
        ex = await channel.declare_exchange(t.exchange, aio_pika.ExchangeType.DIRECT, durable=True)
        dead_ex = await channel.declare_exchange(t.dead_exchange, aio_pika.ExchangeType.FANOUT, durable=True)
        queue = await channel.declare_queue(
            t.queue,
            durable=True,
            arguments={
                "x-queue-type": "quorum",
                "x-delivery-limit": t.delivery_limit,
                "x-dead-letter-exchange": t.dead_exchange,
            },
        )
        await queue.bind(ex, routing_key="turn")
        dead = await channel.declare_queue(t.dead_queue, durable=True, arguments={"x-queue-type": "quorum"})
        await dead.bind(dead_ex, routing_key="")
        return ex, queue, dead

    async def _publisher(self) -> Any:
        if (
            self._pub is None
            or self._pub.is_closed
            or self._pub_channel is None
            or self._pub_channel.is_closed
        ):
            if self._pub is not None:
                with contextlib.suppress(Exception):
                    await self._pub.close()
            self._pub = await self._connect()
            try:
                self._pub_channel = await self._pub.channel(publisher_confirms=True, on_return_raises=True)
                ex, _q, _d = await self.declare(self._pub_channel)
            except BaseException:  # close what was opened: a connection left open outlives the event loop
                with contextlib.suppress(Exception):
                    await self._pub.close()
                self._pub = None
                raise
            self._pub_exchange = ex
        return self._pub_exchange

    async def _send(
        self, body: bytes, routing_key: str, *, persistent: bool, message_id: str, mandatory: bool
    ) -> bool:
        import aio_pika
        from aiormq.exceptions import DeliveryError, PublishError

        async with self._pub_lock:
            for attempt in (1, 2):  # one retry on a fresh connection (the old one may have dropped)
                ex = await self._publisher()
                msg = aio_pika.Message(
                    body,
                    content_type="application/json",
                    message_id=message_id,
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT
                    if persistent
                    else aio_pika.DeliveryMode.NOT_PERSISTENT,
                )
                try:
                    await ex.publish(msg, routing_key=routing_key, mandatory=mandatory, timeout=10)
                    return True
                except PublishError:  # returned: no queue is bound to the routing key
                    return False
                except DeliveryError as exc:  # nacked by the broker
                    raise BrokerError(
                        f"RabbitMQ at {describe_url(self.url)} refused the message: {exc}"
                    ) from None
                except Exception as exc:
                    self._pub = None
                    if attempt == 2:
                        raise unreachable(self.url, exc) from None
        return False  # pragma: no cover

    async def check(self) -> None:
        """Connect and declare the topology now; raises BrokerError (which URL, how to start RabbitMQ)."""
        async with self._pub_lock:
            await self._publisher()

    async def publish(self, msg: JobMessage) -> None:
        """Publish a job to the shared queue, persistent, and wait for the broker's confirm."""
        if not await self._send(encode(msg), "turn", persistent=True, message_id=msg.job_id, mandatory=True):
            raise BrokerError(
                f"RabbitMQ at {describe_url(self.url)} routed job {msg.job_id} to no queue "
                f"(is {self.topology.queue} deleted?); it was not queued"
            )

    async def hint(self, worker_id: str, msg: JobMessage) -> bool:
        """Tell ``worker_id`` a job of a session it holds is waiting; False when it has no queue (gone)."""
        hint = JobMessage(msg.job_id, msg.user, msg.session, msg.seq, "hint")
        return await self._send(
            encode(hint), f"w.{worker_id}", persistent=False, message_id=msg.job_id, mandatory=True
        )

    async def queue_depth(self) -> int | None:
        """Messages ready in the shared queue (None when the broker cannot be asked)."""
        try:
            async with self._pub_lock:
                await self._publisher()
                ch = await self._pub.channel()
                try:
                    q = await ch.declare_queue(self.topology.queue, passive=True)
                    return int(q.declaration_result.message_count)
                finally:
                    await ch.close()
        except Exception:
            self._pub = None
            return None

    async def consume_forever(
        self,
        *,
        worker_id: str,
        prefetch: int,
        on_job: Handler,
        on_hint: Handler,
        on_dead: Handler,
        retry_s: float = 1.0,
    ) -> None:
        """Consume the shared queue (``prefetch`` unacked at most), this worker's hint queue and the
        dead-letter queue until cancelled, reconnecting (and re-declaring, re-consuming) after every drop.
        Handlers run as tasks; a handler's exception is logged, never stops consuming."""
        tasks: set[asyncio.Task[Any]] = set()
        warned = False
        try:
            while True:
                try:
                    conn = await self._connect()
                except BrokerError as exc:
                    if not warned:
                        log.warning("%s; retrying every %.0f s", exc, retry_s)
                        warned = True
                    await asyncio.sleep(retry_s)
                    continue
                warned = False
                closed = asyncio.Event()
                conn.close_callbacks.add(lambda *_a, ev=closed: ev.set())
                try:
                    jobs_ch = await conn.channel()
                    await jobs_ch.set_qos(prefetch_count=max(1, prefetch))
                    _ex, queue, _dead = await self.declare(jobs_ch)
                    hint_ch = await conn.channel()
                    await hint_ch.set_qos(prefetch_count=64)
                    hex_ = await self.declare(hint_ch)
                    hq = await hint_ch.declare_queue(
                        self.topology.worker_queue(worker_id), exclusive=True, auto_delete=True
                    )
                    await hq.bind(hex_[0], routing_key=f"w.{worker_id}")
                    dead_ch = await conn.channel()
                    await dead_ch.set_qos(prefetch_count=16)
                    _e2, _q2, dead = await self.declare(dead_ch)

                    def spawn(handler: Handler) -> Callable[[Any], Awaitable[None]]:
                        async def cb(incoming: Any) -> None:
                            try:
                                msg = decode(incoming.body)
                            except ValueError as exc:
                                log.warning("dropping a message that is not a turn job (%s)", exc)
                                with contextlib.suppress(Exception):
                                    await incoming.reject(requeue=False)
                                return
                            task = asyncio.ensure_future(_guarded(handler, msg, incoming))
                            tasks.add(task)
                            task.add_done_callback(tasks.discard)

                        return cb

                    await queue.consume(spawn(on_job), no_ack=False)
                    await hq.consume(spawn(on_hint), no_ack=False)
                    await dead.consume(spawn(on_dead), no_ack=False)
                    if self.reconnects or self.connected.is_set():
                        log.warning("reconnected to RabbitMQ at %s; consuming again", describe_url(self.url))
                    self.connected.set()
                    await closed.wait()
                    log.warning("the RabbitMQ connection to %s closed; reconnecting", describe_url(self.url))
                except Exception as exc:  # a channel error mid-declare: start over
                    log.warning("RabbitMQ channel error (%s); reconnecting", str(exc)[:200])
                finally:
                    self.connected.clear()
                    self.reconnects += 1
                    with contextlib.suppress(Exception):
                        await conn.close()
                await asyncio.sleep(min(retry_s, 0.5))
        finally:
            for t in list(tasks):
                t.cancel()

    async def close(self) -> None:
        if self._pub is not None:
            with contextlib.suppress(Exception):
                await self._pub.close()
            self._pub = None


async def _guarded(handler: Handler, msg: JobMessage, incoming: Any) -> None:
    try:
        await handler(msg, incoming)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception(
            "handling %s %s failed; returning it to the queue (its delivery count goes up)",
            msg.kind,
            msg.job_id,
        )
        await asyncio.sleep(1.0)  # no hot loop on a store that is down
        with contextlib.suppress(Exception):
            await incoming.nack(requeue=True)


async def ack(incoming: Any) -> bool:
    """Acknowledge; False when the channel it came on is gone (the broker has re-queued it)."""
    try:
        await incoming.ack()
        return True
    except Exception:
        return False
