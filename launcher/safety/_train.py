"""``python -m launcher.safety._train``: fit the semantic layer's head and write
``launcher/safety/data/semantic_head.npz`` (deterministic for given anchors, corpora and libraries).

Training examples: ``data/anchors.jsonl`` (written per family and per idiom), ``data/labelled.jsonl``
(the final messages of the two labelled sets written earlier for evaluation) and real ordinary talk:
the user turns of one half of the corpora in ``--data`` (ESConv test, AnnoMI dev, UIC, read by
:mod:`launcher.transcripts`; a transcript is in the training half when the CRC-32 of its id is even),
each sentence piece as family ``chat`` (tier 0), leaving out every turn the rules alone put at tier >= 2
(those may be real risk). The other half of the corpora is never trained on. Every example but the
ordinary talk also gets one misspelled copy (:mod:`._augment`).

Steps: read and check the examples; embed them; 5-fold cross-validation (folds stratified by family,
assigned round-robin in file order) gives out-of-fold logits, from which the softmax temperature is
fitted, and out-of-fold raw risks, from which the Platt calibration is fitted; fit the head on all
examples; score every user turn of the corpora and set the thresholds there, tier 2 on the held-out
half, tier 3 (since round 7, on the tier-3 score ``P * m3 / m``) on both halves (see
:mod:`launcher.safety._semantic`); write the head with the examples' SHA-256 and a report (``meta``:
CV figures, rates per corpus and half, tier-3 hit locations, never text). Embedding the corpora takes
several minutes on 2 cores (``--cache FILE`` keeps embeddings between runs).

Fine-tuned top layer (round 4; docs/safety.md): ``--dump-states FILE --top 1`` writes the examples'
hidden states below the top layer for ``launcher/safety/_finetune.py`` (torch, its own venv) and stops;
``--overrides FILE`` embeds with the weights it wrote and stores them in the head file. Thresholds sit
in the middle of a gap of the calibration scores (:func:`_threshold`).

``--recalibrate`` keeps the head already written (``--out``) and only sets its thresholds again from the
corpora (round 11 added the pause bar, :data:`FA_PAUSE`, that way: the head's weights did not change).

Exit status: 0 written; 2 bad anchors, missing corpora, or (``--recalibrate``) a missing or stale head
(the message says which).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ._augment import typo_variant
from ._encoder import MiniLMEncoder
from ._head import F32, Head, fit_platt, fit_softmax, fit_temperature, softmax
from ._segments import pieces
from ._semantic import (
    ANCHORS_PATH,
    HEAD_PATH,
    LABELLED_PATH,
    TIER3_SCORE,
    HeadError,
    anchors_digest,
    load_head,
    load_overrides,
    save_head,
)

RISK_FAMILIES = {
    "passive_ideation": 2, "active_ideation": 2, "self_harm": 2, "abuse": 2,
    "method": 3, "intent": 3, "plan": 3, "means": 3, "preparatory": 3, "timeline": 3, "in_progress": 3,
    "other_in_danger": 3, "lethal_means_request": 3, "medical_emergency": 3,
}  # fmt: skip
OTHER_FAMILIES = {"idiom": 0, "coaching": 0, "chat": 0, "distress": 1, "negated": 1}
FAMILIES = {**RISK_FAMILIES, **OTHER_FAMILIES}
L2, KNN, KAPPA, FOLDS = 1e-4, 3, 20.0, 5  # chosen by cross-validation (see the report in meta)
# Most corpus turns allowed at tier >= 2 (of the held-out half) and at tier 3 (of every turn of both
# halves, round 7: the bound is on all turns, and the training half's turns are not training
# examples but for a sample of MAX_CHAT pieces) by this layer alone. The screen's budget is 2 % and
# 0.1 % with the rules; 0.0004 is fewer than one turn of ESConv's 2,363 and UIC's 1,292 and one of
# AnnoMI's 3,725, so the rules and the context keep the rest of the 1 in 1,000 (docs/safety.md).
FA_TIER2, FA_TIER3_ALL = 0.01, 0.0004
# Round 11: the pause bar. A risk family read at or above it (and below the tier-2 bar) pauses coaching
# (tier 2, rule id ``sem2.<family>``) when nothing else put the message at tier 2 or more; it is set, like
# the tier-2 bar, on the held-out half, at most 1.5 % of each corpus's turns. The tier >= 2
# budget is 2 % of the corpora's turns for the whole screen; with the bar at 1.5 % the screen's share was
# 1.27 % / 0.62 % / 1.16 % (ESConv / AnnoMI / UIC) and its tier-3 hits did not change (at 1.75 % and 2 %
# the context rules made two new false crises of the pauses; docs/safety.md, round 11).
FA_PAUSE = 0.015
MAX_CHAT = 3000  # ordinary-talk examples from the corpora's training half
CORPORA = {
    "esconv": "esconv/ESConv-test.jsonl",
    "annomi": "annomi/AnnoMI-dev.csv",
    "uic": "uic_health_coaching",
}
I64 = npt.NDArray[np.int64]


class TrainError(ValueError):
    """Bad anchors or missing corpora; the message says what to fix."""


def read_anchors(path: Path) -> tuple[list[str], list[str]]:
    """``(texts, families)`` of ``path``, checked: every line JSON with a non-empty ``text``, a family
    of :data:`FAMILIES` and its tier, no duplicate text."""
    texts, fams = [], []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text, fam, tier = str(row["text"]).strip(), str(row["family"]), int(row["tier"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TrainError(f"{path}:{n}: not a {{text, family, tier}} object ({exc})") from None
        if not text or fam not in FAMILIES or FAMILIES[fam] != tier:
            raise TrainError(f"{path}:{n}: empty text, unknown family or wrong tier for {fam!r}")
        if text.lower() in seen:
            raise TrainError(f"{path}:{n}: duplicate text")
        seen.add(text.lower())
        texts.append(text)
        fams.append(fam)
    return texts, fams


def training_half(transcript_key: str) -> bool:
    """Whether a corpus transcript (``source:id:session`` key, session ignored) is in the training half."""
    tid = transcript_key.rsplit(":", 1)[0]
    return zlib.crc32(tid.encode("utf-8")) % 2 == 0


class _Cache:
    """Embeddings by text, optionally kept in an ``.npz`` file between runs."""

    def __init__(self, enc: MiniLMEncoder, path: Path | None) -> None:
        self.enc, self.path, self.vecs = enc, path, {}
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as z:
                self.vecs = dict(zip((str(t) for t in z["texts"]), z["vecs"], strict=True))
                if "jkeys" in z:
                    rows: dict[str, list[F32]] = {}
                    for k, i, v in zip(z["jkeys"], z["jrows"], z["jvecs"], strict=True):
                        if str(k):
                            rows.setdefault(str(k), []).insert(int(i), v)
                    self.vecs.update({k: np.stack(v) for k, v in rows.items()})

    def __call__(self, texts: list[str]) -> F32:
        todo = sorted({t for t in texts if t not in self.vecs})
        for i in range(0, len(todo), 256):
            chunk = todo[i : i + 256]
            self.vecs.update(zip(chunk, self.enc.encode(chunk), strict=True))
        return np.stack([self.vecs[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def joined(self, parts: list[str]) -> F32:
        """:meth:`MiniLMEncoder.encode_joined` of ``parts`` (as the screen embeds a short message of
        several sentences), kept under a key no text has."""
        key = "\0joined\0" + "\0".join(parts)
        if key not in self.vecs:
            self.vecs[key] = self.enc.encode_joined(parts)
        out: F32 = self.vecs[key]
        return out

    def save(self) -> None:
        if self.path is not None:
            keys = sorted(k for k in self.vecs if not k.startswith("\0"))
            joined = sorted(k for k in self.vecs if k.startswith("\0"))
            flat = [(k, i, row) for k in joined for i, row in enumerate(self.vecs[k])]
            np.savez(
                self.path,
                texts=np.array(keys),
                vecs=np.stack([self.vecs[k] for k in keys]),
                jkeys=np.array([k for k, _, _ in flat] or [""]),
                jrows=np.array([i for _, i, _ in flat] or [0]),
                jvecs=np.stack([r for _, _, r in flat]) if flat else np.zeros((1, 384), np.float32),
            )


def _head(
    x: F32,
    y: I64,
    fams: tuple[str, ...],
    tiers: I64,
    t: float = 1.0,
    gate: npt.NDArray[np.bool_] | None = None,
) -> Head:
    """The softmax head fitted on every row; the gate's anchors are the rows of ``gate`` (all when None).
    Since round 7 the gate is the original examples: the misspelled copies (:mod:`._augment`) train the
    softmax only, so the head file and the gate's products are about 40 % smaller."""
    w, b = fit_softmax(x, y, len(fams), l2=L2)
    g = np.ones(len(y), dtype=bool) if gate is None else gate
    return Head(fams, tiers, w, b, t, x[g], tiers[y[g]] >= 2, KNN, KAPPA)


