"""The semantic layer's classifier head: multinomial logistic regression over sentence embeddings.

Pure numpy, deterministic (zero start, fixed number of full-batch steps). Used by
:mod:`launcher.safety._train` to fit and by :mod:`launcher.safety._semantic` to predict.

Shapes: embeddings ``X`` are ``(n, 384)`` float32 unit vectors; ``W`` is ``(384, k)``, ``b`` ``(k,)``
for ``k`` families; probabilities are ``(n, k)``, rows summing to 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Head", "fit_platt", "fit_softmax", "fit_temperature", "softmax"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def softmax(z: npt.NDArray[np.floating]) -> F64:
    """Row-wise softmax of logits ``z`` (n, k), computed in float64."""
    z64 = np.asarray(z, dtype=np.float64)
    e = np.exp(z64 - z64.max(axis=1, keepdims=True))
    out: F64 = e / e.sum(axis=1, keepdims=True)
    return out


def fit_softmax(
    x: F32, y: I64, k: int, *, l2: float, steps: int = 1500, class_balanced: bool = True
) -> tuple[F32, F32]:
    """Fit ``W`` (d, k), ``b`` (k,) minimising the (class-balanced) mean cross-entropy of
    ``softmax(x @ W + b)`` plus ``l2/2 * |W|^2``, by Nesterov-accelerated gradient descent with step
    ``1 / L`` (``L`` bounds the Hessian: rows of ``x`` have norm <= 1). ``y`` holds class ids 0..k-1;
    with ``class_balanced`` every class carries the same total weight, whatever its count."""
    n, d = x.shape
    xd = np.asarray(x, dtype=np.float64)
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0
    counts = np.bincount(y, minlength=k).astype(np.float64)
    if class_balanced:
        sw = 1.0 / (counts[y] * np.count_nonzero(counts))
    else:
        sw = np.full(n, 1.0 / n)
    lip = 0.5 * (float(np.max(np.sum(xd * xd, axis=1))) + 1.0) + l2
    step = 1.0 / lip
    w = np.zeros((d, k))
    b = np.zeros(k)
    w_prev, b_prev = w.copy(), b.copy()
    for t in range(1, steps + 1):
        mom = (t - 1) / (t + 2)
        vw = w + mom * (w - w_prev)
        vb = b + mom * (b - b_prev)
        g = (softmax(xd @ vw + vb) - onehot) * sw[:, None]
        w_prev, b_prev = w, b
        w = vw - step * (xd.T @ g + l2 * vw)
        b = vb - step * g.sum(axis=0)
    return w.astype(np.float32), b.astype(np.float32)


def fit_temperature(logits: F64, y: I64) -> float:
    """The temperature ``T`` minimising the mean negative log-likelihood of ``softmax(logits / T)``
    against ``y`` (golden-section search over log T in [1/20, 20]); ``logits`` should be out-of-fold."""

    def nll(log_t: float) -> float:
        p = softmax(logits / np.exp(log_t))
        return float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-12))))

    lo, hi = -np.log(20.0), np.log(20.0)
    g = (np.sqrt(5.0) - 1.0) / 2.0
    a, c = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fc = nll(a), nll(c)
    for _ in range(60):
        if fa < fc:
            hi, c, fc = c, a, fa
            a = hi - g * (hi - lo)
            fa = nll(a)
        else:
            lo, a, fa = a, c, fc
            c = lo + g * (hi - lo)
            fc = nll(c)
    return float(np.exp((lo + hi) / 2.0))


def fit_platt(s: F64, y: npt.NDArray[np.bool_], steps: int = 50) -> tuple[float, float]:
    """``(a, c)`` of the 1-D logistic calibration ``P = 1 / (1 + exp(-(a * s + c)))`` fitted to labels
    ``y`` by Newton's method (tiny ridge for stability); ``s`` should be out-of-fold scores."""
    a, c = 1.0, 0.0
    t = y.astype(np.float64)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a * s + c)))
        g = np.array([np.sum((p - t) * s) + 1e-6 * a, np.sum(p - t)])
        wgt = p * (1.0 - p)
        h = np.array([[np.sum(wgt * s * s) + 1e-6, np.sum(wgt * s)], [np.sum(wgt * s), np.sum(wgt) + 1e-9]])
        da, dc = np.linalg.solve(h, g)
        a, c = a - float(da), c - float(dc)
    return a, c


