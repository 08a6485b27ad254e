"""The safety screen's rules: regular expressions over normalised clauses, with tiers and rule ids.

Tier definitions follow docs/coaching.md ("Rules the code enforces", SAFETY). The split between
passive ideation (tier 2) and intent / plan / means / timeline (tier 3) follows the Columbia Suicide
Severity Rating Scale (C-SSRS screener; Posner et al., Am J Psychiatry 2011): item 1 "wish to be dead"
and item 2 non-specific active thoughts are lower acuity; items 3-6 (method, intent, plan, recent
behaviour) are high acuity. Lethal-means questions after distress are treated as high acuity, as in
means-restriction guidance (Barber & Miller, Am J Prev Med 2014). Distress markers (tier 1) are
hopelessness and perceived burdensomeness (Beck et al. 1985; Joiner 2005).

Patterns are written in normal spelling and compiled into the collapsed space of
:func:`launcher.safety._normalize.normalize` (repeated letters collapsed, so write inflection suffixes
with single letters: ``cut(?:ing)?`` matches "cutting"). ``{NAME}`` inserts a vocabulary alternation;
``{G2}`` / ``{G3}`` are gaps of up to 2 / 3 whole tokens. A space between words is optional in the
compiled pattern ("kill myself" also matches "killmyself").

Rule ids are stable (they are logged and reported instead of the user's text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ._normalize import collapse_pattern

__all__ = [
    "MEANS_WORDS",
    "NEGATORS",
    "NEUTRAL_PHRASES",
    "PAST_MARKERS",
    "PILLS",
    "PILLS_NOT_PILES",
    "QUESTION_AUX",
    "RULES",
    "Rule",
]

Negation = Literal["before", "inner", "none"]


@dataclass(frozen=True)
class Rule:
    """One screen rule.

    Attributes:
        id: stable rule id, ``t<tier>.<name>``.
        tier: tier when the rule matches (0-3).
        template: pattern source (see module docstring).
        negation: ``"inner"``: a negator before the match (3 tokens) or inside it cancels it;
            ``"before"``: only a negator before the match cancels it (the pattern carries its own
            negation, e.g. "don't want to live"); ``"none"``: never cancelled.
        requires: ``"distress"``: fires only when distress (any tier >= 1 signal) was seen in this
            message or within ``SafetyConfig.distress_window_turns``; ``"risk"``: only when a tier >= 2
            signal was; ``"means"``: only when the message names a means (:data:`MEANS_WORDS`: a gun,
            a blade, a rope, pills); otherwise ``fallback`` fires, if any.
        fallback: ``(rule id, tier)`` used when ``requires`` is not met.
        fallback_requires: ``"distress"``: the fallback too fires only after distress (a tier >= 1
            signal in the message or the recent turns); ``None``: it always fires.
        past: ``(rule id, tier)`` used instead when the clause is about the remote past
            ("years ago", "when I was 15").
        distress: whether a hit counts as distress for the lethal-means rule.
        question: ``(rule id, tier)`` used instead when the match is an inverted question ("do I
            want to hurt myself in the long run?"): the token before it is one of
            :data:`QUESTION_AUX`. "should I kill myself" is not downgraded.
    """

    id: str
    tier: int
    template: str
    negation: Negation = "inner"
    requires: Literal["distress", "risk", "means"] | None = None
    fallback: tuple[str, int] | None = None
    fallback_requires: Literal["distress"] | None = None
    past: tuple[str, int] | None = None
    distress: bool = True
    question: tuple[str, int] | None = None
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", compile_template(self.template))


_SELF = r"my ?(?:fucking |fuckin |damn |stupid |own )?self"

_VOCAB: dict[str, str] = {
    "I": r"(?:i|im|i am|ive|i have|id|i would|ill|i will|i had|i just)",
    "INTENT": (
        r"(?:want to|wanted to|want|wan|am going to|going to|am about to|about to|will|plan to|planing to|"
        r"planed to|intend to|have decided to|decided to|am ready to|ready to|need to|should just|"
        r"should|might just|might|feel like|am tempted to|tempted to|just want to|am just going to|"
        r"wil just|could just|am considering|am planing on|plan on|fina|finna)"
    ),
    # unambiguous lethal acts against oneself
    "ACT_LETHAL": (
        r"(?:kil(?:ing|ed)? SELF(?! (?:with work|trying|working|studying|at work|at the gym|laughing|"
        r"to finish|to get|over nothing|for this job))|end(?:ing)? my (?:own )?life|"
        r"tak(?:e|ing) my (?:own )?life(?! (?:back|in|into|to|forward|seriously|more|again))|"
        r"hang(?:ing)? SELF(?! (?:from the |of the |on the )?(?:pul ?up|chin ?up|inversion|upside|bar\b))|shot(?:ing)? SELF(?! (?:a|an|in the (?:fot|leg|arm))\b)|drown(?:ing)? SELF(?! in (?:my )?(?:work|"
        r"books|studies|studying|chores|tasks|projects|paperwork|music|sorows|tears|cofee|games|hobies|coursework|"
        r"homework|asignments|emails|admin|deadlines|debt|revision|wine|beer))|"
        r"poison(?:ing)? SELF|top(?:ing)? SELF(?! (?:up|of|with|at|in|after|next|this|that|again|last|on|for|every|each|now)\b)|neck(?:ing)? SELF|"
        r"sufocat(?:e|ing) SELF|(?:slit|cut)(?:ing)? my (?:wrists|wrist|throat)|"
        r"throw(?:ing)? SELF (?:of|in front of|under|from)|starv(?:e|ing) SELF to death|"
        r"end(?:ing)? it al|do(?:ing)? SELF in|do(?:ing)? away with SELF|finish(?:ing)? SELF of(?! with)|"
        r"eat(?:ing)? (?:my|a) (?:rifle|gun|pistol|shotgun|bulet)|"
        r"yet(?:ing)? SELF (?:of|from|out of) (?:the earth|this planet|existence|a bridge|the bridge|a rof|the rof|"
        r"a building|a clif)|blow(?:ing)? my brains out|put(?:ing)? a bulet in my head|"
        r"jump(?:ing)? to my death|drink(?:ing)? SELF to death|od on {G2}PILLS|overdos(?:e|ing) on {G2}(?:pils|pil|"
        r"tablets|meds|medication|medicine|insulin|drugs))"
    ).replace("SELF", _SELF),
    # self-injury (ambiguous alone: "I hurt myself at the gym")
    "ACT_INJURY": (
        r"(?:(?:hurt|harm)(?:ing)? SELF(?! (?:if|by acident|acidentaly|at|playing|lifting|running|doing|working|"
        r"trying|physicaly at))|cut(?:ing)? SELF(?! (?:some|a|an|of|loose|short|fre|slack|out|back|down|in)\b)|"
        r"burn(?:ing)? SELF(?! out)|stab(?:ing)? SELF)"
    ).replace("SELF", _SELF),
    "ACT_OTHER": (
        r"(?:comit(?:ing)? suicide|suicide|overdose|overdosing|"
        r"jump(?:ing)? (?:of|from|over|of of|into) {G2}(?:bridge|building|rof|roftop|clif|"
        r"balcony|window|ledge|tower|overpas|parking garage|river|train)|"
        r"jump(?:ing)? in front of (?:a |the )?(?:train|bus|car|truck)|step in front of (?:a |the )?"
        r"(?:train|bus|car|truck)|walk(?:ing)? into trafic|"
        r"drive {G2}(?:of|into) (?:a |the )?(?:bridge|clif|wal|tre|river)|"
        r"crash my car on purpose)"
    ),
    "OTHER_PERSON": (
        r"(?:him|her|them|someone|somebody|everyone|everybody|people|my {G1}(?:wife|husband|"
        r"boyfriend|girlfriend|partner|ex|mom|mother|dad|father|boss|kids|kid|son|daughter|baby|brother|"
        r"sister|roomate|neighbor|neighbour|cowork|coworker|colleague|family|teacher|friend|stepdad)|"
        r"that (?:guy|man|woman|girl|bitch|bastard)|the (?:guy|man|woman|girl))(?! with kindnes)"
    ),
    "ABUSER": (
        r"(?:he|she|they|my {G1}(?:wife|husband|boyfriend|girlfriend|partner|ex|mom|mother|dad|"
        r"father|stepdad|stepfather|stepmom|uncle|aunt|brother|sister|boss|parents|family|cousin|"
        r"grandfather|grandpa|coach|teacher)|someone|somebody|a man|a guy)"
    ),
    "ABUSE_VERB": (
        r"(?:hits(?! ?me ?up)|hit(?! ?me ?up)|hiting|beats|beat|beating|chokes|choked|choking|strangled|strangles|"
        r"kicks|kicked|kicking|punches|punched|punching|slaps|slaped|slaping|rapes|raped|molests|"
        r"molested|abuses|abused|abusing|asaulted|asaults|threatens to kil|threatened to kil|"
        r"threatens to hurt|threatened to hurt|burned|shoved|shoves|pushed|grabbed|forced)"
    ),
    # what "hit me with" is when it is not a blow ("hit me with a deadline", "hitting me with questions")
    "NOT_A_BLOW": (
        r"(?:idea|question|news|deadline|bil|task|list|mesage|text|email|joke|request|project|surprise|curveball|work|"
        r"warning|increase|rise|fine|fe|update|quote|invoice|comment|compliment)"
    ),
    "QUANTITY": (
        r"(?:al of (?:my|the) \w+ at once|the whole|a whole|a bunch of|a handful of|too many|an entire|the entire|"
        r"the rest of|[0-9]{2,}|{G1}(?:bottle|box|pack|packet)s? of|"
        r"(?:twenty|thirty|forty|fifty|hundred))"
    ),
    "PILLS": (
        r"(?:pils|pil|tablets|meds|medication|medicine|sleping pils|sleping tablets|painkilers|insulin|tylenol|"
        r"paracetamol|antidepresants|xanax|valium|diazepam|zopiclone|amitriptyline|sertraline|codeine|oxy|"
        r"oxycodone|opioids|benzos|prescription|seroquel|quetiapine|cocodamol|co codamol|tramadol|ibuprofen|"
        r"aspirin|lorazepam|clonazepam|fluoxetine|citalopram|mirtazapine|pregabalin|gabapentin|morphine|"
        r"fentanyl|lithium|propranolol)"
    ),
}
_VOCAB["ACT_LETHAL"] = _VOCAB["ACT_LETHAL"].replace("PILLS", _VOCAB["PILLS"])
#: Medicine names, in the template syntax (normal spelling), for other modules' patterns.
PILLS: str = _VOCAB["PILLS"]
_VOCAB["ACT_SELF"] = "(?:" + _VOCAB["ACT_LETHAL"] + "|" + _VOCAB["ACT_INJURY"] + ")"
# a means turned on oneself ("use it on myself", "point the gun at myself"); the rule that uses it needs a
# means word in the same message (Rule.requires="means")
_VOCAB["ACT_MEANS"] = (
    r"(?:use|point|turn|aim|put|hold|press) (?:it|this|that|them|the \w+|a \w+|my \w+) "
    r"(?:on|at|against|to|into) (?:SELF|my (?:head|temple|chest|wrists|wrist|throat|neck))"
).replace("SELF", _SELF)
# large ingestion quantities: 20+, whole bottles, all of them (a medical emergency whatever the mood)
_VOCAB["BIG_QUANTITY"] = (
    r"(?:the whole|a whole|an entire|the entire|a handful of|"
    r"[2-9][0-9]|[0-9]{3,}|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|a hundred|hundreds of)"
)
_VOCAB["CONTAINER"] = (
    r"(?:(?:the|a|an|my) (?:whole |entire |ful )?(?:bottle|box|pack|packet|strip|blister pack) of {PILLS}|"
    r"al (?:of )?(?:my|the|those|these) (?:\w+ )?{PILLS} at once|al of them at once)"
).replace("{PILLS}", _VOCAB["PILLS"])
_VOCAB["ACT_INGEST"] = (
    r"(?:(?:take|swalow|down|eat) (?:BIG {G1}PILLS|(?:the|a|an|my) (?:whole|entire|ful) "
    r"(?:bottle|box|pack|packet|strip) of PILLS))"
)
_VOCAB["ACT_INGEST"] = (
    _VOCAB["ACT_INGEST"].replace("BIG", _VOCAB["BIG_QUANTITY"]).replace("PILLS", _VOCAB["PILLS"])
)
# someone else: "my friend", "my sister", "she"
_VOCAB["THIRD"] = (
    r"(?:my {G1}(?:friend|bestie|bf|gf|sister|brother|sibling|mom|mother|dad|father|son|daughter|kid|child|"
    r"wife|husband|boyfriend|girlfriend|partner|roomate|cousin|coworker|colleague|student|client|niece|nephew|"
    r"aunt|uncle|grandma|grandpa|grandmother|grandfather|neighbor|neighbour|classmate|teammate)|"
    r"a friend(?: of mine)?|someone i know|somebody i know|he|she|they)"
)
_VOCAB["THIRD_INTENT"] = (
    r"(?:wants to|want to|wanted to|is going to|s going to|was going to|is planing to|plans to|planed to|"
    r"is about to|talks about|talked about|keps talking about|is talking about|has ben talking about|"
    r"is thinking about|thinks about|thought about|threatened to|threatens to|tried to|has tried to|"
    r"is trying to|said she wants to|said he wants to|said they want to|wil|might)"
)
# idioms after "herself" ("cut herself some slack", "hurt himself at the gym", "burning himself out")
_VOCAB["OTHERSELF"] = (
    r"(?:herself|himself|themselves|themself|her self|him self|them self)(?! (?:some|a|an|of|loose|short|"
    r"fre|slack|out|back|down|in|if|by acident|acidentaly|at|playing|lifting|running|doing|working|trying|"
    r"studying|with work|laughing|physicaly|on)\b)"
)

_GAPS = {
    "{G1}": r"(?:\b\w+ ){0,1}",
    "{G2}": r"(?:\b\w+ ){0,2}",
    "{G3}": r"(?:\b\w+ ){0,3}",
    "{G4}": r"(?:\b\w+ ){0,4}",
    "{G6}": r"(?:\b\w+ ){0,6}",
    "{G8}": r"(?:\b\w+ ){0,8}",
}

#: "pills" as a means, not the typo for "piles" ("pills of written works", ESConv; collapsed spelling).
PILLS_NOT_PILES = (
    r"pils(?! of (?:writen|work|works|paper|papers|paperwork|books|stuf|clothes|laundry|dishes|junk|things|"
    r"homework|bils|mail|leaves|rubish|trash|boxes)\b)"
)

#: Words whose presence anywhere in a message makes it a "means" message (Rule.requires="means"):
#: firearms, blades, ligatures, medication, poison (collapsed spelling; Barber & Miller 2014 on lethal means).
MEANS_WORDS: re.Pattern[str] = re.compile(
    r"\b(?:guns?|pistols?|rifles?|shotguns?|firearms?|revolvers?|handguns?|knife|knives|blades?|razors?|"
    r"ropes?|" + PILLS_NOT_PILES + r"|pil|tablets|meds|medication|poison|cyanide|bulets?|ammo|"
    r"painkilers|sleping pils|insulin|tylenol|paracetamol)\b"
)


def compile_template(template: str) -> re.Pattern[str]:
    """Compile a rule template: vocabulary, collapse, optional inter-word spaces, gaps, word bounds."""
    src = template
    for name, alt in _VOCAB.items():
        src = src.replace("{" + name + "}", alt)
    src = collapse_pattern(src)
    src = src.replace(" ", " ?")
    for gap, alt in _GAPS.items():
        src = src.replace(gap.replace(" ", " ?"), alt).replace(gap, alt)
    return re.compile(r"\b(?:" + src + r")\b")


#: Tokens that negate a following risk phrase (collapsed spelling).
NEGATORS: frozenset[str] = frozenset(
    {
        "not", "never", "no", "nor", "dont", "doesnt", "didnt", "wont", "wouldnt", "isnt", "arent",
        "wasnt", "werent", "havent", "hasnt", "hadnt", "shouldnt", "nothing", "nobody",
    }
)  # fmt: skip

#: Phrases whose negator does not negate what follows ("not gonna lie, I want to ...").
NEUTRAL_PHRASES: tuple[tuple[str, ...], ...] = tuple(
    tuple(p.split())
    for p in (
        "not going to lie", "no lie", "not kiding", "no joke", "not joking", "dont know", "dont care",
        "dont understand", "no one", "no matter", "not sure", "not even sure", "dont even know",
        "never mind", "not only",
    )
)  # fmt: skip

#: Auxiliaries that, right before "I ...", make an inverted question (collapsed spelling).
QUESTION_AUX: frozenset[str] = frozenset({"do", "did", "does", "would", "could", "can", "wil"})

#: Markers that place a clause in the remote past (collapsed spelling).
PAST_MARKERS: re.Pattern[str] = re.compile(
    r"\b(?:(?:years|months|a year|a month|a long time|long time|decades|[0-9]+ years) ago|last year|"
    r"when i was|used to|back then|in the past|as a teen|as a teenager|as a kid|in high schol|"
    r"in colege|growing up|previously|once before)\b"
)

_T3_PAST = ("t2.past_attempt_or_ideation", 2)
_PAST2 = ("t2.past_attempt_or_ideation", 2)
_QUESTION = ("t2.ambivalent_question", 2)

RULES: tuple[Rule, ...] = (
    # ---- tier 3: intent, plan, means, timeline, in progress, emergencies (C-SSRS items 3-6)
    Rule("t3.intent_self_harm", 3, r"{I} {G2}{INTENT} {G3}(?:{ACT_SELF}|{ACT_OTHER}|{ACT_INGEST})",
         past=_T3_PAST, question=_QUESTION),
    # means + intent turned on oneself: "I have a gun and I'm going to use it on myself"
    Rule("t3.means_intent", 3,
         r"{I} {G2}{INTENT} {G2}{ACT_MEANS}|(?:going to|about to|ready to|wil|want to) {G2}{ACT_MEANS}",
         requires="means", past=_T3_PAST, question=_QUESTION),
    Rule("t3.intent_self_harm", 3, r"(?:going to|want to|about to|ready to|wil|should) {G2}{ACT_SELF}",
         past=_T3_PAST, question=_QUESTION),
    Rule("t3.suicidal_now", 3,
         r"(?<!\bis\W)(?<!\bwas\W)(?<!\bhe\W)(?<!\bshe\W)(?<!\bthey\W)(?<!\bare\W)"
         r"(?:im|i am|am|i fel|feling|fel|getting|becoming|i get) {G1}(?:so |very |realy |kind of |"
         r"prety |extremely |incredibly |actively )?suicidal(?! (?:thoughts|ideation|felings|feling|urges|"
         r"tendencies|people))|(?:ive|i have) ben {G1}suicidal (?:lately|recently|for|al|this|since)",
         past=_T3_PAST),
    Rule("t3.only_way_out", 3,
         r"(?:suicide|kiling myself|ending my life|dying|death) (?:is|sems|fels|sems like) "
         r"(?:like )?(?:the |my )?only (?:option|way|way out|answer|choice|solution)|"
         r"only (?:way out|option|answer|solution) (?:is|left is) (?:to )?"
         r"(?:die|suicide|kil myself|end my life|end it al)"),
    Rule("t3.plan", 3, r"{I} {G2}(?:have|got|made|wrote|writen|writing|bought|picked|chosen|set) "
         r"{G2}(?:a |the |my )?(?:plan|note|date|method|way|time) (?:to|for) "
         r"{G2}(?:{ACT_SELF}|{ACT_OTHER}|die|dying)|suicide (?:note|leter|plan)", past=_T3_PAST),
    Rule("t3.means", 3,
         r"{I} {G2}(?:bought|saved|saved up|stockpiled|colected|hoarded|hoarding|stockpiling|"
         r"saving up|got hold of|loaded|sharpened|tied) {G3}(?:pils|tablets|a gun|my gun|his gun|a rope|"
         r"rope|a noose|razor blades|razors|a blade|bulets|sleping pils|painkilers)|"
         r"{I} {G1}(?:have|got) (?:a|my|the) (?:gun|rope|noose|pils) (?:ready|loaded|here|with me|in my hand)",
         requires="risk", past=_T3_PAST),
    Rule("t3.timeline", 3,
         r"{I} {G2}(?:wil|going to|plan to) (?:do it|end it|go through with it) "
         r"(?:tonight|today|tomorow|this weekend|right now|son|after)",
         requires="risk"),
    Rule("t3.timeline", 3,
         r"{ACT_LETHAL} {G3}(?:tonight|today|tomorow|this weekend|right now|in an hour|next week|"
         r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))", past=_T3_PAST),
    # "want to die" alone is passive ideation (tier 2); with a time it is a timeline (docs/coaching.md, tier 3)
    Rule("t3.timeline", 3,
         r"(?:want to|ready to|plan to|planing to|wish to) {G1}(?:die|be dead) "
         r"(?:tonight|tonite|today|tomorow|this weekend|right now|in an hour)(?! (?:of|from|laughing|for|than))",
         past=_T3_PAST, question=_QUESTION),
    Rule("t3.farewell", 3,
         r"this is (?:my )?(?:last|final) (?:goodbye|mesage|night|day)|by the time you read this|"
         r"(?:i )?wont be (?:here|around|alive) (?:tomorow|much longer|anymore|for long)|"
         r"(?:goodbye|godbye|bye) (?:forever|everyone|everybody|world|cruel world|al)|this is goodbye",
         requires="risk", negation="none", distress=False),
    # the same farewell after distress only (hopelessness, "I'm done"): pause and ask (tier 2)
    Rule("t2.farewell", 2,
         r"this is (?:my )?(?:last|final) (?:goodbye|mesage|night|day)|by the time you read this|"
         r"(?:i )?wont be (?:here|around|alive) (?:tomorow|much longer|anymore|for long)|"
         r"(?:goodbye|godbye|bye) (?:forever|everyone|everybody|world|cruel world|al)|this is goodbye",
         requires="distress", negation="none", distress=False),
    Rule("t3.in_progress", 3, r"{I} {G2}(?:took|taken|swalowed|swalowing) {G1}{QUANTITY} {G2}{PILLS}"
         r"(?!.*\b(?:over the (?:last|past)|across|a day|per day|each day|since|in total|as prescribed|for my)\b)",
         requires="distress", fallback=("t2.possible_overdose", 2), past=_T3_PAST),
    # a large quantity swallowed is an emergency whatever the mood ("i took 40 pills an hour ago")
    Rule("t3.in_progress", 3,
         r"{I} {G2}(?:took|taken|swalowed|swalowing|downed) {G1}(?:{BIG_QUANTITY} {G2}{PILLS}|{CONTAINER})"
         r"(?!.*\b(?:over the (?:last|past)|across|a day|per day|each day|since|in total|as prescribed|for my)\b)|"
         r"{I} {G2}(?:swalowed|swalowing) (?:the|a|an|my) (?:whole|entire|ful) (?:bottle|box|pack|packet)"
         r"(?! (?:of|to|with|from|for)\b)", past=_T3_PAST),
    Rule("t3.in_progress", 3,
         r"{I} {G2}(?:overdosed(?! on (?:cofee|cafeine|sugar|chocolate|candy|netflix|tv|work|memes|anime|"
         r"junk fod|fod))|am overdosing|cut too dep|slit my wrists|cut my wrists)|"
         r"{I} {G1}(?:cuting myself|burning myself|hanging myself|bleding (?:a lot|so much|badly|"
         r"heavily|everywhere|out|to death))|(?:rope|nose|belt|cord) (?:is )?(?:around|round) my neck|gun (?:is )?(?:to my head|in my mouth)",
         past=_T3_PAST),
    Rule("t3.in_progress", 3,
         r"{I} {G1}(?:standing|siting) on (?:the |a )(?:ledge|edge of the|railing|bridge|rof)",
         requires="risk"),
    Rule("t3.medical_emergency", 3,
         r"(?:im|i am|i think im|i think i am|i might be|i may be) {G1}having (?:a |an )?(?:heart atack|stroke|"
         r"seizure|alergic reaction|anaphylactic|asthma atack)(?! (?:over|about|when|at|because|if|every|lol|haha|looking)\b)|(?:my )?throat is (?:closing|swelling)|"
         r"(?:cant|can not|cannot) breathe (?:right now|help|at al)|help (?:me )?i cant breathe|"
         r"(?:call|need|get) (?:me )?(?:an |the )?ambulance|{I} {G1}(?:having|have) (?:severe |bad |"
         r"crushing )?chest pain (?:right now|now)|(?:he|she|they|my {G1}\w+|baby|someone) "
         r"(?:isnt|is not|s not|stoped|has stoped|not) (?:breathing|responding(?! to\b))|"
         r"(?:he|she|my {G1}\w+|someone) (?:is|s) (?:unconscious|unresponsive)",
         negation="none"),
    Rule("t3.harm_others", 3,
         r"{I} {G2}(?:going to|about to|wil|plan to|planing to|want to|ready to|intend to) {G2}"
         r"(?:kil|shot|stab|murder|strangle|poison) {OTHER_PERSON}|shot up (?:the|my|a) "
         r"(?:schol|ofice|work|clas|church|mal)"),
    Rule("t3.method_seeking", 3,
         r"(?:painles|easiest|quickest|fastest|best|surest|les painful) (?:way|method|ways|methods) "
         r"(?:to|of) (?:die|dying|kil myself|end my life|comit suicide|suicide)|"
         r"how (?:do i|can i|to|would i|should i) {G1}(?:kil myself|end my life|comit suicide|end it al)"),
    # a lethal-means question that carries its own death wish needs no earlier distress
    Rule("t3.lethal_means_wish", 3,
         r"how (?:many|much) {G3}(?:would it take|does it take|wil it take|would i need|do i need|"
         r"should i take|would be enough|is enough|to take|wil do it|would do it) (?:for me )?"
         r"(?:to take )?(?:to |so i )?(?:never wake up|not wake up|wont wake up|never wake again|die in my slep|"
         r"slep forever|kil myself|end my life|end it al)|"
         r"how (?:many|much) (?:of )?(?:my |the |these |those )?{G1}(?:{PILLS}|mg|miligrams|grams|units|"
         r"drugs|advil|xanax|ibuprofen|aspirin) {G2}(?:would it take|does it take|wil it take|would i need|"
         r"do i need|should i take|would be enough|is enough|to take) (?:for me )?(?:to take )?to (?:die|be dead)",
         negation="before"),
    Rule("t3.lethal_means_request", 3,
         r"how (?:many|much) (?:of )?(?:my |the |these |those )?(?:{PILLS}|mg|miligrams|grams|units) "
         r"{G3}(?:would|to|does it take to|wil|is|before|until|could|can|do i need to) {G2}"
         r"(?:kil|die|be lethal|be fatal|overdose|be deadly|od)|"
         r"(?:lethal|fatal|deadly|toxic) (?:dose|amount|dosage|quantity|level)|"
         r"how (?:high|tal) (?:is|does|would|do|up|of a|a) {G4}(?:bridge|building|rof|clif|fal|drop|"
         r"jump|flor|balcony)|(?:taler|talest|highest) (?:bridge|bridges|building|buildings|"
         r"clif|clifs)|(?:where|how) (?:can|do|could|to) (?:i )?(?:get|buy|find) (?:a )?(?:gun|firearm|"
         r"pistol|rifle|rope|noose|cyanide|poison|pils without)|how long (?:does it|would it|wil it) "
         r"take to (?:die|bled out|drown|sufocate|overdose)|which (?:pils|medication|meds|drugs) "
         r"(?:would|could|wil|can) (?:kil|be lethal|be fatal)",
         negation="none", requires="distress", fallback=("t1.lethal_means_query", 1), distress=False),
    # ---- tier 2: passive / non-specific ideation, recent self-harm, past attempts, abuse (C-SSRS 1-2)
    Rule("t2.passive_ideation", 2,
         r"(?:wish|wished|wishing) {G2}(?:i was|i were|i had|to be|i could be|id be|i would be) "
         r"(?:dead|gone|never born|not born|not alive|not here)|wish (?:i could|to) {G1}(?:die|disapear|"
         r"not wake up|never wake up|slep forever|stop existing|not exist|cease to exist)|"
         r"wish (?:i could|to) (?:fal aslep|go to slep|slep|close my eyes) and (?:never|not) wake up|wish i (?:wasnt|werent|hadnt ben|was never|never) "
         r"(?:born|alive|here|woke up)|"
         r"(?:dont|do not|no longer|dont even|never) (?:want|wish) to (?:live|be alive|be here|exist|"
         r"wake up|go on(?! (?:the|a|an|holiday|trips?|dates?|with|to|at|in|stage|tour|leave|strike|my|our|that|"
         r"this|vacation|about|and on)\b)|continue living|kep living|"
         r"be around(?! (?:him|her|them|people|my|you|that|those|this|when|while)\b))|(?:no|no more|dont have a|"
         r"dont have any|cant find a|cant se a|without a|not a single) reasons? (?:to|for) "
         r"(?:live|living|go on|kep going|stay|wake up)|(?:no|nothing) (?:left )?to live for",
         negation="before", past=_PAST2),
    Rule("t2.passive_ideation", 2,
         r"(?:want to|want|ready to|wanting to|long to|would rather|rather|hope i|hoping i|"
         r"pray i|praying i) {G1}(?:die(?! (?:than|of|from|laughing|for(?! (?:months|weks|years|days|ages|so long|a long time|a while))))|be dead|not wake up|never wake up|slep forever|"
         r"disapear forever|not exist|stop existing|cease to exist)", past=_PAST2),
    Rule("t2.passive_ideation", 2,
         r"beter of (?:dead|without me|if i was gone|if i were gone|if i wasnt here|if i died)|"
         r"(?:fel|feling|felt|fels) {G3}like dying|(?:life|living) (?:is|isnt|sems|fels|is just|is not) "
         r"(?:not )?(?:worth living|worth it anymore|pointles|meaningles)|not worth living|"
         r"(?:whats|what is|what) the point (?:of|in) (?:living|life|going on|being alive|anything)|"
         r"tired of (?:living|being alive|existing)|(?:dying|death) (?:in (?:my|your) slep )?"
         r"(?:would be|would|would be a) (?:best|nice|a relief|easier|beter|welcome)|"
         r"(?:time|ready|want) for my heart to (?:give out|stop)|(?:cant|can not|cannot) go on "
         r"(?:anymore|any longer|living|like this anymore)|(?:cant|can not|cannot) go on$|"
         r"(?:im|i am) (?:so |just )?done with (?:life|living|existing|being alive|this life)|(?:want|wish) (?:it|everything|this|al of this) to "
         r"(?:end|stop) (?:forever|for god|permanently)|want to (?:disapear|vanish) forever",
         negation="before", past=_PAST2),
    Rule("t2.active_ideation", 2,
         r"(?:think|thinking|thought|thoughts|fantasizing|fantasize|dreaming|ideation) (?:about|of) "
         r"(?:{ACT_SELF}|suicide|comiting suicide|dying|ending it al|ending things|being dead)|"
         r"(?:considering|contemplating) (?:suicide|{ACT_SELF})|suicidal (?:thoughts|ideation|feling|"
         r"felings|urges)"),
    Rule("t2.self_harm_mention", 2, r"{ACT_LETHAL}", past=_PAST2),
    # someone else at risk: pause, ask how the user is and how the other person is, give resources
    Rule("t2.third_party_risk", 2,
         r"{THIRD} {G2}{THIRD_INTENT} {G1}(?:kil|kiling|hurt|hurting|harm|harming|cut|cuting|hang|hanging|"
         r"shot|shoting|end|ending|take|taking) {OTHERSELF}|"
         r"{THIRD} {G2}{THIRD_INTENT} {G1}(?:end|ending|take|taking) (?:her|his|their) (?:own )?life"
         r"(?! (?:back|in|into|to|forward|seriously|more|again))|"
         r"{THIRD} {G1}(?:is|s|has ben|sems|sems to be|might be|may be|could be|fels|is feling|"
         r"got|became|is becoming) {G1}(?:suicidal|selfharming|self harming)|"
         r"{THIRD} {G1}(?:is|s|has ben|keps|started|was) {G1}(?:cuting|harming|hurting|burning) {OTHERSELF}|"
         r"{THIRD} {G1}(?:wants|wanted|wishes) to die|"
         r"(?:shel|theyl|she wil|he wil|they wil) {G1}(?:kil|hang|shot|drown|poison) (?:herself|himself|themselves)"
         r"(?! (?:in the fot|laughing|with work|trying|over)\b)",
         negation="inner"),
    # round 6: fear of a partner or a parent (abuse disclosed in its mildest words: pause and ask)
    Rule("t2.abuse_disclosed", 2,
         r"(?:scared|afraid|terified|frightened|petrified) (?:of|to go home to) (?:my )?(?:husband|wife|partner|"
         r"boyfriend|girlfriend|dad|father|stepdad|stepfather|mum|mom|mother|ex)"
         r"(?! (?:finding out|knowing|seing|hearing|reaction|judging|being disapointed|geting|leaving|dying)\b)$",
         negation="before"),
    Rule("t2.recent_self_harm", 2,
         r"{I} {G2}(?:cut|cuting|burned|burnt|burning|hurt|hurting|harmed|harming|scratched|scratching|"
         r"hit|hiting|punched|starved) (?:myself|my (?:arms|arm|wrists|wrist|legs|thighs|skin))"
         r"(?! (?:some|a|an|of|loose|short|fre|slack|out|back|down|if|trying|doing|at|playing|lifting|running|"
         r"while|during|on the|in the|falling|skiing|coking|shaving|"
         r"working|exercising|by acident|acidentaly|when)\b)",
         past=_PAST2),
    Rule("t2.recent_self_harm", 2, r"(?:{I} |ben |started |relapsed (?:on |into |with )?)"
         r"{G1}(?:selfharm|self harm|selfharming|self harming|selfharmed|self harmed|cuting again)"),
    Rule("t2.past_attempt_or_ideation", 2,
         r"{I} {G2}(?:tried|atempted|try) (?:to )?(?:{ACT_SELF}|suicide|comit suicide|overdose)|"
         r"suicide atempt|atempted suicide|(?:was|used to be|have ben|ive ben) suicidal"),
    Rule("t2.abuse_disclosed", 2,
         r"{ABUSER} {G1}{ABUSE_VERB} me(?! (?:at|in|to|up to|into|of|about|down)\b|"
         r" with (?:a |an |the |some |this |that )?(?:\w+ )?{NOT_A_BLOW}s?\b)|"
         r"{I} {G2}(?:was|am|have ben|ve ben|got|being|get) {G1}(?:raped|molested|abused|asaulted|"
         r"sexualy asaulted|beaten up|batered|traficked|groped|stalked)|"
         r"my abusive {G1}(?:relationship|"
         r"mariage|home|household|partner|husband|wife|boyfriend|girlfriend|father|dad|mother|mom|"
         r"parents|family|ex)|(?:{I}|living|stuck|trapped) {G2}in an abusive|"
         r"{ABUSER} {G1}(?:is|was|gets|can be|has ben) {G2}(?:abusive|violent)"),
    Rule("t2.abuse_disclosed", 2, r"(?:domestic|family|intimate partner) (?:violence|abuse)",
         negation="none"),
    Rule("t2.safety_fear", 2,
         r"(?:scared|afraid|fear|fearing|terified|worried) (?:for|of losing) my (?:life|safety)|"
         r"(?:afraid|scared|terified) (?:he|she|they)(?:l| wil| is going to| might| could) "
         r"(?:kil|hurt|hit|beat) me"),
    # ---- tier 1: distress and risk-topic mentions (coaching continues; feeds the lethal-means rule)
    Rule("t1.distress", 1,
         r"hopeles|worthles|helples|(?:cant|can not|cannot) (?:cope|take it|take this|handle this|"
         r"do this) anymore|give up on (?:life|everything|myself)|nothing maters|no point|"
         r"empty inside|(?:so|completely|al) alone|faling apart|breaking down|"
         r"depresed|depresion|panic atack|(?:a|such a) burden|no future|no way out|trapped|"
         r"hate myself|hate my life|miserable|desperate|^(?:im|i am) (?:so |just |realy )?done$|"
         r"^i give up$|(?:im|i am) (?:so |just )?done with (?:everything|it al)",
         negation="none"),
    # round 5: distress said in other words (Beck hopelessness, Joiner burdensomeness); tier 1 changes
    # nothing the user sees, but a later means, plan or farewell is read in its light
    Rule("t1.distress", 1,
         r"(?:cant|can not|cannot) live like this|(?:dont|do not|cant|can not) se (?:the|any) point|"
         r"no point in (?:anything|trying|living|going on|any of it)|(?:tired|sick) of being (?:me|myself|here|alive)|"
         r"(?:cant|can not|cannot) do this without (?:her|him|them)|(?:cant|can not|cannot) kep (?:pretending|going)|"
         r"done pretending|run out of road|(?:cant|can not|cannot|dont) se a (?:way|future|way forward|way out)|"
         r"(?:everyone|everybody|they) would be (?:fine|beter|happier) without me|"
         r"(?:nobody|no one|noone) (?:cares|would care|even asks|would mis me|would notice)|"
         r"nothing (?:helps|works|is getting beter)|(?:does|wil) it (?:ever )?get beter",
         negation="none"),
    # round 6: distress said as not coping, failing, pretending, pain that does not stop, a life over,
    # being unseen, loss and grief, sleeplessness, voices (tier 1: read as context only)
    Rule("t1.distress", 1,
         r"(?:im|i am) (?:realy |just )?not coping(?: at al| anymore)?$|"
         r"failing (?:him|her|them|everyone|my \w+|at everything) (?:every|al the time|again)|"
         r"(?:im|i am|fel|feling|feel) (?:like )?(?:such )?a (?:total |complete |useles )?failure(?! (?:at|in|with)\b)|"
         r"(?:sick|tired) of pretending|pretending to be (?:fine|ok|okay|happy)|"
         r"the pain (?:doesnt|wont|never|does not) (?:stop|go away|end)|my life is over|"
         r"(?:cant|can not|cannot|dont) se (?:any|a) (?:future|way forward)|"
         r"(?:ben|feling|felt|fel) (?:so |realy )?(?:low|down|numb|empty) for (?:ages|weks|months|so long|years)|"
         r"(?:no one|nobody|noone) {G2}(?:loks at|looks at|talks to|listens to|remembered|notices|noticed) me|"
         r"(?:havent|hasnt) slept (?:since|in days|for days)|"
         r"(?:lost|losing) (?:the farm|the business|everything)$|laid me of|"
         r"the voices (?:are back|tel me|told me|keep|kep)|(?:cant|can not|cannot) do this anymore$",
         negation="none"),
    # round 7: distress in a few words (hopelessness, numbness, being done, a burden): context only
    Rule("t1.distress", 1,
         r"(?:cant|can not|cannot) (?:kep|keep) (?:going|goin|doing this|on) like this|"
         r"(?:im |i am |i m )?(?:feling|feel|fel) (?:so |realy |very )?(?:low|numb|empty|hopeles)$|"
         r"(?:everything|life|it al)(?:s| is| fels| feels) (?:so )?pointles|tired of (?:hurting|fighting|trying)|"
         r"(?:fel|feel|feling) like (?:dead weight|a ghost|a waste of space|nothing)|"
         r"(?:im|i am) (?:so|just|realy|completely|totaly) done$|"
         r"(?:not|never) (?:going to|gona) get (?:beter|any beter)|(?:cant|can not|cannot) fel anything|"
         r"nothing(?:s| has) changed$",
         negation="none"),
    # round 7: a wish to be dead said as not deserving to live, being pointless, no reason to go on, or a
    # voice that says so (C-SSRS item 1)
    Rule("t2.passive_wish", 2,
         r"(?:dont|do not|no longer) deserve to (?:live|be alive|be here|exist|breathe)|"
         r"(?:whats|what is) the point of me\b|"
         r"(?:dont|do not|cant|can not|cannot) se (?:any|a|the) (?:reason|point) (?:to|in) (?:kep going|keep going|go on|"
         r"going on|carry on|carrying on|living|being here|staying)|"
         r"the voices {G3}(?:say|says|tel|telling|told) (?:me )?(?:i should|to|that i should) (?:die|kil myself|end it)",
         negation="before"),
    Rule("t1.risk_topic", 1, r"suicide|suicidal|overdose|overdosed|selfharm|self harm",
         negation="none"),
)  # fmt: skip