def cv_folds(y: I64, classes: int, origin: I64 | None = None) -> I64:
    """The cross-validation fold (0 to :data:`FOLDS` - 1) of each example: stratified by family,
    round-robin in file order; an augmented copy (``origin[i] != i``) is in its original's fold."""
    origin = np.arange(len(y)) if origin is None else origin
    folds = np.zeros(len(y), dtype=np.int64)
    for c in range(classes):
        members = np.flatnonzero((y == c) & (origin == np.arange(len(y))))
        folds[members] = np.arange(len(members)) % FOLDS
    out: I64 = folds[origin]
    return out


def cross_validate(
    x: F32, y: I64, fams: tuple[str, ...], tiers: I64, origin: I64 | None = None
) -> tuple[float, F32, F32, float, float]:
    """``(temperature, oof_proba, oof_raw_risk, platt_a, platt_c)`` from :data:`FOLDS`-fold CV.
    ``origin[i]`` is the index of the example that row ``i`` was augmented from (itself for an
    original); a copy is kept in its original's fold, so no fold is scored on copies of its own
    training rows."""
    origin = np.arange(len(y)) if origin is None else origin
    folds = cv_folds(y, len(fams), origin)
    gate = origin == np.arange(len(y))  # the originals
    heads = [_head(x[folds != f], y[folds != f], fams, tiers, gate=gate[folds != f]) for f in range(FOLDS)]
    logits = np.zeros((len(y), len(fams)))
    for f, h in enumerate(heads):
        logits[folds == f] = x[folds == f] @ h.w + h.b
    temp = fit_temperature(logits, y)
    proba = softmax(logits / temp)
    raw = np.zeros(len(y))
    for f, h in enumerate(heads):
        m = folds == f
        raw[m] = h.raw_risk(x[m], proba[m])
    pa, pc = fit_platt(raw, tiers[y] >= 2)
    return temp, proba.astype(np.float32), raw.astype(np.float32), pa, pc


