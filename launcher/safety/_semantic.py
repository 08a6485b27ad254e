"""The safety screen's semantic layer: catches paraphrases of crisis disclosures that the lexicon
(:mod:`launcher.safety._lexical`) misses, by embedding the message with all-MiniLM-L6-v2
(:mod:`._encoder`, numpy, in-process, nothing downloaded) and scoring it with a small classifier head.

How a message is scored: :func:`._segments.pieces` gives the whole message and, for a message of
several sentences, each sentence; every piece is embedded (``(m, 384)`` unit vectors) and scored by the
:class:`._head.Head` (family probabilities over the 14 risk families of ``data/anchors.jsonl`` plus
idiom / coaching / distress / negated, a nearest-anchor gate, and a calibrated risk probability). The
piece with the highest risk probability decides, so one risky sentence in a long ordinary message is
not diluted by the rest.

Where the numbers come from: ``data/semantic_head.npz`` is written by ``python -m
launcher.safety._train`` from ``data/anchors.jsonl`` (it stores the anchors' SHA-256 and is refused when
they differ), and may carry fine-tuned weights of the encoder's top layer, loaded as overrides
(:func:`load_overrides`). Its thresholds were calibrated there on the user turns of the held-out half
of ../shared/data (ESConv, AnnoMI, UIC): ``tier2`` keeps tier >= 2 at or under 1% of each corpus's
turns, ``tier3`` tier 3 at or under 0.04% of every turn of both halves (round 7), and since round 11
``pause`` (the pause bar) at or under 1.5% of each corpus's held-out turns, each in the middle of the gap between the highest score
that must not pass and the next score above it (``_train._threshold``), so a score a rounding error
away from a calibration score decides the same on every CPU; the training report (``meta``) records
the rates and the gaps. Decision rule, for the deciding piece with risk probability ``P``:

- ``P >= tier2`` and its tier-3 score ``P3 = P * m3 / m`` (``m3`` the probability mass of the tier-3
  families, ``m`` that of all risk families) ``>= tier3``: tier 3, the likeliest tier-3 family (round 7;
  before, ``P >= tier3`` with ``m3 >= m / 2``, so a message that read half as ideation and half as an act
  passed on its ideation's confidence; a head written that way, whose ``meta`` has no ``tier3_score``, is
  refused at load);
- ``P >= tier2``: tier 2, the likeliest risk family (a tier-3 family named at tier 2 is "looks like
  this, but not confidently enough to replace the reply");
- ``P >= tier2 / 2``, or distress + negated hold half the probability of a piece: tier 1 (with a risk
  family when ``P >= tier2 / 2``; from ``P >= pause`` the screen pauses coaching for it when nothing
  else put the message at tier 2 or more: rule id ``sem2.<family>``, :func:`launcher.safety.screen`);
- otherwise tier 0, family ``"none"``.

A model may raise the lexicon's tier, never lower it (:func:`launcher.safety.combine_tiers`). Verdicts
carry no user text, so they are safe to log; this module never logs text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from launcher.errors import LauncherError

from ._encoder import MiniLMEncoder
from ._head import F32, F64, Head
from ._segments import pieces

#: ``meta["tier3_score"]`` of a head whose ``tier3`` threshold is on the tier-3 score ``P * m3 / m``.
TIER3_SCORE = "risk_x_tier3_share"

__all__ = [
    "ANCHORS_PATH",
    "HEAD_PATH",
    "TIER3_SCORE",
    "HeadError",
    "SemanticLayer",
    "SemanticVerdict",
    "embed_message",
    "semantic_layer",
]

_log = logging.getLogger(__name__)
_DATA = Path(__file__).resolve().parent / "data"
#: The training examples written per family and per idiom (one JSON object per line: ``text``,
#: ``family``, ``tier``).
ANCHORS_PATH = _DATA / "anchors.jsonl"
#: More training examples in the same form (plus ``source`` and, for a multi-turn item, ``context``):
#: the final messages of the two labelled sets written earlier for evaluation (``examples/safety`` and
#: ``bench/data/safety_final``), now used for training; see docs/safety.md.
LABELLED_PATH = _DATA / "labelled.jsonl"
#: The trained head, written by ``python -m launcher.safety._train``.
HEAD_PATH = _DATA / "semantic_head.npz"
_RETRAIN = "python -m launcher.safety._train"
_CACHE_SIZE = 1024


class HeadError(LauncherError):
    """The semantic head is missing, unreadable (``code`` ``head_missing``) or was trained on other
    anchors than ``anchors.jsonl`` holds (``head_stale``); the message says to rerun the training
    command. Not retryable."""

    code = "head_missing"


@dataclass(frozen=True)
class SemanticVerdict:
    """The semantic layer's view of one message: ``tier`` 0-3, ``family`` (a family of
    ``anchors.jsonl``, or ``"none"`` at tier 0) and ``score``, the calibrated risk probability 0-1 of
    the deciding piece (see the module docstring); ``score3``, its tier-3 score ``P * m3 / m`` (0-1);
    ``paused``: a risk family read at tier 1 with ``score`` at the layer's pause bar or more (round 11: the
    screen pauses coaching for it when nothing else gave tier 2 or more)."""

    tier: int
    family: str
    score: float
    score3: float = 0.0
    paused: bool = False


def anchors_digest(path: Path = ANCHORS_PATH, labelled: Path = LABELLED_PATH) -> str:
    """SHA-256 (hex) over the training files' bytes: the anchors, then the labelled examples."""
    h = hashlib.sha256(path.read_bytes())
    h.update(b"\0")
    h.update(labelled.read_bytes())
    return h.hexdigest()


