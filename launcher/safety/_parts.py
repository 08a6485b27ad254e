"""Tier-3 situations recognised from their parts, not from one phrase (rounds 5-6; docs/safety.md,
"Composition"): a medical emergency (a setting and an acute sign), someone else in danger (something
taken and a danger sign), an overdose under way (a dose taken), and preparatory behaviour (C-SSRS item 6:
preparatory acts with a future absence, or several of them; Posner et al., Am J Psychiatry 2011).

Each part is a vocabulary in normal spelling compiled into the collapsed space of
:func:`._normalize.normalize` (:func:`._lexicon.compile_template`). :func:`part_hits` is the one entry
point; :mod:`._compose` calls it after the act compositions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._lexicon import compile_template
from ._normalize import Clause

__all__ = [
    "ABSENCE",
    "ACUTE_SIGN",
    "DANGER_SIGN",
    "DOSE_ORDINARY",
    "DOSE_TAKEN",
    "MEDICAL_SETTING",
    "MEDICAL_SIGN",
    "OTHER_FAREWELL",
    "OTHER_GONE",
    "OTHER_MISSING",
    "OTHER_SIGNAL",
    "OTHER_TOOK_ALL",
    "PREP_ACT",
    "REHEARSAL",
    "STOCKPILE",
    "TAKEN",
    "adjacent",
    "part_hits",
]

#: A medical emergency said as its parts: a setting (a head injury, diabetes, a fall, a tight chest, an
#: allergy, something swallowed, a collapse, a high fever) and an acute sign in the same or the next
#: clause (:func:`adjacent`; NHS 111 / 999 red flags: vomiting after a head injury, drowsiness, double
#: vision, unequal pupils, difficulty breathing, collapse, confusion, a rash that does not fade).
MEDICAL_SETTING: re.Pattern[str] = compile_template(
    r"(?:hit (?:my|his|her|their) head|head injury|(?:banged|bashed|knocked) (?:my|his|her|their) head|"
    r"fel (?:of|down|over)(?! laughing)|diabetic|chest (?:is )?(?:realy |so |very |real )?(?:tight|crushing|heavy)|"
    r"chest pain|type 1|type one|blod sugar|sugars?|glucose|meter|alergic|peanut|stung|"
    r"swalowed (?:a |the )?(?:battery|button|magnet|bleach|coin)|asthma|inhaler|colapsed|high fever|"
    r"(?:pressure|pain|tightnes) (?:in|on|acros) (?:my|his|her) chest|fallen)"
)
ACUTE_SIGN: re.Pattern[str] = compile_template(
    r"(?:vomiting|throwing up|ben sick (?:twice|again|thre times)|drowsy|talking nonsense|not making sense|"
    r"seing double|one pupil|cant breathe|cant get (?:a |my )?(?:breath|breth)|cant catch (?:my )?(?:breath|breth)|"
    r"breathing (?:weird|funy|strange|fast|hard|badly)|lips (?:are |going |turning )?blue|sweling up|swolen up|"
    r"pased out|pasing out|unconscious|wont wake|cant wake|sluring|(?:reads|showing|shows) (?:hi|lo)$|"
    r"(?:meter|monitor|reading|sugar|glucose) {G2}says (?:hi|lo)$|slumped|wont swalow|not swalowing|"
    r"stoped sweating|drenched in sweat|(?:spreading|going|radiating|shooting) {G3}(?:arm|shoulder|jaw|neck)|"
    r"(?:doesnt|does not|didnt) (?:know|recognise|recognize) (?:who i am|me|where (?:she|he) is)|"
    r"(?:blotchy|purple|dark) {G2}(?:rash|spots|skin)|(?:rash|skin) {G3}(?:purple|blotchy|wont fade|doesnt fade)|"
    r"cant get up|can not get up|cannot get up|wrong angle)"
)
#: Acute signs that are an emergency said alone, whoever has them: an open fracture, a prolapsed cord,
#: a snakebite, one-sided numbness or speech gone wrong (NHS FAST), a seizure that does not stop,
#: heart-attack pain spreading to the arm or jaw.
MEDICAL_SIGN: re.Pattern[str] = compile_template(
    r"bone (?:is )?(?:sticking|poking|coming) (?:out|through)|(?:the )?cord {G2}(?:coming|hanging) out|"
    r"(?:bit|biten|bitten) by a {G2}snake|snake {G2}(?:bit|biten|bitten|bite) (?:him|her|me|them|on)|"
    r"(?:left|right|one) side {G3}(?:is |has gone |went |gone )?(?:numb|dead|weak|floppy|paralysed)"
    r"(?!.*(?:dentist|anaesthetic|anesthetic|injection|filing|numbing|slept on))|"
    r"words (?:are )?(?:coming|come) out (?:wrong|jumbled|garbled|slured)|"
    r"(?:fit|fiting|seizure|shaking|convulsing) {G3}(?:nah stop|wont stop|not stoping|doesnt stop|isnt stoping)|"
    r"eyes? {G2}(?:rol|roling|roled) back|wont stop (?:jerking|shaking|fiting|convulsing|seizing)|"
    r"(?:im having|having|is having|s having) (?:a )?seizure|"
    r"(?:pressure|pain|tightnes|crushing) {G4}chest {G6}(?:spreading|going|radiating|shooting) {G4}"
    r"(?:arm|shoulder|jaw)|(?:im having|im havin|i am having|is having|s having|hes having|shes having) (?:a )?heart atack"
)
#: Someone else in danger now, said as its parts: something taken and a sign that they are not safe.
TAKEN: re.Pattern[str] = compile_template(
    r"(?:took|taken|swalowed|drank|drunk|popped|necked) {G4}(?:pils|tablets|xanax|drugs|antifreze|bleach|poison|"
    r"painkilers|her meds|his meds|their meds|{PILLS})|(?:drinking|ben drinking) al night|oded|overdosed"
)
DANGER_SIGN: re.Pattern[str] = compile_template(
    r"(?:wont wake|cant wake|not waking|snoring weird|snoring funy|unresponsive|fiting|not breathing|"
    r"barely breathing|lips (?:are |going |turning )?blue|foaming at|wont (?:realy )?open (?:her|his|their) eyes|"
    r"cant open (?:her|his|their) eyes|wont respond|not responding|cold and (?:grey|blue|pale))"
)
#: Someone else's overdose said outright ("she's swallowed all her antidepressants"), and someone's
#: farewell, announced death or dose together with a sign that they are gone ("texted 'thank you for
#: everything' and he's not in his room", "said he's taking his pills now and went offline").
OTHER_TOOK_ALL: re.Pattern[str] = compile_template(
    r"(?:shes|hes|she has|he has|theyve|they have|she|he|they|my \w+ has|my \w+) (?:just )?(?:swalowed|taken|took|downed|necked) "
    r"(?:al|the rest|a whole|the whole|every|a load|loads) {G2}(?:of )?(?:her|his|their|the|my) {G1}(?:{PILLS}|tabs)"
)
OTHER_SIGNAL: re.Pattern[str] = compile_template(
    r"(?:said|says|saying|texted|texting|messaged|posted|told me|rang me) {G6}(?:taken (?:enough|something)|"
    r"(?:taking|took) (?:his|her|their) pils|(?:shel|hel|theyl|she wil|he wil|they wil) be dead|"
    r"was (?:her|his|their) last night)|(?:shes|hes|theyve|she has|he has) taken something|"
    r"(?:shel|theyl|she wil|he wil|they wil) be dead (?:by|before|tonight|tomorow|son)"
)
OTHER_GONE: re.Pattern[str] = compile_template(
    r"(?:stoped replying|not replying|not answering|went ofline|gone ofline|phone (?:is )?(?:of|dead)|"
    r"not in (?:her|his|their) rom|cant reach|cant find (?:her|him|them)|location is at|hung up|switched of|"
    r"wont pick up|not picking up|dont cal anyone|dont tel anyone)"
)
#: A farewell from someone else ("texted 'thank you for everything nan'"): in danger only with a sign
#: that they are missing, not merely offline.
OTHER_FAREWELL: re.Pattern[str] = compile_template(
    r"(?:said|says|texted|messaged|posted|wrote) {G4}(?:thank you for everything|thanks for everything|"
    r"godbye forever|goodbye forever|love you al|sory for everything)"
)
OTHER_MISSING: re.Pattern[str] = compile_template(
    r"(?:not in (?:her|his|their) rom|cant find (?:her|him|them)|location is at|phone (?:is )?(?:of|dead)|"
    r"(?:hasnt|hasnt ben|not) (?:come|ben) home|no one knows where (?:she|he|they))"
)
#: An overdose said as a dose taken: a count of ten or more, half or most of a container, boxes or
#: packets, of a medicine (the act under way, tier 3 whatever the mood: a medical emergency).
DOSE_TAKEN: re.Pattern[str] = compile_template(
    r"(?:took|taken|swalowed|downed|had|ate|necked|popped) (?:like |about |around |over |nearly |almost |at least )?"
    r"(?:[1-9][0-9]|half (?:the|a|of the|my) (?:bottle|box|packet|pack|tub)|most of (?:the|my|a) {G2}(?:{PILLS}|tabs|"
    r"bottle|box|packet|pack)|(?:two|thre|four|five|[2-9]) (?:boxes|packets|packs|bottles|strips) of)"
    r"(?! (?:minutes|mins|hours|seconds|years|days|steps|laps|reps|photos|pics|selfies|calories|grams)\b) {G3}"
    r"(?:{PILLS}|tabs|parcetamol|paracetmol|bottle|box|packet|pack)?|"
    r"[1-9][0-9] (?:tabs|{PILLS}) (?:and|with) {G3}(?:bottle|wine|vodka|gin|whisky|rum|beer|cider)"
)
_DOSE_NEEDS_PILL = compile_template(r"(?:{PILLS}|tabs|parcetamol|paracetmol)")
#: A dose spread over time or taken as prescribed: not an overdose ("took 10 paracetamol over the last 3
#: days for my back").
DOSE_ORDINARY: re.Pattern[str] = compile_template(
    r"(?:over the (?:last|past)|a day|per day|each day|every day|since|this wek|last wek|in total|"
    r"for (?:my|the|his|her) (?:back|pain|headache|migraine|cold|flu|fever|period|knee|tooth)|as prescribed|"
    r"like the doctor said|from the pharmacy|to the pharmacy|back to the)"
)
#: Medicine put aside, saved or stockpiled (C-SSRS item 6, "collected pills"; Barber & Miller, Am J Prev
#: Med 2014): tier 3 with a plan, a time, a place, distress, or a hiding place said.
STOCKPILE: re.Pattern[str] = compile_template(
    r"(?:{PILLS}|tabs|prescriptions?) {G4}(?:ive ben|i have ben|ive|i have|i|im|been)? ?(?:saving|saved|stockpiling|"
    r"stockpiled|hoarding|hoarded|putting aside|put aside|colecting|hiding|hidden|stashing|stashed)"
    r"(?! (?:for (?:the |my )?(?:trip|holiday|flight|travel|journey)|money))|"
    r"(?:saving|saved|stockpiling|stockpiled|hoarding|hoarded|putting aside|put aside|stashing|stashed|"
    r"picked up|colected) {G4}(?:{PILLS}|tabs|prescriptions?|morphine|methadone)(?! (?:for (?:the |my )?(?:trip|holiday|"
    r"flight|travel|journey)))|(?:prescription|repeat) {G2}(?:early|two weks early|a wek early)"
)
_STOCK_WHY = compile_template(
    r"(?:for when|for the day|nobody knows|no one knows|biscuit tin|not for (?:her|him|them)|in case|"
    r"instead of (?:giving|taking)|didnt take|not taking|thats like [0-9]+|theres a lot|when im ready)"
)

#: A rehearsal of the act (C-SSRS item 6, "preparatory acts or behavior"): a crisis with distress or with
#: a means or place named.
_REHEARSAL = (
    r"(?:practice run|dry run|practised with|practiced with|practising with|to se how it (?:felt|fels|would fel)|"
    r"stod on the {G2}(?:rail|railing|ledge|edge|parapet)|climbed (?:back )?over the (?:rail|railing|barier))"
)
REHEARSAL: re.Pattern[str] = compile_template(_REHEARSAL)
#: Preparatory acts (C-SSRS item 6): letters, giving away, rehoming pets, putting affairs in order,
#: messages scheduled for after, goodbyes said, a rehearsal, a job or a room emptied.
PREP_ACT: re.Pattern[str] = compile_template(
    r"(?:wrote|writen|write|writing|finished|left|hid|hidden) {G2}(?:leter|leters|note|notes|godbye|goodbye)"
    r"(?! (?:to|for) (?:my )?(?:future self|the landlord|my landlord|school|work|the council|santa))|"
    r"(?:gave|given|giving|sent|send|transfered|transfering) (?:al )?(?:of )?my (?:savings|money|phone|shoes|games|"
    r"things|stuf|belongings|clothes|jewelery|watch|medals|guitar|console)|"
    r"(?:found|finding|got) (?:a )?(?:new )?homes? for|rehom(?:ed|ing)|sold the (?:dogs|dog|cat|cats|horse|horses)|"
    r"put {G2}(?:papers|afairs|things|paperwork) in order|(?:set up|seting up) {G2}(?:direct debits|standing orders)|"
    r"writen out instructions|instructions for (?:whoever|who ever)|"
    r"(?:scheduled|sheduled|scheduling) {G3}(?:email|emails|mesage|mesages|text|texts|post|posts)|"
    r"set {G3}(?:email|emails|mesage|mesages|text|texts|post|posts) (?:to go|to send|for)|"
    r"to open after|(?:sent|sending|texted|text) {G4}(?:godbye|goodbye|gdbye|bye) (?:txts|texts|mesages)|"
    r"(?:wrote|posted|said) my (?:godbye|goodbye|godbyes)|to say (?:godbye|goodbye) (?:properly|to everyone)|"
    + _REHEARSAL
    + r"|handed in my notice|emptied (?:my|the) (?:desk|locker)|(?:made|wrote|updated|did) (?:a|my) wil\b|"
    r"put {G3}stuf in a box for|"
    r"cleared (?:out )?my rom|return(?:ed)? (?:al )?{G2}things|"
    r"told (?:her|him|them|my \w+) to (?:take care of|lok after) (?:my|the|mum|mom|dad|kids|children)"
)
#: A future absence said outright: what a preparatory act prepares for.
ABSENCE: re.Pattern[str] = compile_template(
    r"(?:wont|wil not|not) be (?:here|around|alive|there) (?:to|for|after|anymore|when|much longer)|"
    r"when (?:im|i am|mi|me|i) (?:gone|not (?:here|there|around)(?: anymore)?|dead)$|"
    r"when (?:im|i am) not there anymore|after (?:im|i am) gone|"
    r"wont need (?:anything|it|them|any of it) (?:anymore|after|again)|nothing left to sort|"
    r"there is no next|theres no next|(?:wont|wil not) be alone after|after$|"
    r"(?:wont|wil not) be (?:doing|sending|seing) (?:it|this|them) (?:after|myself)"
)
#: Moving, decluttering, a trip: the ordinary reasons to give things away and say goodbye.
_ORDINARY_LEAVING = compile_template(
    r"(?:moving|move|moved|relocating|emigrating|new flat|new house|new place|new job|decluttering|declutering|"
    r"downsizing|retiring|retirement|leaving do|leaving party|holiday|vacation|trip|deployment|posting|"
    r"studying abroad|going abroad|back home next)"
)


def adjacent(clauses: Sequence[Clause], first: re.Pattern[str], second: re.Pattern[str]) -> bool:
    """Both parts in one clause or in two clauses next to each other ("hit my head, now throwing up"):
    in a long message, words of the two kinds far apart are about different things."""
    texts = [c.text for c in clauses]
    for i, t in enumerate(texts):
        if first.search(t) and any(second.search(u) for u in texts[max(0, i - 1) : i + 2]):
            return True
    return False


def _any(clauses: Sequence[Clause], pattern: re.Pattern[str]) -> bool:
    return any(pattern.search(c.text) for c in clauses)


def part_hits(
    clauses: Sequence[Clause], *, distress: bool, earlier_risk: bool, qualified: bool
) -> list[tuple[str, int, bool]]:
    """The tier-3 situations of a message said as their parts (at most one ``(rule id, tier, counts as
    distress)``): ``t3.composed_medical``, ``t3.composed_danger``, ``t3.composed_overdose``,
    ``t3.composed_stockpile`` and ``t3.composed_preparatory`` (or ``t2.preparatory_parts``). ``distress``:
    tier >= 1 in the message or the recent turns; ``earlier_risk``: tier >= 2 in the recent turns;
    ``qualified``: the message names a plan, a time or a place (:mod:`._compose`'s vocabularies).
    Pure; never raises."""
    if _any(clauses, MEDICAL_SIGN) or adjacent(clauses, MEDICAL_SETTING, ACUTE_SIGN):
        return [("t3.composed_medical", 3, False)]
    if adjacent(clauses, TAKEN, DANGER_SIGN) or _any(clauses, OTHER_TOOK_ALL) or (
        _any(clauses, OTHER_SIGNAL) and (_any(clauses, OTHER_GONE) or _any(clauses, DANGER_SIGN))
    ) or (_any(clauses, OTHER_FAREWELL) and _any(clauses, OTHER_MISSING)) or (
        sum(len(OTHER_SIGNAL.findall(c.text)) for c in clauses) >= 2
    ):
        return [("t3.composed_danger", 3, False)]
    if any(
        DOSE_TAKEN.search(c.text) and _DOSE_NEEDS_PILL.search(c.text) and not DOSE_ORDINARY.search(c.text)
        for c in clauses
    ):
        return [("t3.composed_overdose", 3, True)]
    if _any(clauses, STOCKPILE) and (distress or earlier_risk or qualified or _any(clauses, _STOCK_WHY)):
        return [("t3.composed_stockpile", 3, True)]
    if _any(clauses, REHEARSAL) and (distress or earlier_risk or qualified):
        return [("t3.composed_preparatory", 3, True)]
    preps = sum(len(PREP_ACT.findall(c.text)) for c in clauses)
    if not preps:
        return []
    absent = _any(clauses, ABSENCE)
    if _any(clauses, _ORDINARY_LEAVING) and not absent:
        return []
    if absent or earlier_risk or (preps >= 2 and distress):
        return [("t3.composed_preparatory", 3, True)]
    if preps >= 2 or distress:
        return [("t2.preparatory_parts", 2, False)]  # not risk of its own: it must not arm t3.preparatory
    return []
