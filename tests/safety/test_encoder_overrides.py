"""The encoder's weight overrides (the fine-tuned top layer the semantic head may ship, round 4) and
the split forward pass the training caches: lower layers once, the top layers per epoch."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import load_file

from launcher.safety._encoder import EncoderError, MiniLMEncoder, model_dir
from launcher.safety._semantic import HEAD_PATH, load_head, load_overrides

TEXTS = ["i walked the dog before work", "ive got the tablets counted out on the table", "ok"]
NAME = "encoder.layer.5.output.dense.bias"


@pytest.fixture(scope="module")
def plain() -> MiniLMEncoder:
    return MiniLMEncoder.load()


def test_lower_layer_states_finished_by_the_top_layers_give_the_same_embeddings(plain: MiniLMEncoder) -> None:
    ids = plain.token_ids(TEXTS)
    for first in (0, 5, 6):
        states, lens = plain.bert.token_states(ids, first)
        assert states.shape == (sum(len(i) for i in ids), 384) and list(lens) == [len(i) for i in ids]
        np.testing.assert_allclose(
            plain.bert.embed_states(states, lens, first), plain.encode(TEXTS), atol=1e-6
        )


def test_an_override_replaces_the_packaged_weight(plain: MiniLMEncoder) -> None:
    original = load_file(str(model_dir() / "model.safetensors"))[NAME]
    same = MiniLMEncoder.load(overrides={NAME: original.astype(np.float32)})
    np.testing.assert_array_equal(same.encode(TEXTS), plain.encode(TEXTS))
    noise = np.random.default_rng(0).normal(0.0, 0.5, original.shape)  # a constant would be normalised away
    moved = MiniLMEncoder.load(overrides={NAME: (original + noise).astype(np.float16)})
    assert np.abs(moved.encode(TEXTS) - plain.encode(TEXTS)).max() > 1e-3


def test_an_override_of_the_wrong_shape_or_name_is_refused() -> None:
    with pytest.raises(EncoderError, match="does not match the model") as e:
        MiniLMEncoder.load(overrides={NAME: np.zeros(3, np.float16)})
    assert e.value.code == "model_invalid"
    with pytest.raises(EncoderError, match="retrain"):
        MiniLMEncoder.load(overrides={"encoder.layer.9.nothing": np.zeros(3, np.float16)})


def test_a_shipped_fine_tuned_layer_matched_torch_at_training_time() -> None:
    overrides = load_overrides(HEAD_PATH)
    _, _, _, meta = load_head()
    assert sorted(overrides) == meta["overrides"]
    if overrides:  # the training refuses a layer whose numpy and torch embeddings differ by over 1e-4
        report = meta["finetune"]
        assert isinstance(report, dict) and report["parity_max_abs"] <= 1e-4
        assert all(v.dtype == np.float16 for v in overrides.values())
