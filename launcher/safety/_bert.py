"""The BERT encoder forward pass of all-MiniLM-L6-v2 in numpy float32 (used by :mod:`._encoder`).

Several token sequences ("segments") run in one pass *packed*: their token rows are concatenated, so
the dense layers see one ``(tokens, 384)`` matrix with no padding, and attention runs per segment on
its own contiguous rows. Every large intermediate lives in a per-thread :class:`_Workspace` that is
reused across calls: allocating and freeing arrays of a few hundred KiB on every call made glibc hand
the pages back to the kernel and fault them in again, which tripled the time of a short message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["DIM", "Bert"]

F32 = npt.NDArray[np.float32]
DIM = 384

# GELU(x) = x * Phi(x) with erf from Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7, below float32
# resolution here), rewritten as relu(x) - 0.5 |x| P(t) exp(-x^2 / 2), t = 1 / (1 + p |x| / sqrt 2), so
# no sign() is needed; the 0.5 is folded into the coefficients of P.
_P = np.float32(0.3275911 / np.sqrt(2.0))
_A = [np.float32(0.5 * c) for c in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)]


def gelu_(u: F32, a: F32, t: F32, r: F32) -> None:
    """Exact-erf GELU of ``u`` in place (BERT's ``hidden_act: gelu``); ``a``, ``t``, ``r`` are scratch
    arrays of ``u``'s shape. Absolute error <= 4e-7 against ``x * (1 + erf(x / sqrt 2)) / 2``."""
    np.abs(u, out=a)
    np.multiply(a, _P, out=t)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    np.multiply(t, _A[4], out=r)
    for c in (_A[3], _A[2], _A[1], _A[0]):
        r += c
        r *= t
    np.multiply(a, a, out=t)
    t *= np.float32(-0.5)
    np.exp(t, out=t)
    r *= t
    r *= a
    np.maximum(u, np.float32(0.0), out=u)
    u -= r


def layer_norm_(y: F32, w: F32, b: F32, eps: float, out: F32) -> None:
    """LayerNorm over the last axis of ``y`` (n, d) into ``out``; ``y`` is overwritten."""
    y -= y.mean(axis=1, keepdims=True)
    var = np.einsum("ij,ij->i", y, y)[:, None] / np.float32(y.shape[1])
    y /= np.sqrt(var + np.float32(eps))
    np.multiply(y, w, out=out)
    out += b


@dataclass(frozen=True)
class Layer:
    """One transformer layer's weights, transposed for ``x @ w``."""

    qkv_w: F32  # (384, 1152): query | key | value
    qkv_b: F32  # (1152,)
    out_w: F32  # (384, 384)
    out_b: F32
    ln1_w: F32
    ln1_b: F32
    up_w: F32  # (384, 1536)
    up_b: F32
    down_w: F32  # (1536, 384)
    down_b: F32
    ln2_w: F32
    ln2_b: F32

    @classmethod
    def from_weights(cls, get: Callable[[str], F32], p: str) -> Layer:
        """Build layer ``p`` (e.g. ``"encoder.layer.0."``) from a HF BertModel state dict getter."""
        att = p + "attention."
        names = ("query", "key", "value")
        qkv_w = np.concatenate([get(f"{att}self.{n}.weight").T for n in names], axis=1)
        return cls(
            qkv_w=np.ascontiguousarray(qkv_w),
            qkv_b=np.concatenate([get(f"{att}self.{n}.bias") for n in names]),
            out_w=np.ascontiguousarray(get(f"{att}output.dense.weight").T),
            out_b=get(f"{att}output.dense.bias"),
            ln1_w=get(f"{att}output.LayerNorm.weight"),
            ln1_b=get(f"{att}output.LayerNorm.bias"),
            up_w=np.ascontiguousarray(get(f"{p}intermediate.dense.weight").T),
            up_b=get(f"{p}intermediate.dense.bias"),
            down_w=np.ascontiguousarray(get(f"{p}output.dense.weight").T),
            down_b=get(f"{p}output.dense.bias"),
            ln2_w=get(f"{p}output.LayerNorm.weight"),
            ln2_b=get(f"{p}output.LayerNorm.bias"),
        )


class _Workspace:
    """Scratch arrays for up to ``cap`` packed tokens and segments of up to ``max_len`` tokens."""

    def __init__(self, cap: int, inter: int, heads: int, max_len: int) -> None:
        self.cap = cap
        z = np.zeros
        self.x, self.y, self.ctx = (z((cap, DIM), np.float32) for _ in range(3))
        self.qkv = z((cap, 3 * DIM), np.float32)
        self.up, self.a, self.t, self.r = (z((cap, inter), np.float32) for _ in range(4))
        self.scores = z((heads, max_len, max_len), np.float32)
        self.ssum = z((heads, max_len, 1), np.float32)


class Bert:
    """A BERT encoder (absolute positions, token type 0, post-LayerNorm) that returns mean-pooled,
    L2-normalised sentence embeddings. Thread-safe: weights are read-only; scratch is per thread."""

    def __init__(
        self,
        get: Callable[[str], F32],
        *,
        layers: int,
        heads: int,
        eps: float,
        max_len: int,
        chunk_tokens: int = 1024,
    ) -> None:
        self.word = get("embeddings.word_embeddings.weight")
        self.pos = get("embeddings.position_embeddings.weight")
        self.type0 = np.ascontiguousarray(get("embeddings.token_type_embeddings.weight")[0])
        self.emb_ln = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.layers = [Layer.from_weights(get, f"encoder.layer.{i}.") for i in range(layers)]
        self.heads, self.eps, self.max_len = heads, eps, max_len
        self.inter = self.layers[0].up_w.shape[1]
        self.chunk_tokens = max(chunk_tokens, max_len)
        self._local = threading.local()

    def _workspace(self, need: int) -> _Workspace:
        ws: _Workspace | None = getattr(self._local, "ws", None)
        if ws is None or ws.cap < need:
            cap = min(max(128, -(-need // 128) * 128), self.chunk_tokens)
            ws = _Workspace(cap, self.inter, self.heads, self.max_len)
            self._local.ws = ws
        return ws

    def _chunks(self, seqs: Sequence[Sequence[int]] | Sequence[int]) -> list[tuple[int, int, int]]:
        """``(start, end, tokens)`` of consecutive groups of sequences (given as token lists, or as
        lengths) of at most ``chunk_tokens`` tokens (a longer sequence alone). Raises ``ValueError`` on
        an empty or too long sequence."""
        lens = [s if isinstance(s, int) else len(s) for s in seqs]
        out, start = [], 0
        while start < len(lens):
            end, total = start, 0
            while end < len(lens) and (end == start or total + lens[end] <= self.chunk_tokens):
                if not 0 < lens[end] <= self.max_len:
                    raise ValueError(f"sequence of {lens[end]} tokens; expected 1..{self.max_len}")
                total += lens[end]
                end += 1
            out.append((start, end, total))
            start = end
        return out

    def embed(self, seqs: Sequence[Sequence[int]], means: F32 | None = None) -> F32:
        """Unit-norm mean-pooled embeddings, float32 ``(len(seqs), 384)``, of token-id sequences (each
        1 to ``max_len`` ids, ``[CLS]``/``[SEP]`` included). Raises ``ValueError`` on an empty or too
        long sequence. Segments are packed ``chunk_tokens`` tokens at a time; a row does not depend on
        the other sequences. ``means``, if given (same shape), receives the mean-pooled vectors before
        normalisation."""
        out = np.empty((len(seqs), DIM), dtype=np.float32)
        means = np.empty((len(seqs), DIM), dtype=np.float32) if means is None else means
        for start, end, total in self._chunks(seqs):
            lens = np.array([len(s) for s in seqs[start:end]], dtype=np.int64)
            x = self._embeddings(seqs[start:end], total, lens)
            out[start:end] = self._forward(x, lens, means[start:end], 0, len(self.layers))
        return out

    def token_states(self, seqs: Sequence[Sequence[int]], layers: int) -> tuple[F32, npt.NDArray[np.int64]]:
        """The hidden states after the first ``layers`` layers: ``(states, lens)``, float32
        ``(sum(lens), 384)`` rows of all sequences packed in order, and each sequence's length (the
        training of the top layers caches these; :meth:`embed_states` finishes the pass)."""
        lens_all = np.array([len(s) for s in seqs], dtype=np.int64)
        out = np.empty((int(lens_all.sum()), DIM), dtype=np.float32)
        pos = 0
        for start, end, total in self._chunks(seqs):
            lens = lens_all[start:end]
            x = self._embeddings(seqs[start:end], total, lens)
            out[pos : pos + total] = self._run(x, lens, 0, layers)
            pos += total
        return out, lens_all

    def embed_states(self, states: F32, lens: npt.NDArray[np.int64], first: int) -> F32:
        """:meth:`embed` of sequences whose states after ``first`` layers are ``states`` (as
        :meth:`token_states` gives them): runs the remaining layers, pools and normalises."""
        out = np.empty((len(lens), DIM), dtype=np.float32)
        offs = np.concatenate([[0], np.cumsum(lens)])
        for start, end, total in self._chunks([int(n) for n in lens]):
            x = self._workspace(total).x[:total]
            x[:] = states[offs[start] : offs[end]]
            means = np.empty((end - start, DIM), dtype=np.float32)
            out[start:end] = self._forward(x, lens[start:end], means, first, len(self.layers))
        return out

    def _embeddings(self, seqs: Sequence[Sequence[int]], n: int, lens: npt.NDArray[np.int64]) -> F32:
        ws = self._workspace(n)
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        ids = np.fromiter((i for s in seqs for i in s), dtype=np.int64, count=n)
        pos = np.arange(n, dtype=np.int64) - np.repeat(starts, lens)
        x, y = ws.x[:n], ws.y[:n]
        np.add(self.word[ids], self.pos[pos], out=y)
        y += self.type0
        layer_norm_(y, *self.emb_ln, self.eps, out=x)
        return x

    def _run(self, x: F32, lens: npt.NDArray[np.int64], first: int, last: int) -> F32:
        """Layers ``first..last-1`` over the packed states ``x`` (a view of the workspace's ``x``)."""
        n = x.shape[0]
        ws = self._workspace(n)
        y = ws.y[:n]
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        bounds = list(zip(starts.tolist(), (starts + lens).tolist(), strict=True))
        for L in self.layers[first:last]:
            qkv = ws.qkv[:n]
            np.matmul(x, L.qkv_w, out=qkv)
            qkv += L.qkv_b
            for s0, s1 in bounds:
                self._attend(ws, qkv[s0:s1], ws.ctx[s0:s1])
            np.matmul(ws.ctx[:n], L.out_w, out=y)
            y += L.out_b
            y += x
            layer_norm_(y, L.ln1_w, L.ln1_b, self.eps, out=x)
            up = ws.up[:n]
            np.matmul(x, L.up_w, out=up)
            up += L.up_b
            gelu_(up, ws.a[:n], ws.t[:n], ws.r[:n])
            np.matmul(up, L.down_w, out=y)
            y += L.down_b
            y += x
            layer_norm_(y, L.ln2_w, L.ln2_b, self.eps, out=x)
        return x

    def _forward(self, x: F32, lens: npt.NDArray[np.int64], means: F32, first: int, last: int) -> F32:
        x = self._run(x, lens, first, last)
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        pooled = np.add.reduceat(x, starts, axis=0) / lens[:, None].astype(np.float32)
        means[:] = pooled
        norm = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return (pooled / norm).astype(np.float32, copy=False)

    def _attend(self, ws: _Workspace, qkv: F32, ctx: F32) -> None:
        """Multi-head self-attention of one segment: ``qkv`` (t, 1152) rows -> ``ctx`` (t, 384)."""
        t, h = qkv.shape[0], self.heads
        d = DIM // h
        heads = qkv.reshape(t, 3, h, d)
        q, k, v = (heads[:, i].transpose(1, 0, 2) for i in range(3))  # (h, t, d) views
        s = ws.scores[:, :t, :t]
        np.matmul(q, k.transpose(0, 2, 1), out=s)
        s *= np.float32(1.0 / np.sqrt(d))
        s -= s.max(axis=2, keepdims=True)
        np.exp(s, out=s)
        ssum = ws.ssum[:, :t]
        np.sum(s, axis=2, keepdims=True, out=ssum)
        s /= ssum
        np.matmul(s, v, out=ctx.reshape(t, h, d).transpose(1, 0, 2))
