"""Composed tier-3 signals: a self-directed act and a qualifier anywhere in the message, or a qualifier
after earlier risk in the session (round 5; docs/safety.md, "Composition").

The rules of :mod:`._lexicon` and :mod:`._families` match phrases inside one clause, so "plan is to hang
myself in the garage after my shift friday" and "kms plan: sunday, the lake" reached only tier 2: the act
and what makes it a crisis sit in different clauses or far apart. This layer reads the ladder of the
Columbia Suicide Severity Rating Scale (C-SSRS screener; Posner et al., Am J Psychiatry 2011) the way a
counsellor does, over the whole message:

- **act** (items 1-2: wish to be dead, thoughts of killing oneself): a lexical hit of an ideation or
  intent rule (:data:`ACT_RULES`) or an act phrase of :data:`ACT`, in the writer's own voice, not
  negated, not reported speech (the rules' own checks), not in the remote past;
- **qualifier** (items 3-5: method, intent, plan; and a time or a place): a means (:data:`MEANS`), a
  place to fall or drown from (:data:`PLACE`), a plan or decision (:data:`PLAN`) or a time
  (:data:`TIME`), anywhere in the message.

Act and qualifier together are tier 3 (``t3.composed_<kind>``). A wish to be dead alone (item 1) composes
only with a means other than medicine or a plan said outright, not with a time ("I don't want to wake up
tomorrow" is item 1); a thought (item 2) only with a means or a place. After earlier
risk in the session (tier >= 2 within ``distress_window_turns``), a qualifier alone is tier 3
(``t3.context_<kind>``, kinds ``means``, ``place``, ``plan``, ``farewell``, ``time``; a time needs a bare
act word with it, "friday. it's happening"), unless the message is a safety step ("gave the pills to my
sister", "threw the rope out": :data:`SAFETY_STEP`). Earlier ideation plus later means, preparation, a
farewell or a timeline is a crisis (docs/coaching.md).

Patterns are written in normal spelling and compiled into the collapsed space of
:func:`._normalize.normalize` by :func:`._lexicon.compile_template`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._lexicon import PAST_MARKERS, PILLS, compile_template
from ._normalize import Clause
from ._parts import ABSENCE, part_hits

__all__ = [
    "ACT",
    "ACT_RULES",
    "ACT_STRONG",
    "COMPOSED_IDS",
    "HARD_MEANS",
    "MEANS",
    "PLACE",
    "PLAN",
    "SAFETY_STEP",
    "TIME",
    "composed_hits",
    "conditional_go",
    "qualified",
]

#: Rule ids whose hit is a self-directed act, thought of or intended (C-SSRS items 2-4). A
#: ``past`` variant (``t2.past_attempt_or_ideation``) is not among them.
ACT_RULES: frozenset[str] = frozenset(
    {
        "t2.self_harm_mention", "t2.active_ideation", "t3.intent_self_harm", "t3.suicidal_now",
        "t3.only_way_out", "t3.euphemism_intent", "t2.ambivalent_question",
    }
)  # fmt: skip
#: Of those, the ones that report a thought, not an act intended: a time says when the thought came
#: ("thinking about ending it all day today"), not when the act is due, and a plan word may be about
#: something else ("thinking of dying my hair, my plan"), so they compose with a means or a place only.
THOUGHT_RULES: frozenset[str] = frozenset({"t2.active_ideation", "t2.ambivalent_question"})
#: Rule ids of a wish to be dead (C-SSRS item 1): composes with a means or a plan only.
WISH_RULES: frozenset[str] = frozenset({"t2.passive_ideation", "t2.passive_wish"})

_SELF = r"(?:myself|my self|meself|me self)"
#: "this time I'll get it right": an act now, even after history told in the same message.
_THIS_TIME_SRC = r"(?:this|next) time {G3}(?:get it right|make sure it works|do it properly|finish it)"
#: Act phrases the rules miss alone, in the writer's voice (cut short, slang, euphemism).
ACT_STRONG: re.Pattern[str] = compile_template(
    r"(?:kil|kiling|kms)(?: (?:myself|my self|meself|me self))(?! (?:for|over|with|at|trying|working|laughing|to|on|at)\b)|"
    r"(?:hang|hanging|hung)(?: (?:myself|my self|meself))(?! (?:upside|up|out|of|from the bar|from the pul|on)\b)|"
    r"(?:drown|drowning)(?: (?:myself|my self|meself))(?! in\b)|(?:poison|poisoning)(?: (?:myself|my self))(?! with\b)|"
    r"(?:sufocate|sufocating|top|toping|do away with) (?:myself|my self|meself|me self)|"
    r"shot(?:ing)? (?:myself|my self|meself)(?! (?:a|an|in the (?:fot|leg|arm|hand))\b)|"
    r"(?:to|gona|going to|wil|il|wana|ima|finaly) of (?:myself|meself)|"
    r"end(?:ing)? (?:it al|things|everything|my life|my own life)(?! (?:with|between|for now|for today|"
    r"early|there|here|on a|on time|by|at|of|up|i|we|you|that|on|in|from|properly|nicely|amicably|politely)\b)|stop living$|"
    r"(?:i|im|i am|il|i wil) {G1}(?:check|checking) out for (?:god|real)(?! (?:from|of|at) )|"
    r"(?:i|im|il|i wil) (?:be )?gone for god(?! (?:from|at|of|with)\b)|(?:i|il|i wil) (?:wont|not) exist(?! (?:before|without|until|til)\b)|"
    r"suicide (?:on|this|tonight|tonite|today|tomorow|at)\b|"
    r"jump(?:ing)? (?:of|from) (?:the )?(?:top of the )?(?:\w+ )?(?:multistorey|multistory|multi storey|car park|carpark|"
    r"parking garage|bridge|overpas|rof|roftop|tower|tower block|balcony|[0-9]+(?:st|nd|rd|th) flor|terace|deck|"
    r"viaduct|stairwel|window|building|clif|lokout|headland|dam|flats|block)"
    r"(?! in(?:to)? the (?:river|water|lake|sea|pool|canal|ocean|waves))|"
    # round 6: the act said as its motion, a method pictured ("walk into the loch", "step off", "not
    # brake on the last bend", "go under and stay under")
    r"(?:walk|walking|wade|wading) (?:out )?into the (?:sea|se|loch|lake|river|water|ocean|canal|waves)"
    r"(?! (?:for|to cool|with the kids|with the dog|for a))|"
    r"(?:step|steping|walk|walking) (?:of|of the edge|over the edge|of the end|of the clif|of the ledge)$|"
    r"(?:step|steping|walk|walking) of (?:the )?(?:edge|clif|ledge|rof)(?! of (?:the )?(?:stage|bus|plane))|"
    r"(?:step|steping|walk|walking) of the end(?: of the (?:pier|jety|clif))?$|"
    r"(?:drive|driving|ride|riding|steer|steering|crash|crashing) {G4}(?:of|into|over) (?:the |a |that )?"
    r"(?:edge|clif|end of the|wal|tre|big tre|oak|bridge|river|pier|ramp|lorry|truck) {G4}(?:on purpose|at ful sped|"
    r"ful sped|and not|deliberately)|"
    r"(?:just|and) not (?:turning the wheel|turn the wheel|braking|brake|turning)(?! (?:so|to|too|until)\b)|"
    r"go(?:ing)? under and (?:stay|staying|not come|not coming|never come) (?:under|up|back)(?! for [0-9])|"
    r"swim(?:ing)? out {G3}(?:until|til|till) (?:i|im) (?:cant|cannot|wont) (?:make it back|get back|come back)|"
    + _THIS_TIME_SRC
    + r"|take my leave of (?:this )?(?:life|world|earth)|stop existing|"
    r"take myself out (?:of the picture )?(?:for god|permanently)(?! (?:fod|food|meal|diner|lunch|drinks|on the|from))|"
    r"put myself out of (?:my )?misery|"
    r"(?:my )?last (?:night|day|wek) (?:on earth|alive|on this planet|of my life)(?! (?:before|as a|in|at|of)\b)|"
    r"(?:going to|gona|wil|il|want to|about to|fina|finna) (?:comit )?suicide|"
    r"(?:take|taking|swalow|swalowing|down|downing) (?:every|al the|al my|the whole lot of|every single) {G2}"
    r"(?:{PILLS}|tabs)|(?:take|taking) (?:the|my|al the|al my) (?:{PILLS}|tabs) (?:and|with) {G2}(?:wine|rum|vodka|gin|"
    r"whisky|whiskey|bottle|drink|alcohol|get in the bath|geting in the bath)|"
    r"drink(?:ing)? (?:the |some |that |a bottle of )?(?:poison|bleach|antifreze|wedkiler|pesticide|weedkila|paraquat)|"
    r"(?:saying|say|said|saying my) (?:godbye|goodbye|godbyes|goodbyes|bye) to (?:the world|this world|life|earth)"
    r"(?! (?:of|for a|for the|in|as)\b)|"
    r"make it lok like an acident|(?:thats|that is) when (?:im|i am|il|i wil) jump(?:ing)?$"
)
#: "... and jumping" at the end of a clause: an act only in a message that names a place to fall from.
FALL_TAIL: re.Pattern[str] = compile_template(r"(?:and|then) (?:jump|jumping|step of|steping of)$")
FALL_PLACE: re.Pattern[str] = compile_template(
    r"(?:bridge|rof|roftop|car park|carpark|multistorey|multistory|multi storey|parking garage|clif|clifs|tower|"
    r"balcony|[0-9]+(?:st|nd|rd|th) flor|top flor|top level|flats|viaduct|terace|lokout|headland|ledge|stairwel|"
    r"overpas)"
)
#: Act phrases that say it only in a message with risk of its own ("end it", "suicide" as a topic).
ACT: re.Pattern[str] = compile_template(
    r"end(?:ing)? (?:it|the pain)(?! (?:with|between|for now|for today|early|there|here|on a|on time|by|at|of|"
    r"up)\b)|finish(?:ing)? (?:it|(?:myself|my self|meself|me self))(?! (?:of|up|by|before|for)\b)|"
    r"suicide|overdose|od|go (?:of|over) the edge|jump(?:ing)? (?:of|from|in front of|into)|"
    r"not wake up|never wake up|step(?:ing)? (?:of|in front of)"
)
#: A means at hand, bought or being fetched (Barber & Miller, Am J Prev Med 2014, on lethal means).
MEANS: re.Pattern[str] = compile_template(
    r"(?:pils|pil|tablets|meds|medication|prescription|sleping pils|painkilers|paracetamol|tylenol|"
    r"insulin|lithium|amitriptyline|zopiclone|antifreze|bleach|pesticide|wedkiler|weed kiler|rat poison|"
    r"poison|sniper|cyanide|charcoal|exhaust|hose|rope|nose|knot|belt|cord|plastic bag|a bag|gun|pistol|"
    r"rifle|shotgun|bulets|ammo|knife|blade|blades|razor|razors|rocks|stones|live rounds|dog lead|extension cord)"
)
#: The means that are not medicine (medicine is talked of every day: "taking my tablets at 9 like the
#: doctor said"): what makes a tier-3 family of the semantic layer tier 3 (:func:`qualified`).
HARD_MEANS: re.Pattern[str] = compile_template(
    r"(?:antifreze|bleach|pesticide|wedkiler|weed kiler|rat poison|poison|sniper|cyanide|charcoal|exhaust|"
    r"hose|rope|nose|knot|plastic bag|gun|pistol|rifle|shotgun|bulets|ammo|blade|blades|razor|razors|helium|"
    r"belt|dog lead|extension cord|ligature|live rounds|one round|paraquat)"
)
#: A place to fall, jump or drown from, or to be alone at.
PLACE: re.Pattern[str] = compile_template(
    r"(?:bridge|rof|roftop|terace|tracks|railway|train line|car park|carpark|multistorey|multistory|"
    r"parking garage|clif|clifs|quary|lake|river|the sea|ocean|edge|ledge|gorge|lokout|the woods|forest|"
    r"garage|garag|balcony|top flor|[0-9]+(?:st|nd|rd|th) flor|tower|dam|pier|overpas|motorway|highway|"
    r"stairwel|banister|the shed|loft|atic|deck|headland|viaduct|reservoir|loch|boat ramp|multi storey|"
    r"fire escape|railway crosing|level crosing|the tre|oak tre)"
)
#: A plan or a decision.
PLAN: re.Pattern[str] = compile_template(
    r"(?:plan|plans|planed|planing|decided|decision|made up my mind|made my mind up|mind is made up|sorted|"
    r"worked (?:it )?out|arranged|maped (?:it )?out|got it al|al worked out|worked it al out|schedule|"
    r"figured (?:it )?out|thought it through|picked (?:the|a|my) (?:spot|place|day|date|time|way)|"
    r"chosen (?:the|a|my)|the way|thats how|that is how|how im going to|how i wil|"
    r"writen the note|wrote the note|the note)"
)
#: A time: a day, a date, a count of days, an event the act waits for.
TIME: re.Pattern[str] = compile_template(
    r"(?:tonight|tonite|2nite|today|tomorow|tmrw|2moro|this weekend|long weekend|next week|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|the [0-9]+(?:st|nd|rd|th)|"
    r"on the [0-9]+|[0-9]+ more (?:days|weks|nights|hours)|(?:two|thre|four|five|few) more (?:days|weks|nights)|"
    r"in [0-9]+ (?:days|hours|minutes|mins)|after (?:my|the|results|exams|payday|christmas)|"
    r"once(?! (?:in a while|a (?:wek|day|month|year)|or twice|again|more|before|upon)\b)|birthday|payday|deadline|"
    r"at midnight|[0-9]+ ?(?:am|pm)|next month|end of the month|january|february|march|april|june|july|august|"
    r"september|october|november|december|new years|christmas|easter|hogmanay|diwali|eid|carnival)"
)
#: The context rules' narrower vocabularies: after earlier risk a qualifier alone decides, so only its
#: unambiguous forms count ("the sea" in "plenty of fish in the sea", an office on the 8th floor, a
#: "bye" at the end of a chat and "I'm ready" do not).
CONTEXT_PLACE: re.Pattern[str] = compile_template(
    r"(?:im|i am|sitting|siting|standing|sat|stod|going|heading|drove|driving|walked|walking|went|on my way|"
    r"here|parked|up|climbed) {G3}(?:on |at |to |by |onto |over )?(?:the )?(?:top of the )?(?:bridge|rof|roftop|tracks|"
    r"railway|train line|car park|carpark|multistorey|multistory|parking garage|clif|clifs|quary|edge|ledge|"
    r"gorge|lokout|overpas)"
)
#: A plan said outright: a qualifier alone after earlier risk, and with a tier-3 family of the semantic
#: layer in the message itself.
STATED_PLAN: re.Pattern[str] = compile_template(
    r"(?:(?:ive|i have|i|its|it is|decision) (?:decided|made)$|made up my mind$|mind is made up|"
    r"thought it (?:al )?through|picked (?:the|a|my) (?:spot|place|day|date|time|way)|"
    r"chosen (?:the|a|my) (?:spot|place|day|date|time|way)|(?:got|have) it (?:al )?planed(?: out)?$|"
    r"the plan is set|heres what im going to do|i know how im going to do it|"
    r"(?:got|have) the (?:time|day|date|place|spot) sorted|(?:got|have) it (?:al )?maped out|"
    r"plans simple|plan is simple|ive arranged it|i have arranged it|"
    # round 8
    r"(?:ive|i have|i) made my plan|my plan is made|(?:whole thing|everything|it) is (?:al )?maped out|"
    r"(?:ive|i have) planed it (?:like|for|al|down))"
)
#: A plan said in passing ("it's sorted", "everything is ready"): a qualifier only after earlier risk.
CONTEXT_PLAN: re.Pattern[str] = compile_template(
    r"(?:(?:got|have) it (?:al )?(?:sorted|worked out)$|worked it (?:al )?out$|its set|"
    r"everything is (?:ready|sorted|in place)$|everything is sorted now)"
)
#: A plan said in passing, a qualifier only after earlier *risk* (round 9): "because i've made a plan and i
#: can't think about anything else"; after low mood alone it is a coaching plan ("i've made a plan and
#: wrote it on the fridge").
RISK_PLAN: re.Pattern[str] = compile_template(
    r"(?:(?:ive|i have|i) (?:made|got) a plan(?= and\b|$)|(?:ive|i have) a plan$)"
)
CONTEXT_FAREWELL: re.Pattern[str] = compile_template(
    r"(?:(?:godbye|goodbye|bye) (?:forever|everyone|everybody|al|world|to everyone|to everybody|to al)$|"
    r"(?:told|said|saying|say) (?:bye|godbye|goodbye) to (?:everyone|everybody|al|my)|(?:said|saying) my godbyes|"
    r"last (?:mesage|post|story|text)$|remember me(?! to)|lok after (?:the|my) (?:cat|dog|kids|children|baby|pets?)|"
    r"nice knowing you|tel (?:them|her|him|everyone|my \w+) i love|this is (?:it|the end)$|waving godbye|"
    r"love (?:you|u|yous|ya) al$|thank (?:you|u) for trying$)"
)
#: A bare act word for a time to attach to ("friday. it's happening", "that's when").
BARE_ACT: re.Pattern[str] = compile_template(
    r"(?:do it|doing it|its happening|it happens|go through with it|thats when|that is when|end it|finish it|"
    r"be gone|im out|im done$|thats me (?:done|finished)$)"
)
#: An intent said bare as a message's first clause, after earlier risk.
_BARE_INTENT = compile_template(
    r"^(?:and |but |so )?(?:yes |yeah )?(?:(?:im|i am|i) )?(?:realy |actualy |definitely )?(?:going to|gona)(?: do it)?$|"
    r"^(?:and |but |so |yes |yeah )?(?:il do it|im doing it|i wil|i intend to|i am|definitely|i do)$"
)
#: What may follow a bare intent in the same message ("and I'm going to. just so someone knows").
_BARE_TAIL = compile_template(
    r"^(?:{G3}so someone knows|just so (?:you|someone) (?:know|knows)|im sory|sory|bye|i mean it|its decided|yes|yeah|yep|"
    r"for real|son|tonight|today|tomorow|this wek|this weekend|now)$"
)
#: A third person's "act" that is an idiom ("she'll shoot herself in the foot with that email").
_OTHER_IDIOM = compile_template(
    r"(?:herself|himself|themselves) (?:in the fot|in the leg|up|out|a |some )|(?:kil|kils) (?:her|him) (?:for|over|if)"
)
#: A safety step with a means: not a crisis, whatever came before ("gave the pills to my sister").
SAFETY_STEP: re.Pattern[str] = compile_template(
    r"(?:threw|throw|thrown|flushed|flush|got rid of|get rid of|disposed|locked|lock|handed|hand|gave|give|"
    r"given|took|taken) (?:them|it|the \w+|my \w+|al (?:of )?(?:my|the) \w+) "
    r"(?:away|out|in|to (?:my|the|a|her|him)|back|of)|"
    r"safety plan|crisis line|helpline|hotline|therapist|counselor|counsellor|doctor said|gp said|"
    # round 9: help sought, "i've made a plan and i'll call my gp tomorrow"
    r"(?:call|ring|phone|see|speak to|talk to|book) (?:in )?(?:with )?(?:my|the|a) (?:gp|doctor|psychiatrist|"
    r"nurse|crisis team|key worker)|samaritans|crisis team"
)

#: Every rule id this layer reports.
COMPOSED_IDS: frozenset[str] = frozenset(
    {f"t3.composed_{k}" for k in ("means", "place", "plan", "time")}
    | {f"t3.composed_{k}" for k in ("medical", "danger", "overdose", "stockpile", "preparatory", "other")}
    | {"t2.preparatory_parts"}
    | {f"t3.context_{k}" for k in ("means", "place", "plan", "farewell", "time", "method", "absence")}
)


def _some(clauses: Sequence[Clause], *patterns: re.Pattern[str]) -> bool:
    """Whether any of ``patterns`` matches in any clause."""
    return any(p.search(c.text) for p in patterns for c in clauses)


def _first(clauses: Sequence[Clause], *patterns: tuple[str, re.Pattern[str]]) -> str | None:
    for kind, pattern in patterns:
        if any(pattern.search(c.text) for c in clauses):
            return kind
    return None


#: An act phrase used as an idiom ("killing myself for this promotion", "drowning myself in coursework",
#: "ending it all on a high note"): the rules may still read it as a mention (tier 2), but it composes
#: with nothing.
_IDIOM_ACT = compile_template(
    r"(?:kil|kiling|drown|drowning|poison|poisoning|shot|shoting|hang|hanging|work|working|run|runing|"
    r"push|pushing|stres|stresing) (?:myself|my self) (?:for|over|trying|working|studying|laughing|"
    r"with (?:work|overtime|revision|studying|exercise|cofee|junk|sugar)|at (?:work|the gym|the ofice)|"
    r"to (?:get|finish|make|pay|pas|meet))\b|"
    r"(?:drown|drowning|work|working|run|runing|push|pushing|stres|stresing) (?:myself|my self) (?:in|on|with)\b|"
    r"(?:id|i would|would|i wil|il) (?:rather|happily|gladly|literaly) (?:jump|walk|step)\b|"
    r"(?:can|go|could) (?:go )?(?:jump|walk) (?:of|into)\b|(?:id|i would|would) (?:\w+ )?jump of (?:a|the) \w+ for\b|"
    r"\brather\b.*\bthan\b|\bif i (?:hear|se|get|have to|do) .*\b(?:again|more|one more)\b|"
    r"(?:can|go|could) (?:go )?(?:jump|walk) in (?:a|the) (?:lake|river|sea)\b|"
    r"end(?:ing)? (?:it al|things|everything) (?:on a|with a|with the|for the|at the)\b"
)
#: A sport or a lesson: the act phrases of a motion ("go under and stay under", "jumping off the cliff")
#: are then the sport's words. It cancels only an act found as a phrase, never a rule's hit ("my plan is
#: to hang myself in the garage after training on sunday" stays a plan).
_RECREATION = compile_template(
    r"(?:clif jumping|tombstoning|bungee|base jump|skydiv|parachut|training|practise|swim club|lesson|instructor)"
)
#: Medicine said as a means at hand (not "my dog needs his tablets at 8am").
_MEDS_AT_HAND = compile_template(
    r"(?:got|have|picked up|colected|bought|saved|saved up|stockpiled|counted|lined up|fetched|took out|hoarded|"
    r"kept|found|geting|bringing) {G3}(?:" + PILLS + r")"
)
#: A dated past or an attempt told as history ("after my suicide attempt in 2018"): the act it names is
#: not a plan now. It stops only the act's composition; a medical emergency or someone's overdose in the
#: same message is now all the same ("after his last attempt he swore he was done, now he took ...").
_HISTORY = compile_template(
    r"(?:in|since|back in) (?:19|20)[0-9]{2}\b|(?:suicide|my|his|her|their|last|previous|first) atempt|"
    r"atempted (?:suicide|to kil|to end)"
)


_THIS_TIME = compile_template(_THIS_TIME_SRC)


def qualified(clauses: Sequence[Clause]) -> bool:
    """Whether the message names a means other than medicine (:data:`HARD_MEANS`), a place to fall from (:data:`CONTEXT_PLACE`)
    or a plan said outright (:data:`STATED_PLAN`): what turns a tier-3 family the semantic layer names at tier 2 into
    tier 3 (``sem3.<family>``), unless the message is a safety step (:data:`SAFETY_STEP`)."""
    texts = [c.text for c in clauses]
    if any(SAFETY_STEP.search(t) for t in texts):
        return False
    return any(
        HARD_MEANS.search(t)
        or CONTEXT_PLACE.search(t)
        or STATED_PLAN.search(t)
        or (TIME.search(t) and BARE_ACT.search(t))
        for t in texts
    )


def _timed(clauses: Sequence[Clause]) -> bool:
    """A time with a bare act word in the same clause ("friday. it's happening friday"), or a time as
    the whole of a short message ("2 more days")."""
    if any(TIME.search(c.text) and BARE_ACT.search(c.text) for c in clauses):
        return True
    words = sum(len(c.tokens) for c in clauses)
    return words <= _SHORT and any(TIME.search(c.text) for c in clauses)


_CONDITION = compile_template(
    r"^(?:when|wen|once|after|as son as|the day|the minute|the moment|the second)\b"
)
_GO = (
    r"(?:i go|il go|im going|im gone|il be gone|thats it for me|thats me done|im checking out|i check out|"
    r"i go too|im going too|im out|thats the end of me|thats the day i end everything|il go with (?:him|her|them)|"
    r"im done too|il go too|il be going too|im folowing (?:him|her|them))"
)
#: Bare acts that are ordinary words too ("once this report is in, I'm done"): a conditional act only
#: after distress or risk (round 6).
_GO_WEAK = r"(?:im done|thats me finished|thats me done|thats me|im going to go|i wil do it|il do it|i wil do it there)"
_BARE_GO = compile_template(r"^(?:then |so )?(?:" + _GO + r"|that is when|thats when)$")
_GO_TAIL = compile_template(_GO + r"$")
_BARE_GO_WEAK = compile_template(r"^(?:then |so )?" + _GO_WEAK + r"$")
_GO_TAIL_WEAK = compile_template(_GO_WEAK + r"$")


def conditional_go(clauses: Sequence[Clause], *, weak: bool = False) -> bool:
    """A condition and, in a later clause, a bare act with nothing after it: "when she goes, I go",
    "once the sale goes through, I'm out" (the issue's family "once X happens, that's when I ...").
    With ``weak``, the bare acts that are ordinary words too ("I'm done", "that's me finished")."""
    tail, bare = (_GO_TAIL_WEAK, _BARE_GO_WEAK) if weak else (_GO_TAIL, _BARE_GO)
    for i, c in enumerate(clauses):
        if _CONDITION.search(c.text) and (
            tail.search(c.text) or any(bare.search(d.text) for d in clauses[i + 1 :])
        ):
            return True
    return False


#: A means acquired or at hand, said with an acquisition verb: after earlier distress (not only risk)
#: it is tier 3 ("done pretending im fine || got rope"). Medicine is not among them: after distress
#: "my doctor gave me tablets" is ordinary.
ACQUIRED: re.Pattern[str] = compile_template(
    r"(?:got|bought|have|picked up|fetched|bringing|ordered|found|geting) {G2}(?:rope|roap|hose|charcoal|"
    r"gun|shotgun|rifle|ammo|bulets|noose|wedkiler|weed kiler|pesticide|antifreze|rat poison|"
    r"poison|sniper|cyanide|helium)(?! (?:for|to) (?:the |a |my |our )?(?:bbq|barbecue|grill|climbing|garden|"
    r"camping|hike|boat|dog|cat|plants|weds|rats|mice|slugs|range|club|hunt|hunting|shot|ducks))"
)


#: A method weighed or a lethal-means question, in words the rules' phrases miss: after distress a
#: crisis ("jumping seems fastest", "how cold does the water have to be to go under quickly", "the
#: tallest car park near me"), the means-restriction reading of Barber & Miller (2014).
METHOD_WEIGHED: re.Pattern[str] = compile_template(
    r"(?:jumping|hanging|pils|tablets|drowning|the bridge|the rope|a rope|gas|the car|a gun|overdosing|cuting) "
    r"(?:sems|is|would be|fels|looks) (?:like )?(?:the )?(?:fastest|quickest|easiest|best|surest|les painful|"
    r"least painful|most certain|only way)|"
    r"how (?:cold|dep|high|tal|far|long|fast|much|many) {G6}(?:to (?:go under|drown|die|not survive|be fatal|kil)|"
    r"before (?:you|i|someone) (?:die|drown|go under|pas out)|(?:go|goes) under|is fatal|is lethal|would kil)|"
    r"(?:talest|highest) (?:car park|carpark|multistorey|multistory|building|bridge|clif|tower) (?:near|around|in)|"
    r"(?:do you|does|would|how long|how fast|faster|quicker|how quickly) {G4}(?:bled|bleed) out"
)


#: A message of at most this many words is "short": a time alone is then the whole message.
_SHORT = 5


def composed_hits(
    clauses: Sequence[Clause],
    rule_ids: Sequence[str],
    negated: Sequence[str],
    *,
    risk_now: bool,
    earlier_risk: bool,
    distress: bool = False,
) -> list[tuple[str, int, bool]]:
    """The composed hits of a message (at most one ``(rule id, tier, counts as distress)``: tier 3, or
    tier 2 for a bare conditional act without distress), from its normalised
    ``clauses``, the rule ids that fired in it (``rule_ids``; a negated or reported match is not among
    them), those cancelled by negation (``negated``), whether any signal of the message so far is tier
    >= 2 (``risk_now``: the rules' or the semantic layer's), whether the session had one in its
    recent turns (``earlier_risk``) and whether there was distress (tier >= 1) in the message or the
    recent turns (``distress``: a bare conditional act, "when she goes, I go", is then tier 3, else 2,
    and a means acquired, :data:`ACQUIRED`, is tier 3). An act phrase of :data:`ACT_STRONG` counts in
    a message with no negated risk phrase, one of :data:`ACT` only when the message has risk of its
    own. Pure; never raises."""
    ids = set(rule_ids)
    if any(PAST_MARKERS.search(c.text) for c in clauses):  # "years ago, on a bridge": the remote past
        # ... though an emergency, an overdose or a stockpile said now is all the same (round 6)
        return part_hits(clauses, distress=distress, earlier_risk=earlier_risk, hard_means=False, past=True)
    phrase_act = (
        not negated and any(ACT_STRONG.search(c.text) or (risk_now and ACT.search(c.text)) for c in clauses)
    ) or (any(FALL_TAIL.search(c.text) for c in clauses) and any(FALL_PLACE.search(c.text) for c in clauses))
    if phrase_act and any(_RECREATION.search(c.text) for c in clauses):
        phrase_act = False
    act = bool(ids & ACT_RULES) or phrase_act
    if act and any(_IDIOM_ACT.search(c.text) or _HISTORY.search(c.text) for c in clauses):
        act = any(_THIS_TIME.search(c.text) for c in clauses)  # "my first attempt was in 2019, this time ..."
    hits = _act_hits(clauses, ids, act)
    if hits:
        return hits
    if (
        "t2.third_party_risk" in ids
        and not _some(clauses, _OTHER_IDIOM)
        and _first(clauses, ("time", TIME), ("place", CONTEXT_PLACE), ("means", HARD_MEANS))
    ):
        return [("t3.composed_other", 3, False)]  # "she'll kill herself on new years eve" (round 6)
    parts = part_hits(
        clauses,
        distress=distress,
        earlier_risk=earlier_risk,
        hard_means=_first(clauses, ("means", HARD_MEANS)) is not None,
    )
    if parts:
        return parts
    if conditional_go(clauses):
        if distress or earlier_risk or act:
            return [("t3.conditional_timeline", 3, True)]
        return [("t2.timeline_ambiguous", 2, True)]
    if (distress or earlier_risk) and conditional_go(clauses, weak=True):
        return [("t3.conditional_timeline", 3, True)]
    if any(SAFETY_STEP.search(c.text) for c in clauses):
        return []
    return _context_hits(clauses, distress=distress, earlier_risk=earlier_risk)


def _act_hits(clauses: Sequence[Clause], ids: set[str], act: bool) -> list[tuple[str, int, bool]]:
    """An act (or a wish to be dead) with a qualifier in the same message."""
    if act:
        # a thought alone ("thinking about it all day today", "thinking of dying my hair, my plan")
        # composes with a means or a place only; an intent or the act's own words with any qualifier
        thought = (
            bool(ids & THOUGHT_RULES)
            and not ids & (ACT_RULES - THOUGHT_RULES)
            and not any(ACT_STRONG.search(c.text) for c in clauses)
        )
        kinds = [("means", MEANS), ("place", PLACE)] + ([] if thought else [("plan", PLAN), ("time", TIME)])
        kind = _first(clauses, *kinds)
    elif ids & WISH_RULES:
        kind = _first(clauses, ("means", HARD_MEANS), ("plan", STATED_PLAN))
    elif _first(clauses, ("plan", STATED_PLAN)) and _first(clauses, ("means", HARD_MEANS)):
        kind = "plan"  # "plan's simple. out to the back block on sunday, my pistol, one round" (round 6)
    else:
        kind = None
    return [(f"t3.composed_{kind}", 3, True)] if kind else []


def _context_hits(
    clauses: Sequence[Clause], *, distress: bool, earlier_risk: bool
) -> list[tuple[str, int, bool]]:
    """A qualifier alone, read in the light of distress (a means acquired, a plan said outright, a
    farewell, a method weighed) or of earlier risk (the wider vocabularies)."""
    if distress:
        kind = _first(
            clauses,
            ("means", ACQUIRED),
            ("plan", STATED_PLAN),
            ("farewell", CONTEXT_FAREWELL),
            ("method", METHOD_WEIGHED),
        )
        if kind is None and _first(clauses, ("plan", CONTEXT_PLAN)):
            # "i've worked it all out. the pills and the wine, in my tent saturday night" (round 6)
            kind = "plan" if _some(clauses, MEANS, PLACE, TIME) else None
        if kind is not None:
            return [(f"t3.context_{kind}", 3, True)]
    if not earlier_risk:
        return []
    kind = _first(
        clauses,
        ("means", HARD_MEANS),
        ("means", _MEDS_AT_HAND),
        ("place", CONTEXT_PLACE),
        ("farewell", CONTEXT_FAREWELL),
        ("plan", STATED_PLAN),
        ("plan", CONTEXT_PLAN),
        ("plan", RISK_PLAN),
        ("absence", ABSENCE),
    )
    if kind is None and _timed(clauses):
        kind = "time"
    if (
        kind is None
        and any(_BARE_INTENT.search(c.text) for c in clauses)
        and all(_BARE_INTENT.search(c.text) or _BARE_TAIL.search(c.text) for c in clauses)
    ):
        kind = "plan"  # "i want to die || and i'm going to. i'm just telling you so someone knows"
    return [(f"t3.context_{kind}", 3, True)] if kind else []