def _decide(head: Head, p: npt.NDArray[np.float64], risk: npt.NDArray[np.float64]) -> tuple[float, float]:
    """(risk probability, tier-3 score) of the deciding piece (the riskiest)."""
    j = int(risk.argmax())
    return float(risk[j]), float(head.tier3_score(p[j : j + 1], risk[j : j + 1])[0])


def _threshold(
    scores: list[npt.NDArray[np.float64]], rate: float, floor: float, ceiling: float = 1.0
) -> tuple[float, float, float]:
    """``(threshold, low, high)``: a threshold at or above ``floor`` passing (``score >= threshold``) at
    most ``rate`` of each score array, put in the middle of the gap ``(low, high)`` of the pooled scores.

    ``low`` is the highest score that must not pass (per array, the score ranked just after its
    ``floor(rate * n)`` allowed ones) and ``high`` the next score of any array above it (``ceiling``,
    the highest score the head can give, when there is none: a calibrated risk is
    ``sigmoid(platt_a + platt_c)`` at most, about 0.995, so a gap up to 1.0 put the tier-3 threshold
    above every reachable score in round 7's first fit, and the layer never said tier 3). When ``floor`` is above every such score it is the
    threshold, and ``(low, high)`` the gap of the pooled scores around it. Every score at or
    below ``low`` fails and every score at or above ``high`` passes, so a score a rounding error away
    from a calibration score (another CPU's BLAS kernel, about 1e-7) gets the same decision. Before
    round 4 the threshold was ``low + 1e-9``, and a corpus turn scored ``low`` on one CPU flipped to
    tier 3 on another (ESConv 12:5, AVX2 against AVX-512)."""
    pooled = np.concatenate([np.asarray(x, dtype=np.float64) for x in scores] or [np.zeros(0)])
    bars = [
        float(np.sort(x)[::-1][int(np.floor(rate * len(x)))])
        for x in scores
        if int(np.floor(rate * len(x))) < len(x)
    ]
    low = max(bars, default=-np.inf)
    if low < floor:  # the floor decides (0.5, or tier 2 for tier 3: itself mid-gap in the same scores)
        below, above = pooled[pooled < floor], pooled[pooled >= floor]
        return (
            float(floor),
            float(below.max()) if below.size else 0.0,
            float(above.min()) if above.size else ceiling,
        )
    above = pooled[pooled > low]
    high = float(above.min()) if above.size else ceiling
    if high <= low:
        raise TrainError(f"no score between {low:.6f} and the ceiling {ceiling:.6f}: nothing could pass")
    return (low + high) / 2, low, high


