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
    "FALL_SETTING",
    "FALL_SIGN",
    "MEANS_BOUGHT",
    "MEDICAL_SETTING",
    "MEDICAL_SIGN",
    "NOT_FOR_USE",
    "OTHER_DEAD_BY",
    "OTHER_FAREWELL",
    "OTHER_GONE",
    "OTHER_MISSING",
    "OTHER_SIGNAL",
    "OTHER_TOOK_ALL",
    "PREP_ACT",
    "REHEARSAL",
    "REHEARSAL_STRONG",
    "STOCKPILE",
    "TAKEN",
    "WEAK_SETTING",
    "WEAK_SIGN",
    "adjacent",
    "part_hits",
]

#: A medical emergency said as its parts: a setting (a head injury, diabetes, a fall, a tight chest, an
#: allergy, something swallowed, a collapse, a high fever) and an acute sign in the same or the next
#: clause (:func:`adjacent`; NHS 111 / 999 red flags: vomiting after a head injury, drowsiness, double
#: vision, unequal pupils, difficulty breathing, collapse, confusion, a rash that does not fade).
MEDICAL_SETTING: re.Pattern[str] = compile_template(
    r"(?:hit (?:my|his|her|their|ma) head|head injury|(?:banged|bashed|knocked) (?:my|his|her|their) head|"
    r"fel (?:of (?:the|a|his|her|my) |down the |on the |over (?:and|in))(?! laughing)|diabetic|"
    r"chest (?:is )?(?:realy |so |very |real )?(?:tight|crushing|heavy)|"
    r"chest pain|type 1|type one|blod sugar|(?:her|his|my|their) (?:blod )?sugars? (?:is|s|reading|level|levels|at|has|"
    r"crashed|droped|went|low|high)|sugar (?:levels?|reading)|glucose|"
    r"alergic reaction|peanut alergy|nut alergy|ate (?:a )?peanut|stung by (?:a|the) (?:be|wasp|jelyfish|hornet)|"
    r"swalowed (?:a |the )?(?:battery|button|magnet|bleach|coin)|asthma|inhaler|"
    r"(?:he|she|they|i|mum|mom|dad|gran|grandad|my \w+|one of the \w+) (?:just )?colapsed|high fever|"
    r"(?:pressure|pain|tightnes) (?:in|on|acros) (?:my|his|her) chest|"
    r"(?:a fit|fiting$|is fiting|having a fit|seizure|convulsing|jerking)|(?:left|right|one) side {G3}(?:numb|weak|floppy|droping)|"
    r"waters (?:broke|have broken|went|have gone|gone|broken)|pregnant|[0-9]+ weks|labour|labor|contractions|"
    # round 10: heat stroke, a faint, a toxic level of a medicine, a sugar reading
    r"(?:in|from) (?:this|the) (?:heat|sun)|heat ?stroke|(?:blacked|blacking) out|"
    r"(?:lithium|paracetamol|digoxin|carbon monoxide) (?:toxic|toxicity|poisoning)|sugars? (?:is |s )?(?:at )?[0-9]+)"
)
ACUTE_SIGN: re.Pattern[str] = compile_template(
    r"(?:vomiting|throwing up(?! (?:my hands|laughing))|ben sick (?:twice|again|thre times)|kep being sick|keps being sick|"
    r"drowsy|(?:realy |very |so )sleepy|talking nonsense|not making sense|"
    r"seing double|one pupil|cant breathe(?! (?:with|when|around|because|at work))|cant get (?:a |my )?(?:breath|breth)|"
    r"cant catch (?:my )?(?:breath|breth)|"
    r"breathing (?:weird|funy|strange|fast|hard|badly)|lips (?:are |going |turning )?blue|sweling up|swolen up|"
    r"pased out|pasing out|unconscious|wont wake|cant wake|sluring|(?:reads|showing|shows) (?:hi|lo)$|"
    r"(?:meter|monitor|reading|sugar|glucose) {G2}says (?:hi|lo)$|slumped (?:in|over|on)|wont swalow|not swalowing|"
    r"stoped sweating|drenched in sweat|(?:spreading|going|radiating|shooting) {G3}(?:arm|shoulder|jaw|neck)|"
    r"(?:doesnt|does not|didnt) (?:know|recognise|recognize) (?:who i am|me|where (?:she|he) is)|"
    r"(?:purple|blotchy) {G2}rash|rash {G3}(?:purple|blotchy|wont fade|doesnt fade)|"
    r"words (?:are )?(?:coming|come) out (?:wrong|jumbled|garbled|slured)|"
    r"eyes? {G2}(?:rol|roling|roled) back|(?:the )?cord {G2}(?:coming|hanging) out|(?:fel|se|can fel|can se) the cord|"
    r"bleding (?:a lot|heavily)|"
    # round 10: the cord out, confusion, breathlessness, barely able to speak
    r"(?:the )?cord (?:is |s )?out|(?:aint|isnt|is not) making sense|cant (?:breath|breth)$|"
    r"(?:can )?barely (?:type|talk|speak|breathe))"
)
#: Signs too common to be an emergency with any setting (a racing heart, shaking, breathlessness, barely awake):
#: an emergency only after a blackout, with a sugar reading or a toxic level of a medicine (round 10).
WEAK_SETTING: re.Pattern[str] = compile_template(
    r"(?:blacked|blacking) out|(?:lithium|paracetamol|digoxin|carbon monoxide) (?:toxic|toxicity|poisoning)|"
    r"sugars? (?:is |s )?(?:at )?[0-9]+"
)
WEAK_SIGN: re.Pattern[str] = compile_template(
    r"short of breath|heart (?:is |s )?(?:racing|pounding)|(?:im|i am|she is|he is|shes|hes) (?:shaking|shaky)$|"
    r"(?:can )?barely stay awake|cant stay awake|confused"
)
#: An old person's fall: a fall and not getting up, or a limb at a wrong angle (NHS: "fallen and can't get up").
FALL_SETTING: re.Pattern[str] = compile_template(
    r"(?:ive|i have|has|hes|shes|she has|he has|just) (?:fallen|had a fal)(?! (?:for|behind|asleep|out|in love|of the wagon))|"
    r"fel (?:of (?:the|a|his|her|my) |down the |on the |over in)"
)
FALL_SIGN: re.Pattern[str] = compile_template(
    r"(?:cant|cannot|can not) (?:get up|stand up|move (?:my|her|his) (?:leg|legs|hip))|wrong angle|"
    r"hip {G3}(?:wrong|twisted|out of place)"
)
#: Acute signs that are an emergency said alone, whoever has them: an open fracture, a prolapsed cord,
#: a snakebite, one-sided numbness or speech gone wrong (NHS FAST), a seizure that does not stop,
#: heart-attack pain spreading to the arm or jaw.
MEDICAL_SIGN: re.Pattern[str] = compile_template(
    r"bone (?:is )?(?:sticking|poking|coming) (?:out|through) (?:of )?(?:his|her|my|their|the) {G1}"
    r"(?:skin|leg|arm|shin|wrist|ankle|knee|elbow|thigh|finger)|"
    r"(?:bit|biten|bitten) by a {G2}snake(?!.*\b(?:dream|game|zoo|video|film|movie|show|toy|rubber|plastic)\b)|"
    r"snake {G2}(?:bit|biten|bitten|bite) (?:him|her|me|them|on)"
    r"(?!.*\b(?:dream|game|zoo|video|film|movie|show|laughing)\b)|"
    r"(?:my|his|her|their|\w+s) (?:whole )?(?:left|right) side (?:of (?:my|his|her|their) (?:body|face) )?"
    r"(?:is |has gone |went |gone )?(?:numb|dead|floppy|paralysed)"
    r"(?!.*(?:dentist|anaesthetic|anesthetic|injection|filing|numbing|slept on|lying on|laying on|leaning on))|"
    r"(?:having a|in a|had a|one) (?:fit|seizure)s? {G3}(?:nah stop|wont stop|not stoping|doesnt stop|isnt stoping)|"
    r"(?:is|s|keps|started|ben|stil|hes|shes) (?:fiting|seizing|convulsing) {G3}(?:nah stop|wont stop|not stoping|doesnt stop|isnt stoping)|"
    r"wont stop (?:jerking|fiting|convulsing|seizing)|(?:im having|is having|s having) (?:a )?seizure|"
    r"(?:fiting|seizing|convulsing|seizure) {G6}(?:its ben|for|over|more than|going on) {G1}[0-9]+ (?:minutes|mins)|"
    r"(?:pressure|pain|tightnes|crushing) {G4}chest {G6}(?:spreading|going|radiating|shooting) {G4}"
    r"(?:arm|shoulder|jaw)|"
    # round 8: bleeding that will not stop from a cut, blood spurting, bone seen
    r"(?:cut|wound|arm|wrist|leg|hand|thigh|gash) {G4}(?:wont|doesnt|isnt|is not|not) stop(?:ing)? bleding|"
    r"(?:its|blod is|blod) spurting|spurting blod|(?:can|i can) se (?:the )?bone|"
    r"(?:im having|im havin|i am having|is having|s having|hes having|shes having) (?:a )?heart atack"
    r"(?! (?:over|about|when|at|because|if|every|lol|haha)\b)|"
    # round 10 (NHS red flags): someone collapsed, one-sided weakness or a side that will not move (FAST), a
    # thunderclap headache, a burst appendix, the throat closing
    r"(?:my|our|his|her) (?:wifes|husbands|mums|moms|dads|partners|sons|daughters|brothers|sisters|nans|grans|"
    r"friends|mates|wife|husband|mum|mom|dad|partner|son|daughter|brother|sister|nan|gran|friend|mate) "
    r"(?:has |just |has just )?colapsed(?:$| and (?:isnt|is not|wont|cant|not|hasnt)| (?:in|on) the (?:garden|flor|"
    r"kitchen|bathrom|street|road|stairs|shower|toilet|yard|pavement|drive)\b)"
    r"(?!.*\b(?:laugh|laughing|gigles|heap|sofa|bed|after (?:work|football|the shift|training|the gym)))|"
    r"(?:sudden|suddenly|suddenly has|suddenly got) (?:a )?weaknes (?:on|down|in) (?:the|his|her|my|one) (?:left |right )?side"
    r"(?!.*\b(?:squats|gym|training|workout|lunges|lifting|exercise|since (?:the|my) (?:stroke|injury|op))\b)|"
    r"(?:left|right) side of (?:my|his|her|their) (?:body|face) (?:wont|cant|is not|isnt) (?:move|moving|work)|"
    r"thunderclap headache|headache {G6}(?:like )?a thunderclap|worst headache of (?:my|his|her) life"
    r"(?!.*\b(?:lol|haha|hangover|wine|drinking|last night)\b)|"
    r"appendix {G2}(?:burst|ruptured)(?!.*\b(?:when i was|years ago|as a (?:kid|child)|last year)\b)|"
    r"throat (?:is |s )?(?:closing|swelling)(?! (?:up )?(?:when|every time|whenever|before|if)\b)"
)
#: A means bought and said not to be for its use (round 10; C-SSRS item 6, "obtained a gun"): "bought a knife
#: today, not for cooking", "got some rope, it's not for the garden".
MEANS_BOUGHT: re.Pattern[str] = compile_template(
    r"(?:bought|got|buying|picked up|ordered) (?:a |the |some |a new |a length of |a bag of )?(?:knife|rope|gun|blade|"
    r"blades|razor|razors|charcoal|hose|hosepipe|ladder and rope)"
)
NOT_FOR_USE: re.Pattern[str] = compile_template(
    r"(?:^|\b(?:its|it is|and) )not (?:for|to use for|to use in) (?:cooking|the garden|hunting|the lof|diy|"
    r"the kitchen|camping|climbing|the shed|the garage|work)$"
)
#: Someone else in danger now, said as its parts: something taken and a sign that they are not safe.
TAKEN: re.Pattern[str] = compile_template(
    r"(?:took|taken|swalowed|drank|drunk|popped|necked) {G4}(?:pils|tablets|xanax|drugs|antifreze|bleach|poison|"
    r"painkilers|her meds|his meds|their meds|{PILLS})|(?:drinking|ben drinking) al night|oded|overdosed"
)
DANGER_SIGN: re.Pattern[str] = compile_template(
    r"(?:wont wake|cant wake|not waking|snoring weird|snoring funy|unresponsive|(?:is|s|started|keps|stil|hes|shes|theyre) fiting|not breathing|"
    r"barely breathing|lips (?:are |going |turning )?blue|foaming at|wont (?:realy )?open (?:her|his|their) eyes|"
    r"cant open (?:her|his|their) eyes|wont respond(?! to)|not responding(?! to)|cold and (?:grey|blue|pale))"
)
#: Someone else's overdose said outright ("she's swallowed all her antidepressants"), and someone's
#: farewell, announced death or dose together with a sign that they are gone ("texted 'thank you for
#: everything' and he's not in his room", "said he's taking his pills now and went offline").
OTHER_TOOK_ALL: re.Pattern[str] = compile_template(
    r"(?:shes|hes|she has|he has|theyve|they have|she|he|they|my \w+ has|my \w+) (?:just )?(?:swalowed|taken|took|downed|necked) "
    r"(?:al|the rest|a whole|the whole|every|a load|loads) {G2}(?:of )?(?:her|his|their|the|my) {G1}{PILLS}"
    r"(?!.*\b(?:with (?:breakfast|lunch|diner|tea|food|water|his tea|her tea)|like (?:he|she|they) always|as usual|"
    r"as prescribed|this morning|every day|at breakfast|organiser|organizer|dosete|out of|blister)\b)|"
    # round 10: "she's just taken the whole week's worth at once"
    r"(?:shes|hes|she has|he has|theyve|they have|she|he|they|my \w+ has|my \w+) (?:just )?(?:swalowed|taken|took) "
    r"(?:the |a |her |his |their )?(?:whole|entire) (?:weks|wek|months|month) (?:worth|suply)"
    r"(?: of (?:her |his |their )?(?:meds|pils|tablets|medication))? at once"
)
OTHER_SIGNAL: re.Pattern[str] = compile_template(
    r"(?:said|says|saying|texted|texting|messaged|posted|told me|rang me) {G6}(?:taken (?:enough (?:pils|tablets|this time)|"
    r"enough$|something)|(?:taking|took) (?:his|her|their) pils|"
    r"was (?:her|his|their) last night$)|(?:shes|hes|theyve|she has|he has) taken something|"
    r"(?:shel|hel|theyl|she wil|he wil|they wil) be dead (?:by|tonight|tomorow|son)"
    r"(?!.*\b(?:with|from|laughing|lol|haha|prep|exhausted|tired|work|world cup|wins?)\b)"
)
OTHER_GONE: re.Pattern[str] = compile_template(
    r"(?:stoped replying|not replying|not answering|went ofline|gone ofline|phone (?:is )?(?:of|dead)|"
    r"not in (?:her|his|their) rom|cant reach|cant find (?:her|him|them)|location is at|hung up|switched of|"
    r"wont pick up|not picking up|dont cal anyone|dont tel anyone)"
)
#: Someone's own words that they will be dead by a time ("said he'll be dead by the morning").
OTHER_DEAD_BY: re.Pattern[str] = compile_template(
    r"(?:said|says|saying|texted|messaged|posted|told me|rang me) {G2}(?:shel|hel|theyl|she wil|he wil|they wil) be dead "
    r"(?:by|tonight|tomorow|son)(?!.*\b(?:with|from|laughing|lol|haha|prep|exhausted|tired|work|world cup|wins?)\b)"
)
#: A farewell from someone else ("texted 'thank you for everything nan'"): in danger only with a sign
#: that they are missing, not merely offline.
OTHER_FAREWELL: re.Pattern[str] = compile_template(
    r"(?:said|says|texted|messaged|posted|wrote|sent) {G4}(?:thank you for everything|thanks for everything|"
    r"godbye forever|goodbye forever|love you al|sory for everything)(?! (?:for|on|at|with)\b)"
)
OTHER_MISSING: re.Pattern[str] = compile_template(
    r"(?:not in (?:her|his|their) rom|cant find (?:her|him|them)|location is at|phone (?:is )?(?:of|dead)|"
    r"(?:hasnt|hasnt ben|not) (?:come|ben) (?:home|back)|no one knows where (?:she|he|they)|gone (?:quiet|silent))"
    r"(?!.*\b(?:holiday|uni|trip|party|festival|on leave|last day)\b)"
)
#: An overdose said as a dose taken: a count of ten or more, half or most of a container, boxes or
#: packets, of a medicine (the act under way, tier 3 whatever the mood: a medical emergency).
DOSE_TAKEN: re.Pattern[str] = compile_template(
    r"(?:took|taken|swalowed|downed|had|ate|necked|popped) (?:like |about |around |over |nearly |almost |at least )?"
    r"(?:[1-9][0-9]|ten|twelve|fifteen|twenty|thirty|forty|fifty|sixty|loads of|a load of|a lot of|lots of|"
    r"handfuls of|half (?:the|a|of the|my) (?:bottle|box|packet|pack|tub)|most of (?:the|my|a) {G2}(?:{PILLS}|"
    r"bottle|box|packet|pack)|(?:two|thre|four|five|[2-9]) (?:boxes|packets|packs|bottles|strips) of)"
    r"(?! (?:minutes|mins|hours|seconds|years|days|steps|laps|reps|photos|pics|selfies|calories|grams|tabs)\b) {G3}"
    r"(?:{PILLS}|parcetamol|paracetmol|bottle|box|packet|pack)?|"
    r"[1-9][0-9] (?:tabs|{PILLS}) (?:and|with) {G3}(?:bottle|wine|vodka|gin|whisky|rum|beer|cider)"
)
_DOSE_NEEDS_PILL = compile_template(r"(?:{PILLS}|parcetamol|paracetmol|[0-9]+ tabs (?:and|with))")
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
    r"(?:saving|saved|stockpiling|stockpiled|hoarding|hoarded|putting aside|put aside|stashing|stashed|keping back|"
    r"kept back|holding back) "
    r"{G4}(?:{PILLS}|tabs|prescriptions?|morphine|methadone)(?! (?:for (?:the |my )?(?:trip|holiday|"
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
    r"to se what it felt like|tried (?:the|a|my) (?:nose|rope|belt|ligature|cord) on|"
    r"stod on the {G2}(?:rail|railing|ledge|edge|parapet)|climbed (?:back )?over the (?:rail|railing|barier))"
)
REHEARSAL: re.Pattern[str] = compile_template(_REHEARSAL)
#: The rehearsals that say what was rehearsed: a crisis after distress alone.
REHEARSAL_STRONG: re.Pattern[str] = compile_template(
    r"(?:to se how it (?:felt|fels|would fel)|to se what it felt like|tried (?:the|a|my) (?:nose|rope|belt|ligature|cord) on|"
    r"stod on the {G2}(?:rail|railing|ledge|edge|parapet)|climbed (?:back )?over the (?:rail|railing|barier))"
)
#: Medicine kept out of reach or stored safely: not a stockpile.
_STOCK_SAFE = compile_template(
    r"(?:so (?:the )?(?:kids|grandkids|children|dog|dogs|baby|toddler|cat) (?:cant|dont|wont|cannot)|out of reach|"
    r"locked|lock box|safe from|child proof|childproof|(?:her|his|their|mums|mams|dads|grans|nans) (?:{PILLS}|tabs))"
)
#: Preparatory acts (C-SSRS item 6): letters, giving away, rehoming pets, putting affairs in order,
#: messages scheduled for after, goodbyes said, a rehearsal, a job or a room emptied.
PREP_ACT: re.Pattern[str] = compile_template(
    r"(?:wrote|writen|write|writing|finished|left|hid|hidden) {G2}(?:leter|leters|note|notes|godbye|goodbye)"
    r"(?! (?:to|for) (?:my |the |our )?(?:future self|landlord|school|work|council|santa|cat siter|dog siter|siter|"
    r"babysiter|cleaner|teacher|neighbour|neighbor|postman|nany|milkman|team|boss))|"
    r"(?:gave|give|given|giving|sent|send|transfered|transfering) (?:al )?(?:of )?my (?:savings|money|phone|shoes|games|"
    r"things|stuf|belongings|clothes|jewelery|watch|medals|guitar|console)|"
    r"(?:found|finding|got) (?:a )?(?:new )?homes? for (?:my|the|our|him|her) {G1}(?:dog|dogs|cat|cats|pets?|rabit|"
    r"horse|horses|bird|parot|budgie|hamster|puppy|kiten|boy|girl)|rehom(?:ed|ing)|sold the (?:dogs|dog|cat|cats|horse|horses)|"
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
    r"(?:wont|wil not|not) be (?:here|around|alive) (?:to|for|after|anymore|when|much longer)"
    r"(?! (?:at|in|on|with) (?:this|the|my)\b)|"
    r"(?:wont|wil not) be there to (?:explain|se|sort|tel|say)|"
    r"when (?:im|i am|mi|me|i) (?:gone|not (?:here|there|around)(?: anymore)?|dead)$|"
    r"when (?:im|i am) not there anymore|after (?:im|i am) gone|"
    r"wont need (?:anything|it|them|any of it) (?:anymore|after|again)|nothing left to sort|"
    r"there is no next|theres no next|(?:wont|wil not) be alone after|"
    r"(?:wont|wil not) be (?:doing|sending|seing) (?:it|this|them) (?:after|myself)"
)
#: Moving, decluttering, a trip: the ordinary reasons to give things away and say goodbye.
_ORDINARY_LEAVING = compile_template(
    r"(?:moving|move|moved|relocating|emigrating|new flat|new house|new place|new job|decluttering|declutering|"
    r"downsizing|retiring|retirement|leaving do|leaving party|holiday|vacation|trip|deployment|posting|"
    r"studying abroad|going abroad|back home next|new role|new position|notice period|excited|promotion|"
    r"conference|work trip|while (?:im|i am) (?:at|away|on)|card|wedding|party|band|rehearsal|play|speech|gig|"
    r"straight after|see you|on leave|anual leave|off work|day off|time off|lodger|tenant|borowed|"
    r"cat siter|sitter|siter|reminding)"
)


