"""A small pool of started, idle ``claude`` processes, so a new session's first turn skips start-up.

Starting a Claude Code process (Node start-up, MCP connect) takes about a second of CPU on the
project's 2-core machine, six per new session: on a cold turn that is most of the orchestration
overhead, and it delays the Coach's first words. ``Supervisor.prewarm`` hides it when a chat opens
before the user types; the pool hides it for every new session of a long-running service: processes
are started ahead, one per agent (their system prompt, tools and limits are per agent, not per user),
and handed to the first session that needs that agent.

A process's identity is fixed when it starts (the ``x-coach-*`` headers for the proxy, the signed MCP
scope header), before any user is known. A pooled process therefore starts as user :data:`POOL_USER`
and a session id of its own (``p`` + 24 random hex digits), and is *bound* to the real user and session
when it is handed out (:class:`Bindings`, shared through the :class:`~launcher.pipeline._turn_scope.
TurnDirectory` like the turn itself): the in-process MCP server (``DirectoryScope``) and the in-process
proxy (``create_app(identity_for=...)``) translate the pool identity to the bound one. So:

* a process is handed out only if no one used it or its conversation was reset and the reset
  confirmed (``launcher.runner._reset``). Before it is pooled it connected, sent one fixed text with no
  user's data, as the pool user (:func:`warm_up`: answered by the proxy, so no model output and no tool
  call), and cleared its conversation (``/clear``; the proxy drops Claude Code's record of that command,
  ``proxy._local_commands``), so its first request for the session repeats nothing of that
  (``tests/e2e/test_pool_warm_up.py`` shows it with the real ``claude``); it carries no one's context;
* it is bound once, to one (user, session), and never rebound: when its session ends or it is replaced,
  it is stopped and its binding *revoked* (a late call from it acts as the pool user again) -- unless
  ``RunnerConfig.reuse_processes``: then ``launcher.runner._reset`` revokes the binding, resets the
  conversation (``/clear``), and only once that is confirmed releases it and returns the process here;
* an unbound pool identity can act for nobody: its scope is the pool user's, which owns no data and is
  never given a turn, so it can neither read nor write anyone's entries.

Size: at most one process per agent, and never more than the runner's free warm slots
(``RunnerConfig.max_warm`` counts pooled processes too) nor what the memory available allows
(:data:`PROCESS_RSS_MIB` each, keeping :data:`MEMORY_RESERVE_MIB` free). Refill happens off the
critical path: only once no agent has run for :data:`REFILL_IDLE_S` and no turn has been open meanwhile,
one process at a time (a turn between two steps, its Coach done and its specialists not yet started, runs
no agent, yet a start-up then would compete with the rest of that turn, and take the slot its Pineal is
about to use); an open turn holds the refill back for at most :data:`REFILL_OPEN_TURN_S` after an agent
last ran, so a busy service with some turn always open still refills.

Only with the in-process stack (``coach worker``, the Claude Code session mode, the benchmarks:
``launcher.pipeline._runtime.coach_runtime(pool=True)``): an external proxy or MCP server cannot
translate the pool identity, so the runner's pool stays off (``RunnerConfig.pool_size`` 0).
"""

from __future__ import annotations

import logging
import secrets
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MEMORY_RESERVE_MIB",
    "POOL_USER",
    "PROCESS_RSS_MIB",
    "Bindings",
    "FreshStarts",
    "PooledProcess",
    "bindings_for",
    "memory_room",
    "new_pool_session",
]

log = logging.getLogger(__name__)

POOL_USER = "_pool"
"""The user id pooled processes start with (owns no data; translated once bound)."""
PROCESS_RSS_MIB = 240
"""Resident memory of one idle agent process, in MiB: 235 MiB measured for a new ``claude`` 2.1.332
process (docs/scale-out.md, "Sessions per 24 GiB"; the issue's estimate was about 200), rounded up."""
MEMORY_RESERVE_MIB = 1024
"""Memory left free for everything else when sizing the pool."""


def new_pool_session() -> str:
    return "p" + secrets.token_hex(12)


