"""The supervisor's turns, mirrored to a proxy that runs in another process (``coach serve``).

Warm agent processes send no ``x-coach-turn`` (their headers are fixed at start). The in-process proxy
reads the supervisor's :class:`~launcher.pipeline._turn_scope.TurnDirectory`; an external one keeps its own
table, filled through ``POST /coach/turns`` (``proxy._turns``). :class:`ProxyTurnMirror` is a
:class:`~launcher.pipeline._turn_scope.TurnListener`: each directory change is queued at once (never blocking
the supervisor) and a background task posts the queued changes, in order and batched, authenticated
with ``proxy.turn_control_token`` of the data directory's secret. The supervisor awaits
``TurnDirectory.synced()`` after opening a turn or arming an agent, so the proxy knows the turn before
the agent's first request (bounded by ``timeout_s``).

Failures never reach the turn: a proxy without the route (404: ``coach proxy`` without
``COACH_MCP_SECRET``, an older proxy) or one that refuses the token (another data directory's secret)
is reported once at warning level and no longer posted to; a connection error is logged and that batch
dropped. The cost of a failure is metering without a turn, as before.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

__all__ = ["ProxyTurnMirror", "mirror_for"]

log = logging.getLogger(__name__)

_WARN_EVERY_S = 60.0


class ProxyTurnMirror:
    """Posts turn-directory changes to ``proxy_url`` + ``/coach/turns``; run :meth:`run` in a task group.

    Args:
        proxy_url: the external proxy's base URL.
        secret: the scope secret both sides read (``mcp_server.mcp_secret`` of the data directory).
        timeout_s: the longest :meth:`synced` waits, and each post's HTTP timeout (seconds).
        transport: an httpx transport (tests).
    """

    def __init__(
        self,
        proxy_url: str,
        secret: str,
        *,
        timeout_s: float = 2.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        from proxy import CONTROL_TOKEN_HEADER, TURNS_PATH, turn_control_token

        self.url = proxy_url.rstrip("/") + TURNS_PATH
        self._headers = {CONTROL_TOKEN_HEADER: turn_control_token(secret)}
        self._timeout_s = timeout_s
        self._transport = transport
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []
        self._queued = 0  # changes queued so far
        self._done = 0  # changes posted or given up
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._stopping = False
        self.disabled: str | None = None  # why posting stopped for good
        self._last_warning = 0.0

    # -- TurnListener --------------------------------------------------------------------------

    def changed(self, op: str, user: str, session: str, turn: str, agents: tuple[str, ...]) -> None:
        """Queue one change (see ``TurnListener.changed``)."""
        with self._lock:
            if self.disabled is not None:
                return
            self._pending.append(
                {"op": op, "user": user, "session": session, "turn": turn, "agents": list(agents)}
            )
            self._queued += 1
        self._kick()

    async def synced(self) -> None:
        """Wait (at most ``timeout_s``) until the changes queued so far were posted or given up."""
        target = self._queued
        if self._loop is None or self.disabled is not None:
            return
        with anyio.move_on_after(self._timeout_s):
            async with self._progress:
                await self._progress.wait_for(lambda: self._done >= target or self.disabled is not None)

    # -- background task -----------------------------------------------------------------------

    def _kick(self) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        """Post what is queued, then make :meth:`run` return."""
        self._stopping = True
        self._kick()

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Post queued changes until :meth:`stop` (``task_status.started()`` once it listens)."""
        self._loop = asyncio.get_running_loop()
        async with httpx.AsyncClient(timeout=self._timeout_s, transport=self._transport) as client:
            task_status.started()
            if self._pending:
                self._wake.set()
            while True:
                await self._wake.wait()
                self._wake.clear()
                await self._post_pending(client)
                if self._stopping:
                    return

    async def _post_pending(self, client: httpx.AsyncClient) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            if self.disabled is None:
                resp = await client.post(self.url, json={"changes": batch}, headers=self._headers)
                self._check(resp)
        except httpx.HTTPError as exc:
            self._warn(
                f"cannot post turns to the proxy at {self.url} ({type(exc).__name__}); warm agents' model "
                "calls of those turns are metered without a turn"
            )
        finally:
            self._done += len(batch)
            async with self._progress:
                self._progress.notify_all()

    def _check(self, resp: httpx.Response) -> None:
        if resp.status_code < 400:
            return
        if resp.status_code in (401, 403, 404, 405):
            why = (
                "has no turn endpoint (serve it with coach serve, or coach proxy with COACH_MCP_SECRET set)"
                if resp.status_code in (404, 405)
                else "refused the turn token (it uses another data directory's secret or COACH_MCP_SECRET)"
            )
            with self._lock:
                self.disabled = why
                self._pending.clear()
            log.warning(
                "the proxy at %s %s: warm agents' model calls are metered without a turn", self.url, why
            )
            return
        self._warn(
            f"the proxy at {self.url} answered HTTP {resp.status_code} to a turn update; those turns are "
            "metered without a turn"
        )

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_warning >= _WARN_EVERY_S:
            self._last_warning = now
            log.warning("%s", message)


def mirror_for(proxy_url: str, data_dir: Path | None) -> ProxyTurnMirror | None:
    """A mirror to ``proxy_url`` signed with the data directory's secret (``COACH_MCP_SECRET``, else
    ``<data dir>/mcp_secret``), or None, with a warning, when there is none to sign with."""
    from mcp_server import McpServerError, mcp_secret

    secret: str | None = None
    try:
        secret = mcp_secret(data_dir, create=False) if data_dir is not None else None
    except McpServerError as exc:
        log.warning("%s", exc.message)
    if secret is None:
        log.warning(
            "no secret to sign turn updates for the proxy at %s (no COACH_MCP_SECRET, no mcp_secret in the "
            "data directory): warm agents' model calls are metered without a turn. Fix: run coach serve "
            "with the same data directory",
            proxy_url,
        )
        return None
    return ProxyTurnMirror(proxy_url, secret)
