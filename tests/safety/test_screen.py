"""Positive / negative tables for the deterministic safety screen (COACHING.md, SAFETY)."""

from __future__ import annotations

import pytest

from launcher.safety import RULE_IDS, SafetyConfig, SafetyState, ScreenResult, combine_tiers
from launcher.safety import screen as _screen


def screen(text: str, state: SafetyState | None = None, config: SafetyConfig | None = None) -> ScreenResult:
    """The rule layer (lexicon + context) alone: this module pins the rules' tiers; the layers together
    are tested in test_layers.py and measured by ``coach eval safety --labels``."""
    return _screen(text, state, (config or SafetyConfig()).model_copy(update={"semantic": False}))


TIER3 = [
    ("I want to kill myself", "t3.intent_self_harm"),
    ("i'm going to end my life tonight", "t3.intent_self_harm"),
    ("I'm gonna kill myself", "t3.intent_self_harm"),
    ("I feel so sad I want to jump over a bridge", "t3.intent_self_harm"),
    ("I'm suicidal", "t3.suicidal_now"),
    ("im feeling really suicidal right now", "t3.suicidal_now"),
    ("I have a plan to kill myself", "t3.plan"),
    ("I wrote a suicide note", "t3.plan"),
    ("I'm killing myself tomorrow", "t3.timeline"),
    ("I've just taken a whole bottle of pills and I feel hopeless", "t3.in_progress"),
    ("I overdosed an hour ago", "t3.in_progress"),
    ("I am bleeding a lot", "t3.in_progress"),
    ("I think I'm having a heart attack", "t3.medical_emergency"),
    ("my baby is not breathing", "t3.medical_emergency"),
    ("please call an ambulance", "t3.medical_emergency"),
    ("I'm going to kill him when he gets home", "t3.harm_others"),
    ("what's the most painless way to die", "t3.method_seeking"),
    ("suicide is the only way out", "t3.only_way_out"),
]

MISSPELLED = [
    "i w4nt to k1ll my self",  # leetspeak + spacing
    "I want to kiiiill myslef",  # repeated letters + transposition
    "i want to commit sucide",  # dropped letter
    "i want to commit s u i c i d e",  # inserted spaces
    "i want to k.i.l.l myself",  # inserted punctuation
    "I'M GOING TO END MY LIFE",  # case
    "i wanna unalive myself",  # euphemism
    "i'm going to $u1c1de",  # symbols
    "i want to kill my fucking self",  # expletive infix
    "Ｉ ｗａｎｔ ｔｏ ｋｉｌｌ ｍｙｓｅｌｆ",  # fullwidth (NFKC)
    "i’m gonna end it all",  # typographic apostrophe
]

TIER2 = [
    ("I wish I was dead", "t2.passive_ideation"),
    ("I don't want to live anymore", "t2.passive_ideation"),
    ("i just want to die", "t2.passive_ideation"),
    ("everyone would be better off without me", "t2.passive_ideation"),
    ("I feel betrayed and like dying", "t2.passive_ideation"),
    ("what's the point of living", "t2.passive_ideation"),
    ("I've been having suicidal thoughts", "t2.active_ideation"),
    ("I keep thinking about killing myself", "t2.active_ideation"),
    ("I cut myself again last night", "t2.recent_self_harm"),
    ("I've been self harming", "t2.recent_self_harm"),
    ("I tried to kill myself when I was 15", "t2.past_attempt_or_ideation"),
    ("my husband hits me", "t2.abuse_disclosed"),
    ("she keeps punching me", "t2.abuse_disclosed"),
    ("I was raped last year", "t2.abuse_disclosed"),
    ("my boyfriend is violent", "t2.abuse_disclosed"),
    ("I'm scared for my life", "t2.safety_fear"),
    ("I can't kill myself", "t2.self_harm_mention"),
]

