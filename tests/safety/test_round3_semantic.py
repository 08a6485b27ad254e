"""Round 3 of issue 12, the semantic layer's cost and context: the nearest-anchor gate computed on split,
partially sorted anchors gives the sorted definition's numbers; a short message of several sentences
costs one encoder pass over its sentences (the whole is approximated from them); the head file keeps
its anchors in float16 and stays small; a tier-3 family named at tier 2 is tier 3 when the message
anchors it in time, place or means, and after earlier risk in the session. The
texts are written for these tests (none from any evaluation set or ../shared/data)."""

from __future__ import annotations

import numpy as np
import pytest

from launcher.safety import SafetyState, _semantic, screen
from launcher.safety._segments import pieces
from launcher.safety._semantic import SemanticLayer, semantic_layer


@pytest.fixture(scope="module")
def layer() -> SemanticLayer:
    return semantic_layer()


def test_gate_matches_the_sorted_definition(layer: SemanticLayer) -> None:
    head = layer.head
    z = layer.encoder.encode(
        ["i have the pills counted out", "the printer jammed again", "so tired of it all"]
    )
    p = head.family_proba(z)
    sims = z @ head.anchors.T
    k = min(head.knn, int(head.anchor_risk.sum()), int((~head.anchor_risk).sum()))
    top_r = -np.sort(-sims[:, head.anchor_risk], axis=1)[:, :k].mean(axis=1)
    top_n = -np.sort(-sims[:, ~head.anchor_risk], axis=1)[:, :k].mean(axis=1)
    gate = 1.0 / (1.0 + np.exp(-head.kappa * (top_r - top_n).astype(np.float64)))
    np.testing.assert_allclose(head.raw_risk(z, p), p[:, head.risk].sum(axis=1) * gate, rtol=1e-5, atol=1e-7)


def test_short_message_of_several_sentences_is_one_pass(
    layer: SemanticLayer, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "Finished the report early. Then I went for a long run. Dinner was late."
    parts = pieces(text)
    assert parts[0] == text and len(parts) == 4
    calls: list[int] = []
    bert = layer.encoder._bert
    original = bert.embed

    def counting(ids, means=None):  # type: ignore[no-untyped-def]
        calls.append(len(ids))
        return original(ids, means)

    monkeypatch.setattr(bert, "embed", counting)
    z = _semantic.embed_message(layer.encoder, text)
    assert calls == [3]  # the three sentences, in one pass; the whole is not encoded again
    monkeypatch.undo()
    assert z.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(z[1:], layer.encoder.encode(parts[1:]), atol=1e-5)
    assert float(z[0] @ layer.encoder.encode([text])[0]) > 0.8


def test_head_file_is_small_and_keeps_anchors_in_float16() -> None:
    # float16 gate anchors (since round 7 the original examples only: 10.3 MB for 13,395) and the
    # fine-tuned layers 4 and 5 (float16, 7.1 MB; layer 5 alone since round 4): 15.4 MiB since round 7
    # (13.0 in round 6), over the 10 MB target (docs/safety.md); this bound keeps it from growing further
    assert _semantic.HEAD_PATH.stat().st_size <= 16 * 2**20
    with np.load(_semantic.HEAD_PATH, allow_pickle=False) as z:
        assert z["anchors"].dtype == np.float16


def test_tier_3_family_at_tier_2_is_a_crisis_with_a_time_word() -> None:
    anchored = screen("sorted everything out for tomorrow night, the notes are written")
    # the family the head names (preparatory in round 5, plan in round 6) is not the point: tier 3 is
    assert anchored.tier == 3 and any(r.startswith("sem3.") for r in anchored.reasons), anchored.reasons
    plain = screen("lined up everything i need")
    assert plain.tier == 2 and not any(r.startswith("sem3.") for r in plain.reasons)


def test_action_after_earlier_risk_is_a_crisis() -> None:
    state = SafetyState()
    assert screen("lined up everything i need").tier == 2  # alone: a pause, not a crisis
    assert screen("honestly I wish I could fall asleep and never wake up", state).tier == 2
    result = screen("lined up everything i need", state)
    # the action family is the head's call (round 3: plan; round 4's fine-tuned layer: means)
    assert result.tier == 3 and any(r in result.reasons for r in ("ctx.plan", "ctx.means"))
