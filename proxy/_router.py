"""Routing: model name / agent alias -> pool; replica choice; passive (connect failures) and active
(``GET /health``) health tracking.

Replica choice. A request with a session goes to the replica that ranks highest for that session by
rendezvous (highest-random-weight) hashing (Thaler and Ravishankar, "Using name-based mappings to
increase hit rates", IEEE/ACM ToN 1998): every replica URL gets the score ``blake2b(session, url)`` and
the highest score wins. The choice is a pure function of the session id and the pool's replica URLs,
with no per-process state, so every proxy (each ``coach worker`` has its own) sends a session to the
same model-server replica and the replica's prefix cache stays warm after a worker takes the session
over. The sessions spread evenly over the replicas. Fallback: when the top replica is unavailable
(marked down, failing ``/health``) or was already tried for this request, the next replica in the same
session's ranking is used, so only that replica's sessions move, and each to the same place on every
proxy; they come back when it is up again. Requests without a session go to the available replica with
the fewest outstanding requests (ties: fewest served).

Resolution order for a request: the agent policy's ``model_alias``, then an exact pool name or alias,
then an fnmatch alias pattern (``claude-*``), then ``default_model``; else ``not_found_error``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import time
from dataclasses import dataclass

import httpx

from .config import ModelPool, ProxyConfig
from .errors import NotFoundError


def rendezvous_score(session: str, url: str) -> int:
    """The rendezvous-hashing weight of replica ``url`` for ``session``: the first 8 bytes of
    ``blake2b(session NUL url)`` as an unsigned integer (the same on every machine and Python run)."""
    digest = hashlib.blake2b(f"{session}\0{url}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rank_replicas(session: str, urls: list[str]) -> list[str]:
    """``urls`` ordered by :func:`rendezvous_score` for ``session``, highest first (ties: by URL)."""
    return sorted(urls, key=lambda u: (-rendezvous_score(session, u), u))


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
        """Choose a replica (see the module docstring): with a session, the highest-ranked available one
        by rendezvous hashing; without, the available one with the fewest outstanding requests. Excluded
        and unavailable replicas are used only when nothing else is left."""
        now = time.monotonic()
        reps = self.replicas[pool]
        candidates = [r for r in reps if r.url not in exclude and r.available(now)]
        if not candidates:
            candidates = [r for r in reps if r.url not in exclude] or list(reps)
        if session:
            return min(candidates, key=lambda r: (-rendezvous_score(session, r.url), r.url))
        return min(candidates, key=lambda r: (r.outstanding, r.served))

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
