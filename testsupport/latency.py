"""Latency models played by the scripted upstream (DESIGN.md, "Latency models for benchmarks").

These are *assumptions*, stated as such in DESIGN.md; every figure that uses one must print its name.

===========================  =========================================  ================  ============================
model                        time to first token (TTFT)                 decode, 1 stream  per stream, n concurrent
===========================  =========================================  ================  ============================
``qwen3-30b-a3b@2x4090``     0.05 s + uncached prompt tok / 4000 tok/s  120 tok/s         120 / (1 + 0.15 (n - 1))
``qwen3-235b-a22b@a40``      0.2 s + uncached prompt tok / 1500 tok/s   25 tok/s          25 / (1 + 0.10 (n - 1))
``instant``                  0                                          unlimited         unlimited
===========================  =========================================  ================  ============================

Cached prefix tokens cost a tenth of an uncached token in the prefill term.

Approximations (documented, deliberate):

* Tokens are fixed 4-character slices of the text (:data:`CHARS_PER_TOKEN`); ``approx_token_count``
  is ``ceil(len(text) / 4)``. Real Qwen3 BPE averages 3.5-4.5 chars/token on English prose and JSON.
* Prefix cache (:class:`PrefixCache`), like vLLM's automatic prefix caching: the prompt is cut into
  blocks of 16 tokens (64 characters); a block is cached when it and every block before it, byte for
  byte, belonged to a prompt seen in the last ``ttl_s`` seconds (default 300 s, real time, not scaled).
  Cached tokens = 16 x the number of leading cached blocks (a partial last block is never cached).
  Lookup is O(prompt length) via chained block hashes, so 70 KB prompts cost about a millisecond.
* Concurrency: ``n`` is the number of responses currently *decoding* on this server (prefill does not
  count). The rate is re-read before each chunk, so it changes as streams start and stop; a chunk is at
  most ``MIN_CHUNK_REAL_S`` long (or one token), so a change takes effect within a chunk.
* TTFT covers the first output token; the remaining ``N - 1`` tokens then decode at the stream's rate.
  So a response of N tokens alone takes ``ttft + (N - 1) / rate``.
* ``time_scale`` multiplies every modelled duration (0.01 => 100x faster). Benchmarks use 1.0.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import anyio

from .errors import UnknownLatencyModelError

__all__ = [
    "CHARS_PER_TOKEN",
    "INSTANT",
    "LATENCY_MODELS",
    "QWEN3_30B_2X4090",
    "QWEN3_235B_A40",
    "Admission",
    "LatencyModel",
    "LatencySimulator",
    "PrefixCache",
    "approx_token_count",
    "get_latency_model",
    "split_tokens",
]

CHARS_PER_TOKEN = 4
"""Characters per token of the cheap tokenizer (see module docstring)."""

MIN_CHUNK_REAL_S = 0.005
"""Shortest real-time pause between two emitted chunks; more tokens are grouped per chunk below it."""

INSTANT_CHUNK_TOKENS = 8
"""Tokens per chunk for the instant model (no pauses, but still several deltas per stream)."""


def approx_token_count(text: str) -> int:
    """Approximate token count of ``text``: ``ceil(len(text) / CHARS_PER_TOKEN)`` (0 for "")."""
    return -(-len(text) // CHARS_PER_TOKEN)


def split_tokens(text: str) -> list[str]:
    """Split ``text`` into approximate tokens (consecutive ``CHARS_PER_TOKEN``-character slices)."""
    return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]


@dataclass(frozen=True)
class LatencyModel:
    """A named model of a serving box's timings (formulas from DESIGN.md).

    Attributes:
        name: the name printed with every figure (e.g. ``"qwen3-30b-a3b@2x4090"``).
        ttft_base_s: fixed part of the time to first token, seconds.
        prefill_tokens_per_s: prompt tokens processed per second (``math.inf`` => free prefill).
        decode_tokens_per_s: output tokens per second for a single stream (``math.inf`` => instant).
        concurrency_penalty: k in ``rate(n) = decode / (1 + k (n - 1))``.
        cached_token_cost: cost of a cached prefix token relative to an uncached one (DESIGN.md: 0.1).
    """

    name: str
    ttft_base_s: float
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    concurrency_penalty: float
    cached_token_cost: float = 0.1

    def ttft_s(self, prompt_tokens: int, cached_tokens: int = 0) -> float:
        """Modelled time to first token in seconds for a prompt of ``prompt_tokens`` tokens, of which
        ``cached_tokens`` (clamped to ``[0, prompt_tokens]``) are a cached prefix."""
        cached = min(max(cached_tokens, 0), max(prompt_tokens, 0))
        uncached = max(prompt_tokens, 0) - cached
        if math.isinf(self.prefill_tokens_per_s):
            return self.ttft_base_s
        effective = uncached + self.cached_token_cost * cached
        return self.ttft_base_s + effective / self.prefill_tokens_per_s

    def decode_rate(self, concurrent_streams: int = 1) -> float:
        """Output tokens/s of one stream while ``concurrent_streams`` (>= 1) streams decode."""
        n = max(1, concurrent_streams)
        return self.decode_tokens_per_s / (1.0 + self.concurrency_penalty * (n - 1))

    def decode_s(self, output_tokens: int, concurrent_streams: int = 1) -> float:
        """Seconds to decode ``output_tokens`` after the first one, at a constant concurrency."""
        rate = self.decode_rate(concurrent_streams)
        if math.isinf(rate) or output_tokens <= 1:
            return 0.0
        return (output_tokens - 1) / rate

    def response_s(self, prompt_tokens: int, output_tokens: int, *, cached_tokens: int = 0) -> float:
        """Total modelled seconds of one response alone on the server: TTFT + decode."""
        return self.ttft_s(prompt_tokens, cached_tokens) + self.decode_s(output_tokens)


QWEN3_30B_2X4090 = LatencyModel(
    name="qwen3-30b-a3b@2x4090",
    ttft_base_s=0.05,
    prefill_tokens_per_s=4000.0,
    decode_tokens_per_s=120.0,
    concurrency_penalty=0.15,
)
"""The seed's development box (DESIGN.md)."""