@dataclass(frozen=True)
class Head:
    """The fitted head. Per text embedding ``z`` (unit, 384):

    1. family probabilities ``p = softmax((z @ w + b) / temperature)`` over ``families`` (k,);
    2. raw risk ``s = sum(p[risk families]) * sigmoid(kappa * margin)``, where ``margin`` is the mean
       cosine of ``z`` to its ``knn`` nearest risk anchors minus that to its ``knn`` nearest non-risk
       anchors (a linear model alone is confidently wrong far from every anchor; the margin is not);
    3. calibrated risk ``P = sigmoid(platt_a * s + platt_c)``: the probability that ``z`` is a risk
       paraphrase, fitted on out-of-fold anchor scores (so "calibrated" is relative to the anchors'
       mix of risk and non-risk, not to the base rate of real chat).
    """

    families: tuple[str, ...]
    tiers: npt.NDArray[np.int64]  # (k,) 0-3
    w: F32  # (384, k)
    b: F32  # (k,)
    temperature: float
    anchors: F32  # (n, 384) unit anchor embeddings
    anchor_risk: npt.NDArray[np.bool_]  # (n,) tier >= 2
    knn: int
    kappa: float
    platt_a: float = 1.0
    platt_c: float = 0.0

    @property
    def risk(self) -> npt.NDArray[np.bool_]:
        """(k,) mask of the risk families (tier >= 2)."""
        out: npt.NDArray[np.bool_] = self.tiers >= 2
        return out

    def family_proba(self, z: F32) -> F64:
        """(n, k) family probabilities of embeddings ``z`` (n, 384)."""
        return softmax((z @ self.w + self.b) / self.temperature)

    def _split(self) -> tuple[F32, F32, int]:
        """The risk and non-risk anchors as two contiguous matrices, and the gate's ``k`` (computed once:
        selecting the columns of one similarity matrix per call cost more than the product itself)."""
        cached = self.__dict__.get("_split_cache")
        if cached is None:
            risk = np.ascontiguousarray(self.anchors[self.anchor_risk], dtype=np.float32)
            other = np.ascontiguousarray(self.anchors[~self.anchor_risk], dtype=np.float32)
            cached = (risk, other, min(self.knn, len(risk), len(other)))
            object.__setattr__(self, "_split_cache", cached)
        return cached  # type: ignore[no-any-return]

    @staticmethod
    def _top_mean(sims: F32, k: int) -> F64:
        if k >= sims.shape[1]:
            return sims.mean(axis=1).astype(np.float64)
        part = np.partition(sims, sims.shape[1] - k, axis=1)[:, sims.shape[1] - k :]
        return part.mean(axis=1).astype(np.float64)

    def raw_risk(self, z: F32, p: F64 | None = None) -> F64:
        """(n,) uncalibrated risk ``s`` in [0, 1] (step 2 above); ``p``: precomputed family_proba."""
        p = self.family_proba(z) if p is None else p
        risk, other, k = self._split()
        z32 = np.asarray(z, dtype=np.float32)
        margin = self._top_mean(z32 @ risk.T, k) - self._top_mean(z32 @ other.T, k)
        gate = 1.0 / (1.0 + np.exp(-self.kappa * margin))
        out: F64 = p[:, self.risk].sum(axis=1) * gate
        return out

    def tier3_score(self, p: F64, risk: F64) -> F64:
        """(n,) tier-3 scores ``P * m3 / m`` of pieces with family probabilities ``p`` (n, k) and calibrated
        risks ``risk`` (n,): the risk times the tier-3 families' share of the risk mass (0 without any)."""
        mass = p[:, self.risk].sum(axis=1)
        share = np.divide(p[:, self.tiers == 3].sum(axis=1), mass, out=np.zeros_like(mass), where=mass > 0)
        out: F64 = risk * share
        return out

    def calibrate(self, s: F64) -> F64:
        """Calibrated risk probability ``P`` (step 3) of raw risks ``s``."""
        out: F64 = 1.0 / (1.0 + np.exp(-(self.platt_a * s + self.platt_c)))
        return out
