"""Latency models: formulas from DESIGN.md, the played timings, prefix caching and concurrency."""

from __future__ import annotations

import math
import time

import anyio
import pytest

from testsupport import (
    INSTANT,
    LATENCY_MODELS,
    QWEN3_30B_2X4090,
    QWEN3_235B_A40,
    LatencySimulator,
    PrefixCache,
    UnknownLatencyModelError,
    approx_token_count,
    get_latency_model,
)
from testsupport.latency import split_tokens


def _close(measured: float, expected: float, *, rel: float = 0.5, abs_s: float = 0.1) -> bool:
    """Timing tolerance: never faster than the model (minus timer slack), a bit slower allowed (2 shared cores)."""
    return expected - 0.01 <= measured <= expected * (1 + rel) + abs_s


def test_named_models_match_design_formulas() -> None:
    assert set(LATENCY_MODELS) == {"qwen3-30b-a3b@2x4090", "qwen3-235b-a22b@a40", "instant"}
    m = QWEN3_30B_2X4090
    assert m.ttft_s(4000) == pytest.approx(0.05 + 1.0)
    assert m.ttft_s(4000, cached_tokens=4000) == pytest.approx(0.05 + 0.1)
    assert m.ttft_s(4000, cached_tokens=2000) == pytest.approx(0.05 + 0.5 + 0.05)
    assert m.decode_rate(1) == pytest.approx(120)
    assert m.decode_rate(5) == pytest.approx(120 / 1.6)
    b = QWEN3_235B_A40
    assert b.ttft_s(1500) == pytest.approx(0.2 + 1.0)
    assert b.ttft_s(1500, cached_tokens=1500) == pytest.approx(0.2 + 0.1)
    assert b.decode_rate(1) == pytest.approx(25)
    assert b.decode_rate(6) == pytest.approx(25 / 1.5)
    assert b.response_s(1500, 26) == pytest.approx(1.2 + 1.0)
    assert INSTANT.ttft_s(10**6) == 0 and math.isinf(INSTANT.decode_rate(50))


def test_unknown_model_name_is_a_clear_error() -> None:
    with pytest.raises(UnknownLatencyModelError) as info:
        get_latency_model("gpt-9")
    assert "qwen3-30b-a3b@2x4090" in str(info.value) and info.value.code == "unknown_latency_model"


def test_cheap_tokenizer() -> None:
    assert approx_token_count("") == 0
    assert approx_token_count("abcd") == 1
    assert approx_token_count("abcde") == 2
    assert "".join(split_tokens("hello world!")) == "hello world!"


def test_prefix_cache_counts_repeated_prefix_blocks_and_expires() -> None:
    now = [0.0]
    cache = PrefixCache(ttl_s=300, clock=lambda: now[0])
    shared = "S" * 640  # 10 blocks of 16 tokens
    assert cache.cached_tokens(shared + "first question") == 0
    cache.add(shared + "first question")
    assert cache.cached_tokens(shared + "second question") == 160
    assert cache.cached_tokens(shared[:100] + "different") == 16  # only whole leading blocks
    assert cache.cached_tokens("X" + shared) == 0  # byte for byte *from the start*
    now[0] = 200.0
    cache.add(shared[:64])  # refreshes the first block only
    now[0] = 301.0
    assert cache.cached_tokens(shared + "second question") == 16
    now[0] = 600.0
    assert cache.cached_tokens(shared + "second question") == 0


def test_prefix_cache_lookup_is_fast_for_large_prompts() -> None:
    cache = PrefixCache()
    base = "tool schema and system prompt text " * 2000  # 70 KB
    for i in range(50):
        cache.add(base + f"message {i}")
    start = time.perf_counter()
    cached = cache.cached_tokens(base + "new message")
    assert time.perf_counter() - start < 0.1  # one pass over the prompt, no scan of stored prompts
    assert cached == len(base) // 64 * 16


async def _timed_response(sim: LatencySimulator, prompt: str, output_tokens: int) -> tuple[float, float]:
    """(ttft, total) in real seconds of one response played by ``sim``."""
    start = anyio.current_time()
    adm = sim.admit(prompt)
    await sim.prefill(adm)
    first: float | None = None
    async with sim.decoding() as d:
        async for _ in d.pace(["tok."] * output_tokens):
            if first is None:
                first = anyio.current_time() - start
    assert first is not None
    return first, anyio.current_time() - start


@pytest.mark.anyio
async def test_played_ttft_and_decode_match_the_formulas() -> None:
    scale = 0.1
    sim = LatencySimulator("qwen3-235b-a22b@a40", time_scale=scale)
    prompt = "p" * 6000  # 1500 tokens => TTFT 0.2 + 1.0 = 1.2 model s
    ttft, total = await _timed_response(sim, prompt, 51)  # 50 tokens after the first at 25 tok/s = 2.0 s
    assert _close(ttft, 1.2 * scale), ttft
    assert _close(total - ttft, 2.0 * scale), total - ttft


@pytest.mark.anyio
async def test_cached_prefix_is_cheaper() -> None:
    scale = 0.2
    sim = LatencySimulator(QWEN3_30B_2X4090, time_scale=scale)
    shared = "s" * 16000  # 4000 tokens
    cold, _ = await _timed_response(sim, shared + "question one", 1)
    warm, _ = await _timed_response(sim, shared + "question two", 1)
    assert _close(cold, QWEN3_30B_2X4090.ttft_s(4003) * scale)
    assert _close(warm, QWEN3_30B_2X4090.ttft_s(4003, 4000) * scale)
    assert warm < QWEN3_30B_2X4090.ttft_s(4003) * scale / 2 < cold


@pytest.mark.anyio
async def test_concurrent_streams_are_slower_per_stream() -> None:
    scale = 0.25
    model = QWEN3_30B_2X4090
    sim = LatencySimulator(model, time_scale=scale)
    tokens = 121  # 120 after the first: 1 s alone at 120 tok/s
    _, alone = await _timed_response(sim, "a", tokens)
    assert _close(alone, model.decode_s(tokens) * scale)

    durations: list[float] = []

    async def one(i: int) -> None:
        _, total = await _timed_response(sim, f"prompt {i}", tokens)
        durations.append(total)

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
    assert sim.peak_streams == 4
    expected = model.decode_s(tokens, concurrent_streams=4) * scale  # 120 / 1.45 tok/s
    for d in durations:
        assert _close(d, expected), (d, expected)  # at least 1.45x the single-stream time


@pytest.mark.anyio
async def test_rate_recomputed_when_a_stream_stops() -> None:
    """A long stream speeds up once a short concurrent stream finishes."""
    scale = 0.25
    model = QWEN3_30B_2X4090
    sim = LatencySimulator(model, time_scale=scale)
    results: dict[str, float] = {}

    async def run(name: str, n: int) -> None:
        _, results[name] = await _timed_response(sim, name, n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "long", 121)
        tg.start_soon(run, "short", 31)
    # short: 30 tokens at rate(2); long: the same 30 at rate(2), then 90 at rate(1).
    both = 30 / model.decode_rate(2)
    expected_long = (both + 90 / model.decode_rate(1)) * scale
    assert _close(results["short"], both * scale)
    assert _close(results["long"], expected_long)


@pytest.mark.anyio
async def test_instant_model_does_not_wait() -> None:
    sim = LatencySimulator(INSTANT)
    with anyio.fail_after(0.5):
        _, total = await _timed_response(sim, "x" * 100000, 2000)
    assert total < 0.5


def test_time_scale_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LatencySimulator(INSTANT, time_scale=0)