#: Per corpus: ``(location, risk probability, tier-3 score, in training half)`` of every user turn.
Scored = dict[str, list[tuple[str, float, float, bool]]]


def _score_corpora(head: Head, embed: _Cache, corpora: dict[str, list[tuple[str, str, bool]]]) -> Scored:
    """Score every user turn of the corpora with ``head`` as the screen does (:func:`._semantic.embed_message`:
    a message of several short sentences is approximated from its sentences), deciding piece first."""
    per: Scored = {}
    for name, rows in corpora.items():
        uniq = sorted({p for _, text, _ in rows for p in pieces(text)})
        emb = dict(zip(uniq, embed(uniq), strict=True))
        scored = []
        for location, text, train in rows:
            ps = pieces(text)
            z = embed.joined(ps[1:]) if len(ps) > 2 and ps[0] == text else np.stack([emb[p] for p in ps])
            p = head.family_proba(z)
            scored.append((location, *_decide(head, p, head.calibrate(head.raw_risk(z, p))), train))
        per[name] = scored
        print(f"{name}: {len(rows)} user turns ({sum(r[3] for r in scored)} in the training half)")
    return per


@dataclass(frozen=True)
class Bars:
    """The semantic layer's three thresholds on calibrated scores, each with its gap ``(low, high)`` of
    calibration scores (:func:`_threshold`): ``tier2`` and ``tier3`` (docs/safety.md) and ``pause``, the
    pause bar (:data:`FA_PAUSE`), at or below ``tier2``."""

    tier2: float
    tier2_gap: tuple[float, float]
    tier3: float
    tier3_gap: tuple[float, float]
    pause: float
    pause_gap: tuple[float, float]

    def meta(self) -> dict[str, object]:
        return {
            "tier2": self.tier2,
            "tier3": self.tier3,
            "pause": self.pause,
            "tier2_gap": list(self.tier2_gap),
            "tier3_gap": list(self.tier3_gap),
            "pause_gap": list(self.pause_gap),
        }

    def describe(self) -> str:
        return "thresholds: " + ", ".join(
            f"{name} {bar:.4f} (gap {gap[0]:.4f}-{gap[1]:.4f})"
            for name, bar, gap in (
                ("tier2", self.tier2, self.tier2_gap),
                ("tier3", self.tier3, self.tier3_gap),
                ("pause", self.pause, self.pause_gap),
            )
        )


def set_thresholds(head: Head, per: Scored) -> Bars:
    """The thresholds from the corpora's scores ``per`` (:func:`_score_corpora`): tier 2 at most
    :data:`FA_TIER2` and the pause bar at most :data:`FA_PAUSE` of each corpus's held-out half, tier 3 at
    most :data:`FA_TIER3_ALL` of every turn of both halves (the issue's bound is on all turns). Raises
    TrainError when a gap has nothing in it (:func:`_threshold`)."""
    held = [np.array([r[1] for r in rows if not r[3]]) for rows in per.values()]
    ceiling = float(head.calibrate(np.array([1.0]))[0])  # the highest calibrated risk there is
    tier2, *gap2 = _threshold(held, FA_TIER2, 0.5, ceiling)
    # tier 3 needs P >= tier2 as well, so only those turns' tier-3 scores can pass; the floor 0.5 keeps
    # the tier-3 families the larger part of the risk mass
    tier3, *gap3 = _threshold(
        [np.array([r[2] if r[1] >= tier2 else 0.0 for r in rows]) for rows in per.values()],
        FA_TIER3_ALL,
        0.5,
        ceiling,
    )
    pause, *gapp = _threshold(held, FA_PAUSE, 0.5, ceiling)
    pause = min(pause, tier2)
    return Bars(tier2, (gap2[0], gap2[1]), tier3, (gap3[0], gap3[1]), pause, (gapp[0], gapp[1]))


