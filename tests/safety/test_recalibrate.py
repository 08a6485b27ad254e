"""``python -m launcher.safety._train --recalibrate``: the shipped head, copied, with its thresholds set again
from small real corpora (the first transcripts of each corpus in ../shared/data): the weights, the gate and
the fine-tuned layers are kept byte for byte, the new thresholds come from those corpora, a threshold still
inside its new gap is kept, the report names the old thresholds, and the file loads as a head. Bad input is
a clear error (exit 2) that leaves the file as it was."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from launcher.safety._semantic import HEAD_PATH, load_head, load_overrides
from launcher.safety._train import CORPORA, main
from launcher.transcripts.turns import turns_from_file

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "esconv").is_dir(), reason=f"shared data {DATA} is absent")


def _small_corpora(root: Path) -> Path:
    """The first 6 ESConv dialogs, AnnoMI's first 3 transcripts and 2 UIC patients, laid out as the
    corpora folder is."""
    (root / "esconv").mkdir(parents=True)
    with (DATA / "esconv" / "ESConv-test.jsonl").open(encoding="utf-8") as f:
        (root / "esconv" / "ESConv-test.jsonl").write_text(
            "".join(next(f) for _ in range(6)), encoding="utf-8"
        )
    (root / "annomi").mkdir()
    with (DATA / "annomi" / "AnnoMI-dev.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    ids = list(dict.fromkeys(r[1] for r in rows[1:]))[:3]
    with (root / "annomi" / "AnnoMI-dev.csv").open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([rows[0], *(r for r in rows[1:] if r[1] in ids)])
    uic = root / "uic_health_coaching"
    uic.mkdir()
    patients = sorted(p for p in (DATA / "uic_health_coaching").glob("patient*.csv"))[:2]
    for p in patients:
        shutil.copy(p, uic / p.name)
    return root


@needs_data
def test_recalibrate_keeps_the_head_and_sets_its_thresholds_from_the_corpora(tmp_path: Path) -> None:
    head_file = tmp_path / "head.npz"
    shutil.copy(HEAD_PATH, head_file)
    before_head, tier2, tier3, meta = load_head(head_file)
    corpora = _small_corpora(tmp_path / "c")
    assert main(["--recalibrate", "--out", str(head_file), "--data", str(corpora)]) == 0

    head, new2, new3, new_meta = load_head(head_file)  # loads: the anchors' digest still fits
    for name in ("w", "b", "anchors", "anchor_risk", "tiers"):
        assert np.array_equal(getattr(head, name), getattr(before_head, name)), name
    assert (head.temperature, head.kappa, head.platt_a, head.platt_c) == (
        before_head.temperature,
        before_head.kappa,
        before_head.platt_a,
        before_head.platt_c,
    )
    old_layers, new_layers = load_overrides(HEAD_PATH), load_overrides(head_file)
    assert sorted(old_layers) == sorted(new_layers) and old_layers
    assert all(np.array_equal(old_layers[k], new_layers[k]) for k in old_layers)

    earlier = meta.get("recalibrated")
    trained = (
        earlier["before"] if isinstance(earlier, dict) else {"tier2": tier2, "tier3": tier3, "pause": None}
    )
    assert (
        new_meta["recalibrated"]["before"] == trained
    )  # training's thresholds, where meta["cv"] was measured
    assert new_meta["recalibrated"]["previous"] == {
        "tier2": tier2,
        "tier3": tier3,
        "pause": meta.get("pause"),
    }
    assert new_meta["recalibrated"]["runs"] == (
        earlier.get("runs", 1) + 1 if isinstance(earlier, dict) else 1
    )
    for name, bar in (("tier2", new2), ("tier3", new3), ("pause", new_meta["pause"])):
        low, high = new_meta[f"{name}_gap"]
        assert (isinstance(bar, float) and low < bar < high) or bar == 0.5, (name, bar, low, high)
        old = meta.get(name)
        # kept when still inside its new gap, else the new gap's middle (or its floor)
        if isinstance(old, float) and low < old < high:
            assert bar == old, name
    assert new_meta["pause"] <= new2
    assert {"esconv.heldout", "annomi.heldout", "uic.heldout"} <= set(new_meta)
    report = json.dumps(new_meta)  # locations and counts, never a user's words
    texts = [t.text for rel in CORPORA.values() for t in turns_from_file(corpora / rel) if len(t.text) >= 25]
    assert texts and not [t for t in texts if t in report]


@needs_data
@pytest.mark.parametrize("problem", ["no_head", "no_corpora"])
def test_recalibrate_bad_input_is_a_clear_error_and_changes_nothing(
    tmp_path: Path, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    head_file = tmp_path / "head.npz"
    data = _small_corpora(tmp_path / "c")
    if problem == "no_head":
        head_file = tmp_path / "missing.npz"
    else:
        shutil.copy(HEAD_PATH, head_file)
        shutil.rmtree(data / "annomi")
    before = head_file.read_bytes() if head_file.exists() else None
    assert main(["--recalibrate", "--out", str(head_file), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert (
        ("no semantic head at" in err and "--out" in err)
        if problem == "no_head"
        else "corpora not found" in err
    )
    assert (head_file.read_bytes() if head_file.exists() else None) == before