_OVERRIDE = "layer:"  # key prefix of an encoder weight override in the head file


def save_head(
    path: Path,
    head: Head,
    *,
    digest: str,
    tier2: float,
    tier3: float,
    meta: dict[str, object],
    overrides: dict[str, npt.NDArray[np.float16]] | None = None,
) -> None:
    """Write ``head``, its thresholds, the anchors' ``digest``, a JSON ``meta`` report and the encoder
    weight ``overrides`` (float16, by state-dict name; the fine-tuned top layers) to ``path``."""
    extra: dict[str, Any] = {
        _OVERRIDE + k: np.asarray(v, dtype=np.float16) for k, v in (overrides or {}).items()
    }
    # written beside ``path`` then renamed over it: a run killed mid-write leaves the old head whole (and
    # an open file, not a name, so numpy does not append ".npz" to a path without it)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            _savez(f, head, tier2, tier3, digest, meta, extra)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _savez(
    f: Any,
    head: Head,
    tier2: float,
    tier3: float,
    digest: str,
    meta: dict[str, object],
    extra: dict[str, Any],
) -> None:
    np.savez_compressed(
        f,
        families=np.array(head.families),
        tiers=head.tiers,
        w=head.w,
        b=head.b,
        anchors=head.anchors.astype(np.float16),  # the gate's cosines need no more; halves the file
        anchor_risk=head.anchor_risk,
        scalars=np.array([head.temperature, head.kappa, head.platt_a, head.platt_c, tier2, tier3]),
        knn=np.array(head.knn),
        digest=np.array(digest),
        meta=np.array(json.dumps(meta, sort_keys=True)),
        **extra,
    )


