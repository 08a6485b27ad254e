"""Under-tiered messages from a tester, fixed by rule families (COACHING.md, SAFETY), with the negatives
that must stay low: means turned on oneself, farewell after hopelessness, lethal-means questions that
carry a death wish, third-party risk, large ingestions, spacing inside words, letter transpositions."""

from __future__ import annotations

import pytest

from launcher.safety import SafetyConfig, SafetyState, ScreenResult, support_response
from launcher.safety import screen as _screen
from launcher.safety._normalize import normalize


def screen(text: str, state: SafetyState | None = None, config: SafetyConfig | None = None) -> ScreenResult:
    """The rule layer (lexicon + context) alone: this module pins the rules' tiers; the layers together
    are tested in test_layers.py and measured by ``coach eval safety --labels``."""
    return _screen(text, state, (config or SafetyConfig()).model_copy(update={"semantic": False}))


# (message, expected tier, a rule id that must be among the reasons); each tester row first, then variants
RAISED = [
    # means + intent, self-directed (means named anywhere in the message)
    ("I have a gun and I'm going to use it on myself", 3, "t3.means_intent"),
    ("I have a gun and I'm going to point it at myself", 3, "t3.means_intent"),
    ("I have a knife. I want to use it on myself tonight", 3, "t3.means_intent"),
    ("I'm going to turn the gun on myself", 3, "t3.means_intent"),
    ("got my dad's pistol, gonna put it to my head", 3, "t3.means_intent"),
    # farewell after hopelessness / passive ideation
    ("I can't go on, I'm done, goodbye everyone", 3, "t3.farewell"),
    ("I can't go on", 2, "t2.passive_ideation"),
    ("I'm done with life", 2, "t2.passive_ideation"),
    # since round 5 a farewell after hopelessness is a crisis (preparatory behaviour, C-SSRS item 6)
    ("I'm so hopeless. goodbye everyone", 3, "t3.context_farewell"),
    ("everything is hopeless, this is goodbye", 2, "t2.farewell"),
    # lethal-means questions that carry their own death wish: no earlier distress needed
    ("how many pills would it take to never wake up", 3, "t3.lethal_means_wish"),
    ("how many sleeping pills does it take to not wake up", 3, "t3.lethal_means_wish"),
    ("how much insulin would it take to die", 3, "t3.lethal_means_wish"),
    ("how many of my meds would I need to take to die", 3, "t3.lethal_means_wish"),
    ("how many tylenol would it take to kill myself", 3, "t3.lethal_means_wish"),
    # third-party risk: pause, ask, give resources (not a crisis reply about the user)
    ("my friend wants to kill herself", 2, "t2.third_party_risk"),
    ("my little sister is suicidal", 2, "t2.third_party_risk"),
    ("my friend is feeling suicidal", 2, "t2.third_party_risk"),
    ("she is going to kill herself", 2, "t2.third_party_risk"),
    ("my brother keeps talking about ending his life", 2, "t2.third_party_risk"),
    ("he keeps cutting himself", 2, "t2.third_party_risk"),
    # ingestion in progress: a large quantity is an emergency whatever the mood
    ("i took 40 pills an hour ago", 3, "t3.in_progress"),
    ("I swallowed the whole bottle", 3, "t3.in_progress"),
    ("i just swallowed a bottle of tylenol", 3, "t3.in_progress"),
    ("I took all my pills at once", 3, "t3.in_progress"),
    ("I downed the whole pack of sleeping pills", 3, "t3.in_progress"),
    ("I'm going to take 40 pills tonight", 3, "t3.intent_self_harm"),
    # spacing inside any word of a risk phrase
    ("i w a n t to die tonight", 3, "t3.timeline"),
    ("i wa nt to di e to night", 3, "t3.timeline"),
    ("i want to k i l l myself", 3, "t3.intent_self_harm"),
    ("im go ing to end my li fe", 3, "t3.intent_self_harm"),
    # transpositions of key words (Damerau distance 1), also short ones
    ("i wnat to kill myself", 3, "t3.intent_self_harm"),
    ("i want to klil myself", 3, "t3.intent_self_harm"),
    ("im giong to kill myself", 3, "t3.intent_self_harm"),
    ("i want to die tonihgt", 3, "t3.timeline"),
]