def _corpus_report(per: Scored, bars: Bars) -> dict[str, object]:
    """Per corpus and half: turns, turns at tier >= 2 and at the pause bar, tier-3 hit locations (never
    text); also printed."""
    out: dict[str, object] = {}
    for name, scored_rows in per.items():
        for half, part in (
            ("heldout", [r for r in scored_rows if not r[3]]),
            ("train", [r for r in scored_rows if r[3]]),
        ):
            t2 = sum(r[1] >= bars.tier2 for r in part)
            paused = sum(r[1] >= bars.pause for r in part)
            hits3 = [r[0] for r in part if r[1] >= bars.tier2 and r[2] >= bars.tier3]
            n = max(1, len(part))
            out[f"{name}.{half}"] = {
                "turns": len(part),
                "tier_ge2": t2,
                "rate_ge2": t2 / n,
                "at_pause_bar": paused,
                "rate_pause": paused / n,
                "tier3_hits": hits3,
            }
            print(
                f"{name} ({half} half): tier>=2 {t2}/{len(part)} = {100 * t2 / n:.2f}%; at the pause bar "
                f"{paused} = {100 * paused / n:.2f}%; tier 3 {len(hits3)}: {hits3}"
            )
    return out


def _kept(old: object, new: float, gap: tuple[float, float]) -> float:
    """``old`` when it is a number strictly inside ``gap``, else ``new``."""
    return float(old) if isinstance(old, (int, float)) and gap[0] < old < gap[1] else new


def recalibrate(args: argparse.Namespace, corpora: dict[str, list[tuple[str, str, bool]]]) -> int:
    """``--recalibrate``: keep the head in ``args.out`` (weights, gate, calibration, fine-tuned layers)
    and set its thresholds again from the corpora, as training would, keeping each old threshold that is
    still inside its new gap; ``meta`` keeps its training report and gains the thresholds, the corpus
    report and ``recalibrated``: ``before`` (training's thresholds, at which ``meta["cv"]`` was measured),
    ``previous`` (those this run replaced) and ``runs``."""
    head, tier2, tier3, meta = load_head(args.out, args.anchors, args.labelled)
    overrides = load_overrides(args.out)
    embed = _Cache(MiniLMEncoder.load(overrides=overrides), args.cache)
    per = _score_corpora(head, embed, corpora)
    embed.save()
    fresh = set_thresholds(head, per)
    old_pause = meta.get("pause")
    # a threshold still inside its new gap is kept: this machine's BLAS puts the calibration scores a
    # rounding error (about 1e-6) from where training saw them, which moves a gap's middle, not a decision
    bars = replace(
        fresh,
        tier2=_kept(tier2, fresh.tier2, fresh.tier2_gap),
        tier3=_kept(tier3, fresh.tier3, fresh.tier3_gap),
        pause=_kept(old_pause, fresh.pause, fresh.pause_gap),
    )
    print(f"thresholds before: tier2 {tier2:.6f}, tier3 {tier3:.6f}, pause {old_pause}")
    print(bars.describe())
    before = {"tier2": tier2, "tier3": tier3, "pause": old_pause}
    earlier = meta.get("recalibrated")
    # the first recalibration's "before" is training's thresholds, at which meta["cv"] was measured
    trained = earlier.get("before", before) if isinstance(earlier, dict) else before
    runs = earlier.get("runs", 1) if isinstance(earlier, dict) else 0
    meta.update(bars.meta())
    meta.update(_corpus_report(per, bars))
    meta["recalibrated"] = {"before": trained, "previous": before, "runs": int(runs) + 1}
    save_head(
        args.out,
        head,
        digest=anchors_digest(args.anchors, args.labelled),
        tier2=bars.tier2,
        tier3=bars.tier3,
        meta=meta,
        overrides={k: v.astype(np.float16) for k, v in overrides.items()},
    )
    print(f"wrote {args.out}")
    return 0


def _corpus_turns(data: Path) -> dict[str, list[tuple[str, str, bool]]]:
    """Per corpus: ``(location, text, in training half)`` of every user turn."""
    from launcher.transcripts.turns import turns_from_file

    return {
        name: [(t.location, t.text, training_half(t.session_key)) for t in turns_from_file(data / rel)]
        for name, rel in CORPORA.items()
    }


