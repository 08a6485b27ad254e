"""``coach worker``: a long-running process that runs turn jobs from RabbitMQ (docs/scale-out.md).

It starts the same stack as ``coach run`` (the proxy and the MCP server in-process, real ``claude``
agents, the Supervisor) against the PostgreSQL blackboard (``[data] url`` is required), then consumes
the shared turn queue with a prefetch of ``--sessions`` (its warm-session capacity; six warm ``claude``
processes per session, and a pool of started, warmed-up idle ones for the next new session:
``launcher.pipeline._runtime.coach_runtime(pool=True)``), runs each job (``launcher.scaleout.worker``)
and acknowledges it only once the job's row in PostgreSQL says ``done``. Several workers, on one or many
machines, share the queue.

``GET /metrics`` (``--metrics-port``, default ``[broker] metrics_port``) reports sessions held, warm
processes, queue depth and turn latency. SIGTERM or Ctrl-C stops it: its sessions' leases are released
(another worker takes them at once) and turns in flight are delivered again by the broker and resumed
elsewhere. Exit codes: 0 stopped by a signal, 2 bad configuration (no PostgreSQL, no broker URL, bad
agent files), 1 the broker or the database cannot be reached at start (the message says how to start it).
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Annotated, Any

import typer

from launcher.cli._common import (
    ConfigOpt,
    Terminated,
    broker_url_or_exit,
    fail,
    load_config_or_exit,
    run_async,
)

__all__ = ["READY_PREFIX", "worker_cmd"]

#: First words of the line printed once the worker consumes (tests and scripts wait for it).
READY_PREFIX = "coach worker: ready"
#: What --worker-id may be: it goes into a RabbitMQ queue name and the leases' holder column.
_WORKER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def worker_cmd(
    config_path: ConfigOpt = None,
    broker: Annotated[
        str | None, typer.Option("--broker", help="RabbitMQ URL (default \\[broker] url / COACH_BROKER_URL)")
    ] = None,
    sessions: Annotated[
        int | None,
        typer.Option(
            "--sessions",
            help="warm sessions kept and run at once; also the prefetch (default \\[broker] sessions)",
        ),
    ] = None,
    lease_ttl: Annotated[
        float | None,
        typer.Option(
            "--lease-ttl",
            help="seconds a dead worker's sessions wait before another takes them (default \\[broker] lease_ttl_s)",
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port", help="port of GET /metrics (0 = any free; default \\[broker] metrics_port)"
        ),
    ] = None,
    worker_id: Annotated[
        str | None, typer.Option("--worker-id", help="this worker's id (default host-pid-random)")
    ] = None,
) -> None:
    """Run turn jobs from RabbitMQ with the six agents (PostgreSQL holds the state; idle agent processes
    wait ready for new sessions)."""
    config = load_config_or_exit(config_path)
    bcfg = config.broker
    url = broker_url_or_exit(broker, config)
    if not url:
        fail(
            "error: coach worker needs a RabbitMQ URL: pass --broker amqp://guest:guest@127.0.0.1:5672/ or set "
            "[broker] url / COACH_BROKER_URL (start RabbitMQ with: rabbitmq-server -detached)"
        )
    if not config.data.url:
        fail(
            "error: coach worker needs the PostgreSQL blackboard (several workers share it): set [data] url or "
            "COACH_DATABASE_URL, e.g. postgresql://postgres@127.0.0.1:5432/coachboard (docs/postgresql.md)"
        )
    n = sessions if sessions is not None else bcfg.sessions
    if not 1 <= n <= 64:
        fail(f"error: --sessions must be 1-64, got {n}")
    ttl = lease_ttl if lease_ttl is not None else bcfg.lease_ttl_s
    if not 0.5 < ttl <= 3600:  # the bounds of [broker] lease_ttl_s
        fail(f"error: --lease-ttl must be seconds > 0.5 and at most 3600, got {ttl:g}")
    port = metrics_port if metrics_port is not None else bcfg.metrics_port
    if not 0 <= port <= 65535:
        fail(f"error: --metrics-port must be 0-65535 (0 = any free port), got {port}")
    if worker_id is not None and not _WORKER_ID.fullmatch(worker_id):
        fail(
            f"error: --worker-id {worker_id!r} is not a usable id (it names this worker's queue and "
            "its leases): use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    _quiet_logging()
    _warn_if_too_many(n, reuse=config.agents.reuse_processes)
    _run(config, url, n, ttl, port, worker_id)


def _warn_if_too_many(sessions: int, *, reuse: bool) -> None:
    """A warning on stderr when ``sessions`` warm sessions would not fit in the memory available now."""
    from launcher.scaleout.capacity import mem_available_mib, sessions_that_fit

    avail = mem_available_mib()
    if avail is None:
        return
    fit = sessions_that_fit(avail, reuse=reuse)
    if sessions > fit:
        typer.echo(
            f"coach worker: warning: --sessions {sessions} may not fit: {avail} MiB available holds about "
            f"{fit} warm sessions (docs/scale-out.md, 'Capacity per node'); lower --sessions or add memory",
            err=True,
        )


def _quiet_logging() -> None:
    """INFO lines on stderr; the HTTP, MCP and AMQP libraries' own lines only when they matter."""
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("httpx", "mcp", "uvicorn"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for noisy in (
        "aiormq",
        "aio_pika",
    ):  # their connection errors are reported by our own lines, with the fix
        logging.getLogger(noisy).setLevel(logging.CRITICAL)


def _run(config: Any, url: str, n: int, ttl: float, port: int, worker_id: str | None) -> None:
    """The worker until a signal; the exit codes of the module docstring."""
    try:
        run_async(_main, config, url, n, ttl, port, worker_id, sigterm=True)
    except KeyboardInterrupt:
        typer.echo(
            "coach worker: interrupted; leases released, turns in flight go back to the queue", err=True
        )
    except Terminated:
        typer.echo(
            "coach worker: terminated (SIGTERM); leases released, turns in flight go back to the queue",
            err=True,
        )
    except Exception as exc:
        from blackboard import BlackboardError
        from launcher.agents import AgentSpecError
        from launcher.errors import LauncherError

        if isinstance(exc, (LauncherError, BlackboardError, AgentSpecError)):
            fail(f"error: {exc}", 2 if isinstance(exc, AgentSpecError) else 1)
        raise


async def _main(config: Any, url: str, sessions: int, ttl: float, port: int, worker_id: str | None) -> None:
    import anyio

    from blackboard._pg_jobs import TurnJobs
    from blackboard._pg_lease import Leases
    from launcher.cli._listen import Setting, bind, serve_app
    from launcher.pipeline._runtime import coach_runtime
    from launcher.scaleout.broker import AmqpBroker, describe_url, topology_of
    from launcher.scaleout.metrics import metrics_app
    from launcher.scaleout.worker import Worker, new_worker_id

    worker_id = worker_id or new_worker_id()
    bcfg = config.broker
    topology = topology_of(config)
    amqp = AmqpBroker(url, topology, name=f"coach worker {worker_id}")
    await amqp.check()  # BrokerError: which URL, how to start RabbitMQ
    jobs: Any = None
    leases: Any = None
    warm = config.agents.model_copy(update={"warm_process_limit": min(64, 6 * sessions)})
    cfg = config.model_copy(update={"agents": warm})
    try:  # whatever fails from here (PostgreSQL unreachable...), the broker's connection is closed first
        jobs = await anyio.to_thread.run_sync(lambda: TurnJobs(config.data.url, schema=config.data.db_schema))
        leases = Leases(config.data.url, schema=config.data.db_schema, ttl_s=ttl)
        # new sessions keep coming: started idle processes wait for them (the process pool)
        async with coach_runtime(cfg, pool=True) as rt, anyio.create_task_group() as tg:
            worker = Worker(
                rt.supervisor,
                jobs,
                leases,
                amqp,
                capacity=sessions,
                worker_id=worker_id,
                close_session=rt.runner.close_session,
            )
            metrics_url = "off"
            if port >= 0:
                host = bcfg.metrics_host
                where = Setting("--metrics-port", "[broker] metrics_port", "[broker] metrics_host")
                sock = bind(host, port, "/metrics", where, backlog=128)
                bound = sock.getsockname()[1]
                await serve_app(
                    tg, metrics_app(worker, rt.runner, amqp), sock, "metrics server", lifespan="off"
                )
                metrics_url = f"http://{host}:{bound}/metrics"

            def ready() -> None:
                typer.echo(
                    f"{READY_PREFIX}: id={worker.worker_id} broker={describe_url(url)} queue={topology.queue} "
                    f"sessions={sessions} lease_ttl_s={ttl:g} metrics={metrics_url}"
                )
                sys.stdout.flush()

            try:
                await worker.run(ready=ready)
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await worker.release_all()
                tg.cancel_scope.cancel()
    finally:
        for store in (jobs, leases):
            if store is not None:
                store.close()
        with anyio.CancelScope(shield=True), anyio.move_on_after(3):
            await amqp.close()
