"""Each replica's served context length, asked of the replica itself and cached, and the max_tokens cap
built from it.

Claude Code sends ``max_tokens`` up to 128000; a vLLM serving 32768 tokens answers 400 when prompt +
max_tokens does not fit. The proxy therefore learns each replica's limit:

1. ``GET /v1/models``, the entry whose ``id`` is the pool's upstream model (else the only entry): vLLM's
   ``max_model_len``, or llama-server's ``meta.n_ctx``, the context of one slot (``--ctx-size`` divided
   by ``--parallel``: what one request gets; ``meta.n_ctx_train``, the model's training context, is not
   what it serves and is not used);
2. else ``GET /props``: llama-server's ``default_generation_settings.n_ctx`` (the same slot context; older
   llama-server releases report it only here).

A limit (or "this replica tells none") is cached per replica URL for :data:`ANSWER_TTL_S`; a replica
that could not be asked (down, timeout, 5xx) is asked again after :data:`FAILURE_TTL_S`. Concurrent
requests share one lookup; a replica the router holds for down is not asked (its last known limit, if
any, still counts). A pool's limit is the smallest known limit of its replicas (a request may
fail over to any of them), combined with the configured ``context_window`` by taking the smaller
(a configured value can only lower the served one, which is a hard limit); ``max_output_tokens`` still
caps max_tokens on its own.

The cap (:func:`cap_max_tokens`) needs the prompt's size: when even an upper bound
(:func:`proxy._normalize.prompt_token_bound`) leaves room for the requested max_tokens nothing is
counted (no cost on the common path); otherwise the prompt is counted exactly by the replica's
``/tokenize`` (``proxy._tokens``: vLLM and llama-server both have it), falling back to the estimate
(which counts every non-ASCII character as a token) padded by 10%. An exactly counted prompt that
leaves no room is refused with a 400 ``prompt is too long: N tokens > M maximum`` (the message Claude
Code reacts to by compacting its conversation).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx

from ._normalize import Prepared, clamp_max_tokens, prompt_token_bound
from ._router import Router
from ._tokens import count_tokens
from .config import ModelPool
from .errors import InvalidRequestError

__all__ = ["ANSWER_TTL_S", "FAILURE_TTL_S", "ServedLimits", "cap_max_tokens", "served_limit_of"]

log = logging.getLogger("proxy.limits")

ANSWER_TTL_S = 600.0
"""Seconds an answered lookup is kept (a replica restarted with another context is seen within this)."""
FAILURE_TTL_S = 30.0
"""Seconds before a replica that could not be asked is asked again."""
LOOKUP_TIMEOUT_S = 5.0
EXACT_MARGIN_TOKENS = 8
"""Room kept free after an exactly counted prompt (a BOS token the count may leave out, rounding)."""


def _positive_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def served_limit_of(models: Any, props: Any, upstream_model: str) -> int | None:
    """The context length in a replica's ``/v1/models`` body (vLLM ``max_model_len``, llama-server
    ``meta.n_ctx``) or, when absent, its ``/props`` body (llama-server ``default_generation_settings.n_ctx``);
    None when neither tells one."""
    data = models.get("data") if isinstance(models, dict) else None
    if isinstance(data, list):
        entries = [e for e in data if isinstance(e, dict)]
        named = [e for e in entries if e.get("id") == upstream_model] or (
            entries if len(entries) == 1 else []
        )
        for e in named:
            meta = e.get("meta")
            n = _positive_int(e.get("max_model_len"))
            if n is None and isinstance(meta, dict):
                n = _positive_int(meta.get("n_ctx"))
            if n is not None:
                return n
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        if isinstance(settings, dict) and _positive_int(settings.get("n_ctx")) is not None:
            return int(settings["n_ctx"])
        return _positive_int(props.get("n_ctx"))
    return None


@dataclass
class _Entry:
    limit: int | None
    expires: float


class ServedLimits:
    """The per-replica cache of served context lengths (module docstring). Loop-local, like the router."""

    def __init__(self) -> None:
        self._cache: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def last(self, url: str) -> int | None:
        """The last limit learnt for replica ``url``, expired or not (None when never learnt)."""
        e = self._cache.get(url)
        return e.limit if e is not None else None

    async def _get_json(
        self, client: httpx.AsyncClient, url: str, headers: dict[str, str]
    ) -> tuple[bool, Any]:
        """(answered, body): answered is False when the replica could not be asked (retry soon)."""
        try:
            r = await client.get(url, headers=headers, timeout=LOOKUP_TIMEOUT_S)
        except httpx.HTTPError:
            return False, None
        if r.status_code >= 500:
            return False, None
        try:
            return True, r.json() if r.status_code == 200 else None
        except ValueError:
            return True, None

    async def _lookup(
        self, client: httpx.AsyncClient, url: str, pool: ModelPool, headers: dict[str, str]
    ) -> tuple[bool, int | None]:
        ok, models = await self._get_json(client, url + "/v1/models", headers)
        limit = served_limit_of(models, None, pool.upstream_name)
        if limit is not None or not ok:
            return ok, limit
        ok, props = await self._get_json(client, url + "/props", headers)
        return ok, served_limit_of(None, props, pool.upstream_name)

    async def limit(
        self, client: httpx.AsyncClient, url: str, pool: ModelPool, headers: dict[str, str]
    ) -> int | None:
        """The served context length of replica ``url`` (cached; one lookup at a time per replica)."""
        e = self._cache.get(url)
        if e is not None and e.expires > time.monotonic():
            return e.limit
        async with self._locks.setdefault(url, asyncio.Lock()):
            e = self._cache.get(url)
            if e is not None and e.expires > time.monotonic():
                return e.limit
            ok, limit = await self._lookup(client, url, pool, headers)
            self._cache[url] = _Entry(limit, time.monotonic() + (ANSWER_TTL_S if ok else FAILURE_TTL_S))
            if ok:
                log.info(
                    "replica %s serves a context of %s tokens", url, limit if limit is not None else "unknown"
                )
            return limit

    async def pool_limit(
        self, client: httpx.AsyncClient, router: Router, pool: ModelPool, headers: dict[str, str]
    ) -> int | None:
        """The smallest served limit among ``pool``'s replicas and its configured ``context_window``."""
        now = time.monotonic()
        replicas = router.replicas[pool.name]
        cached = [self._cache.get(r.url) for r in replicas]
        if all(e is not None and e.expires > now for e in cached):
            limits = [e.limit for e in cached if e is not None]
        else:  # a replica known to be down is not asked (a blackholed one would stall every lookup)
            limits = list(
                await asyncio.gather(
                    *(
                        self.limit(client, r.url, pool, headers)
                        if r.available(now)
                        else _none(self.last(r.url))
                        for r in replicas
                    )
                )
            )
        known = [n for n in limits if n is not None]
        if pool.context_window is not None:
            known.append(pool.context_window)
        return min(known) if known else None


