"""``python -m launcher.safety._train``: fit the semantic layer's head and write
``launcher/safety/data/semantic_head.npz`` (deterministic for given anchors, corpora and libraries).

Steps: read and check ``data/anchors.jsonl``; embed it; 5-fold cross-validation (folds stratified by
family, assigned round-robin in file order) gives out-of-fold logits, from which the softmax temperature
is fitted, and out-of-fold raw risks, from which the Platt calibration is fitted; fit the head on all
anchors; score every user turn of the corpora in ``--data`` (ESConv test, AnnoMI dev, UIC; read by
:mod:`launcher.transcripts`) and set the thresholds (see :mod:`launcher.safety._semantic`); write the
head with the anchors' SHA-256 and a report (``meta``: CV figures, rates per corpus, tier-3 hit
locations, never text). Embedding the corpora takes a few minutes on 2 cores.

Exit status: 0 written; 2 bad anchors or missing corpora (the message says which).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ._encoder import MiniLMEncoder
from ._head import F32, Head, fit_platt, fit_softmax, fit_temperature, softmax
from ._segments import pieces
from ._semantic import ANCHORS_PATH, HEAD_PATH, anchors_digest, save_head

RISK_FAMILIES = {
    "passive_ideation": 2, "active_ideation": 2, "self_harm": 2, "abuse": 2,
    "method": 3, "intent": 3, "plan": 3, "means": 3, "preparatory": 3, "timeline": 3, "in_progress": 3,
    "other_in_danger": 3, "lethal_means_request": 3, "medical_emergency": 3,
}  # fmt: skip
OTHER_FAMILIES = {"idiom": 0, "coaching": 0, "distress": 1, "negated": 1}
FAMILIES = {**RISK_FAMILIES, **OTHER_FAMILIES}
L2, KNN, KAPPA, FOLDS = 1e-4, 3, 20.0, 5  # chosen by cross-validation (see the report in meta)
FA_TIER2, FA_TIER3 = 0.01, 0.003  # most turns of each corpus allowed at tier >= 2 / tier 3
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
    of :data:`FAMILIES` and its tier, no duplicate text, at least 20 examples per risk family."""
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
    short = [f for f in RISK_FAMILIES if fams.count(f) < 20]
    if short:
        raise TrainError(f"{path}: fewer than 20 examples for {', '.join(short)}")
    return texts, fams


def _head(x: F32, y: I64, fams: tuple[str, ...], tiers: I64, t: float = 1.0) -> Head:
    w, b = fit_softmax(x, y, len(fams), l2=L2)
    return Head(fams, tiers, w, b, t, x, tiers[y] >= 2, KNN, KAPPA)


def cross_validate(x: F32, y: I64, fams: tuple[str, ...], tiers: I64) -> tuple[float, F32, F32, float, float]:
    """``(temperature, oof_proba, oof_raw_risk, platt_a, platt_c)`` from :data:`FOLDS`-fold CV."""
    folds = np.zeros(len(y), dtype=np.int64)
    for c in range(len(fams)):
        members = np.flatnonzero(y == c)
        folds[members] = np.arange(len(members)) % FOLDS
    heads = [_head(x[folds != f], y[folds != f], fams, tiers) for f in range(FOLDS)]
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


def _decide(head: Head, p: npt.NDArray[np.float64], risk: npt.NDArray[np.float64]) -> tuple[float, bool]:
    """(risk probability of the deciding piece, whether tier-3 families hold most of its risk mass)."""
    j = int(risk.argmax())
    return float(risk[j]), bool(p[j, head.tiers == 3].sum() >= 0.5 * p[j, head.risk].sum())