def memory_room(rss_mib: int = PROCESS_RSS_MIB, reserve_mib: int = MEMORY_RESERVE_MIB) -> int:
    """How many more processes the available memory allows (``MemAvailable`` of /proc/meminfo; a
    platform without it: no limit from memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail_mib = int(line.split()[1]) // 1024
                    return max(0, (avail_mib - reserve_mib) // rss_mib)
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 16


class FreshStarts:
    """Pool sessions of reset processes whose next model request must start a conversation (one message):
    ``proxy.create_app(fresh_start=...)`` calls :meth:`take` with each request's identity headers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: set[str] = set()

    def mark(self, pool_session: str) -> None:
        with self._lock:
            self._pending.add(pool_session)

    def forget(self, pool_session: str) -> None:
        with self._lock:
            self._pending.discard(pool_session)

    def take(self, user: str, session: str) -> bool:
        """True once for a marked pool session (the request must carry one message), else False."""
        if user != POOL_USER:
            return False
        with self._lock:
            if session in self._pending:
                self._pending.discard(session)
                return True
        return False


class Bindings:
    """Pool session -> the (user, session) it was handed to; revoked once its process is stopped.
    ``fresh``: the pool sessions of reset processes whose next request must start a conversation.
    ``turns_open``: how many turns the directory has open now (the refill waits while any is: between
    two steps of a turn no agent may be running, yet the turn is not over)."""

    def __init__(self, turns_open: Callable[[], int] | None = None) -> None:
        self._lock = threading.Lock()
        self._bound: dict[str, tuple[str, str] | None] = {}
        self.fresh = FreshStarts()
        self.turns_open: Callable[[], int] = turns_open or (lambda: 0)

    def bind(self, pool_session: str, user: str, session: str) -> None:
        with self._lock:
            if pool_session in self._bound:
                raise ValueError("a pooled process is bound once")
            self._bound[pool_session] = (user, session)

    def revoke(self, pool_session: str) -> None:
        with self._lock:
            if pool_session in self._bound:
                self._bound[pool_session] = None

    def release(self, pool_session: str) -> None:
        """Forget a *revoked* pool session, so it can be bound again: only after its process's
        conversation was reset (``launcher.runner._reset``). Raises ValueError while it is bound."""
        with self._lock:
            if self._bound.get(pool_session) is not None:
                raise ValueError("revoke a pooled process's binding before releasing it")
            self._bound.pop(pool_session, None)

    def resolve(self, user: str, session: str) -> tuple[str, str]:
        """The identity a request with these headers acts for: the bound session of a pooled process,
        else unchanged (a pooled process not bound yet, or any more, stays the pool user: no data, no
        turn, so it can neither read nor write anyone's entries)."""
        if user != POOL_USER:
            return user, session
        with self._lock:
            return self._bound.get(session) or (user, session)


_BINDINGS: weakref.WeakKeyDictionary[Any, Bindings] = weakref.WeakKeyDictionary()
_BINDINGS_LOCK = threading.Lock()


def _open_turns_of(directory: Any) -> Callable[[], int]:
    """``directory.open_turns`` through a weak reference: the bindings are the value of a weak map keyed
    by the directory, and a bound method would keep its key alive for good."""
    method = weakref.WeakMethod(directory.open_turns)

    def open_turns() -> int:
        bound = method()
        return int(bound()) if bound is not None else 0

    return open_turns


def bindings_for(directory: Any) -> Bindings:
    """The :class:`Bindings` of a turn directory (shared by the runner, the MCP scope and the proxy)."""
    with _BINDINGS_LOCK:
        b = _BINDINGS.get(directory)
        if b is None:
            b = _BINDINGS[directory] = Bindings(_open_turns_of(directory))
        return b


@dataclass
class PooledProcess:
    """One started, idle, never-used process: its client, fingerprint and pool session."""

    client: Any
    fingerprint: str
    pool_session: str
    stderr: Any


IdentityFor = Callable[[str, str], tuple[str, str] | None]


WARM_UP_TEXT = "# Warm-up\nNo user yet: this message only warms the model server's prompt cache.\n"
"""The fixed first message of every pooled process (no user's data), sent before ``proxy.PREFILL_MARKER``."""
CLEAR_COMMAND = "/clear"
"""Claude Code's slash command that ends the conversation and starts an empty one in the same process."""