@pytest.mark.parametrize(("text", "tier", "rule"), RAISED)
def test_under_tiered_families_now_reach_their_tier(text: str, tier: int, rule: str) -> None:
    result = screen(text, SafetyState())
    assert result.tier == tier and rule in result.reasons, (text, result.reasons)


# (message, highest allowed tier)
STAY_LOW = [
    ("I'm not going to use it on myself", 1),
    ("I have a gun but I'm not going to use it on myself", 1),
    ("I'm going to use this cream on myself", 0),
    ("I'll use the technique on myself", 0),
    ("I would never take 40 pills", 1),
    ("how many pills should I take for my headache", 0),
    ("how many calories should I take to lose weight", 0),
    ("how much water would it take to drown a plant", 0),
    ("goodbye everyone, see you monday", 0),
    ("bye everyone, have a great weekend", 0),
    ("I'm done with my homework", 0),
    ("I can't go on with this project", 0),
    ("I took 2 pills for my headache", 0),
    ("I took all of my pills this morning like the doctor said", 0),
    ("I am taking 10 tablets daily", 0),
    ("I took the whole bottle of wine to the party", 0),
    ("I ate the whole box", 0),
    ("I took 20 minutes to walk", 0),
    ("my friend doesn't want to kill herself anymore", 1),
    ("it is going to kill him", 0),  # "is" was read as "i" + "s" by the gap before the gap fix
    ("the heroine wants to kill herself in the novel", 0),
    ("toady and lief and dei", 0),
    ("she wants to take her life back", 0),
    ("my son wants to cut himself a slice of cake", 0),
    ("he might hurt himself at the gym", 0),
    ("she is burning herself out at work", 0),
    ("my coworker is killing himself with work", 0),
]


@pytest.mark.parametrize(("text", "max_tier"), STAY_LOW)
def test_negations_and_lookalikes_stay_low(text: str, max_tier: int) -> None:
    result = screen(text, SafetyState())
    assert result.tier <= max_tier, (text, result.reasons)


def test_third_party_risk_is_not_a_crisis_about_the_user() -> None:
    result = screen("she is going to kill herself")
    assert result.tier == 2 and "t3.harm_others" not in result.reasons


def test_farewell_alone_needs_distress_and_counts_after_an_earlier_one() -> None:
    assert screen("goodbye everyone").tier == 0
    state = SafetyState()
    assert screen("I feel hopeless", state).tier == 1
    assert screen("goodbye everyone", state).tier == 3  # round 5: after distress (was 2: a pause)
    state = SafetyState()
    assert screen("I wish I was dead", state).tier == 2
    assert screen("goodbye everyone", state).tier == 3


def test_means_intent_needs_a_means_in_the_message() -> None:
    assert screen("I'm going to use it on myself").tier == 0
    assert screen("I found a rope. I'm going to use it on myself").tier == 3


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("i w a n t", "i want"),
        ("s u i c i d e", "suicide"),
        ("k i l l m y s e l f", "kil myself"),
        ("x q z", "xqz"),  # no split into known words: joined as before
        ("i wnat", "i want"),
        ("klil", "kil"),
        ("dei lief", "dei lief"),  # protected look-alikes stay
    ],
)
def test_normalize_splits_spaced_letters_and_undoes_transpositions(text: str, tokens: str) -> None:
    assert [c.text for c in normalize(text)] == [tokens]


def test_third_party_support_asks_about_the_other_person_and_the_user() -> None:
    result = screen("my friend wants to kill herself")
    text = support_response("en-US", result.reasons)
    assert "is this person safe right now" in text and "how are you doing" in text and "988" in text
    assert "pause our coaching" in text and "kill" not in text
    own = support_response("en-US", [*result.reasons, "t2.passive_ideation"])
    assert "thoughts of ending your life" in own  # the user's own ideation takes precedence