def _chat_examples(corpora: dict[str, list[tuple[str, str, bool]]]) -> list[str]:
    """The ordinary-talk examples: sentence pieces of the training half's turns that the rules alone
    keep below tier 2, deduplicated; at most :data:`MAX_CHAT`, chosen by the CRC-32 of their text (a
    fixed, content-blind sample)."""
    from ._lexical import SafetyConfig, screen

    rules_only = SafetyConfig(semantic=False)
    out: dict[str, None] = {}
    for rows in corpora.values():
        for _, text, train in rows:
            if train and text.strip() and screen(text, None, rules_only).tier < 2:
                for piece in pieces(text):
                    out.setdefault(piece.strip(), None)
    chosen = sorted((t for t in out if t), key=lambda t: zlib.crc32(t.encode("utf-8")))[:MAX_CHAT]
    return sorted(chosen)


def _examples(
    texts: list[str],
    fam_of: list[str],
    more: list[str],
    more_fams: list[str],
    corpora: dict[str, list[tuple[str, str, bool]]],
) -> tuple[list[str], list[str], list[int]]:
    """``(texts, families, origin)`` of every training example: the anchors, the labelled messages not
    already among them, the ordinary talk of the corpora's training half, then one misspelled copy of
    each non-corpus example (``origin[i]``: the example row ``i`` was made from, itself for an original)."""
    texts, fam_of = list(texts), list(fam_of)
    seen = {t.lower() for t in texts}
    for t, f in zip(more, more_fams, strict=True):
        if t.lower() not in seen:
            seen.add(t.lower())
            texts.append(t)
            fam_of.append(f)
    chat = [t for t in _chat_examples(corpora) if t.lower() not in seen]
    texts += chat
    fam_of += ["chat"] * len(chat)
    origin = list(range(len(texts)))
    seen = {t.lower() for t in texts}
    for i in range(len(texts)):
        if fam_of[i] == "chat":
            continue
        variant = typo_variant(texts[i], random.Random(zlib.crc32(texts[i].encode("utf-8"))))
        if variant.lower() not in seen:
            seen.add(variant.lower())
            texts.append(variant)
            fam_of.append(fam_of[i])
            origin.append(i)
    return texts, fam_of, origin


