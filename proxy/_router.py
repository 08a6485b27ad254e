"""Routing: model name / agent alias -> pool; replica choice by least outstanding requests with session
affinity; passive (connect failures) and active (``GET /health``) health tracking.

Resolution order for a request: the agent policy's ``model_alias``, then an exact pool name or alias,
then an fnmatch alias pattern (``claude-*``), then ``default_model``; else ``not_found_error``.
"""

from __future__ import annotations

import fnmatch
import time
from collections import OrderedDict
from dataclasses import dataclass

import httpx

from .config import ModelPool, ProxyConfig
from .errors import NotFoundError

_AFFINITY_MAX = 10_000


@dataclass
class Replica:
    """One upstream base URL of a pool. ``outstanding``: requests in flight through it."""

    pool: str
    url: str
    outstanding: int = 0
    healthy: bool = True
    down_until: float = 0.0
    served: int = 0

    def available(self, now: float) -> bool:
        return self.healthy and now >= self.down_until


class Router:
    """Holds the pools and replicas of a :class:`ProxyConfig`; all methods are loop-local (no locks)."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.pools: dict[str, ModelPool] = {p.name: p for p in config.models}
        self.replicas: dict[str, list[Replica]] = {
            p.name: [Replica(p.name, url) for url in p.replicas] for p in config.models
        }
        self._affinity: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._rr = 0

    def resolve(self, model: str, alias: str | None = None) -> ModelPool:
        """The pool serving ``model`` (or the agent's ``alias``). Raises NotFoundError."""
        for name in ([alias] if alias else []) + [model]:
            if name in self.pools:
                return self.pools[name]
            for pool in self.config.models:
                if name in pool.aliases:
                    return pool
            for pool in self.config.models:
                if any(
                    fnmatch.fnmatchcase(name, pat) for pat in pool.aliases if any(c in pat for c in "*?[")
                ):
                    return pool
        if self.config.default_model:
            return self.pools[self.config.default_model]
        known = sorted(
            {p.name for p in self.config.models} | {a for p in self.config.models for a in p.aliases}
        )
        raise NotFoundError(f"model {model!r} is not served by this proxy; known models: {known}")

    def pick(
        self, pool: str, session: str | None, exclude: set[str] | frozenset[str] = frozenset()
    ) -> Replica:
        """Choose a replica: the session's previous one while it is available, else the available one
        with the fewest outstanding requests (ties: fewest served). Excluded and unavailable replicas
        are used only when nothing else is left."""
        now = time.monotonic()
        reps = self.replicas[pool]
        candidates = [r for r in reps if r.url not in exclude and r.available(now)]
        if not candidates:
            candidates = [r for r in reps if r.url not in exclude] or list(reps)
        if session:
            url = self._affinity.get((pool, session))
            for r in candidates:
                if r.url == url:
                    self._affinity.move_to_end((pool, session))
                    return r
        best = min(candidates, key=lambda r: (r.outstanding, r.served))
        if session:
            self._affinity[(pool, session)] = best.url
            self._affinity.move_to_end((pool, session))
            while len(self._affinity) > _AFFINITY_MAX:
                self._affinity.popitem(last=False)
        return best

    def mark_down(self, replica: Replica) -> None:
        """Passive health: skip this replica for ``unhealthy_cooldown_s``."""
        replica.down_until = time.monotonic() + self.config.unhealthy_cooldown_s

    def mark_up(self, replica: Replica) -> None:
        replica.down_until = 0.0
        replica.healthy = True

    def all_replicas(self) -> list[Replica]:
        return [r for reps in self.replicas.values() for r in reps]

    async def check_health(self, client: httpx.AsyncClient) -> None:
        """Active health check of every replica: ``GET {url}/health``; any answer below 500 is healthy,
        a connection failure, timeout or 5xx is not."""
        for r in self.all_replicas():
            try:
                resp = await client.get(r.url + "/health", timeout=self.config.connect_timeout_s)
                r.healthy = resp.status_code < 500
            except httpx.HTTPError:
                r.healthy = False
            if r.healthy:
                r.down_until = min(r.down_until, time.monotonic())
