"""The screen over every seeker turn of ESConv's test split (Liu et al., ACL 2021; CC BY-NC 4.0).

Every tier-3 hit on this corpus was reviewed by hand (verdicts below); the test pins that set so a change
that adds a crisis nobody reviewed (or loses the real one) fails here. The texts are read at
test time from ../shared/data and never copied into the project.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from launcher.safety import SafetyState, screen

REPO = Path(__file__).resolve().parents[2]
ESCONV = REPO.parent / "shared" / "data" / "esconv" / "ESConv-test.jsonl"

# (dialog line index, turn index) -> verdict of the hand review ("real": a crisis statement)
REVIEWED_TIER3 = {
    (127, 7): "real: states a wish to jump over a bridge (intent with a means)",
    (168, 39): "false: 'what if it doesn't pass?' about sadness, read by the semantic layer as a timeline",
    (183, 34): "real risk: hopes for it ('cross my fingers') right after 'time for my heart to give out' "
    "(over-tiered: a passive wish, not a plan)",
    (183, 35): "real: wishes to die in their sleep, in the window after the turn above",
    (183, 36): "real: goes on wishing for the heart to stop in a dream (passive wish, escalated by the "
    "post-crisis window after the turns above)",
}
# dialogs with tier-2 hits, reviewed: passive ideation, abuse disclosed, self-harm mention, grief over an
# overdose, the post-crisis floor after the tier-3 turns above, and the semantic layer's false pauses
# (0, 3, 15, 85, 100, 107, 119, 137, 139: distress, a partner's behaviour or work talk it cannot tell
# from risk; round 3 adds 12: a friend's husband shot dead, read as abuse; 101: "keep hope alive";
# 140: anger at parents; 152: racing worried thoughts; and no longer pauses 43, 47, 58, 84, 102, 111,
# 177; coaching pauses and the user is asked directly)
REVIEWED_TIER2_DIALOGS = {
    0, 3, 12, 15, 42, 44, 66, 85, 92, 100, 101, 107, 119, 127, 137, 139, 140, 152, 161, 168, 183,
}  # fmt: skip


@pytest.mark.skipif(not ESCONV.is_file(), reason=f"shared data file {ESCONV} is absent")
def test_esconv_tier3_hits_are_few_and_reviewed() -> None:
    tiers: Counter[int] = Counter()
    tier3: dict[tuple[int, int], list[str]] = {}
    tier2_dialogs: set[int] = set()
    with ESCONV.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f):
            dialog = json.loads(line)
            state = SafetyState()
            for turn_no, turn in enumerate(dialog["dialog"]):
                if turn["speaker"] != "usr":
                    continue
                result = screen(turn["text"], state)
                tiers[result.tier] += 1
                if result.tier == 3:
                    tier3[(line_no, turn_no)] = result.reasons
                elif result.tier == 2:
                    tier2_dialogs.add(line_no)
    turns = sum(tiers.values())
    print(f"ESConv seeker turns by tier: {dict(sorted(tiers.items()))}")
    assert turns > 3000
    assert set(tier3) == set(REVIEWED_TIER3), tier3  # a new tier-3 hit needs a review and a verdict here
    false_crises = [k for k, verdict in REVIEWED_TIER3.items() if verdict.startswith("false")]
    assert len(false_crises) <= turns / 1000  # the bound: at most 1 in 1,000 ordinary turns
    assert tier2_dialogs <= REVIEWED_TIER2_DIALOGS, tier2_dialogs - REVIEWED_TIER2_DIALOGS
    assert tiers[2] + tiers[3] <= 0.02 * turns  # tier >= 2 on at most 2 % of turns
