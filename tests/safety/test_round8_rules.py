"""Round 8 of issue 12: rule families for a method thought of with a vehicle or the tracks, a method named
("thinking about hanging", ways narrowed down), a lethal amount counted, intent said as the act after
earlier risk, the jump announced, UK and US slang ("topping myself", "put myself in the ground"), wishes to be
dead said as others' gain or a trade, self-harm said as a plain act, a conditional timeline said as the
day one goes, a farewell kept hidden, and someone else in danger now (hanged, turning blue, trapped under,
an engine running in a locked garage). Each case was written for this test (none taken from any evaluation
set or ../shared/data); each positive case was below its tier on the round-7 rules, and each negative one
is a look-alike the new rules must leave alone."""

from __future__ import annotations

import pytest

from testsupport.safety_rules import screen_after, screen_rules

ALONE = [
    ("every night on the ring road i think about swerving into a truck", 3, "t3.method"),
    ("keep wondering what if i just stood on the line when the express comes through", 3, "t3.method"),
    ("been thinking about hanging again", 3, "t3.method"),
    ("i've worked out ways to kill myself that nobody would notice", 3, "t3.method"),
    ("i added up how many of the codeine it would take to not wake up", 3, "t3.method"),
    ("swear down i'm going to jump this time", 3, "t3.intent"),
    ("i'm fixing to put myself in an early grave and i mean it", 3, "t3.intent"),
    ("honestly been thinking about topping myself since the redundancy", 2, "t2.active_ideation"),
    ("my kids would be better off if i wasn't here", 2, "t2.passive_wish"),
    ("the mortgage gets paid off if i go, i'm worth more dead than alive", 2, "t2.passive_wish"),
    ("i'd honestly rather be in the ground than keep living like this", 2, "t2.passive_wish"),
    ("i'd be fine with never waking up", 2, "t2.passive_wish"),
    ("i keep hoping god takes me in my sleep", 2, "t2.passive_wish"),
    ("i took a razor to my thighs again", 2, "t2.self_harm"),
    ("held my arm against the radiator on purpose", 2, "t2.self_harm"),
    ("my lease ends on the 14th, that's the day i go too", 3, "t3.conditional_timeline"),
    ("the day the kids leave for uni i am going to kill myself", 3, "t3.conditional_timeline"),
    ("my uncle just hanged himself in the barn, we cut him down", 3, "t3.other_in_danger"),
    ("she took something an hour ago and now she's going blue", 3, "t3.other_in_danger"),
    ("the scaffold came down and a man is pinned under it", 3, "t3.other_in_danger"),
    ("dad shut himself in the shed with the engine running", 3, "t3.other_in_danger"),
    ("once the harvest is in i'm walking up the fell and i won't come back", 3, "t3.conditional_timeline"),
    ("booked my exit for the 3rd, the paperwork can wait", 3, "t3.conditional_timeline"),
    ("how much whisky and sleeping pills to go to sleep forever", 3, "t3.lethal_means_request"),
    ("thirty of the sleeping tablets lined up on the bedside table", 3, "t3.means_at_hand"),
    ("the blade's on the side and the tub is full", 3, "t3.means_at_hand"),
    ("sliced my leg on the fence and the cut won't stop bleeding", 3, "t3.composed_medical"),
]

AFTER_RISK = [
    ("i think about killing myself every day", "and this time i'm going to act on it", "t3.intent"),
    ("i keep wanting to die", "so i'll do it myself", "t3.intent"),
    ("everyone would be better off if i was dead", "i'm going to make that happen", "t3.intent"),
    ("i want to die", "gave my boots away. told him i won't need them where i'm going", "t3.preparatory"),
    ("i don't want to be here anymore", "mum has no idea it's the last time she'll see me", "t3.preparatory"),
    ("i can't cope anymore", "how many of dad's oxycodone would kill a grown man", "t3.lethal_means_request"),
]

ORDINARY = [
    "i'll act on your feedback this week",
    "the plumber is too expensive so i'll do it myself",
    "we set a savings goal and i'm going to make that happen",
    "gonna jump on a call with the supplier",
    "i'd be better off if i wasn't around him so much",
    "i'd rather walk than keep driving like this",
    "top myself up with coffee before the shift",
    "took the knife to my leg of lamb for the roast",
    "the exits are at the back of the hall",
    "that's the day i go to spain",
    "one last time and then i'm done with this project",
    "booked my exit interview for friday",
    "it's the last time she'll see me in a suit",
    "i won't need a coat where i'm going, it's thirty degrees",
    "my phone is stuck under the sofa",
    "researched ways to die in the game for my speedrun",
    "thinking about hanging the new shelves",
    "think about swerving into the left lane to overtake",
    "i'd die for my kids",
    "my dad just hung his jacket up",
    "counted out 60 tablets in front of me to stock the shelves",
    "what calibre for deer season",
    "my nose won't stop bleeding",
    "the cut on my finger finally stopped bleeding",
    "after the gig we go to the pub and don't come back till late",
]


@pytest.mark.parametrize(("text", "tier", "rule"), ALONE)
def test_round8_risk_alone_reaches_its_tier(text: str, tier: int, rule: str) -> None:
    r = screen_rules(text)
    assert r.tier == tier and rule in r.reasons, (text, r.tier, r.reasons)


@pytest.mark.parametrize(("earlier", "text", "rule"), AFTER_RISK)
def test_round8_follow_ups_after_risk_reach_tier_3(earlier: str, text: str, rule: str) -> None:
    r = screen_after(earlier, text)
    assert r.tier == 3 and rule in r.reasons, (text, r.reasons)


@pytest.mark.parametrize("text", ORDINARY)
def test_round8_look_alikes_stay_below_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier < 2, (text, r.reasons)


def test_wanting_to_die_for_months_is_a_wish_and_dying_for_a_coffee_is_not() -> None:
    assert screen_rules("been wanting to die for weeks now").tier == 2
    assert screen_rules("i'm dying for a coffee").tier == 0


def test_the_follow_ups_without_earlier_risk_are_not_a_crisis() -> None:
    assert screen_rules("so i'll do it myself").tier < 2
    assert screen_rules("i'm going to make that happen").tier < 2


def test_the_jump_announced_alone_pauses_and_after_risk_is_a_crisis() -> None:
    assert screen_rules("i'm going to jump").tier == 2
    assert screen_after("i want to end my life", "i'm going to jump").tier == 3


def test_a_bare_yes_after_risk_is_not_intent() -> None:
    # "i am sure" answers many questions ("are you safe tonight?"); intent needs the act said
    assert screen_after("i keep wanting to die", "i am sure").tier < 3
