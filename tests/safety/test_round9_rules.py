"""Round 9 of issue 12: a tier-3 family that the semantic layer names only at tier 2 is tier 3 when the message
carries the act's own vocabulary, a means, a farewell or a danger sign (``launcher.safety._corroboration``),
read with the rules' own negation (``launcher.safety._negation``); those words never arm the context rule
alone; "top myself" and "neck myself" are lethal acts; "I've made a plan" is a plan after earlier risk; wishes
to be dead said in new words are tier 2. Each case
was written for this test (none taken from any evaluation set or ../shared/data); each positive case was
below its tier on the round-8 screen, and each negative one is a look-alike the new rules must leave alone.
The semantic layer is replaced by a fixed verdict where a test is about what is done with that verdict."""

from __future__ import annotations

import pytest

from launcher.safety._corroboration import ACT_WORDS, corroborated
from launcher.safety._lexical import Context, _semantic_hits
from launcher.safety._normalize import normalize
from launcher.safety._semantic import SemanticVerdict
from testsupport.safety_rules import FixedVerdictLayer, screen_after, screen_rules

CORROBORATED = [
    "keep picturing the noose in the loft",
    "got enough of the oxy put by",
    "been saying thanks for everything to people all week",
    "he's on the floor and not breathing properly",
    "i'll go out on the water and not swim back",
    "i'm going to do it, my mind's set",
    "nobody knows i'm going to do it",  # "going to do" is negated by "nobody", "do it" is not
]

NOT_CORROBORATED = [
    "i keep thinking about it",  # nothing concrete
    "i won't do it",  # the act's words after a negator
    "never the pills, i promised my sister",
    "my mate tried to hang himself at the weekend but we got to him in time and he's fine",  # told as over
    "i'm dying to see the new film",  # idioms
    "dead tired after the night shift",
    "i could die of embarrassment",
    "i have pills of written works and a few paintings",  # the 'piles' typo (ESConv)
    "jumping",  # a one-word typo fix (ESConv): the word is all the model read
]


@pytest.mark.parametrize("text", CORROBORATED)
def test_the_acts_words_corroborate(text: str) -> None:
    assert corroborated(normalize(text)), text


@pytest.mark.parametrize("text", NOT_CORROBORATED)
def test_negated_resolved_and_idiomatic_words_do_not_corroborate(text: str) -> None:
    assert not corroborated(normalize(text)), text


def test_the_idioms_are_not_act_words_but_the_acts_are() -> None:
    assert not ACT_WORDS.search("im dying to go")
    assert ACT_WORDS.search("i am dying") and ACT_WORDS.search("i want to be dead")


def _hits(monkeypatch: pytest.MonkeyPatch, verdict: SemanticVerdict, text: str, **ctx: bool) -> list[str]:
    import launcher.safety._semantic as semantic

    monkeypatch.setattr(semantic, "semantic_layer", lambda: FixedVerdictLayer(verdict))
    clauses = normalize(text)
    context = Context(
        ctx.get("risk", False),
        ctx.get("distress", False),
        corroborated(clauses),
        clauses,
        ctx.get("rules", False),
    )
    return [f"{rid}:{tier}" for rid, tier, _ in _semantic_hits(text, [], [], context)]


#: the act's words with no means, place or plan that the composition's qualifier reads
FAREWELL = "been saying thanks for everything to people all week"
# a tier-3 family at tier 2 whose tier-3 score passes the sem3 bar (halfway from 0.5 to 0.95)
PLAN_AT_TIER_2 = SemanticVerdict(2, "plan", 0.92, 0.8)


