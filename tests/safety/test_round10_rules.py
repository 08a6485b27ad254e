"""Round 10 of issue 12: texted forms of the key words (a dropped final "g", dropped vowels), death or absence
with a date, the place and the day chosen, abuse told with its act, and farewells that say what they are.
Each case was written for this test (none taken from any evaluation set or ../shared/data); each positive case
was below its tier on the round-9 screen, and each negative one is a look-alike the new rules must leave alone.
The rules are screened alone (the semantic layer off), so these tests say what the rules do."""

from __future__ import annotations

import pytest

from launcher.safety._normalize import normalize
from testsupport.safety_rules import screen_after, screen_rules


@pytest.mark.parametrize(
    ("texted", "plain"),
    [
        ("im gnna kill mslf", "im going to kil myself"),  # vowels dropped, "gnna" collapsed to "gna"
        ("takin my own life", "taking my own life"),  # the final "g" dropped
        ("doin it sndy nite", "doing it sunday night"),
        ("jmp frm the top", "jump from the top"),
    ],
)
def test_texted_key_words_are_read_as_the_words(texted: str, plain: str) -> None:
    assert [c.text for c in normalize(texted)] == [plain]


@pytest.mark.parametrize(
    "text", ["pls ring me", "snd me the doc", "thx guys", "the kin of the king", "a din"]
)
def test_abbreviations_and_words_that_merely_look_texted_are_left_alone(text: str) -> None:
    # "pls" shares its consonants with "pills" and "snd" with "sunday"; "kin" + g is "king", not a key word
    assert [c.text for c in normalize(text)] == [" ".join(text.split())]


@pytest.mark.parametrize(
    "text",
    ["gonna kll myslf 2nite", "am killin myself tomoro after the match", "thinkin of endin my life tnght"],
)
def test_texted_intent_with_a_date_reaches_tier_3(text: str) -> None:
    assert screen_rules(text).tier == 3, text


@pytest.mark.parametrize(
    ("earlier", "text"),
    [
        ("i feel so hopeless and empty", "i'll be dead by sunday"),
        ("i hate myself so much", "by tomorrow morning i'll be dead"),
        ("everything is pointless, i'm worthless", "three more nights alive, that's all"),
        ("i feel so hopeless", "this is my last christmas on earth"),
    ],
)
def test_death_with_a_date_after_distress_is_a_crisis(earlier: str, text: str) -> None:
    r = screen_after(earlier, text)
    assert r.tier == 3 and "t3.timeline" in r.reasons, (text, r.reasons)


@pytest.mark.parametrize(
    "text",
    ["i'll be dead by sunday", "not gonna make it past the weekend", "two more days alive and that's it"],
)
def test_death_with_a_date_alone_is_a_pause(text: str) -> None:
    assert screen_rules(text).tier == 2, text


def test_the_suicide_told_as_scheduled_is_a_crisis_on_its_own() -> None:
    r = screen_rules("my suicide is planned for friday")
    assert r.tier == 3 and "t3.timeline" in r.reasons


@pytest.mark.parametrize(
    "text",
    [
        "i'll be dead tired by tomorrow",
        "i'll be gone by friday, the flight is at six",
        "i'll be gone on holiday next week",
        "the last day of the season was brilliant",
        "two more days left at this job",
        "the party is happening tonight",
    ],
)
def test_date_look_alikes_stay_below_tier_2(text: str) -> None:
    assert screen_rules(text).tier < 2, text


def test_gone_with_a_date_is_a_crisis_only_after_risk() -> None:
    assert screen_after("i want to die", "by the weekend i'll be gone").tier == 3
    assert screen_rules("by the weekend i'll be gone").tier < 2


def test_the_place_and_the_day_chosen_after_distress_is_a_plan() -> None:
    r = screen_after("i feel hopeless and worthless", "i've chosen the bridge and the date")
    assert r.tier == 3 and "t3.plan" in r.reasons
    assert screen_rules("we picked the venue and the date for the wedding").tier < 2


@pytest.mark.parametrize(
    "text",
    [
        "she's been hitting me since the baby came",
        "my mum's started slapping me when i'm late",
        "he's knocked me about again",
        "he slammed my head against the cupboard",
        "he dragged me by my hair to the car",
        "he threw a plate at me last night",
        "my friend says her husband beats her",
    ],
)
def test_abuse_told_with_its_act_is_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier == 2 and "t2.abuse_disclosed" in r.reasons, (text, r.reasons)


@pytest.mark.parametrize(
    "text",
    [
        "she hit me with a brilliant idea today",
        "my manager hit me with another deadline",
        "he's been hitting me up for money",
        "my mum's kicking me out of the kitchen again",
        "the kids threw water at me in the garden",
        "her dad beat him at chess",
    ],
)
def test_abuse_look_alikes_stay_below_tier_2(text: str) -> None:
    assert screen_rules(text).tier < 2, text


@pytest.mark.parametrize(
    "text",
    [
        "last goodbyes sent, going quiet now",
        "posted a goodbye video on my story",
        "left a letter apologising to the driver",
        "hugged my dad like it was the last time because it is",
    ],
)
def test_farewells_that_say_what_they_are_are_a_crisis(text: str) -> None:
    r = screen_rules(text)
    assert r.tier == 3 and "t3.preparatory" in r.reasons, (text, r.reasons)


@pytest.mark.parametrize(
    "text",
    [
        "said my final goodbyes to grandad at the hospice",
        "sent my last goodbyes to the team before my leaving do",
        "so excited for what comes next",
        "we gave away our dog to a farm with more space",
    ],
)
def test_farewell_look_alikes_stay_below_tier_2(text: str) -> None:
    assert screen_rules(text).tier < 2, text


def test_a_pet_given_away_after_earlier_risk_is_preparation() -> None:
    r = screen_after("i don't want to be alive", "i gave away my cat to my neighbour today")
    assert r.tier == 3 and "t3.preparatory" in r.reasons


def test_thoughts_of_doing_away_with_oneself_are_ideation() -> None:
    assert screen_rules("i keep having thoughts of doing away with myself").tier == 2
