"""The screen over every seeker turn of ESConv's test split (Liu et al., ACL 2021; CC BY-NC 4.0).

Every tier-3 hit on this corpus was reviewed by hand and is a real risk statement; the test pins that
set so a rule change that adds a false crisis (or loses the real one) fails here. The texts are read at
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

# (dialog line index, turn index) -> why it is a real risk statement (reviewed by hand)
REVIEWED_TIER3 = {
    (127, 7): "states a wish to jump over a bridge (intent with a means)",
}
# dialogs whose tier-2 hits were reviewed: passive ideation, abuse disclosed, self-harm mention
REVIEWED_TIER2_DIALOGS = {44, 66, 92, 127, 161, 183}


@pytest.mark.skipif(not ESCONV.is_file(), reason=f"shared data file {ESCONV} is absent")
def test_esconv_tier3_hits_are_few_and_real() -> None:
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
    print(f"ESConv seeker turns by tier: {dict(sorted(tiers.items()))}")
    assert sum(tiers.values()) > 3000
    assert set(tier3) == set(REVIEWED_TIER3), tier3
    for reasons in tier3.values():
        assert any(r.startswith("t3.") for r in reasons), reasons  # a real risk rule, not an escalation
    assert tier2_dialogs == REVIEWED_TIER2_DIALOGS
    assert tiers[3] <= 3 and tiers[2] <= 20