QWEN3_235B_A40 = LatencyModel(
    name="qwen3-235b-a22b@a40",
    ttft_base_s=0.2,
    prefill_tokens_per_s=1500.0,
    decode_tokens_per_s=25.0,
    concurrency_penalty=0.10,
)
"""The seed's production pods (DESIGN.md)."""

INSTANT = LatencyModel(
    name="instant",
    ttft_base_s=0.0,
    prefill_tokens_per_s=math.inf,
    decode_tokens_per_s=math.inf,
    concurrency_penalty=0.0,
)
"""No modelled latency at all (functional tests)."""

LATENCY_MODELS: dict[str, LatencyModel] = {m.name: m for m in (QWEN3_30B_2X4090, QWEN3_235B_A40, INSTANT)}


def get_latency_model(model: str | LatencyModel) -> LatencyModel:
    """Return the named model (or ``model`` itself). Raises :class:`UnknownLatencyModelError`."""
    if isinstance(model, LatencyModel):
        return model
    try:
        return LATENCY_MODELS[model]
    except KeyError:
        known = ", ".join(sorted(LATENCY_MODELS))
        raise UnknownLatencyModelError(f"unknown latency model {model!r}; use one of: {known}") from None


class PrefixCache:
    """Recently seen prompt blocks, to price a new prompt's cached prefix (see module docstring).

    Args:
        ttl_s: how long a block stays cached after it was last seen, real seconds (DESIGN.md: "the last
            few minutes").
        max_blocks: most blocks kept (the least recently seen are dropped first past it).
        clock: monotonic clock in seconds (injectable for tests).
    """

    block_tokens = 16
    """Tokens per cache block (vLLM's default block size)."""

    def __init__(
        self,
        ttl_s: float = 300.0,
        max_blocks: int = 200_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_blocks = max_blocks
        self._clock = clock
        self._blocks: OrderedDict[int, float] = OrderedDict()

    def _chain(self, prompt: str) -> list[int]:
        size = self.block_tokens * CHARS_PER_TOKEN
        hashes: list[int] = []
        previous = 0
        for start in range(0, len(prompt) - size + 1, size):
            previous = hash((previous, prompt[start : start + size]))
            hashes.append(previous)
        return hashes

    def cached_tokens(self, prompt: str) -> int:
        """Tokens of ``prompt`` in leading blocks that repeat, byte for byte, a recently seen prompt."""
        cutoff = self._clock() - self.ttl_s
        blocks = 0
        for block_hash in self._chain(prompt):
            seen = self._blocks.get(block_hash)
            if seen is None or seen < cutoff:
                break
            blocks += 1
        return min(blocks * self.block_tokens, approx_token_count(prompt))

    def add(self, prompt: str) -> None:
        """Remember every full block of ``prompt`` as seen now."""
        now = self._clock()
        for block_hash in self._chain(prompt):
            self._blocks.pop(block_hash, None)
            self._blocks[block_hash] = now
        while len(self._blocks) > self.max_blocks:
            self._blocks.popitem(last=False)

    def clear(self) -> None:
        """Forget every block."""
        self._blocks.clear()


@dataclass(frozen=True)
class Admission:
    """The prefill accounting of one request: approximate tokens and the modelled TTFT (model seconds)."""

    prompt_tokens: int
    cached_tokens: int
    ttft_s: float


class LatencySimulator:
    """Plays one :class:`LatencyModel` for all requests of one server (single event loop).

    Args:
        model: a model or its name (see :data:`LATENCY_MODELS`).
        time_scale: real seconds per modelled second (0.01 => 100x faster; must be > 0).
        prefix_cache: shared prompt cache (a fresh 300 s cache by default).
    """

    def __init__(
        self,
        model: str | LatencyModel = INSTANT,
        *,
        time_scale: float = 1.0,
        prefix_cache: PrefixCache | None = None,
    ) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        self.model = get_latency_model(model)
        self.time_scale = time_scale
        self.prefix_cache = prefix_cache if prefix_cache is not None else PrefixCache()
        self.active_streams = 0
        self.peak_streams = 0

    def admit(self, prompt: str) -> Admission:
        """Price ``prompt`` against the prefix cache, then remember it. Returns the :class:`Admission`."""
        tokens = approx_token_count(prompt)
        cached = self.prefix_cache.cached_tokens(prompt)
        self.prefix_cache.add(prompt)
        return Admission(tokens, cached, self.model.ttft_s(tokens, cached))

    async def sleep_model(self, model_seconds: float) -> None:
        """Sleep ``model_seconds * time_scale`` real seconds (no-op for <= 0)."""
        if model_seconds > 0:
            await anyio.sleep(model_seconds * self.time_scale)

    async def prefill(self, admission: Admission) -> None:
        """Wait the admission's TTFT (scaled)."""
        await self.sleep_model(admission.ttft_s)

    def decoding(self) -> DecodeStream:
        """A context manager that counts one decoding stream; pace its output with ``.pace()``."""
        return DecodeStream(self)


class DecodeStream:
    """One response's decode phase. ``async with sim.decoding() as d: async for s in d.pace(tokens)``.

    The first token of the response is free (it is part of TTFT); each later token is due
    ``time_scale / rate(n)`` real seconds after the previous one, ``n`` read before each chunk.
    """

    def __init__(self, sim: LatencySimulator) -> None:
        self._sim = sim
        self._first = True
        self._due = 0.0
        self.tokens_emitted = 0

    async def __aenter__(self) -> DecodeStream:
        self._sim.active_streams += 1
        self._sim.peak_streams = max(self._sim.peak_streams, self._sim.active_streams)
        self._due = anyio.current_time()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._sim.active_streams -= 1

    async def pace(self, tokens: Sequence[str]) -> AsyncIterator[str]:
        """Yield ``tokens`` joined into chunks, each when its last token is due."""
        sim = self._sim
        i = 0
        while i < len(tokens):
            rate = sim.model.decode_rate(sim.active_streams)
            per_token = 0.0 if math.isinf(rate) else sim.time_scale / rate
            if per_token <= 0:
                k = INSTANT_CHUNK_TOKENS
            else:
                k = max(1, math.ceil(MIN_CHUNK_REAL_S / per_token))
            chunk = tokens[i : i + k]
            i += len(chunk)
            paid = len(chunk) - 1 if self._first else len(chunk)
            self._first = False
            self._due += paid * per_token
            delay = self._due - anyio.current_time()
            if delay > 0:
                await anyio.sleep(delay)
            self.tokens_emitted += len(chunk)
            yield "".join(chunk)