#: An emergency word used of a thing, a game or a joke, or an episode that is over: not an emergency now.
_NOT_NOW = compile_template(
    r"(?:lol|lmao|haha|looking at|at the price|spreadsheet|laptop|computer|phone|game|character|glitch|ragdoll|"
    r"(?:beter|fine|ok|okay|al god) now|last wek|last month|last year|yesterday|in my dream|toy|rubber snake|lying on it|laying on it|slept on it|"
    r"plastic snake)"
)


_STATED_USE = compile_template(r"\bfor (?:a |an |the |my |some )?\w+")


def _bought_not_for_use(clauses: Sequence[Clause]) -> bool:
    """A means bought and, in that clause or the next, said not to be for its use, with no other use stated
    after ("not for cooking but for carving" is an ordinary purchase)."""
    for i, c in enumerate(clauses):
        if not NOT_FOR_USE.search(c.text):
            continue
        if any(_STATED_USE.search(later.text) for later in clauses[i + 1 :]):
            continue
        if MEANS_BOUGHT.search(c.text) or (i > 0 and MEANS_BOUGHT.search(clauses[i - 1].text)):
            return True
    return False


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
    clauses: Sequence[Clause], *, distress: bool, earlier_risk: bool, hard_means: bool, past: bool = False
) -> list[tuple[str, int, bool]]:
    """The tier-3 situations of a message said as their parts (at most one ``(rule id, tier, counts as
    distress)``): ``t3.composed_medical``, ``t3.composed_danger``, ``t3.composed_overdose``,
    ``t3.composed_stockpile``, ``t3.composed_means`` (a means bought "not for" its use, round 10) and
    ``t3.composed_preparatory`` (or ``t2.preparatory_parts``). ``distress``:
    tier >= 1 in the message or the recent turns; ``earlier_risk``: tier >= 2 in the recent turns;
    ``hard_means``: the message names a means other than medicine (:data:`._compose.HARD_MEANS`);
    ``past``: the message is about the remote past (no preparatory act then). Pure; never raises."""
    if (
        _any(clauses, MEDICAL_SIGN)
        or adjacent(clauses, MEDICAL_SETTING, ACUTE_SIGN)
        or adjacent(clauses, FALL_SETTING, FALL_SIGN)
        or adjacent(clauses, WEAK_SETTING, WEAK_SIGN)
    ) and not _any(clauses, _NOT_NOW):
        return [("t3.composed_medical", 3, False)]
    if (
        adjacent(clauses, TAKEN, DANGER_SIGN)
        or _any(clauses, OTHER_TOOK_ALL)
        or (_any(clauses, OTHER_SIGNAL) and (_any(clauses, OTHER_GONE) or _any(clauses, DANGER_SIGN)))
        or (_any(clauses, OTHER_FAREWELL) and _any(clauses, OTHER_MISSING))
        or (sum(len(OTHER_SIGNAL.findall(c.text)) for c in clauses) >= 2)
        or _any(clauses, OTHER_DEAD_BY)
    ):
        return [("t3.composed_danger", 3, False)]
    if not past and _bought_not_for_use(clauses):
        return [("t3.composed_means", 3, True)]
    if not past and any(
        DOSE_TAKEN.search(c.text) and _DOSE_NEEDS_PILL.search(c.text) and not DOSE_ORDINARY.search(c.text)
        for c in clauses
    ):
        return [("t3.composed_overdose", 3, True)]
    if (
        _any(clauses, STOCKPILE)
        and not _any(clauses, _STOCK_SAFE)
        and (distress or earlier_risk or _any(clauses, _STOCK_WHY))
    ):
        return [("t3.composed_stockpile", 3, True)]
    if past:
        return []  # a preparatory act in the remote past is history, not preparation
    ordinary = _any(clauses, _ORDINARY_LEAVING)
    if _any(clauses, REHEARSAL) and (
        hard_means or (not ordinary and (earlier_risk or (distress and _any(clauses, REHEARSAL_STRONG))))
    ):
        return [("t3.composed_preparatory", 3, True)]
    preps = sum(len(PREP_ACT.findall(c.text)) for c in clauses)
    if not preps or ordinary:
        return []
    absent = _any(clauses, ABSENCE)
    if absent or earlier_risk or (preps >= 2 and distress):
        return [("t3.composed_preparatory", 3, True)]
    if preps >= 2 or distress:
        return [("t2.preparatory_parts", 2, False)]  # not risk of its own: it must not arm t3.preparatory
    return []