async def _none(value: int | None) -> int | None:
    return value


async def cap_max_tokens(
    limits: ServedLimits,
    client: httpx.AsyncClient,
    router: Router,
    pool: ModelPool,
    p: Prepared,
    *,
    session: str | None,
    headers: dict[str, str],
    token_methods: dict[str, str],
    timeout_s: float,
) -> int:
    """``p.max_tokens`` capped by ``pool.max_output_tokens`` and by the room the pool's context leaves
    after the prompt (module docstring). Raises InvalidRequestError when an exactly counted prompt alone
    fills the context."""
    window = await limits.pool_limit(client, router, pool, headers)
    mt = min(p.max_tokens, pool.max_output_tokens) if pool.max_output_tokens is not None else p.max_tokens
    if window is None or prompt_token_bound(p) + mt <= window:
        return clamp_max_tokens(p, context_window=None, max_output_tokens=pool.max_output_tokens)
    replica = router.pick(pool.name, session)
    n, method = await count_tokens(client, pool, replica, p, token_methods, headers, timeout_s)
    if method == "estimate":  # the estimate padded by 10%
        return clamp_max_tokens(p, context_window=window, max_output_tokens=pool.max_output_tokens)
    if n + EXACT_MARGIN_TOKENS >= window:
        raise InvalidRequestError(
            f"prompt is too long: {n} tokens > {window - EXACT_MARGIN_TOKENS} maximum "
            f"(the context model {pool.name!r} serves, less {EXACT_MARGIN_TOKENS} tokens kept free "
            "for the reply); shorten or compact the conversation"
        )
    return clamp_max_tokens(
        p,
        context_window=window,
        max_output_tokens=pool.max_output_tokens,
        prompt_tokens=n + EXACT_MARGIN_TOKENS,
    )
