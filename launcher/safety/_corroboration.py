"""Words that corroborate a tier-3 family the semantic layer names only at tier 2.

The semantic layer (:mod:`._semantic`) is calibrated so that tier 3 from the model alone stays at or under
0.08 % of the real corpora's turns; a crisis it recognises by family (a plan, a method, means, a farewell,
someone in danger) but scores under that bar comes out at tier 2, "looks like this, but not confidently
enough to replace the reply". A counsellor reading such a message looks for the concrete thing that makes
it an act rather than a thought: a time or a place, a means, the vocabulary of the act itself, a farewell,
the signs of an emergency. When the message carries one of those words, the layer's tier-2 verdict of a
tier-3 family is raised to tier 3 (``sem3.<family>``, :func:`._lexical._semantic_hits`).

The words only ever act on that verdict: alone they raise nothing ("my shopping list: milk, bread, rope" is
ordinary unless the model already reads it as means). Two lists, both matched on the collapsed spelling of
:func:`._normalize.normalize` (repeated letters collapsed, slang expanded, one-letter typos of key words
restored):

- :data:`CORROBORATION` (rounds 5-8): a time or a place to fall, jump or drown from;
- :data:`ACT_WORDS` (round 9): the act's own vocabulary (suicide, overdose, dying and their slang), a means
  or method named (ligatures, firearms, medicines, poisons, gas, vehicles, water and heights), finality and
  farewells ("for good", "not coming back", "thanks for everything", letters and things given away), and
  the signs of someone in danger or a medical emergency (unresponsive, not breathing, by the throat, numb,
  chest pain). The C-SSRS items these stand for are method, intent, plan and preparatory behaviour (Posner
  et al. 2011, "The Columbia-Suicide Severity Rating Scale", Am J Psychiatry 168:1266-1277).

Measured (docs/safety.md, "Results of round 9"): on the development sets round 9 took 149 more crises to
tier 3, most of them by :data:`ACT_WORDS`, and raised no ordinary message and no turn of the three corpora,
because the model's verdict of a tier-3 family at tier 2 is already rare on ordinary text (14 development
messages, 17 corpus turns). The idioms of the issue stay excluded at the source: "dying to", "dead tired"
and "die of embarrassment" are not :data:`ACT_WORDS`. The words never stand in for the earlier signal of
the rules that the context rule needs (a first cut let them, after earlier distress: in coaching talk
"worked out", "plan" or "water" are nearly always there).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._lexicon import PILLS_NOT_PILES
from ._negation import negated_before, neutral_mask
from ._normalize import Clause, collapse_pattern

__all__ = ["ACT_WORDS", "CORROBORATION", "RESOLVED", "corroborated"]

#: A time or a place (collapsed spelling): "the plan is sunday" or "the bridge" anchors an act.
CORROBORATION: re.Pattern[str] = re.compile(
    r"\b(?:tonight|tonite|2nite|tomorow|tmrw|2moro|this (?:weekend|wekend|wknd)|next week|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|right now|in an hour|"
    r"bridge|rof|roftop|clif|tracks|railway|ledge|balcony|car park|multistory|overpas|motorway|"
    # round 8: more places to fall, jump or drown from
    r"clifs|fotbridge|flyover|pier|jety|harbour|harbor|slipway|viaduct|quary|ravine|level crosing|train line|"
    r"multi storey|multistorey|parking garage|carpark|the sea|the river|the loch|the canal|reservoir|top flor)\b"
)

_ACT_WORDS_SOURCE = (
    # the act itself, and its slang (not the idioms "dying to", "dead tired", "die of embarrassment")
    r"kill myself|kil me|top myself|neck myself|end my life|end it all|take my own life|taking my own life|"
    r"suicide|suicidal|overdose|overdosing|overdosed|od|oding|not be alive|"
    r"die(?! of| laughing| a little)|dying(?! to| of| laughing)|"
    r"dead(?! tired| on my feet| beat| serious| ass)|death(?! metal| stare)|"
    # a method or means named
    r"rope|noose|hang|hanging|hanged|train|trains|tracks|rail line|gun|shotgun|rifle|handgun|pistol|bullet|"
    r"shot|shoot|shooting|PILLS|tablets|tabs|paracetamol|codamol|cocodamol|co codamol|morphine|oramorph|oxy|"
    r"fentanyl|insulin|diazepam|heroin|needle|vodka|ld50|jump|jumping|jumped|drown|drowned|gas|hose|hosepipe|"
    r"exhaust|carbon monoxide|engine|engine running|petrol|lighter|drive into|drove into|crash into|not braking|"
    r"the brakes|the wheel|bleach|oven cleaner|cleaner|chemical|"
    r"chemicals|chem|weedkiller|spray|slurry|methane|razor|blade|knife|knives|cut|cutting|poison|swallowed|"
    r"drank|stash|ledge|edge|floor|storey|balcony|beam|water|lake|sea|river|cliff|bridge|"
    # finality and farewells
    r"for good|permanently|on purpose|wont need|wont be needing|where im going|after im gone|when im gone|"
    r"till shes gone|til shes gone|not coming back|aint coming back|aint comin back|not swimming back|"
    r"logging off|logging out of life|last one|last login|sorry for everything|thanks for everything|"
    r"been a pleasure|look after|my peace|be with her|join her|join him|join them|the same day|my turn|"
    r"im done|i am done|done after|im finished|so do i|not living past|wont be alive|wont be here|no go dey|"
    r"this world|letter|letters|letta|lettr|note|notes|envelope|written it|written to|wrote to|funeral|goodbye|"
    r"goodbyes|gave away|given away|gave my|given my|gave all|sold my|homes for|rehome|rehomed|deleted|"
    r"cleared my|cleared out|handover|"
    # someone in danger, a medical emergency
    r"unresponsive|not breathing|breathing|blue|blood|bleeding|fitting|seizure|stroke|chest pain|chest|"
    r"cant breathe|cnt brth|brth|unconscious|slurring|slurred|passed out|pass out|faint|screaming|"
    r"hitting her|hitting him|beating her|beating him|by the throat|panga|cutlass|machete|naloxone|"
    r"not picking up|wont answer|locked himself|locked herself|locked in|went over the side|lost sight|"
    r"wandered off|swallow|button battery|numb|cant feel|speech|swollen|frothy|fever|mouth don twist|"
    r"fell off|skin|peeling|coming off|"
    # intent and plans
    r"decided|intend|intention|committed|do it|going to do|plan|planned|worked out|sorted"
)

#: The act's vocabulary, means, finality and farewells, danger signs (collapsed spelling; module docstring).
#: A lookahead, so that matches may overlap: "going to do it" holds both "going to do" and "do it", each
#: judged by the negators before it.
ACT_WORDS: re.Pattern[str] = re.compile(
    r"\b(?=(?:" + collapse_pattern(_ACT_WORDS_SOURCE).replace("PILS", PILLS_NOT_PILES) + r")\b)"
)


#: The fewest tokens a message needs for :data:`ACT_WORDS` to corroborate: in a shorter one the act word is
#: all the semantic layer read, so it cannot also be the evidence beyond that reading.
MIN_TOKENS = 3


def _act_word(clause: Clause) -> bool:
    neutral = neutral_mask(clause.tokens)
    return any(not negated_before(clause, m.start(), neutral) for m in ACT_WORDS.finditer(clause.text))


#: An emergency told as over ("we got to him in time and he's fine"): the act's words then tell what
#: happened, not what is happening (collapsed spelling).
RESOLVED: re.Pattern[str] = re.compile(
    collapse_pattern(
        r"\b(?:(?:he|she|they|im|i am|were|we are|everyone|everyones|shes|hes|theyre) (?:is |s |are )?"
        r"(?:fine|ok|okay|safe|alright|all right|stable|recovering) now|(?:he|she|they|hes|shes|theyre) "
        r"(?:is |are )?(?:fine|ok|okay|safe|alright)$|got to (?:him|her|them) in time|(?:was|were) saved)\b"
    )
)


def corroborated(clauses: Sequence[Clause]) -> bool:
    """Whether a clause names a time or place (:data:`CORROBORATION`) or the act's vocabulary
    (:data:`ACT_WORDS`): not negated, as the rules' phrases are not (:func:`._negation.negated_before`:
    "i wont do it" corroborates nothing), not in a message that tells the emergency as over
    (:data:`RESOLVED`), nor in one of fewer than :data:`MIN_TOKENS` tokens. ``clauses``: the output of
    :func:`._normalize.normalize`."""
    if any(CORROBORATION.search(c.text) for c in clauses):
        return True
    if any(RESOLVED.search(c.text) for c in clauses):
        return False
    if sum(len(c.tokens) for c in clauses) < MIN_TOKENS:
        return False  # "jumping" alone (a typo corrected, ESConv): the word is all the model read
    return any(_act_word(c) for c in clauses)
