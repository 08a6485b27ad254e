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


@pytest.mark.parametrize("text", ["im doing it at 3am", "took 20mg on the 5th", "1000mg twice", "3x a day"])
def test_numbers_with_units_and_clock_times_are_not_leetspeak(text: str) -> None:
    # "3am" was read as "eam" and "5th" as "sth", so no rule could see a time or a date written that way
    assert [c.text for c in normalize(text)] == [text.replace("took", "tok")]


def test_a_wrong_ordinal_is_still_leetspeak() -> None:
    assert [c.text for c in normalize("i w1ll 3nd 1t")] == ["i wil end it"]


@pytest.mark.parametrize(
    "text", ["pls ring me", "snd me the doc", "thx guys", "the kin of the king", "a din"]
)
def test_abbreviations_and_words_that_merely_look_texted_are_left_alone(text: str) -> None:
    # "pls" shares its consonants with "pills" and "snd" with "sunday"; "kin" + g is "king", not a key word
    assert [c.text for c in normalize(text)] == [" ".join(text.split())]


@pytest.mark.parametrize(
    "text",
    ["gonna kil mslf 2nite", "am killin myself tomoro after the match", "thinkin of endin my life tnght"],
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


def test_gone_with_a_date_is_a_crisis_only_after_risk() -> None:
    assert screen_after("i want to die", "by the weekend i'll be gone").tier == 3
    assert screen_rules("by the weekend i'll be gone").tier < 2


def test_the_place_and_the_day_chosen_after_distress_is_a_plan() -> None:
    r = screen_after("i feel hopeless and worthless", "i've chosen the bridge and the date")
    assert r.tier == 3 and "t3.plan" in r.reasons
    assert screen_rules("we picked the venue and the date for the wedding").tier < 2


@pytest.mark.parametrize(
    "text",
    ["last goodbyes sent, going quiet now", "posted a goodbye video to everyone", "wrote to the coroner"],
)
def test_farewells_after_distress_are_a_crisis(text: str) -> None:
    r = screen_after("i feel hopeless and worthless", text)
    assert r.tier == 3 and "t3.preparatory" in r.reasons, (text, r.reasons)
    assert screen_rules(text).tier < 2, text


def test_a_pet_given_away_after_earlier_risk_is_preparation() -> None:
    r = screen_after("i don't want to be alive", "i gave away my cat to my neighbour today")
    assert r.tier == 3 and "t3.preparatory" in r.reasons


def test_thoughts_of_doing_away_with_oneself_are_ideation() -> None:
    assert screen_rules("i keep having thoughts of doing away with myself").tier == 2


def test_a_method_weighed_is_a_crisis_after_distress_only() -> None:
    text = "i think about not eating or drinking until my heart gives out"
    assert screen_after("i feel completely hopeless and worthless", text).tier == 3
    assert screen_rules(text).tier < 2


def test_preparing_for_after_oneself_after_distress_is_a_crisis() -> None:
    r = screen_after(
        "i feel hopeless and worthless", "wrote birthday cards for the next ten years for my son"
    )
    assert r.tier == 3 and "t3.preparatory" in r.reasons
    assert screen_after("i want to die", "told my cousin she can have my guitar").tier == 3


@pytest.mark.parametrize(
    "text",
    [
        "i wish the paramedics hadn't brought me back",
        "honestly i wish i'd never woken up in that hospital",
        "at my age i'd welcome death",
        "if that lorry hit me it'd be doing me a favour",
        "i stood on the cliff path and wanted the waves to take me",
        "a bus almost knocked me down and i was sad it missed",
        "some days i think better i die than carry on like this",
        "i keep begging god to let me die",
        "i wouldn't mind if i died in my sleep",
        "i envy the people who died in that crash",
    ],
)
def test_wishes_to_be_dead_in_more_frames_are_tier_2(text: str) -> None:
    r = screen_rules(text)
    assert r.tier >= 2, (text, r.reasons)


# Look-alikes a code review of the round's first version found at tier 2 or 3 (each fixed).
REVIEW_LOOK_ALIKES = [
    "final goodbyes sent, last day at the office tomorrow",
    "posted a goodbye post on facebook, we're moving to australia",
    "she's ODing on christmas movies",
    "my son is oding on fortnite",
    "I took my pills early on purpose because of the flight",
    "i took everything out of the fridge on purpose",
    "i've decided to die my hair pink",
    "we have enough of them to do it in two shifts",
    "the climbing rope is tied to the beam in the garage",
    "ending it is happening tonight, i'm telling him after dinner",
    "just found out i'm pregnant!! heart is racing",
    "ran 10k in the heat, heart is pounding",
    "labour won the election, i'm shaking",
    "my friend collapsed on the bed after the night shift",
    "my wife just collapsed into giggles",
    "i have a weakness on my left side, my left leg is weaker in squats",
    "the thunderclap woke the baby",
    "my appendix burst when i was 12",
    "bought a knife today, not for cooking, a pocket knife for camping",
    "i'm going to finish myself off with 100 burpees",
    "my daughter has scd",
    "honestly i'll be dead by tonight if this meeting goes on",
    "not going to last past the weekend on this diet",
    "my boss keeps hitting me with deadlines",
    "my mums cat bit me",
    "this job has dragged me down",
    "my toddler threw his cup at me",
    "she's smashed me again at tennis",
    "she's been kicking me all night, 32 weeks pregnant",
    "her husband hits her up for money",
    "it'd be doing me a favour if you cancelled the meeting",
    "i envy people who passed their driving test first time",
    "wish i had never made it out of bed today lol",
    "it's better if i die first so the healer can rez me",
    "we chose the spot and the date, so excited",
    "bought petrol and a lighter for the bbq",
    "im not drinking again till i die lol",
]


@pytest.mark.parametrize(
    ("earlier", "text"),
    [
        ("im so scared of my presentation", "ill be dead by friday at this rate lol"),
        ("im depressed", "3 more weeks of living with my in laws"),
        ("i miss my dad so much", "i just want to hear his voice one more time"),
        ("feeling low", "the paracetamol i've counted out for the week"),
        ("i feel hopeless", "i'll do what my sister did and take a gap year"),
        ("i feel hopeless", "need to finish this report then i'm free to go"),
    ],
)
def test_the_reviews_look_alikes_after_distress_stay_below_tier_3(earlier: str, text: str) -> None:
    assert screen_after(earlier, text).tier < 3, text


@pytest.mark.parametrize(
    "text",
    ["he's punched me in the face again", "he's kicked me in the stomach", "she's been hitting me again"],
)
def test_blows_to_the_body_are_abuse(text: str) -> None:
    assert screen_rules(text).tier == 2, text


#: Single messages and the tier and rule they reach (each below its tier on the round-9 screen).
REACHED = [
    # t2.abuse_disclosed
    ("she's been hitting me since the baby came", 2, "t2.abuse_disclosed"),
    ("my mum's started slapping me when i'm late", 2, "t2.abuse_disclosed"),
    ("he's knocked me about again", 2, "t2.abuse_disclosed"),
    ("he slammed my head against the cupboard", 2, "t2.abuse_disclosed"),
    ("he dragged me by my hair to the car", 2, "t2.abuse_disclosed"),
    ("he threw a plate at me last night", 2, "t2.abuse_disclosed"),
    ("my friend says her husband beats her", 2, "t2.abuse_disclosed"),
    # t3.preparatory
    ("left a letter apologising to the train driver", 3, "t3.preparatory"),
    ("hugged my dad like it was the last time because it is", 3, "t3.preparatory"),
    # t3.composed_medical
    ("my dad's collapsed in the garden, what do i do", 3, "t3.composed_medical"),
    ("he suddenly has weakness down the left side and his words are slurred", 3, "t3.composed_medical"),
    ("the right side of her face won't move", 3, "t3.composed_medical"),
    ("worst headache of my life, it hit all at once like a thunderclap", 3, "t3.composed_medical"),
    ("i think my appendix has burst", 3, "t3.composed_medical"),
    ("grandad got confused in the sun and now he's not making sense", 3, "t3.composed_medical"),
    ("blacked out and now my heart is racing", 3, "t3.composed_medical"),
    ("my waters have gone and the cord is out", 3, "t3.composed_medical"),
    ("lithium toxicity i reckon, i keep vomiting", 3, "t3.composed_medical"),
    ("having an asthma attack and can barely talk", 3, "t3.composed_medical"),
    ("sugar's at 2 and i can barely stay awake", 3, "t3.composed_medical"),
    # t3.in_progress
    ("swallowed all the tablets on purpose", 3, "t3.in_progress"),
    # t3.other_in_danger
    ("my brother is overdosing in the bathroom", 3, "t3.other_in_danger"),
    # t3.intent_self_harm
    ("i'm going to finish myself off tonight", 3, "t3.intent_self_harm"),
    ("i'm going to eat my gun tonight", 3, "t3.intent_self_harm"),
    ("i have decided to die and i feel calm", 3, "t3.intent_self_harm"),
    # t3.composed_means
    ("picked up a knife at the shop, not for the kitchen", 3, "t3.composed_means"),
    ("bought a length of rope, not for the garden", 3, "t3.composed_means"),
    # t3.means_at_hand
    ("got the rope tied round the banister", 3, "t3.means_at_hand"),
    ("i've kept back enough tablets to not wake up", 3, "t3.means_at_hand"),
]


@pytest.mark.parametrize(("text", "tier", "rule"), REACHED, ids=[t for t, _, _ in REACHED])
def test_round10_messages_reach_their_tier(text: str, tier: int, rule: str) -> None:
    r = screen_rules(text)
    assert r.tier == tier and rule in r.reasons, (text, r.reasons)


#: Look-alikes of each new rule family: ordinary messages the rules must leave below tier 2.
LOOK_ALIKES = [
    # abuse
    "she hit me with a brilliant idea today",
    "my manager hit me with another deadline",
    "he's been hitting me up for money",
    "my mum's kicking me out of the kitchen again",
    "the kids threw water at me in the garden",
    "her dad beat him at chess",
    # act and means
    "took the scenic route on purpose",
    "she's overdosing on caffeine before finals",
    "this run is going to finish me off",
    "i've decided to die on that hill",
    "the rope is tied to the beam for the boxing bag",
    "my nephew can have my old console while i'm away",
    "lined up my tablets in the weekly organiser",
    "bought a knife, not for cooking but for carving",
    "got a new hose, it's for the garden",
    # date
    "i'll be dead tired by tomorrow",
    "i'll be gone by friday, the flight is at six",
    "i'll be gone on holiday next week",
    "the last day of the season was brilliant",
    "two more days left at this job",
    "the party is happening tonight",
    # farewell
    "said my final goodbyes to grandad at the hospice",
    "sent my last goodbyes to the team before my leaving do",
    "so excited for what comes next",
    "we gave away our dog to a farm with more space",
    "sent a goodbye text to my ex",
    "recorded a goodbye video for my class, i'm moving schools",
    "left a note apologising to the driver whose car i scratched",
    "i'm writing to the coroner about my dad's inquest",
    # medical
    "my heart is pounding before the exam",
    "i collapsed onto the sofa after the shift",
    "my throat closes up every time i have to present",
    "the shed roof collapsed in the storm",
    "i'm shaking with nerves about the interview",
    "worst headache ever after that wine lol",
    # wish
    "i wish they hadn't found me a seat at the back",
    "i'd welcome the end of this project",
    "he missed the penalty and i was gutted it missed",
    "better that i die on this hill than give in to the landlord",
    "i wouldn't mind if i did get the promotion",
    "i wish the lifeguard had pulled me out sooner, i was freezing",
]


@pytest.mark.parametrize("text", LOOK_ALIKES + REVIEW_LOOK_ALIKES)
def test_round10_look_alikes_stay_below_tier_2(text: str) -> None:
    assert screen_rules(text).tier < 2, text