def _read_overrides(path: Path) -> dict[str, npt.NDArray[np.float16]]:
    """The float16 weights by state-dict name in a ``_finetune`` output file."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].astype(np.float16) for k in z.files if k != "report"}


def _finetune_report(path: Path) -> object:
    with np.load(path, allow_pickle=False) as z:
        return json.loads(str(z["report"])) if "report" in z.files else None


def dump_states(path: Path, encoder: MiniLMEncoder, texts: list[str], y: I64, folds: I64, top: int) -> None:
    """Write what :mod:`launcher.safety._finetune` trains on: the hidden states of every example
    below the top ``top`` layers (float16, packed; computed once, so its epochs only run the top),
    their lengths, labels, folds, the families' tiers and the top layers' current weights."""
    bert = encoder.bert
    first = len(bert.layers) - top
    states, lens = bert.token_states(encoder.token_ids(texts), first)
    names = [
        "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
        "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm",
    ]  # fmt: skip
    weights: dict[str, Any] = {}
    for i in range(first, len(bert.layers)):
        L, p = bert.layers[i], f"encoder.layer.{i}."
        qw, kw, vw = np.split(L.qkv_w, 3, axis=1)
        qb, kb, vb = np.split(L.qkv_b, 3)
        parts = [(qw, qb), (kw, kb), (vw, vb), (L.out_w, L.out_b), (L.ln1_w, L.ln1_b), (L.up_w, L.up_b),
                 (L.down_w, L.down_b), (L.ln2_w, L.ln2_b)]  # fmt: skip
        for n, (w, b) in zip(names, parts, strict=True):
            weights[f"w:{p}{n}.weight"] = np.ascontiguousarray(w.T) if w.ndim == 2 else w
            weights[f"w:{p}{n}.bias"] = b
    np.savez(
        path,
        states=states.astype(np.float16),
        lens=lens,
        parity_states=states[: int(lens[:64].sum())],  # float32, for the numpy-vs-torch check
        y=y,
        folds=folds,
        tiers=np.array([FAMILIES[f] for f in FAMILIES], dtype=np.int64),
        first=np.array(first),
        heads=np.array(bert.heads),
        eps=np.array(bert.eps),
        **weights,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m launcher.safety._train", description=__doc__.split("\n")[0])
    ap.add_argument("--anchors", type=Path, default=ANCHORS_PATH)
    ap.add_argument("--labelled", type=Path, default=LABELLED_PATH)
    ap.add_argument("--out", type=Path, default=HEAD_PATH)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=None, help="an .npz file keeping embeddings between runs")
    ap.add_argument(
        "--overrides",
        type=Path,
        default=None,
        help="encoder weights written by launcher.safety._finetune (float16 .npz): embed with them and ship them",
    )
    ap.add_argument(
        "--dump-states",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the examples' hidden states below the top --top layers for _finetune, then stop",
    )
    ap.add_argument(
        "--top", type=int, default=1, help="with --dump-states: how many top layers are fine-tuned"
    )
    ap.add_argument(
        "--recalibrate",
        action="store_true",
        help="keep the head in --out and set its thresholds again from the corpora (no training)",
    )
    args = ap.parse_args(argv)
    try:
        texts, fam_of = read_anchors(args.anchors)
        more, more_fams = read_anchors(args.labelled)
        missing = [str(args.data / p) for p in CORPORA.values() if not (args.data / p).exists()]
        if missing:
            raise TrainError(f"corpora not found: {', '.join(missing)}. Fix: pass --data DIR")
    except TrainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.recalibrate and not args.out.is_file():
        print(
            f"error: no semantic head at {args.out} to recalibrate. Fix: name the head file to keep and "
            "rewrite with --out, or train one with `python -m launcher.safety._train`",
            file=sys.stderr,
        )
        return 2
    corpora = _corpus_turns(args.data)
    if args.recalibrate:
        try:
            return recalibrate(args, corpora)
        except (HeadError, TrainError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    texts, fam_of, origin = _examples(texts, fam_of, more, more_fams, corpora)
    short = [f for f in RISK_FAMILIES if fam_of.count(f) < 20]
    if short:
        print(f"error: fewer than 20 examples for {', '.join(short)}", file=sys.stderr)
        return 2
    fams = tuple(FAMILIES)
    tiers = np.array([FAMILIES[f] for f in fams], dtype=np.int64)
    y = np.array([fams.index(f) for f in fam_of], dtype=np.int64)
    overrides = _read_overrides(args.overrides) if args.overrides else None
    encoder = MiniLMEncoder.load(overrides=overrides)
    if args.dump_states is not None:
        dump_states(args.dump_states, encoder, texts, y, cv_folds(y, len(fams), np.array(origin)), args.top)
        print(f"wrote {args.dump_states}")
        return 0
    embed = _Cache(encoder, args.cache)
    x = embed(texts)
    embed.save()
    temp, proba, raw, pa, pc = cross_validate(x, y, fams, tiers, np.array(origin, dtype=np.int64))
    head = _head(x, y, fams, tiers, temp, gate=np.array(origin) == np.arange(len(origin)))
    head = replace(head, platt_a=pa, platt_c=pc)
    print(f"examples: {len(texts)} ({Counter(fam_of)}); temperature {temp:.3f}; platt a={pa:.3f} c={pc:.3f}")

    per = _score_corpora(head, embed, corpora)
    embed.save()
    bars = set_thresholds(head, per)
    meta: dict[str, object] = {
        "tier3_score": TIER3_SCORE,
        "l2": L2,
        "knn": KNN,
        "kappa": KAPPA,
        **bars.meta(),
        "examples": dict(Counter(fam_of)),
        "overrides": sorted(overrides or {}),
        "finetune": _finetune_report(args.overrides) if args.overrides else None,
    }
    meta.update(_corpus_report(per, bars))
    tier2, tier3 = bars.tier2, bars.tier3
    oof = head.calibrate(raw.astype(np.float64))
    pos = tiers[y] >= 2
    score3 = head.tier3_score(proba.astype(np.float64), oof)
    meta["cv"] = cv = {
        "family_accuracy": float((proba.argmax(1) == y).mean()),
        "recall_ge2": float((oof[pos] >= tier2).mean()),
        "recall_tier3": float(((oof >= tier2) & (score3 >= tier3))[tiers[y] == 3].mean()),
        "negatives_ge2": {
            f: float((oof[y == i] >= tier2).mean()) for i, f in enumerate(fams) if tiers[i] < 2
        },
        "recall_ge2_by_family": {
            f: float((oof[y == i] >= tier2).mean()) for i, f in enumerate(fams) if tiers[i] >= 2
        },
    }
    print(bars.describe())
    print("cross-validation (out of fold): " + json.dumps(cv, indent=1))
    save_head(
        args.out,
        head,
        digest=anchors_digest(args.anchors, args.labelled),
        tier2=tier2,
        tier3=tier3,
        meta=meta,
        overrides=overrides,
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