async def warm_up(client: Any) -> None:
    """Pay a started process's first-query cost now, as the pool user, and leave it with an empty
    conversation: send :data:`WARM_UP_TEXT` ending with ``proxy.PREFILL_MARKER`` (the proxy sends it
    upstream with ``max_tokens: 1``, which also caches the agent's prompt head on the model server, and
    answers locally), then :data:`CLEAR_COMMAND`. Claude Code's first query of a process costs it more
    CPU than any later one (measured here: 0.07-0.10 s against 0.03 s, and five pooled processes
    querying at once on a 2-core machine put the cold turn's requests at the model 0.3 s later than a
    warm turn's). Raises RuntimeError when either ends in an error result (the process is then not
    pooled), or the SDK's errors."""
    from claude_agent_sdk.types import ResultMessage

    from proxy import PREFILL_MARKER

    for text in (WARM_UP_TEXT + PREFILL_MARKER + "\n", CLEAR_COMMAND):
        await client.query(text)
        async for msg in client.receive_response():
            if isinstance(msg, ResultMessage) and msg.is_error:
                raise RuntimeError(f"warm-up ended with {msg.subtype}")


#: Seconds without an open turn or a running agent before the pool refills (a refill's start-up must not
#: compete with a turn that follows at once).
REFILL_IDLE_S = 2.0
#: Seconds since an agent last ran after which an open turn no longer holds the refill back (a turn
#: between two steps runs no agent for a moment; with many sessions some turn is nearly always open,
#: and the pool must still refill).
REFILL_OPEN_TURN_S = 10.0
_POLL_S = 0.25