def load_overrides(path: Path = HEAD_PATH) -> dict[str, npt.NDArray[np.float16]]:
    """The encoder weight overrides in the head file ``path`` (empty when it has none): float16 arrays
    by state-dict name, for :meth:`MiniLMEncoder.load`. Raises :class:`HeadError` as :func:`load_head`."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k[len(_OVERRIDE) :]: z[k] for k in z.files if k.startswith(_OVERRIDE)}
    except (OSError, ValueError) as exc:
        raise HeadError(f"cannot read the semantic head {path}: {exc}. Fix: run `{_RETRAIN}`") from exc


def load_head(
    path: Path = HEAD_PATH, anchors: Path = ANCHORS_PATH, labelled: Path = LABELLED_PATH
) -> tuple[Head, float, float, dict[str, object]]:
    """Read a head written by :func:`save_head`: ``(head, tier2, tier3, meta)``.

    Raises:
        HeadError: the file is missing or unreadable (``head_missing``), or its anchors digest differs
            from ``anchors``' or it predates the tier-3 score (``head_stale``); the messages say to run
            ``python -m launcher.safety._train``.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            t, kappa, pa, pc, tier2, tier3 = (float(v) for v in z["scalars"])
            head = Head(
                families=tuple(str(f) for f in z["families"]),
                tiers=z["tiers"].astype(np.int64),
                w=z["w"].astype(np.float32),
                b=z["b"].astype(np.float32),
                temperature=t,
                anchors=z["anchors"].astype(np.float32),
                anchor_risk=z["anchor_risk"].astype(bool),
                knn=int(z["knn"]),
                kappa=kappa,
                platt_a=pa,
                platt_c=pc,
            )
            digest, meta = str(z["digest"]), json.loads(str(z["meta"]))
    except (OSError, KeyError, ValueError) as exc:
        raise HeadError(f"cannot read the semantic head {path}: {exc}. Fix: run `{_RETRAIN}`") from exc
    try:
        current = anchors_digest(anchors, labelled)
    except OSError as exc:
        raise HeadError(
            f"cannot read the training examples ({anchors}, {labelled}): {exc}. Fix: restore them, then "
            f"run `{_RETRAIN}`"
        ) from exc
    if digest != current:
        raise HeadError(
            f"the semantic head {path} was trained on other examples than {anchors} and {labelled} now hold (sha256 "
            f"{digest[:12]}... vs {current[:12]}...). Fix: run `{_RETRAIN}`",
            code="head_stale",
        )
    if meta.get("tier3_score") != TIER3_SCORE:
        raise HeadError(
            f"the semantic head {path} was written by an older trainer: its tier-3 threshold is not on the "
            f"tier-3 score ({TIER3_SCORE}). Fix: run `{_RETRAIN}`",
            code="head_stale",
        )
    return head, tier2, tier3, meta


def embed_message(encoder: MiniLMEncoder, text: str) -> F32:
    """The embeddings of ``text``'s pieces (:func:`._segments.pieces`), one encoder pass: when the
    pieces are the whole message and its sentences, the whole is approximated from the sentences
    (:meth:`MiniLMEncoder.encode_joined`) instead of being encoded a second time, which halves the
    tokens of a short message of several sentences. The training scores the corpora the same way."""
    ps = pieces(text)
    if len(ps) > 2 and ps[0] == text:
        return encoder.encode_joined(ps[1:])
    return encoder.encode(ps)