def test_a_tier_3_family_at_tier_2_with_the_acts_words_is_tier_3(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = _hits(monkeypatch, PLAN_AT_TIER_2, FAREWELL)
    assert hits[0] == "sem3.plan:3"


def test_without_them_it_stays_tier_2(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _hits(monkeypatch, PLAN_AT_TIER_2, "i keep going over it in my head") == ["sem.plan:2"]


def test_a_weak_tier_3_share_is_not_raised_by_the_words(monkeypatch: pytest.MonkeyPatch) -> None:
    weak = SemanticVerdict(2, "plan", 0.92, 0.6)  # the ideation families hold most of the risk
    assert _hits(monkeypatch, weak, FAREWELL) == ["sem.plan:2"]


MEANS_AT_TIER_1 = SemanticVerdict(1, "lethal_means_request", 0.8, 0.0)  # 0.8 >= 0.8 * tier2 (0.72)


def test_the_acts_words_after_earlier_distress_do_not_arm_the_context_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a first cut of round 9 let them; on coaching talk they are everywhere ("worked out", "plan", "water")
    assert (
        _hits(monkeypatch, MEANS_AT_TIER_1, "how much diazepam with vodka would do it", distress=True) == []
    )


def test_an_earlier_semantic_reading_alone_still_arms_nothing_with_the_acts_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # round 7's guard (an earlier signal of the rules is needed) holds when the message corroborates too
    intent = SemanticVerdict(2, "intent", 0.91, 0.6)
    hits = _hits(monkeypatch, intent, "so i've worked out i'll be stepping away this weekend", risk=True)
    assert hits == ["sem.intent:2"]


ALONE = [
    ("not gonna lie to you, im gonna top myself", "t3.intent_self_harm"),
    ("reckon i'm going to neck myself this weekend", "t3.intent_self_harm"),
]

WISHES = [
    "honestly i'd be glad if i caught something nasty and died",
    "i'm hoping for a stroke every time my head pounds",
    "some days i wish i'd just drop dead on the bus",
    "every time the alarm goes i'm gutted i'm still alive",
    "if i'm honest i want my life to be over",
    "been asking god to take me home soon",
    "i'm envious of the people who died in that crash",
]

NOT_WISHES = [
    "i want this term to be over",
    "i want it all to be over with so i can sleep",
    "i want everything to be over and done with by friday",
    "i'm gutted i woke up late for the match",
    "so annoyed when i woke up",
    "she's hoping for a stroke of luck every time she plays",
    "i'm not disappointed that i'm still here, i'm glad",
    "i'm jealous of the people who passed their exams",
    "jealous of the ones who didn't make it to the wedding, it was long",
    "i'd be glad if i didn't wake up so early",
    "i'd be happy if i got hit by some inspiration",
    "hoping for something to take me out of my comfort zone",
]

ORDINARY = [
    "topping myself up with coffee before the shift",
    "i topped myself up at the bar",
    "necking a pint after work",
    "i've made a plan for the week",
    "no idea how i'll top myself after that personal best",
    "going to try to top myself next season",
]


@pytest.mark.parametrize(("text", "rule"), ALONE)
def test_round9_slang_intent_reaches_tier_3(text: str, rule: str) -> None:
    r = screen_rules(text)
    assert r.tier == 3 and rule in r.reasons, (text, r.reasons)


@pytest.mark.parametrize("text", ORDINARY)
def test_round9_look_alikes_stay_below_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier < 2, (text, r.reasons)


def test_a_plan_said_outright_after_risk_is_a_crisis_and_not_after_low_mood() -> None:
    r = screen_after("i think about dying every day", "because i've made a plan and i can't think straight")
    assert r.tier == 3 and "t3.context_plan" in r.reasons, r.reasons
    low = "i feel hopeless about my fitness"
    assert screen_rules(low).tier == 1  # distress: the context rules read the next message in its light
    assert screen_after(low, "but i've made a plan and i'll stick to it by friday").tier < 2


def test_a_plan_to_get_help_after_risk_is_not_a_crisis() -> None:
    r = screen_after("sometimes i wish i wasn't here", "ok, i've made a plan and i'll call my gp tomorrow")
    assert r.tier < 2, r.reasons


@pytest.mark.parametrize("text", WISHES)
def test_round9_wishes_to_be_dead_reach_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier == 2 and "t2.passive_wish" in r.reasons, (text, r.reasons)


@pytest.mark.parametrize("text", NOT_WISHES)
def test_round9_wish_look_alikes_stay_below_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier < 2, (text, r.reasons)