class ProcessPool:
    """The runner's pool (see the module docstring); ``ClaudeAgentRunner.pool``. Off (size 0) unless
    ``RunnerConfig.pool_size`` > 0 and the runner was given the directory's :class:`Bindings`."""

    def __init__(self, runner: Any, bindings: Bindings | None) -> None:
        self._runner = runner
        self._bindings = bindings
        self._idle: dict[str, list[PooledProcess]] = {}
        self._templates: list[Any] = []
        self._bound: dict[int, str] = {}  # id(client) -> pool session, for processes handed out
        self._refill: Any = None
        self.started = 0
        self.handed_out = 0

    @property
    def size(self) -> int:
        cfg = self._runner.config
        if self._bindings is None or cfg.mcp_turn_header or cfg.max_warm <= 0 or cfg.seed_way:
            return 0
        return max(0, cfg.pool_size)

    def idle(self) -> int:
        return sum(len(v) for v in self._idle.values())

    def has_idle(self, inv: Any) -> bool:
        """Whether a started process of ``inv``'s agent (its settings) waits in the pool."""
        from launcher.runner._agent_runner import _fingerprint

        return bool(self._idle.get(_fingerprint(inv)))

    def evict_one(self, keep: str | None = None) -> PooledProcess | None:
        """Take one idle pooled process out of the pool (one of another agent than fingerprint ``keep``
        when there is one, the most recently started first) so that the caller stops it: the warm limit
        counts pooled processes too. None when the pool holds none. Its refill waits for room."""
        others = [procs for fingerprint, procs in self._idle.items() if fingerprint != keep and procs]
        procs = others[0] if others else self._idle.get(keep or "")
        return procs.pop() if procs else None

    def _missing(self) -> list[Any]:
        from launcher.runner._agent_runner import _fingerprint

        return [t for t in self._templates if not self._idle.get(_fingerprint(t))]

    def _room(self) -> int:
        runner = self._runner
        idle = self.idle()
        return min(self.size - idle, runner.config.max_warm - runner.warm_count() - idle, memory_room())

    async def fill(self, invocations: list[Any]) -> int:
        """Keep one started process for each of ``invocations`` (one per agent, settings only: see
        ``launcher.pipeline.supervisor.pool_invocations``), starting the missing ones now, at most two at once. Returns how many
        were started."""
        import anyio

        self._templates = list(invocations)[: self.size]
        started = 0
        limiter = anyio.CapacityLimiter(2)

        async def one(template: Any) -> None:
            nonlocal started
            async with limiter:
                if self._room() > 0 and await self._start(template):
                    started += 1

        async with anyio.create_task_group() as tg:
            for template in self._missing():
                tg.start_soon(one, template)
        return started

    async def fill_when_idle(self, invocations: list[Any]) -> int:
        """Like :meth:`fill`, but off every turn's critical path: one process at a time, each only after
        no agent has run and no turn has been open for :data:`REFILL_IDLE_S` (the refill's rule, in the
        module docstring), for a command whose first
        session may come at once (``launcher.pipeline._runtime.fill_pool``). Returns how many were
        started."""
        self._templates = list(invocations)[: self.size]
        before = self.started
        self._schedule_refill()
        if self._refill is not None:
            await self._refill
        return self.started - before

    async def _start(self, template: Any) -> bool:
        import dataclasses
        from collections import deque

        from claude_agent_sdk import ClaudeSDKClient

        from launcher.runner._agent_runner import _fingerprint
        from launcher.runner._claude_process import mcp_ready

        inv = dataclasses.replace(template, user=POOL_USER, session=new_pool_session())
        stderr: deque[str] = deque(maxlen=20)
        client = ClaudeSDKClient(self._runner.options(inv, one_shot=False, stderr=stderr.append))
        ok = False
        try:
            self.started += 1
            await client.connect()
            await mcp_ready(client)
            await warm_up(client)
            ok = True
        except Exception as exc:  # the SDK's ProcessError / CLIConnectionError, a failed warm-up
            log.warning("pool process for agent %s failed to start (%s)", inv.agent, type(exc).__name__)
        finally:
            if not ok:
                self._runner._stop_in_background(client, kill=True)
        if ok:
            self._idle.setdefault(_fingerprint(inv), []).append(
                PooledProcess(client, _fingerprint(inv), inv.session, stderr)
            )
        return ok

    def hand_out(self, inv: Any, entry: Any) -> bool:
        """Give ``entry`` (a warm entry being started for ``inv``'s user and session) a pooled process of
        that agent, bound to that user and session for good. False when there is none."""
        if self._bindings is None:
            return False
        from launcher.runner._agent_runner import _fingerprint

        procs = self._idle.get(_fingerprint(inv))
        if not procs:
            return False
        proc = procs.pop(0)
        self._bindings.bind(proc.pool_session, inv.user, inv.session)
        self._bound[id(proc.client)] = proc.pool_session
        entry.client, entry.pool_session, entry.stderr = proc.client, proc.pool_session, proc.stderr
        self.handed_out += 1
        self._schedule_refill()
        return True

    def revoke(self, client: Any) -> None:
        """The process of ``client`` is being stopped: its binding can no longer act for anyone."""
        session = self._bound.pop(id(client), None)
        if session is not None and self._bindings is not None:
            self._bindings.revoke(session)

    def _schedule_refill(self) -> None:
        import asyncio

        if self._refill is None or self._refill.done():
            self._refill = asyncio.get_running_loop().create_task(self._refill_when_idle())

    async def _refill_when_idle(self) -> None:
        import time

        import anyio

        idle_since = busy_since = time.monotonic()
        while self._missing() and self._room() > 0:
            now = time.monotonic()
            if self._runner.busy_count():
                idle_since = busy_since = now
            elif self._turn_between_steps() and now - busy_since < REFILL_OPEN_TURN_S:
                idle_since = now
            elif now - idle_since >= REFILL_IDLE_S:
                await self._start(self._missing()[0])
                idle_since = time.monotonic()
                continue
            await anyio.sleep(_POLL_S)

    def _turn_between_steps(self) -> bool:
        return self._bindings is not None and self._bindings.turns_open() > 0

    async def aclose(self) -> None:
        from launcher.runner._claude_process import disconnect

        if self._refill is not None:
            self._refill.cancel()
        procs = [p for v in self._idle.values() for p in v]
        self._idle.clear()
        for p in procs:
            await disconnect(p.client)
