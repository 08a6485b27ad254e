"""Round 6 of issue 12: situations recognised from their parts (:mod:`launcher.safety._parts`), the act
said as its motion, key words cut short or in dialect, conditional acts that are ordinary words too,
and a deterministic spelling correction. Each case was written for this test (none taken from any
evaluation set or ../shared/data); each positive case was below tier 3 on the round-5 screen's rules,
and each negative one is a look-alike the new rules must leave alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.safety import SafetyState
from launcher.safety import screen as _screen
from launcher.safety._compose import COMPOSED_IDS
from launcher.safety._lexical import RULE_IDS
from launcher.safety._normalize import normalize
from launcher.safety._parts import part_hits
from testsupport.safety_rules import screen_after, screen_rules

ROOT = Path(__file__).resolve().parents[2]
screen = screen_rules
after = screen_after


CRISES = [
    # the act said as its motion, with a place or a time (C-SSRS items 3-5)
    ("friday night im going up the top of the flats and jumping", "t3.composed_"),
    ("tomorrow i walk off the edge at the quarry", "t3.composed_"),
    ("after the funeral i'll drive the car into the big tree on the bypass at full speed", "t3.composed_"),
    ("sunday morning i'm going to walk into the sea and keep going", "t3.composed_"),
    ("gonna hng myself in the loft tonite", "t3."),
    ("my plan is to hang myself in the shed when they go out", "t3.composed_"),
    # a sport's words cancel only an act said as a motion, not a rule's act
    ("my plan is to hang myself in the garage after training on sunday", "t3.composed_"),
    ("am gonnae dae masel in the night", "t3."),
    ("im finna self delete fr tonight", "t3."),
    # clinical and euphemistic intent said whole
    ("i have formed an intention to die and i am no longer unsure", "t3.euphemism_intent"),
    ("i'm going to take myself out of the picture permanently", "t3.euphemism_intent"),
    ("today is my last day on earth", "t3.euphemism_intent"),
    # a plan said outright with a hard means, no act word
    ("plan is simple. the woods, dads shotgun, saturday", "t3.composed_plan"),
    # the act under way as a dose taken, someone's overdose or announced death
    ("took about 30 paracetamol an hour ago", "t3."),
    ("40 tabs and a bottle of vodka. done", "t3.composed_overdose"),
    ("my flatmate has swallowed all her sleeping tablets", "t3.composed_danger"),
    ("my cousin texted that hes taken something and now hes not answering", "t3.composed_danger"),
    # medical signs alone, and a setting with a sign
    ("there's bone poking through his shin after the fall", "t3.composed_medical"),
    ("my dad's left side has gone weak and his words are coming out jumbled", "t3.composed_medical"),
    ("think im havin a heart attak", "t3.composed_medical"),
    ("she collapsed in the heat and now she's talking nonsense", "t3.composed_medical"),
    # medicine stockpiled with its reason, a rehearsal, preparatory acts with an absence
    ("i've been saving my tablets in a biscuit tin, there's a lot now", "t3.composed_stockpile"),
    (
        "wrote a letter for each of the kids and gave my watch to my brother, i won't be here for christmas",
        "t3.composed_preparatory",
    ),
    ("sold the horses and put my papers in order, there's nothing left to sort", "t3."),
    # questions for the method
    ("whats the easiest way to kill yourself", "t3.lethal_means_request"),
    # an emergency now after history, a rehearsal with a ligature, a seizure with its length
    (
        "i used to take them properly, now i'm stockpiling my zopiclone for when i'm ready",
        "t3.composed_stockpile",
    ),
    ("tried the belt on last night just to see what it felt like", "t3.composed_preparatory"),
    ("he's fitting and it's been 7 minutes", "t3.composed_medical"),
    ("my dad rang and said he'll be dead by the morning", "t3.composed_danger"),
]


@pytest.mark.parametrize(("text", "rule"), CRISES)
def test_round_6_crises_are_tier_3(text: str, rule: str) -> None:
    result = screen(text)
    assert result.tier == 3, result.reasons
    assert any(r.startswith(rule) for r in result.reasons), result.reasons


CONTEXT_CRISES = [
    # after distress: a rehearsal, a plan said in passing with a means, a conditional that is ordinary
    # words too, a bleeding-out question
    (
        "i hate myself",
        "practised with the dog lead on the banister to see how it felt",
        "t3.composed_preparatory",
    ),
    (
        "i'm not coping at all",
        "i've worked it all out. the tablets and the gin, in the car, sunday",
        "t3.context_plan",
    ),
    (
        "i'm failing everyone again",
        "once the kids are at their dads on friday, im going to go",
        "t3.conditional_timeline",
    ),
    ("my life is over", "do you bleed out faster in warm water", "t3.context_method"),
    # after risk: an absence, a bare intent, a pet rehomed for after
    ("i want to die", "won't be around for the wedding anyway", "t3.context_absence"),
    ("i want to die. i have for months", "and i'm going to. just so someone knows", "t3.context_plan"),
    ("i want to end my life", "yes. i intend to.", "t3.context_plan"),
    (
        "i wish i was dead",
        "found a new home for the cat so she won't be alone after",
        "t3.composed_preparatory",
    ),
]


@pytest.mark.parametrize(("earlier", "text", "rule"), CONTEXT_CRISES)
def test_round_6_context_crises_are_tier_3(earlier: str, text: str, rule: str) -> None:
    result = after(earlier, text)
    assert result.tier == 3, result.reasons
    assert rule in result.reasons


LOOKALIKES = [
    "jumping off the pier tomorrow with my mates for the charity swim",
    "going to the pool on saturday and jumping off the diving board",
    "i'd jump off a bridge for my best mate, she's amazing",
    "if i hear the word synergy again i'll walk into the sea",
    "killing myself with work this week lol",
    "drowning myself in coursework tonight",
    "once this report is in im done",
    "2 more days and im done with exams!!",
    "took 10 paracetamol over the last 3 days for my back",
    "took 20 minutes to walk there",
    "moving to leeds next month, gave my guitar to my brother and wrote a letter to the landlord",
    "i nearly had a heart attack when the fire alarm went off",
    "she said thanks for everything at the leaving do and went offline",
    "my mum said goodbye and hung up, she was annoyed with me",
    "doing a first aid course next week, they cover overdoses and cpr",
    "picking up my repeat prescription tomorrow",
    "we did a dry run of the wedding speech, i'll be there early",
    # round 6's adversarial pass (a helper who read the new code), in this test's own words
    "i feel down lately and can't get up in the mornings",
    "allergic to the cat, the antihistamine makes me drowsy",
    "the left side of our defence is weak",
    "my manager is having a heart attack over the budget",
    "had 12 tabs open in chrome and the laptop froze",
    "picked up my prescription on the way to work today",
    "wrote a goodbye card for the team and left straight after",
    "grandad took all his pills with breakfast like he always does",
    "what's the best way to end it with a client who won't pay",
    "let's walk off the pier and get chips on saturday",
    "she'll shoot herself in the foot on friday with that email",
    "my snapchat messages self-delete after a day, sending them tonight",
    "shooting myself a reminder email for friday",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_round_6_lookalikes_stay_below_tier_3(text: str) -> None:
    result = screen(text)
    assert result.tier < 3, result.reasons
    assert result.tier < 2 or text.startswith("i'd"), result.reasons


def test_a_bare_reply_with_an_activity_after_risk_is_not_an_intent() -> None:
    # "yeah I'm going to" answers the coach's suggestion when the rest of the message is an activity
    result = after("what's the point of anything anymore", "yeah i'm going to, the gym at 6")
    assert "t3.context_plan" not in result.reasons


def test_a_once_condition_with_an_ordinary_done_is_tier_3_only_after_distress() -> None:
    assert screen("once the sale goes through, that's me finished").tier < 2
    assert after("i can't do this anymore", "once the sale goes through, that's me finished").tier == 3


def test_preparatory_acts_alone_are_a_pause_not_a_crisis() -> None:
    one = screen("wrote a letter to my mum")
    assert one.tier < 3
    two = screen("wrote a letter to my mum and gave my savings to my sister")
    assert two.tier == 2 and "t2.preparatory_parts" in two.reasons


def test_someone_elses_emergency_does_not_arm_the_context_for_the_writers_turns() -> None:
    # the semantic layer names this someone else's emergency; the writer's own next turn about a
    # needle exchange is ordinary (round 6: AnnoMI session 55)
    state = SafetyState()
    first = _screen("everyone who uses worries about overdosing by accident, a friend nearly did", state)
    later = _screen("yeah i got some of that already from the needle exchange", state)
    assert later.tier < 3, (first.reasons, later.reasons)


def test_part_hits_is_pure_and_names_its_rules() -> None:
    clauses = normalize("took about 30 paracetamol an hour ago")
    assert part_hits(clauses, distress=False, earlier_risk=False, hard_means=False) == [
        ("t3.composed_overdose", 3, True)
    ]
    assert part_hits(normalize("hello there"), distress=True, earlier_risk=True, hard_means=True) == []
    for rid in (
        "t3.composed_overdose",
        "t3.composed_stockpile",
        "t3.composed_preparatory",
        "t3.context_absence",
    ):
        assert rid in COMPOSED_IDS and rid in RULE_IDS


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("hng myself", "hang myself"),
        ("im going to self delete", "im going to kil myself"),
        ("i want to self - delete", "i want to kil myself"),
        ("messages self delete after a day", "mesages self delete after a day"),
        ("set the files to self delete", "set the files to self delete"),
        ("hw mch", "how much"),
        ("tylnol 2 die", "tylenol to die"),
    ],
)
def test_cut_short_and_two_word_slang_is_normalised(raw: str, plain: str) -> None:
    assert " ".join(c.text for c in normalize(raw)) == plain


def test_spelling_correction_is_the_same_under_every_string_hash() -> None:
    # "overdoses" is one edit from both "overdose" and "overdosed"; the correction iterated a set, whose
    # order follows PYTHONHASHSEED, so the result changed from one process to the next
    code = (
        "from launcher.safety._normalize import normalize; print(normalize('they cover overdoses')[0].text)"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("0", "1", "2", "3", "4", "5")
    }
    assert outs == {"they cover overdose"}


@pytest.mark.parametrize(
    "text",
    ["years ago i took 30 paracetamol and ended up in hospital", "when i was 15 i took 40 pills"],
)
def test_an_overdose_told_as_history_is_tier_2_not_a_crisis_now(text: str) -> None:
    # the semantic layer does not see the tense, and a dose taken is tier 3 only now (round 6)
    result = _screen(text)
    assert result.tier == 2, result.reasons
    assert part_hits(normalize(text), distress=True, earlier_risk=True, hard_means=False, past=True) == []


def test_an_overdose_now_after_history_is_still_a_crisis() -> None:
    result = _screen("years ago i tried once. just now i took 30 paracetamol")
    assert result.tier == 3, result.reasons


def test_encoder_threads_defaults_by_cpu_count_and_is_applied_by_the_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from launcher.safety import SafetyConfig
    from launcher.safety._semantic import semantic_layer

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert SafetyConfig().encoder_threads == 1  # a busy 2-core machine: one BLAS thread
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert SafetyConfig().encoder_threads == 2
    layer = semantic_layer()
    try:
        _screen("a calm message about my week", None, SafetyConfig(encoder_threads=3))
        assert layer.encoder._threads._n == 3
    finally:
        layer.encoder.set_blas_threads(1)
    for bad in (0, 9):
        with pytest.raises(ValueError):
            SafetyConfig(encoder_threads=bad)


def test_encoder_threads_out_of_range_in_coach_toml_is_a_clear_error(tmp_path: Path) -> None:
    from launcher.config import load_config
    from launcher.errors import LauncherError

    path = tmp_path / "coach.toml"
    path.write_text("[safety]\nencoder_threads = 0\n", encoding="utf-8")
    with pytest.raises(LauncherError) as err:
        load_config(path)
    assert "encoder_threads" in str(err.value) and "1-8" in str(err.value)