NOT_RISK = [  # must stay below tier 2
    "I'm not suicidal",
    "I would never kill myself",
    "never would kill myself",
    "I am not going to kill myself",
    "I don't want to die",
    "I haven't thought about dying at all",
    "He was not abusive at all",
    "she was living with an abusive family",
    "I hurt myself at the gym",
    "my brother beat me at chess",
    "I want to take my life back",
    "I'm so proud of myself",
    "I'm killing myself with work",
    "I'm hanging out with friends tonight",
    "I'm going to find it odd",
    "these deadlines are killing me",
    "the wait is killing me",
    "I need to improve my skills",
    "I have pills of written works",
    "I take my pills every morning",
    "I wish I had time lol",
    "it's time to change my career",
    "I'm going to do it tonight, the homework I mean",
    "my friend passed away from an overdose",
    "I'm dying to see that movie",
    "she is responding to the treatments in the hospital",
    "Should I just beat them up with my backpack",
    "I'll kill it at the interview",
    "take a deep breath",
]


@pytest.mark.parametrize(("text", "rule"), TIER3)
def test_tier3_statements(text: str, rule: str) -> None:
    result = screen(text)
    assert result.tier == 3, result
    assert rule in result.reasons
    assert result.action == "crisis"


@pytest.mark.parametrize("text", MISSPELLED)
def test_misspellings_spacing_and_leetspeak_still_reach_tier3(text: str) -> None:
    assert screen(text).tier == 3, screen(text)


@pytest.mark.parametrize(("text", "rule"), TIER2)
def test_tier2_statements(text: str, rule: str) -> None:
    result = screen(text)
    assert result.tier == 2, result
    assert rule in result.reasons
    assert result.action == "pause"


@pytest.mark.parametrize("text", NOT_RISK)
def test_negations_idioms_and_lookalikes_stay_below_tier2(text: str) -> None:
    result = screen(text)
    assert result.tier <= 1, result


def test_negation_is_recorded_and_gives_tier1() -> None:
    result = screen("I'm not suicidal")
    assert result.tier == 1
    assert "t3.suicidal_now" in result.negated
    assert "t1.negated_risk" in result.reasons


def test_negation_does_not_leak_across_clauses_or_conjunctions() -> None:
    assert screen("I'm not okay and I want to kill myself").tier == 3
    assert screen("I don't know. I want to kill myself").tier == 3
    assert screen("not gonna lie, I want to end my life").tier == 3


def test_lethal_means_request_needs_recent_distress() -> None:
    alone = screen("how tall is the golden gate bridge")
    assert alone.tier == 1 and alone.reasons == ["t1.lethal_means_query"]
    same_message = screen("I feel hopeless. How many pills would it take to die?")
    assert same_message.tier == 3 and "t3.lethal_means_request" in same_message.reasons


def test_lethal_means_request_after_distress_in_an_earlier_turn() -> None:
    state = SafetyState()
    assert screen("everything is hopeless", state).tier == 1
    assert screen("what did you have for lunch", state).tier == 0
    result = screen("what is the lethal dose of paracetamol", state)
    assert result.tier == 3 and "t3.lethal_means_request" in result.reasons


def test_lethal_means_distress_window_expires() -> None:
    cfg = SafetyConfig(distress_window_turns=2)
    state = SafetyState()
    screen("I feel worthless", state, cfg)
    for _ in range(2):
        screen("ok", state, cfg)
    assert screen("how high is the tallest building in town", state, cfg).tier == 1


def test_means_acquisition_needs_risk_context() -> None:
    assert screen("I bought a rope for the tent").tier == 0
    state = SafetyState()
    assert screen("I wish I was dead", state).tier == 2
    result = screen("I bought a rope", state)
    assert result.tier == 3 and "t3.means" in result.reasons


def test_three_turns_after_tier3_are_screened_at_tier2_sensitivity() -> None:
    state = SafetyState()
    assert screen("I'm going to kill myself", state).tier == 3
    first = screen("thanks, that helps a bit", state)
    assert first.tier == 2 and first.post_crisis and "post_crisis.floor" in first.reasons
    second = screen("I just wish I was dead", state)  # tier-2 signal inside the window -> tier 3
    assert second.tier == 3 and "post_crisis.escalated" in second.reasons
    # the escalation restarted the window: three more turns at tier >= 2, then back to normal
    assert [screen("ok", state).tier for _ in range(3)] == [2, 2, 2]
    after = screen("ok", state)
    assert after.tier == 0 and not after.post_crisis


