"""Typo augmentation of the semantic layer's training examples (launcher.safety._augment)."""

from __future__ import annotations

import random

from launcher.safety._augment import typo_variant


def test_a_variant_differs_by_one_edit_in_one_or_two_long_words() -> None:
    text = "I have been thinking about ending everything tonight"
    for seed in range(50):
        variant = typo_variant(text, random.Random(seed))
        assert variant.lower() != text.lower()
        changed = [
            (a, b) for a, b in zip(text.lower().split(), variant.lower().split(), strict=False) if a != b
        ]
        assert len(variant.split()) == len(text.split())
        assert 1 <= len(changed) <= 2
        for a, b in changed:
            assert len(a) >= 4 and a[0] == b[0] and abs(len(a) - len(b)) <= 1


def test_variants_are_deterministic_per_seed_and_short_words_are_left_alone() -> None:
    assert typo_variant("the pills are on my desk", random.Random(3)) == typo_variant(
        "the pills are on my desk", random.Random(3)
    )
    assert typo_variant("ok so i am", random.Random(1)) == "ok so i am"
    assert typo_variant("", random.Random(1)) == ""