def _threshold(scores: list[npt.NDArray[np.float64]], rate: float, floor: float) -> float:
    """Smallest threshold at or above ``floor`` passing at most ``rate`` of each score array."""
    th = float(floor)
    for s in scores:
        allowed = int(np.floor(rate * len(s)))
        if allowed < len(s):
            th = max(th, float(np.sort(s)[::-1][allowed]) + 1e-9)
    return th


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m launcher.safety._train", description=__doc__.split("\n")[0])
    ap.add_argument("--anchors", type=Path, default=ANCHORS_PATH)
    ap.add_argument("--out", type=Path, default=HEAD_PATH)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data")
    args = ap.parse_args(argv)
    try:
        texts, fam_of = read_anchors(args.anchors)
        missing = [str(args.data / p) for p in CORPORA.values() if not (args.data / p).exists()]
        if missing:
            raise TrainError(
                f"corpora for the thresholds not found: {', '.join(missing)}. Fix: pass --data DIR"
            )
    except TrainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fams = tuple(FAMILIES)
    tiers = np.array([FAMILIES[f] for f in fams], dtype=np.int64)
    y = np.array([fams.index(f) for f in fam_of], dtype=np.int64)
    enc = MiniLMEncoder.load()
    x = enc.encode(texts)
    temp, proba, raw, pa, pc = cross_validate(x, y, fams, tiers)
    head = _head(x, y, fams, tiers, temp)
    head = replace(head, platt_a=pa, platt_c=pc)
    print(f"anchors: {len(texts)} ({Counter(fam_of)}); temperature {temp:.3f}; platt a={pa:.3f} c={pc:.3f}")

    from launcher.eval_safety import turns_from_file

    per: dict[str, list[tuple[str, float, bool]]] = {}
    for name, rel in CORPORA.items():
        turns = list(turns_from_file(args.data / rel))
        uniq = sorted({p for t in turns for p in pieces(t.text)})
        emb = dict(zip(uniq, enc.encode(uniq), strict=True))
        rows = []
        for t in turns:
            z = np.stack([emb[p] for p in pieces(t.text)])
            p = head.family_proba(z)
            rows.append((t.location, *_decide(head, p, head.calibrate(head.raw_risk(z, p)))))
        per[name] = rows
        print(f"{name}: {len(turns)} user turns, {len(uniq)} pieces scored")
    tier2 = _threshold([np.array([r[1] for r in rows]) for rows in per.values()], FA_TIER2, 0.5)
    tier3 = _threshold(
        [np.array([r[1] if r[2] else 0.0 for r in rows]) for rows in per.values()], FA_TIER3, tier2
    )
    meta: dict[str, object] = {"l2": L2, "knn": KNN, "kappa": KAPPA, "tier2": tier2, "tier3": tier3}
    for name, rows in per.items():
        t2 = sum(r[1] >= tier2 for r in rows)
        hits3 = [r[0] for r in rows if r[1] >= tier3 and r[2]]
        meta[name] = {"turns": len(rows), "tier_ge2": t2, "rate_ge2": t2 / len(rows), "tier3_hits": hits3}
        print(f"{name}: tier>=2 {t2}/{len(rows)} = {100 * t2 / len(rows):.2f}%; tier 3 {len(hits3)}: {hits3}")
    oof = head.calibrate(raw.astype(np.float64))
    pos = tiers[y] >= 2
    major3 = proba[:, tiers == 3].sum(1) >= 0.5 * proba[:, tiers >= 2].sum(1)
    meta["cv"] = cv = {
        "family_accuracy": float((proba.argmax(1) == y).mean()),
        "recall_ge2": float((oof[pos] >= tier2).mean()),
        "recall_tier3": float(((oof >= tier3) & major3)[tiers[y] == 3].mean()),
        "negatives_ge2": {
            f: float((oof[y == i] >= tier2).mean()) for i, f in enumerate(fams) if tiers[i] < 2
        },
        "recall_ge2_by_family": {
            f: float((oof[y == i] >= tier2).mean()) for i, f in enumerate(fams) if tiers[i] >= 2
        },
    }
    print(f"thresholds: tier2 {tier2:.4f}, tier3 {tier3:.4f}")
    print("cross-validation (out of fold): " + json.dumps(cv, indent=1))
    save_head(args.out, head, digest=anchors_digest(args.anchors), tier2=tier2, tier3=tier3, meta=meta)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