def test_post_crisis_sensitivity_is_configurable() -> None:
    cfg = SafetyConfig(post_crisis_turns=1, post_crisis_floor=0, post_crisis_escalate=False)
    state = SafetyState()
    screen("I want to end my life", state, cfg)
    assert screen("I wish I was dead", state, cfg).tier == 2
    assert screen("ok", state, cfg).tier == 0


def test_model_may_raise_but_never_lower() -> None:
    base = screen("I feel a bit low")
    assert combine_tiers(base, None) is base
    raised = combine_tiers(base, 3)
    assert raised.tier == 3 and raised.model_raised and raised.reasons[-1] == "model.raised"
    crisis = screen("I want to kill myself")
    assert combine_tiers(crisis, 0).tier == 3
    assert combine_tiers(crisis, 0) is crisis
    assert combine_tiers(base, 9).tier == 3  # clamped


def test_model_raise_to_tier3_starts_post_crisis_window() -> None:
    state = SafetyState()
    result = screen("I don't see the point", state)
    combine_tiers(result, 3, state=state)
    assert screen("ok", state).tier == 2


def test_reasons_are_rule_ids_never_text() -> None:
    text = "I want to kill myself because of Zanzibar"
    result = screen(text)
    dumped = result.model_dump_json()
    assert "Zanzibar" not in dumped and "kill" not in dumped
    assert set(result.reasons) <= RULE_IDS


def test_disabled_rules_validated_and_applied() -> None:
    with pytest.raises(ValueError, match="unknown rule ids"):
        SafetyConfig(disabled_rules=["t9.nope"])
    cfg = SafetyConfig(disabled_rules=["t2.abuse_disclosed"])
    assert screen("my husband hits me", config=cfg).tier == 0


@pytest.mark.parametrize("text", ["", "   ", "!!!", "1234 5678", "\u200b", "a" * 5000])
def test_degenerate_input_never_raises(text: str) -> None:
    assert screen(text).tier == 0


def test_inverted_question_is_ambivalence_not_intent() -> None:
    result = screen("do I wanna eventually hurt myself in the long run?")
    assert result.tier == 2 and "t2.ambivalent_question" in result.reasons
    assert screen("should I just kill myself").tier == 3


def test_hypothetical_medical_words_are_not_an_emergency() -> None:
    assert screen("I guess having a stroke or a heart attack would really be bad for that").tier == 0
    assert screen("I think I'm having a stroke").tier == 3


def test_extra_rules_from_config() -> None:
    cfg = SafetyConfig.model_validate(
        {"extra_rules": [{"id": "t3.local_slang", "tier": 3, "template": "{I} {G2}{INTENT} {G2}yeet myself"}]}
    )
    assert screen("I'm going to yeet myself", config=cfg).reasons == ["t3.local_slang"]
    assert screen("I'm not going to yeet myself", config=cfg).reasons == ["t1.negated_risk"]
    assert screen("I'm going to yeet myself").tier == 0  # default config unaffected
    disabled = SafetyConfig.model_validate({**cfg.model_dump(), "disabled_rules": ["t3.local_slang"]})
    assert screen("I'm going to yeet myself", config=disabled).tier == 0


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"id": "t2.x", "tier": 3, "template": "x"}, "must start with 't3.'"),
        ({"id": "t3.intent_self_harm", "tier": 3, "template": "x"}, "built-in rule id"),
        ({"id": "t3.x", "tier": 3, "template": "(unclosed"}, "not a valid pattern"),
    ],
)
def test_extra_rules_are_validated(rule: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SafetyConfig.model_validate({"extra_rules": [rule]})


@pytest.mark.parametrize(
    "text",
    [
        "I shot myself in the foot",
        "I want to cut myself some slack",
        "I need to cut myself off from social media",
        "I'm going to burn myself out",
        "I want to drown myself in work",
        "I will hurt myself if I keep lifting that heavy",
        "I'd rather die than give a speech",
        "I overdosed on coffee lol",
        "she hit me up yesterday",
        "I could kill for a coffee",
        "my mom is going to kill me",
        "I'm going to die of boredom",
        "I want to take my life in a new direction",
    ],
)
def test_idioms_are_not_risk(text: str) -> None:
    assert screen(text).tier <= 1, screen(text)


def test_mixed_leet_next_to_a_bang() -> None:
    assert screen("I'm g0!ng to jump off a bridge").tier == 3
