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
    (
        127,
        16,
    ): "false: 'she just said it's over! over the damn phone' (the break-up), two turns after the real "
    "crisis of 127:7, read by round 6's head as an act under way in that context; the message alone is not "
    "a crisis",
}
# Round 7's head no longer puts (127, 14) ("why end so abruptly", in 127:7's post-crisis window) at tier 3.
# Round 6's head no longer puts (0, 10) ("i have no car to escape it", round 4) at tier 3.
# Round 3 also had (168, 39) (false: 'what if it doesn't pass?' read as a timeline) and (183, 34-36)
# (passive wishes to die in one's sleep, tier 3 only through the post-crisis window); round 4's head
# puts 168:39 below tier 2 and 183:33-36 at tier 2 (passive ideation: coaching pauses, the user is asked).
# dialogs with tier-2 hits, reviewed: passive ideation, abuse disclosed, self-harm mention, grief over an
# overdose, and the semantic layer's false pauses (0, 3, 15, 85, 100, 107, 119, 137: distress, a
# partner's behaviour or work talk it cannot tell from risk; round 4 adds 13: friends who make plans
# and bail, read as a plan; 19: the one-word answer "jumping"; 49: "my life was put on a pause"; 173: a
# reading routine in "a room where I can do this", read as a method; and no longer pauses 12, 42, 101,
# 139, 140, 168; coaching pauses and the user is asked directly; round 5's head adds 4: two work
# deadlines, "the end of this month and end of next month", read as a timeline; round 6's head adds 187:
# the seeker's sympathy for the helper's fight with a partner, read as abuse, and 193: 'there is always
# "next year" so I am waiting for it', read as a timeline; round 7's head adds 112: jealousy of a friend's
# photo with her husband, read as a preparatory act; round 11's pause bar adds 8: "I don't really know what to
# do anymore, I am just lazy on everything", read as an act under way; 162: "I hate ending the day knowing I've
# bummed it out", read as ideation; both false pauses; and pauses turns of 15, 119 (a felony, "there is no
# escape ... this is brutal goodbye": a pause a counsellor would make) and 193 ("I have pills of written works")
REVIEWED_TIER2_DIALOGS = {
    0, 3, 4, 12, 13, 15, 19, 42, 44, 49, 66, 85, 92, 100, 101, 107, 119, 127, 137, 139, 140, 152, 161, 168, 173, 183,
    112, 187, 193, 8, 162,
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