class SemanticLayer:
    """Scores messages (see the module docstring). Thread-safe; keeps the embeddings of the last
    1024 messages it saw, so :meth:`risk_score` then :meth:`assess` of one text embeds it once."""

    def __init__(
        self, encoder: MiniLMEncoder, head: Head, tier2: float, tier3: float, pause: float | None = None
    ) -> None:
        """``pause``: the pause bar (a risk family read at this calibrated score or more, below ``tier2``,
        pauses coaching; :data:`launcher.safety._train.FA_PAUSE`); None for a head without one."""
        self.encoder, self.head, self.tier2, self.tier3 = encoder, head, tier2, tier3
        self.pause = pause
        self._cache: OrderedDict[str, F32] = OrderedDict()
        self._lock = threading.Lock()
        fams = head.families
        self._t1 = np.array([f in ("distress", "negated") for f in fams])
        self._t3 = head.tiers == 3

    @classmethod
    def load(
        cls, head_path: Path = HEAD_PATH, anchors: Path = ANCHORS_PATH, labelled: Path = LABELLED_PATH
    ) -> SemanticLayer:
        """Load the encoder (installed model package) and the head.

        Raises:
            launcher.safety._encoder.EncoderError: the model package is missing or broken.
            HeadError: the head is missing, unreadable or stale.
        """
        head, tier2, tier3, meta = load_head(head_path, anchors, labelled)
        pause = meta.get("pause")
        if pause is not None and not (isinstance(pause, (int, float)) and 0.0 < pause <= tier2):
            raise HeadError(
                f"the semantic head {head_path} has a pause bar {pause!r} outside (0, tier2 = {tier2:.4f}]. "
                f"Fix: run `python -m launcher.safety._train --recalibrate`",
                code="head_stale",
            )
        return cls(
            MiniLMEncoder.load(overrides=load_overrides(head_path)),
            head,
            tier2,
            tier3,
            float(pause) if isinstance(pause, (int, float)) else None,
        )

    def _embed(self, text: str) -> F32:
        with self._lock:
            z = self._cache.get(text)
            if z is not None:
                self._cache.move_to_end(text)
                return z
        z = embed_message(self.encoder, text)
        with self._lock:
            self._cache[text] = z
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return z

    def _score(self, text: str) -> tuple[F64, F64]:
        with self.encoder.blas_limit():  # the gate's products too: on 2 busy cores a BLAS thread waits
            z = self._embed(text)
            p = self.head.family_proba(z)
            return p, self.head.calibrate(self.head.raw_risk(z, p))

    def risk_score(self, text: str) -> float:
        """How much ``text`` looks like a crisis disclosure: the calibrated risk probability (0-1) of
        its riskiest piece, i.e. the probability mass of all risk families, gated and calibrated (see
        :class:`._head.Head`). Compare with :attr:`tier2` (the tier-2 threshold)."""
        return float(self._score(text)[1].max())

    def assess(self, text: str) -> SemanticVerdict:
        """The tier (0-3), family and score of ``text`` by the rule in the module docstring. Cost: one
        encoder pass over the message's pieces (:func:`embed_message`)."""
        p, risk = self._score(text)
        j = int(risk.argmax())
        score = float(risk[j])
        fams, tiers, rmask = self.head.families, self.head.tiers, self.head.risk
        if score >= self.tier2:
            score3 = float(self.head.tier3_score(p[j : j + 1], risk[j : j + 1])[0])
            three = score3 >= self.tier3
            group = self._t3 if three else rmask
            f = int(np.where(group, p[j], -1.0).argmax())
            return SemanticVerdict(min(int(tiers[f]), 3 if three else 2), fams[f], score, score3)
        if score >= self.tier2 / 2:
            f = int(np.where(rmask, p[j], -1.0).argmax())
            return SemanticVerdict(1, fams[f], score, paused=self.pause is not None and score >= self.pause)
        t1 = p[:, self._t1].sum(axis=1)
        if float(t1.max()) >= 0.5:
            f = int(np.where(self._t1, p[int(t1.argmax())], -1.0).argmax())
            return SemanticVerdict(1, fams[f], score)
        return SemanticVerdict(0, "none", score)


_layer: SemanticLayer | None = None
_layer_lock = threading.Lock()


def semantic_layer() -> SemanticLayer:
    """The process-wide :class:`SemanticLayer`, loaded on first call (about 1 s; thread-safe: one load
    however many threads ask at once). Raises what :meth:`SemanticLayer.load` raises; a failed load is
    retried on the next call."""
    global _layer
    if _layer is None:
        with _layer_lock:
            if _layer is None:
                _layer = SemanticLayer.load()
                _log.debug("semantic safety layer loaded (tier2=%.3f tier3=%.3f)", _layer.tier2, _layer.tier3)
    return _layer
