"""Whether a replica has a free slot now, asked of the replica and cached briefly: a prefill
(``proxy._prefill``) is sent upstream only when it can run *beside* the requests being served.

A prefill is worth its compute only if it overlaps other work. On a server with no free slot it queues
behind the requests already there, and the agent's real request (which waits for its own prefill, at most
``PREFILL_WAIT_S``) then waits for that queue too: on ``coach demo``'s one-slot llama-server the first
demo with prefills on started Pineal 65 s after the last specialist. So a prefill is skipped (answered
locally as always, nothing sent upstream) when the replica it would go to says it is full:

1. ``GET /slots`` (llama-server; on by default, off with ``--no-slots``): a JSON list, one object per slot,
   busy when ``is_processing`` is true (current releases) or ``state`` is not 0 (older ones: 0 idle,
   1 processing). Free when any slot is not busy.
2. else ``GET /metrics`` (Prometheus text): vLLM's ``vllm:num_requests_waiting`` (summed over its label
   sets) above 0 means its scheduler is full (requests wait for a place in the running batch), and
   llama-server's ``llamacpp:requests_deferred`` above 0 means every slot is taken (``--metrics``).
   Free when the gauge is 0.
3. a replica that tells neither is taken as free (a prefill is sent, as before this check).

An answer is cached per replica URL for :data:`ANSWER_TTL_S` (a turn's prefill comes once per turn; a
busy service's prefills share a lookup); a replica that tells nothing is asked again after
:data:`UNKNOWN_TTL_S`. Lookups are bounded by :data:`LOOKUP_TIMEOUT_S`, and a failed one counts as
"tells nothing" for :data:`ANSWER_TTL_S`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = [
    "ANSWER_TTL_S",
    "LOOKUP_TIMEOUT_S",
    "UNKNOWN_TTL_S",
    "FreeSlots",
    "free_in_metrics",
    "free_in_slots",
]

ANSWER_TTL_S = 1.0
"""Seconds a replica's answer is kept (long enough to share a lookup, short against a turn's seconds)."""
UNKNOWN_TTL_S = 600.0
"""Seconds before a replica that has neither ``/slots`` nor the gauges is asked again."""
LOOKUP_TIMEOUT_S = 0.5
"""The most one lookup may take: the prefill's local answer waits for it."""

_WAITING_GAUGES = ("vllm:num_requests_waiting", "llamacpp:requests_deferred")


def free_in_slots(body: Any) -> bool | None:
    """Whether llama-server's ``GET /slots`` body shows a slot not processing (None: not that shape)."""
    if not isinstance(body, list):
        return None
    slots = [s for s in body if isinstance(s, dict)]
    if not slots:
        return None
    known = False
    for s in slots:
        if isinstance(s.get("is_processing"), bool):
            known = True
            if not s["is_processing"]:
                return True
        elif isinstance(s.get("state"), int) and not isinstance(s.get("state"), bool):
            known = True
            if s["state"] == 0:
                return True
    return False if known else None


def free_in_metrics(text: str) -> bool | None:
    """Whether a Prometheus ``/metrics`` text shows nothing waiting (vLLM ``vllm:num_requests_waiting``,
    llama-server ``llamacpp:requests_deferred``; summed over label sets). None: neither gauge is there."""
    total: float | None = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name not in _WAITING_GAUGES:
            continue
        try:
            value = float(line.rsplit(" ", 1)[1])
        except (IndexError, ValueError):
            continue
        total = (total or 0.0) + value
    return None if total is None else total <= 0


@dataclass
class _Entry:
    free: bool | None
    expires: float


class FreeSlots:
    """The per-replica cache of "has a free slot" answers (module docstring). Loop-local."""

    def __init__(self) -> None:
        self._cache: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def _get(
        self, client: httpx.AsyncClient, url: str, headers: dict[str, str]
    ) -> tuple[bool, httpx.Response | None]:
        """(answered, the 200 response or None); answered is False when the replica could not be asked."""
        try:
            r = await client.get(url, headers=headers, timeout=LOOKUP_TIMEOUT_S)
        except httpx.HTTPError:
            return False, None
        return r.status_code < 500, r if r.status_code == 200 else None

    async def _lookup(
        self, client: httpx.AsyncClient, url: str, headers: dict[str, str]
    ) -> tuple[bool, bool | None]:
        """(answered, free): answered is False when neither endpoint could be asked."""
        ok_slots, r = await self._get(client, url + "/slots", headers)
        if r is not None:
            try:
                free = free_in_slots(r.json())
            except ValueError:
                free = None
            if free is not None:
                return True, free
        ok_metrics, r = await self._get(client, url + "/metrics", headers)
        return ok_slots or ok_metrics, free_in_metrics(r.text) if r is not None else None

    async def free(self, client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> bool | None:
        """Whether replica ``url`` has a free slot now: True, False, or None when it does not tell
        (cached; one lookup at a time per replica). Never raises for the replica's answers."""
        e = self._cache.get(url)
        if e is not None and e.expires > time.monotonic():
            return e.free
        async with self._locks.setdefault(url, asyncio.Lock()):
            e = self._cache.get(url)
            if e is not None and e.expires > time.monotonic():
                return e.free
            answered, free = await self._lookup(client, url, headers)
            ttl = UNKNOWN_TTL_S if answered and free is None else ANSWER_TTL_S
            self._cache[url] = _Entry(free, time.monotonic() + ttl)
            return free
