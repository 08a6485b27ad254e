"""Rule families the first lexicon missed, one per rung of the risk ladder (rule ids name the family).

Framed on the Columbia Suicide Severity Rating Scale (C-SSRS; Posner et al., Am J Psychiatry 2011): wish
to be dead (item 1) and non-specific thoughts (item 2) are tier 2; method, intent, plan (items 3-5) and
preparatory behaviour (item 6: "collected pills, obtained a gun, gave away valuables, wrote a will or
suicide note") are tier 3. Euphemisms follow the Samaritans and Crisis Text Line guidance on how people
write about suicide online ("unalive", "check out", "end it", "not be around"). Someone else in danger now
(an overdose, a person who will not wake up, an abuser with a weapon) is imminent harm, tier 3
(the tier-3 list of docs/coaching.md).

Preparatory acts and means are ordinary words in ordinary lives ("picked up my pills", "gave my bike
away", "wrote a letter"), so those rules fire at tier 3 only after a risk signal (tier >= 2) in the
message or the session's recent turns (``requires="risk"``); with only distress some fall back to tier 2
(pause and ask), otherwise they say nothing. Patterns are written in normal spelling; see
:mod:`launcher.safety._lexicon` for the template syntax.
"""

from __future__ import annotations

from ._lexicon import PILLS_NOT_PILES, Rule

__all__ = ["FAMILY_RULES"]

_PAST = ("t2.past_attempt_or_ideation", 2)

# Euphemisms for killing oneself, as the object of an intent ("i'm going to ..."). Strong ones say it
# on their own; weak ones ("end it", "be gone for good", "do it") say it only after distress or risk.
EUPHEMISM = (
    r"(?:end (?:it al|things|everything|my sufering|the pain for god|my story)(?! (?:with|between|at)\b)|"
    r"pul the plug on (?:myself|my life|me|my self)|"
    r"check(?:ing)? out (?:for god|permanently|early|of (?:life|this world|here|this life))|"
    r"unalive myself|take the easy way out|(?:go )?met my maker (?:on my own terms|tonight)|go to slep (?:and )?(?:never wake up|forever|for god|permanently)|"
    r"join (?:my )?(?:mom|mum|dad|mother|father|grandma|grandpa|nan|brother|sister|son|daughter|wife|husband|"
    r"him|her|them) (?:in heaven|up there|on the other side))"
)
WEAK_EUPHEMISM = (
    r"(?:end it(?! (?:with|between|for now|for today|early|there|here|on a|on god|on time|by|at|al)\b)|"
    r"be gone (?:for god|forever)|disapear (?:for god|forever|permanently)|do it (?:tonight|today|now|son)|"
    r"not (?:be )?(?:here|around|alive) (?:anymore|any more|much longer))"
)
ACT_PLACE = (
    r"(?:bridge|rof|roftop|clif|tracks|train tracks|railway|ledge|edge|balcony|top flor|overpas|tower)"
)
MEANS_ITEM = (
    r"(?:"
    + PILLS_NOT_PILES
    + r"|sleping pils|painkilers|tablets|meds|medication|insulin|rope|nose|gun|pistol|rifle|shotgun|"
    r"bulets|ammo|knife|razor|razor blades|blades|charcoal|poison|cyanide|antifreze|paracetamol|tylenol)"
)
# going somewhere and not coming back (round 8): "going bush and not coming back", "walk up the fell and i won't
# come back down"
GOING = r"(?:go|going|goin|walk|walking|head|heading|drive|driving|swim|swiming)"
NOT_COMING_BACK = (
    r"(?:and|an|n) (?:i )?(?:not|never|aint|wont) (?:come|coming|comin) (?:back|down|home|out|up)"
    r"(?: down| up| home| out| alive| again)?$"
)
# someone else, for "in danger now" rules
OTHER = (
    r"(?:he|she|they|someone|somebody|my {G1}(?:friend|bestie|bf|gf|sister|brother|mom|mum|mother|dad|father|"
    r"son|daughter|kid|child|baby|wife|husband|boyfriend|girlfriend|partner|roomate|flatmate|cousin|grandma|"
    r"grandpa|nan|coworker|colleague|student|neighbor|neighbour|mate|bro|pal|housemate|fiance|fiancee|uncle|aunt|"
    r"nephew|niece)|a friend|the baby)"
)
FAREWELL = (
    r"(?:this is|consider this) my (?:last|final) (?:mesage|post|text|godbye|note)|(?:my )?(?:last|final) godbye|"
    r"(?:just )?wanted to say (?:bye|godbye|thank you for everything)|thank you for everything {G3}godbye|"
    r"(?:tel|make sure) {G2}(?:i love (?:them|her|him|you)|i loved (?:them|her|him|you))|"
    r"(?:i )?(?:wont|wil not) be (?:here|around|alive) (?:much longer|tomorow|anymore|for long)"
)
WEAPON = r"(?:knife|gun|pistol|rifle|shotgun|weapon|hamer|bat|blade|machete|axe)"
# an abuser's act against the writer (round 10; the lexicon's ABUSE_VERB with the verbs it lacked)
ABUSE_ACT = (
    r"(?:hits|hit|hiting|beats|beat|beating|chokes|choked|choking|strangled|strangles|kicks|kicked|kicking|"
    r"punches|punched|punching|slaps|slaped|slaping|rapes|raped|abuses|abused|burned|shoved|throtled|"
    r"slamed|smashed|dragged|draged|bit|bites)"
)
# what may stand between an abuser and the act: auxiliary words only ("he's been hitting me", "my mum's started
# slapping me"), so "my mum's cat bit me" is not abuse
SUBJ_GAP = r"(?:(?:has|ben|started|starting|keps|kept|always|just|now|stil|again|also|wil|would|gets|got|even|s) ){0,3}"
# a date said as hyperbole ("I'll be dead by friday at this rate", "if this meeting goes on", "lol")
HYPERBOLE = (
    r"at this rate|if|lol|haha|hahaha|lmao|on this diet|with al this|with this \w+|the way things are going"
)
# a time or date that anchors an act (round 10): "tonight", "by morning", "this time next week", "on friday",
# "in a couple of hours", "before the weekend"
_DAY = (
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the weekend|christmas|new year|my birthday)"
)
DATE_ANCHOR = (
    r"(?:tonight|today|tomorow(?: night| morning)?|this (?:weekend|week|time next (?:week|month|year))|"
    + _DAY[3:-1]
    + r"|"
    r"next (?:week|month|weekend|"
    + _DAY[3:-1]
    + r")|(?:by|before|on|after|come) (?:the )?(?:morning|dawn|sunrise|midnight|tonight|tomorow|end of (?:the )?"
    r"(?:day|night|week|month)|next week|"
    + _DAY[3:-1]
    + r")(?: morning| night| evening)?|(?:by|before|at) (?:this time tomorow|[0-9]+ ?(?:am|pm))|"
    r"in (?:a|an|[0-9]+|a few|a couple of|a couple|two|three) (?:hour|hours|days|day|weeks|week)|"
    r"within (?:the |a |an )?(?:hour|day|week))"
)


def _r(rule_id: str, tier: int, template: str, **kw: object) -> Rule:
    for name, value in (
        ("FAREWELL", FAREWELL),
        ("WEAK_EUPHEMISM", WEAK_EUPHEMISM),
        ("EUPHEMISM", EUPHEMISM),
        ("ACT_PLACE", ACT_PLACE),
        ("MEANS_ITEM", MEANS_ITEM),
        ("NOT_COMING_BACK", NOT_COMING_BACK),
        ("GOING", GOING),
        ("OTHER", OTHER),
        ("WEAPON", WEAPON),
        ("DATE_ANCHOR", DATE_ANCHOR),
        ("ABUSE_ACT", ABUSE_ACT),
        ("SUBJ_GAP", SUBJ_GAP),
        ("HYPERBOLE", HYPERBOLE),
    ):
        template = template.replace(name, value)
    return Rule(rule_id, tier, template, **kw)  # type: ignore[arg-type]


FAMILY_RULES: tuple[Rule, ...] = (
    # ---- intent said with a euphemism or slang (C-SSRS 4)
    _r("t3.euphemism_intent", 3, r"{I} {G2}{INTENT} {G2}EUPHEMISM|(?:going to|about to|ready to|wil) {G1}EUPHEMISM",
       past=_PAST, question=("t2.ambivalent_question", 2)),
    _r("t3.euphemism_intent", 3,
       r"{I} {G2}{INTENT} {G2}WEAK_EUPHEMISM|(?:going to|about to|ready to|wil) {G1}WEAK_EUPHEMISM|"
       r"(?:to|gona|wana|going to) of (?:myself|my self)",
       requires="distress", fallback=("t1.ambiguous_intent", 1), past=_PAST),
    _r("t3.euphemism_intent", 3,
       r"(?:im|i am) (?:checking out|ending it al|ending things|ending everything) "
       r"(?:for god|permanently|tonight|today|tomorow|this weekend|son|now)"),
    _r("t3.intent_self_harm", 3, r"(?:il|ima|imma|im gona|i am gona) {G2}(?:{ACT_SELF}|{ACT_OTHER}|EUPHEMISM)|"
       r"(?:{INTENT}|il) {G1}od on {G1}(?:{PILLS}|drugs|heroin|fentanyl|painkilers|everything)",
       past=_PAST, question=("t2.ambivalent_question", 2)),
    # progressive and decided forms without an intent verb: "im pulling the plug on myself"
    _r("t3.euphemism_intent", 3,
       r"(?:im|i am|i m) {G1}(?:puling the plug on (?:myself|my life)|kiling myself|ending my life|"
       r"checking out for god|taking my (?:own )?life)(?! (?:laughing|with work|trying))|"
       r"make sure {G2}(?:im|i am|i) not (?:be )?(?:here|around|alive) (?:much longer|anymore|for long|by)|"
       r"{ACT_LETHAL} {G2}(?:for real|fr|not (?:a )?(?:joke|joking|kiding|meme)|im serious|i mean it|no joke)|"
       r"(?:im|i am) (?:realy |actualy |seriously )?going to do it (?:this time|for real)", past=_PAST),
    _r("t3.euphemism_intent", 3,
       r"(?:im|i am|i m) {G1}(?:ending it|doing it|going through with it)"
       r"(?! (?:with|between|at|for now|for today|on)\b)|"
       r"{I} {G2}(?:going to|wil|gona) do something about it|(?:tonights|today is|tomorow is|tonight is) the (?:night|day)|"
       r"(?:wont|wil not) be needing (?:to|it|them|the \w+|this|anything|my \w+) {G1}(?:anymore|anyway|after)",
       requires="risk", fallback=("t1.ambiguous_intent", 1), negation="before"),
    # a time anchor for the act: "new years eve is when i check out", "2moro is the day i go"
    _r("t3.timeline", 3,
       r"(?:is|s|thats|that is) (?:the day|the night|when|the date) (?:that )?i (?:go|do it|check out|end it|end it al|"
    r"end (?:everything|evrything|everythin)|end things|die|leave|am gone)(?! (?:back|to|out|in|on|home|for|shoping|away|with)\b)|"
       r"(?:when|once|after) (?:the clock|it) (?:hits|gets to|strikes) {G2}(?:im|i am|i wil|il) "
       r"(?:done|gone|ending it|out)",
       requires="risk", fallback=("t2.timeline_ambiguous", 2), negation="before"),
    # ---- plan with a date or a condition (C-SSRS 5): "once X happens, that's when I ..."
    _r("t3.conditional_timeline", 3,
       r"(?:once|when|after|as son as|the day|the moment|the minute|right after) (?:\b\w+ ){1,10}?"
       r"(?:thats when|then|that is when|is when) {G1}(?:i wil|ill|im going to|i am going to|im|i can|i get to|i) "
       r"{G1}(?:do it|end it|go through with it|go|leave|be gone|be free|finaly do it|finish it|finish this)\b",
       requires="risk", fallback=("t1.ambiguous_timeline", 1)),
    _r("t3.conditional_timeline", 3,
       r"(?:once|when|after|as son as|the day|the moment) (?:\b\w+ ){1,10}?(?:thats when|then|that is when|is when) "
       r"{G2}(?:{ACT_SELF}|{ACT_OTHER}|EUPHEMISM)", past=_PAST),
    _r("t3.timeline", 3, r"{I} {G2}(?:wil|going to|plan to|am going to) (?:do it|go through with it) "
       r"(?:tonight|today|tomorow|this weekend|right now|son|next week|on (?:monday|tuesday|wednesday|"
       r"thursday|friday|saturday|sunday))", requires="risk", fallback=("t1.ambiguous_timeline", 1)),
    # ---- means at hand, bought or being fetched; the place reached (C-SSRS 6, preparatory)
    _r("t3.means_fetched", 3,
       r"(?:{I} )?{G2}(?:just )?(?:picked up|picking up|got|getting|grabbed|grabbing|bought|buying|went to get|"
       r"going to get|gona get|have|found|fetched|fetching|ordered|counted|counting|lined up|laid out|"
       r"stockpiled|saved up) {G3}MEANS_ITEM",
       requires="risk", negation="before"),
    _r("t3.means_fetched", 3,
       r"(?:heading|going|walking|driving|on my way|off) (?:up )?(?:to|toward|towards|onto) (?:the |a )?"
       r"(?:ACT_PLACE|pharmacy|chemist|garage|woods|river|lake|gun store|gun shop)|"
       r"(?:im|i am|now) {G1}(?:on|at|up on|standing on|siting on) (?:the |a )?ACT_PLACE",
       requires="risk", negation="before"),
    # ---- preparatory acts and farewells (C-SSRS 6)
    # a preparatory act said together with what it prepares for: "so it's all sorted after i'm gone"
    _r("t3.preparatory", 3,
       r"(?:gave|giving|give|given|rehom(?:ed|ing)|sold|seling|donated|donating|clearing|cleared|sorting|"
       r"sorted|wrote|writing|writen|left|leaving|recorded|recording|paid|paying|cancel(?:ed|ing)|deleted|"
       r"deleting|tidied|tidying) (?:\b\w+ ){0,16}?(?:(?:after|when|once|for when|for after) (?:im|i am|i m) "
       r"(?:gone|not here|dead|not around)|(?:after|when|once) i die\b|"
       r"(?:wont|wil not|dont) need (?:it|them|any of it|anything|those|these) (?:anymore|where im going|after)|"
       r"(?:wont|wil not) be (?:here|around|able to lok after))",
       negation="none"),
    _r("t3.preparatory", 3,
       r"(?:easier|simpler|les (?:to|for)|nothing (?:to|for)|sorted|in order|taken care of|ready) {G6}"
       r"(?:after|when|once|for when|for after) (?:im|i am|i m) (?:gone|not here|dead|not around)"
       r"(?! (?:for|to|on|away|from)\b)",
       requires="risk", fallback=("t2.after_im_gone", 2), fallback_requires="distress", negation="none"),
    _r("t3.preparatory", 3,
       r"(?:gave|giving|give|given) (?:away )?{G2}(?:cat|cats|dog|dogs|pet|pets|puppy|kitten|bird|hamster) "
       r"(?:to|away)|(?:gave|giving|given) away (?:my|the|our) (?:cat|cats|dog|dogs|pet|pets|puppy|kitten)\b|"
       r"rehom(?:ed|ing) (?:my|the|our) (?:cat|cats|dog|dogs|pet|pets)\b|"
       r"(?:gave|giving|give|given) away {G2}(?:things|stuf|belongings|posesions|everything|"
       r"clothes|games|guitar|savings|plants|al my)|(?:gave|giving|give|given) {G2}(?:things|stuf|belongings|"
       r"posesions|everything) away|rehom(?:ed|ing) {G1}(?:cat|cats|dog|dogs|pet|pets)|"
       r"found (?:a |new )?homes? for {G1}(?:cat|cats|dog|dogs|pet|pets)|"
       r"(?:gave|giving|given) (?:away )?(?:al )?(?:of )?(?:my|the) (?:plants|guitar|games|clothes|savings|things|stuf|"
       r"belongings|posesions) (?:to|away)|"
       r"tying up (?:loose ends|my afairs)|paid of {G2}(?:debts|credit card|loans|everything)|"
       r"cancel(?:ed|ing) {G3}(?:phone contract|subscriptions|gym membership|contracts)|"
       r"(?:wrote|writing|written|left|leaving|finished) {G2}(?:leters?|notes?|goodbye leters?|last mesages?|"
       r"a leter|a note)(?! (?:to|for) (?:my )?(?:future self|the landlord|my landlord|school|work|the council))|"
       r"(?:updated|made|wrote|finished|sorted out|sorted) my (?:wil|afairs|finances for my family)|"
       r"(?:said|saying|say) (?:my )?godbyes?(?: to)? (?:everyone|everybody|the world|you al|al of you|my family|"
       r"my kids)",
       requires="risk", fallback=("t2.preparatory_after_distress", 2), fallback_requires="distress",
       negation="before"),
    _r("t3.farewell", 3, "FAREWELL", requires="risk", negation="none", distress=False),
    _r("t2.farewell", 2, "FAREWELL", requires="distress", negation="none", distress=False),
    # ---- slang and cut-short forms of intent, and conditional timelines without "that's when"
    _r("t3.euphemism_intent", 3,
       r"(?:gona|going to|about to|ima|imma|wil|il|finaly going to) od(?! on)\b|"
       r"(?:gona|going to|about to|ima|imma|wil|il|wana|want to|ready to) {G1}end it (?:al )?"
       r"(?:tonight|tonite|today|tomorow|this weekend|this week|now|son|for real|fr|for god)\b"
       r"(?! (?:with|between|on)\b)|"
       r"(?:im|i am|ima|imma|gona|going to|about to|ready to) {G1}unaliv(?:e|ing)\b",
       past=_PAST, question=("t2.ambivalent_question", 2)),
    _r("t3.conditional_timeline", 3,
       r"(?:once|when|after|as son as|the minute|the moment|the second|the day|if) (?:\b\w+ ){1,10}?"
       r"(?:im|i am|il|i wil|ima|imma|i) {G1}(?:going to |gona |wil )?(?:{ACT_SELF}|EUPHEMISM|unaliv(?:e|ing)|"
       r"kil(?:ing)?$)",
       past=_PAST),
    _r("t3.conditional_timeline", 3,
       r"(?:once|when|after|as son as|the minute|the moment|the second|the day) (?:\b\w+ ){1,10}?"
       r"(?:im|i am|il|i wil|ima|imma) {G1}(?:going to |gona )?(?:end it|end it al|end everything|end things|"
       r"go through with it|check out)(?! (?:with|between|early|at|for now)\b)",
       requires="distress", fallback=("t2.timeline_ambiguous", 2)),
    # ---- passive ideation said as a wish or an expectation (C-SSRS 1)
    _r("t2.passive_wish", 2,
       r"(?:hoping|hope|wish|praying|pray) (?:that )?(?:something|someone) {G1}(?:happens|would happen|wil happen|"
       r"hits|would hit|kils|would kil) (?:to )?me|"
       r"no (?:wish|wil|desire|reason) (?:left )?to (?:carry on|go on|kep going|live|be here|be alive)|"
       r"(?:dont|do not) want to (?:kep going|go on|carry on|be alive|live)(?: anymore| any more| like this)?$",
       negation="none", past=_PAST),
    _r("t2.self_harm", 2,
       r"(?:did|done|doing|relapsed on|relapsed with|back to|started) sh\b|\bsh (?:again|last night|tonight)",
       past=_PAST),
    _r("t2.passive_wish", 2,
       r"wish {G2}(?:he|she|they|someone|somebody|it|the \w+|that \w+|my \w+) (?:had|would have|would|could have|"
       r"just|did) {G1}(?:kiled|kil|shot|hit|murdered|run over|ran over|taken) me|"
       r"wish (?:i|id) (?:had )?(?:died|ben kiled|not survived|never survived|not made it|never woke up|"
       r"didnt wake up|ben the one who died|gone with (?:him|her|them))|"
       r"(?:looking forward to|cant wait to|cant wait for|long for|longing for|praying for|hoping for) "
       r"{G1}(?:death|dying|die|my death|being dead|it al to end|the day i die|the end of my life)|"
       r"(?:want|wish|would like|like) to (?:not|never) (?:be )?(?:here|around|alive|exist|wake up)|"
       r"(?:life|living) (?:is|fels|sems) (?:impossible|unbearable|pointles|not posible) without|"
       r"(?:cant|can not|cannot) (?:do life|live|go on|survive|kep living) without (?:him|her|them|you|my "
       r"(?:wife|husband|son|daughter|mom|mum|dad|partner|boyfriend|girlfriend|baby|kids))",
       negation="before", past=_PAST),
    _r("t2.passive_wish", 2,
       r"(?:hoping|hope|wish|praying|pray) (?:that )?my heart {G1}(?:stops|would stop|gives out|wil stop)|"
       r"(?:welcome|embrace|would welcome) death|wish (?:i could|to) {G1}(?:die|disapear|not wake up|never wake up)|"
       r"(?:crash|dying|death|not waking up|an acident) {G2}(?:wouldnt|would not) be (?:the worst thing|so bad|that bad)",
       negation="none", past=_PAST),
    _r("t2.active_ideation", 2,
       r"(?:keps|kep|keeps|kept) (?:saying|telling me|going|thinking|whispering) {G2}(?:end it|kil (?:myself|yourself)|"
       r"die|do it)|(?:think|thinking|thought|thoughts) (?:about|of) (?:checking out|ending it|not being here|"
       r"not existing|disapearing forever)$|(?:urge|urges|want|wanting) to (?:kil|unalive)$",
       past=_PAST),
    # ---- method: ideation with a method (C-SSRS 3)
    _r("t3.method", 3,
       r"(?:les|least|most) painful (?:way|method)|"
       r"(?:drown|jump|jumping|hang|hanging|overdose|pils|gun|shoting|ropes?|bridge|train) or "
       r"(?:drown|drowning|jump|jumping|hang|hanging|overdose|pils|a gun|shoting|the rope|a bridge|the train)\b"
       r"{G3}(?:for me|quicker|faster|beter|les painful|more painful|hurt)|"
       r"which is (?:quicker|faster|les painful|more painful|beter) {G3}(?:pils|jumping|hanging|drowning|a gun|overdose)|"
       r"worked out how (?:many|much) {G3}{PILLS}|"
       r"(?:planing|planed) (?:my )?(?:suicide|death|exit)|"
       r"(?:got|have|made|found|worked out) a plan (?:to|for) (?:end it|die|kil myself|do it|end my life|my death)|"
       r"(?:think|thinking|thought|fantasize|fantasizing) (?:about|of) (?:jumping|steping of|steping in front|"
       r"driving into|crashing (?:my car|into)|hanging myself|throwing myself|driving of)"
       r"(?! (?:ship|at the|on the|in the pol|into the pol|back|for joy|the gun|queue|the line|bandwagon)\b)",
       requires="distress", fallback=("t1.method_words", 1), past=_PAST),
    _r("t3.lethal_means_request", 3,
       r"(?:quickest|fastest|easiest|best|surest|painles|simplest|most certain) (?:way|method) to "
       r"(?:kil (?:myself|yourself|oneself|urself)|kil(?: fr| for real)?$|die|end (?:it al|my life|your life)|comit suicide)"
       r"(?!.*\b(?:minecraft|game|games|fortnite|roblox|skyrim|gta|sims|elden ring|dark souls|zelda|pokemon|"
       r"call of duty|character|boss|level|speedrun|respawn)\b)",
       negation="before"),
    _r("t3.method", 3, r"how (?:high|tal|far) {G6}(?:to|would|could|wil) {G1}(?:definitely |surely |actualy |realy )?"
       r"(?:die|kil (?:me|you|someone)|be fatal|be lethal)", negation="none"),
    # ---- act under way, emergencies the first lexicon missed
    _r("t3.in_progress", 3,
       r"(?:^|{I} {G1}|just )(?:took|taken|swalowed|downed) (?:{BIG_QUANTITY}|[1-9][0-9]) {G2}{PILLS}"
       r"(?!.*\b(?:over the (?:last|past)|a day|per day|each day|since|in total|as prescribed)\b)|"
       r"(?:drank|swalowed|drunk|drinking) {G1}(?:bleach|antifreze|drain cleaner|poison|wedkiler|rat poison)|"
       r"(?:on|at) (?:the |a )?ACT_PLACE {G3}(?:climbing|climbed|steping|standing|siting|leaning) "
       r"(?:over|onto|on|out over) (?:the )?(?:railing|rail|edge|ledge|fence|barier|side)|"
       r"(?:climbing|climbed) over the (?:railing|rail|barier) {G3}ACT_PLACE",
       past=_PAST),
    _r("t3.in_progress", 3,
       r"(?:{I} )?{G1}(?:took|taken|swalowed|downed) (?:al|every one|every single one|the rest) (?:of )?"
       r"(?:my|the|her|his|mums?|dads?) {G1}{PILLS}",
       requires="distress", past=_PAST),
    _r("t3.medical_emergency", 3,
       r"(?:im|i am|she is|shes|my \w+ is) {G2}(?:bleding|bleeding) (?:a lot|heavily|badly|so much|and it wont stop)|"
       r"hit (?:my|his|her|their) head {G6}(?:throwing up|vomiting|seing double|confused|not making sense|"
       r"pased out|pasing out|blod)|chest (?:is )?(?:crushing|so tight|pain) {G6}(?:arm|jaw) (?:is )?(?:numb|tingling)|"
       r"(?:locked|shut) (?:herself|himself|themselves) in the (?:car|garage) {G6}(?:engine|motor)",
       negation="none"),
    _r("t2.self_harm", 2,
       r"(?:new|fresh|more) cuts|cuts on my (?:arm|arms|wrist|wrists|thigh|thighs|legs|leg|stomach|hips)|"
       r"carv(?:ed|ing) {G3}into my (?:arm|skin|thigh|leg|wrist|stomach)|starv(?:e|ing) myself (?:as|to) punish|"
       r"(?:hiting|bashing|banging|hit|bashed|banged) my head (?:against|on|into) (?:the |a )?(?:wal|door|flor)|"
       r"did the thing with the (?:compas|razor|blade|lighter) again",
       past=_PAST),
    _r("t2.abuse_disclosed", 2,
       r"(?:dont|do not|never) (?:fel|am) safe (?:at home|with (?:him|her|them|my))|"
       r"{ABUSER} {G2}(?:comes|came|creeps|crept|sneaks|snuck) into my (?:rom|bed|bedrom) (?:at night|when)|"
       r"if i (?:ever )?(?:leave|left|tel anyone|tel) {G3}(?:hel|shel|theyl|he wil|she wil|he would|she would|"
       r"he is going to|hes going to) (?:find|kil|hurt|come after|get) me",
       negation="none"),
    # ---- round 5: shapes the earlier rules missed, per family (docs/safety.md, "Results of round 5")
    # the act under way: a car running shut in, an overdose said in slang ("just od'd"), pills
    # swallowed by the strip or the handful
    _r("t3.in_progress", 3,
       r"(?:car|cars|engine|engines|ute|utes|motor|van) {G2}(?:is |s |has ben |ben )?(?:runing|on|going) {G6}(?:garage|shed|"
       r"windows up|windows closed|door down|door shut|door closed)|"
       r"{I} {G1}(?:just )?(?:od|oded|overdosed)$|^(?:just )?(?:od|oded|overdosed)$|"
       r"just (?:od|oded|overdosed) on {G2}{PILLS}|"
       r"(?:just )?(?:swalowed|downed) (?:al|every one|the rest) (?:of )?my {PILLS}|"
       r"(?:swalowed|downed) (?:the first|a|another) handful$|(?:swalowed|downed|ate|took|taken) (?:the first|a|another) "
       r"handful of {G1}{PILLS}|"
       r"(?:ate|eaten|swalowed|downed|took|taken) (?:a |the )?(?:whole|entire|ful) (?:sheet|strip|blister|bottle|box|pack|"
       r"packet) of (?:my |her |his )?{PILLS}(?! (?:with me|for the|to the|in my bag|on holiday))",
       past=_PAST),
    # ... and the same acts that are ordinary in ordinary lives (rail workers on the tracks, a sea swim, a
    # cabinet cleared out): a crisis after distress, else a pause and a question
    _r("t3.in_progress", 3,
       r"(?:siting|lying|laying|sat|waiting) on (?:the )?(?:train |railway |rail )?(?:tracks|railway line)|"
       r"{I} {G2}(?:took|taken|swalowed|downed|had) (?:everything|al of it|the lot|everything i had|the whole lot) "
       r"(?:in|from|out of) (?:the|my) (?:cabinet|cupboard|drawer|box|medicine|first aid)(?! (?:to|into) the (?:bin|"
       r"pharmacy|chemist|tip))|"
       r"{I} {G2}(?:jumped|walked|waded) (?:into|in) the (?:river|sea|lake|canal|water|ocean)",
       requires="distress", fallback=("t2.act_ambiguous", 2), past=_PAST),
    # medical emergencies said without risk words (C-SSRS does not cover them; docs/coaching.md tier 3;
    # NHS stroke signs "face, arms, speech", seizures over 5 minutes)
    _r("t3.medical_emergency", 3,
       r"(?:having|had|s having|is having|in) (?:a )?(?:fit|seizure|convulsion|convulsions) {G6}(?:minutes|mins|"
       r"wont stop|not stoping|isnt stoping|stil going)|"
       r"(?:fit|seizure|fiting|seizing|convulsing) {G3}(?:for|over|more than) {G1}[0-9]+ (?:minutes|mins)|"
       r"(?:dey |is |s |keps |started |wont stop )?(?:convulse|convulsing)(?! (?:with|from|of|in) (?:laughter|laughing|"
       r"giggles|mirth|joy))|"
       r"(?:face|mouth) {G2}(?:droping|dropy|sagging|lopsided)|"
       r"one side of (?:his|her|my|their) face (?:wont|wil not|cant|isnt|is not|doesnt) (?:move|smile|work)|"
       r"(?:is|s|im|keps|started|suddenly) (?:sluring|slured) (?:her|his|their|my)? ?(?:words|spech)|"
       r"elephant {G3}on (?:my|his|her) chest|"
       r"(?:cant feel|numb|numbnes in|no feling in) (?:the )?(?:left|right|one) side of (?:my|his|her|their) "
       r"(?:face|body)(?!.*(?:dentist|anaesthetic|anesthetic|injection|filing|numbing))|"
       r"(?:his|her|their|my|babys|the babys) (?:lips|face) (?:are |is )?(?:going |turning |gone )blue"
       r"(?! (?:from|with|after) (?:the |a |that )?(?:slushie|cold|ice|juice|popsicle|lolly|paint))",
       negation="none"),
    # checking out said as a euphemism for good ("im clocking out for good. not the work kind"); after
    # distress a crisis, else a pause (a retirement, a hotel)
    _r("t3.euphemism_intent", 3,
       r"{I} {G1}(?:checking|clocking|check|clock) out (?:for god|for real|permanently|of life)"
       r"(?!.*\b(?:hotel|shop|store|airbnb|hostel|motel|library|check in|reception|the rom)\b)",
       requires="distress", fallback=("t2.euphemism_ambiguous", 2), past=_PAST),
    # joining a dead relative after the funeral, or being with them
    _r("t3.euphemism_intent", 3,
       r"(?:after|once|when) {G4}(?:funeral|buried|burial|cremation|anniversary) {G6}(?:join|be with|folow) "
       r"(?:her|him|them|my (?:mum|mom|mother|dad|father|wife|husband|son|daughter|brother|sister|nan|gran|"
       r"grandma|grandad|grandpa|baby|boy|girl|partner))$",
       past=_PAST),
    # a medicine asked for to not wake up: the question carries its own death wish
    _r("t3.lethal_means_wish", 3,
       r"(?:which|what) (?:tablet|tablets|pil|pils|medicine|meds|drug|drugs) {G6}(?:so (?:that )?(?:i|il|i wil) )?"
       r"{G2}(?:not wake up|never wake up|not wake again|die|end it|be dead)",
       negation="before"),
    # a farewell said outright: a crisis after risk, a pause after distress
    _r("t3.farewell", 3,
       r"(?:this is|its) (?:the|my) (?:last|final) (?:txt|text|mesage|post)(?: from me| ever)?$|"
       r"(?:this is|its) the (?:last|final) time (?:we|well|wel|i) (?:talk|speak)|"
       r"(?:wil not|wont|not) be in this world|(?:after this|after tonight) (?:i )?(?:wil not|wont) be "
       r"(?:here|around|alive)(?! for)",
       requires="risk", negation="none", distress=False, fallback=("t2.farewell", 2), fallback_requires="distress"),
    # ---- round 6: intent said in clinical words or as a euphemism of the whole self ("take myself out
    # of the picture for good", "stop existing on purpose", "tonight is my last night on earth")
    _r("t3.euphemism_intent", 3,
       r"formed (?:an |the )?intent(?:ion)? to (?:die|kil|end)|"
       r"(?:intend|intending|going|plan|planing) to act on (?:my |these |the )?(?:suicidal )?(?:thoughts|urges)|"
       r"(?:going to|gona|wil|il|decided to|about to|ready to|want to) {G1}(?:take myself out (?:of the picture )?"
       r"(?:for god|permanently)(?! (?:on|from|of|for) (?:the|my)\b| (?:fod|food|meal|diner|lunch|drinks)\b)|stop existing|take my leave of (?:this )?(?:life|world)|"
       r"put myself out of (?:my )?misery|be the one (?:that|who) finishes the job)|"
       r"(?:tonight|today|this) is my last (?:night|day) (?:on earth|alive|on this planet)(?! (?:before|as a|in|at|of)\b)",
       past=_PAST, question=("t2.ambivalent_question", 2)),
    # ---- someone else in danger now (tier 3: imminent harm)
    _r("t3.other_in_danger", 3,
       r"OTHER {G3}(?:wont|wil not|cant|cannot|can not|isnt|is not|doesnt|does not|not) "
       r"(?:wake up|waking up|be woken|come to|responding(?! to)|respond(?! to)|breathing)|"
       r"OTHER {G2}(?:overdosed|is overdosing|took an overdose|ods|oded|took {G1}(?:{BIG_QUANTITY} {G2}{PILLS}|"
       r"{CONTAINER}|al (?:of )?(?:her|his|their) {PILLS}))|"
       r"OTHER {G1}(?:is|s) (?:on|at|standing on) (?:the |a )?ACT_PLACE (?:and|threatening|saying|says)",
       negation="none"),
    _r("t3.armed_threat", 3,
       r"{ABUSER} {G3}(?:has|got|grabbed|is holding|pulled|took out|is waving|pointed|pointing|came at me with|"
       r"threatening me with|threatened me with|is coming at me with) {G2}(?:a |his |her |the |my )?WEAPON|"
       r"{ABUSER} {G2}(?:says|said|threatens|threatened|is threatening|swears|swore|keps saying) {G2}"
       r"(?:he|she|they)?(?:l| wil| is going to| gona| wants to)? {G1}(?:kil|hurt|shot|stab|strangle) me",
       negation="before"),
    # ---- round 7 (docs/safety.md, "Round 7"): a future absence with its date ("I won't see christmas
    # day", "not seeing another year", "not coming home from this shift alive"), C-SSRS item 4 with a time
    _r("t3.euphemism_intent", 3,
       r"(?:im|i am|i m|i) {G1}not (?:coming|going|getting|making it) (?:home|back) {G4}alive|"
       r"(?:im|i am|i m|i) (?:not|never) (?:seing|going to se|gona se|going to make it to|living to se) another "
       r"(?:year|birthday|christmas|summer|winter|spring|week|month|day)\b|"
       r"(?:i )?(?:wont|wil not|am not going to|wont ever) (?:live to se|be alive (?:for|at|on|to se)) "
       r"(?:another|the next|next|christmas|new year|my (?:\w+ )?birthday|the weekend|tomorow|(?:the )?(?:spring|summer|winter))",
       negation="before", past=_PAST),
    _r("t3.euphemism_intent", 3,
       r"(?:i )?(?:wont|wil not|am not going to) (?:se|make it to) (?:christmas|new year|my (?:\w+ )?birthday|"
       r"(?:the |another )?(?:morning|weekend|spring|summer|winter)|tomorow|another (?:year|day|wek|month))"
       r"(?! (?:with|at|in|because|since|cos|as|this year|off|eve|dinner|party)\b)",
       requires="distress", fallback=("t1.ambiguous_intent", 1), negation="before"),
    # "i'm done living", "done being alive": a wish to be dead said as being finished with life
    _r("t2.passive_wish", 2,
       r"(?:im|i am|i m) (?:so |just |realy |honestly )?done (?:living|being alive|existing|with being alive)",
       negation="before", past=_PAST),
    # a lethal amount or height asked or planned: "enough fent to not wake up", "how much gear would it
    # take to definitely go over", "if the fall from the 9th would be enough" (C-SSRS item 3, method)
    _r("t3.method", 3,
       r"enough {G3}(?:to|so i) (?:not wake up|never wake up|die|not come back|stop my heart|finish me|go over|"
       r"kil me|kil myself|end it|end it al|make sure)$|"
       r"(?:how much|how many) {G4}(?:would it take|does it take|would i ned|do i ned|wil it take) {G2}"
       r"(?:to )?(?:definitely |realy |actualy )?(?:go over|not wake up|die|stop my heart|kil me|be fatal|end it)|"
       r"(?:working out|wondering|thinking about|figuring out) (?:if|whether|how) (?:the )?(?:fal|drop|jump) "
       r"{G6}(?:would|wil|could) (?:be )?(?:enough|high enough|do it|kil me|be fatal)"
       r"(?! (?:for|to (?:get|make|hold|reach|se|film|clear|win))\b)",
       negation="before", past=_PAST),
    # the act pictured with a means on oneself: "using one of the knives from work on myself", "unclipping
    # my harness" (an act only after distress: a climber unclips a harness every day)
    _r("t3.method", 3,
       r"(?:thinking|think|thought|picturing|imagining|fantasizing) (?:about|of) {G2}(?:using|turning) "
       r"{G6}(?:knife|knives|blade|blades|razor|gun|rifle|shotgun) {G4}on (?:myself|my self|me)\b|"
       r"(?:thinking|think|thought|picturing|imagining) (?:about|of) (?:just )?(?:unclipping|undoing|unhooking) "
       r"(?:my )?(?:harnes|harness|lanyard|safety line|clip)",
       requires="distress", fallback=("t1.method_words", 1), past=_PAST),
    # a dose swallowed: "swallowed the lot", "taken all the tablets I saved up", "a handful ... I meant to"
    _r("t3.in_progress", 3,
       r"(?:^|{I} {G1}|just )(?:swalowed|downed|necked) (?:the lot|the whole lot|al of (?:it|them)|everything|"
       r"(?:al|every one of) (?:the|my) {G1}(?:{PILLS}|tabs)|(?:the|a) whole (?:box|bottle|pack|packet|strip))|"
       r"(?:took|taken|swalowed) (?:al )?(?:the|my|those) {G1}(?:{PILLS}|tabs) {G1}(?:(?:i|id|ive|i had|i have) "
       r"(?:ben )?(?:saved|saving|stockpiled|stockpiling|kept|hid|colected)|at once|in one go)|"
       r"(?:took|taken|swalowed) (?:a handful|a load|loads|a bunch) of {G3}(?:{PILLS}|tabs|sedatives) {G6}"
       r"(?:i meant to|on purpose|meant it|wanted to)",
       negation="before", past=_PAST),
    _r("t3.other_in_danger", 3,
       r"OTHER {G3}(?:put|stuck|took|taken|swalowed) (?:on )?(?:al|every one of|every) (?:of )?(?:her|his|their|the) "
       r"{G1}(?:patches|{PILLS}|tablets) {G2}(?:on )?(?:at once|in one go|at the same time)",
       negation="none"),
    # a plan named as a place, or a way out with one: "my exit strategy is the top floor of the multi-storey",
    # after earlier risk "plan's the old silo", "i know how and where now. the car park, level 7"
    _r("t3.plan", 3,
       r"(?:my )?(?:exit strategy|exit plan|way out|way to go) (?:is|s|wil be|would be) (?:the )?{G3}"
       r"(?:ACT_PLACE|car park|carpark|multistorey|multistory|multi storey|parking garage|tracks|railway|silo|"
       r"river|lake|loch|sea|quary|motorway|clifs|rope|pils|tablets|gun)",
       negation="before"),
    _r("t3.plan", 3,
       r"(?:my )?plan(?:s| is| wil be)? (?:the )?(?:old |top of the |edge of the |top flor of the )?"
       r"(?:ACT_PLACE|car park|carpark|multistorey|multi storey|parking garage|tracks|railway|silo|quary|helideck|"
       r"rail bridge|river|canal|loch)\b|(?:i )?know (?:how and where|where and how|when and where|how and when) now",
       requires="risk", fallback=("t1.method_words", 1), negation="before"),
    # after risk, the follow-up that only the context makes a crisis: "how many?", "is 30 enough?", "i know
    # what they're for", "and a letter explaining why"
    _r("t3.lethal_means_request", 3,
       r"^(?:so |and |ok |okay )?(?:how many|how much|is (?:[0-9]+|that|this|it) enough|would (?:[0-9]+|that|it) "
       r"(?:be enough|do it|work)|enough)$|^(?:and )?i know (?:what|exactly what) (?:theyre|they are|its|it is) for$",
       requires="risk", negation="none"),
    _r("t3.preparatory", 3,
       r"(?:a |the |my )?(?:leter|note) (?:explaining|saying) (?:why|everything|sory)$|"
       r"(?:leter|note|leters|notes) for (?:whoever|who ever|the person who) (?:finds|find) me",
       requires="risk", fallback=("t2.farewell", 2), fallback_requires="distress"),
    # ready for death after preparing: "i'm ready to go now" with a preparatory act, "ready to meet God"
    _r("t3.preparatory", 3,
       r"(?:im|i am|i m) (?:ready to (?:die|meet (?:god|my maker|jesus)|leave this world|go now|be with (?:him|her|them) "
       r"again)|at peace with (?:dying|going|leaving))|(?:that was|thats) the last thing i (?:neded|had) to do|"
       r"(?:theyl|they wil|she wil|shel|hel|he wil) (?:get|read|find) (?:them|it|the leters?|the cards?) after$",
       requires="risk", fallback=("t2.farewell", 2), fallback_requires="distress", negation="before"),
    # ---- round 8 (docs/safety.md, "Round 8"), the families the round-7 screen missed on safety_fresh6:
    # the act said with a vehicle or the tracks ("swerving into a lorry", "yanking the wheel into oncoming
    # traffic", "stay on the tracks"), C-SSRS item 3: a method thought of
    _r("t3.method", 3,
       r"(?:thinking|think|thought|picturing|imagining|fantasizing|wondering) (?:about|of|if|what if) {G3}"
       r"(?:swerving|swerve|yanking the whel|pulling the whel|steering|driving|crashing|veering|just driving) "
       r"{G3}(?:into|under|in front of|of) {G2}(?:traffic|oncoming|a lory|lories|a truck|trucks|a bus|a train|the train|"
       r"a wal|a tre|the river|the sea|the canal|the edge|the clif|the bridge|a bridge|one|a car)|"
       r"(?:thinking|think|thought|wondering) (?:about|of|if|what if) {G8}(?:staying|stayed|standing|stod|lying|lay|laying|walking|walked|"
       r"stepping|stepped|stepping out) (?:on|onto|in front of) (?:the )?(?:tracks|line|train|railway|rails|level crosing)",
       negation="before", past=_PAST),
    # a method named as what one thinks of: "thinking about hanging", "narrowed it down to two ways to kill myself"
    _r("t3.method", 3,
       r"(?:thinking|think|thought|obsesing) (?:about|of) hanging(?: myself)?(?: (?:constantly|al the time|every day|"
       r"every night|again|a lot|lately))?$|"
       r"(?:narowed|narrowed|worked|figured|chosen|chose|picked|decided on|researching|researched) {G4}"
       r"(?:ways?|methods?|how) to (?:kil myself|die|end it|end my life|do it)"
       r"(?! in (?:the |a )?(?:game|games|minecraft|fortnite|story|novel|book|film|movie|script)\b)",
       negation="before", past=_PAST),
    # a lethal amount counted: "counting how many of my sleeping tablets it would take to kill me"
    _r("t3.method", 3,
       r"(?:how much|how many) {G6}(?:it would take|it would|it wil take|it takes|would do it) {G2}"
       r"(?:to )?(?:kil me|die|end it|be fatal|not wake up|stop my heart)",
       negation="before", past=_PAST),
    # intent said as the act after earlier risk: "gonna act on it this time", "so I'll do it myself", "I will
    # do it. I am sure", "I'm going to make that happen", "tonight I stop wanting and start doing"
    _r("t3.intent", 3,
       r"(?:going to|gona|wil|il|intend to|about to|ready to|decided to) act on (?:it|them|this|that|those)|"
       r"(?:il|i wil|im going to|im gona|i am going to) do it (?:myself|this time|for real)$|"
       r"^(?:and |so |yeah |yes |then )?(?:i wil|il|im going to|im gona) do it$|"
       r"(?:going to|gona|wil|il) make (?:that|it) happen$|(?:stop|stoped) wanting and (?:start|started) doing",
       requires="risk", negation="before"),
    # the jump announced: "I'm going to jump", "gonna jump this time"
    _r("t3.intent", 3,
       r"(?:going to|gona|about to|ready to|finaly going to) jump (?:this time|for real)$|"
       r"(?:going to|gona|about to|ready to) jump (?:tonight|now|today)$",
       negation="before", past=_PAST),
    _r("t3.intent", 3,
       r"(?:im|i am|i m|i wil|il) (?:going to|gona|about to) jump$",
       requires="risk", fallback=("t2.ambiguous_intent", 2), negation="before"),
    # UK and US slang for killing oneself: "topping myself", "put myself in the ground"
    _r("t2.active_ideation", 2,
       r"(?:thinking|thought|think|thinkin) (?:about|of|bout) (?:toping|topin|top) myself|"
       r"(?:want to|wana|going to|gona|might|could) top myself(?! up)",
       negation="before", past=_PAST),
    _r("t3.intent", 3,
       r"(?:going to|gona|fixing to|fixin to|about to|ready to|wil|il) put myself (?:in the ground|six fet under|"
       r"in the grave|in an early grave)",
       negation="before", past=_PAST),
    # a wish to be dead said as others' gain or a trade: "everyone would be better off if I just wasn't around",
    # "worth more dead", "I'd rather not make it home than keep living like this", "fine with not waking up"
    _r("t2.passive_wish", 2,
       r"beter of if i (?:just )?(?:was|were) (?:dead|gone)|"
       r"beter of if i (?:just )?(?:wasnt|was not|werent|were not) (?:around|here|alive|in the picture)(?! (?:him|her|them|people|you|my|his|the)\b)|"
       r"(?:worth|worth a lot) more dead|(?:rather|prefer to) {G8}than (?:kep|go on|carry on|continue) "
       r"(?:living|being alive|like this)|(?:fine|ok|okay|happy|glad|at peace) (?:with|w) (?:not waking up|never waking up|"
       r"dying)(?! (?:for|of|from|to)\b)|(?:wouldnt|would not|id not|i would not) be sory if i (?:didnt|did not|never) wake up|"
       r"(?:dont|do not) want to be woken up (?:tomorow|again|ever|any day)|"
       r"(?:should have|shouldve|should of) let me die|want to not (?:exist|be alive|be here)|"
       r"want to be gone (?:before|by|for god)|(?:pray|praying|prayed|hope|hoping) {G1}(?:god|the lord|allah|jesus|he) "
       r"(?:takes|wil take|would take|just takes) me (?:in my slep|tonight|away)",
       negation="before", past=_PAST),
    # self-harm said as a plain act: "so I cut. last time was wednesday", "did some damage to myself", "took the
    # pruning knife to my own leg", "pressed my hand on the hot plate on purpose"
    _r("t2.self_harm", 2,
       r"(?:^|so |and |then |i )(?:cut|cuted)(?: again| last night| yesterday| today| tonight)?$|"
       r"(?:did|done|doing) (?:some|sum|a bit of|a lot of) (?:damage|dmg) (?:to|2|on) myself|"
       r"(?:took|take|taking|put) (?:a |the |my )?{G2}(?:knife|blade|razor|scisors|lighter) to my (?:own )?"
       r"(?:arm|arms|leg|legs|wrist|wrists|thigh|thighs|skin|stomach|self)(?! of)|"
       r"(?:myself|my (?:own )?(?:hand|arm|leg|skin|wrist)) {G6}(?:on purpose|deliberately)$",
       negation="before"),
    # a conditional timeline said as the day one goes: "the pit closes on the 30th. that's the day I go too",
    # "the day my youngest starts university I am going to die", "I'll not see the 3rd"
    _r("t3.conditional_timeline", 3,
       r"(?:thats|that is|that wil be|thatl be) (?:the day|the night|when|the week) (?:i|im) (?:go|going|die|leave) too$|"
       r"^the (?:day|night|minute|moment|second) {G8}(?:i am|im|i wil|il) (?:going to|gona) (?:die|kil myself|end it)$|"
       r"(?:thats|that is|that wil be) (?:the day|the night|when) (?:i|im) (?:going to )?join (?:him|her|them|my)|"
       r"one last time (?:and|then|and then) {G2}(?:im|i am|il be) done$",
       negation="before", past=_PAST),
    _r("t3.euphemism_intent", 3,
       r"(?:il|i wil) not se (?:the|christmas|new year|my|another|next) ",
       requires="distress", fallback=("t1.ambiguous_intent", 1), negation="before"),
    _r("t3.conditional_timeline", 3,
       r"GOING {G4}NOT_COMING_BACK|booked my exit(?! interview)",
       requires="distress", fallback=("t2.ambiguous_intent", 2), negation="before"),
    # a farewell kept hidden, C-SSRS item 6: "she's no idea it's the last time she'll see me", "told him I
    # won't need them where I'm going", "they think I'm being soppy. I'm saying goodbye"
    _r("t3.preparatory", 3,
       r"(?:its|it is|it was|it wil be|was) the last time (?:she|he|they|shel|hel|theyl|she wil|he wil|they wil|you wil|youl) "
       r"(?:ever )?(?:se|sees|wil se|get to se) me(?! (?:in|at|on|with|before|for|like|as|play|win|perform)\b)|"
       r"(?:wont|wil not|dont|do not) ned (?:it|them|this|that|these|those|anything|any of (?:it|this|them)) where (?:im|i am) going",
       requires="risk", fallback=("t2.farewell", 2), negation="before"),
    _r("t3.preparatory", 3,
       r"(?:no idea|no clue|doesnt know|does not know|dont know|didnt know|never know) (?:that )?(?:its|it is|it wil be|this is|"
       r"it was) the last time (?:she|he|they|shel|hel|theyl|she wil|he wil|they wil|il|i wil)",
       requires="risk", fallback=("t2.farewell", 2), negation="none"),
    _r("t2.farewell", 2,
       r"(?:im|i am) (?:just )?saying godbye$|said (?:my )?godbyes$",
       negation="before"),
    # someone else in danger now: "my cuz just hung herself", "he's taken something and he's blue", two lads
    # trapped under a roof fall, locked in the garage with the engine running
    _r("t3.other_in_danger", 3,
       r"(?:OTHER|my \w+) {G2}(?:just|has just|has) (?:hung|hanged|tried to hang) (?:himself|herself|themselves)|"
       r"(?:hes|shes|theyre|he is|she is|they are|hes gone|shes gone|is going|s going) (?:turning |going )?blue$|"
       r"(?:lads|men|man|he|she|they|someone|somebody|people|workers?|kids?|boy|girl|woman|driver|[0-9]+|two|thre) {G3}"
       r"(?:trapped|pined|pinned) (?:under|beneath)(?! (?:snow|paperwork|work|debt|emails)\b)|"
       r"(?:locked|shut) (?:himself|herself|themselves) in {G4}(?:with the (?:car|engine) running|with a (?:bbq|barbecue|charcoal))",
       negation="none"),
    # the conditional said with the going: "after the finals i'm going bush and not coming back", "booked my exit
    # for the 1st"
    _r("t3.conditional_timeline", 3,
       r"^(?:after|once|when|come|the day|the minute|as son as) {G6}GOING {G4}NOT_COMING_BACK|"
       r"booked my exit (?:for|on) (?:the )?(?!the\b|interview|meting|flight|visa|paperwork|form)\w+",
       negation="before", past=_PAST),
    # lethal-means questions in other words: "how many of his morphine tablets would kill someone", "how many
    # benadryl to go to sleep permanently", "what caliber makes sure it's instant", "quickest thing to take"
    _r("t3.lethal_means_request", 3,
       r"how (?:many|much) (?:of )?(?:his|her|their|mums|moms|dads|nans|my \w+s) {G2}{PILLS} {G3}(?:would|to|wil|could) {G2}"
       r"(?:kil|die|be lethal|be fatal|overdose)|(?:caliber|calibers|calibre|calibres|gauge|bulet) {G4}(?:to make sure|make sure|instant|"
       r"quickest|painles)|(?:quickest|fastest|easiest) (?:thing|way|stuf|pils|pil|tablets) to (?:take|od|overdose)",
       negation="none", requires="distress", fallback=("t1.lethal_means_query", 1), distress=False),
    _r("t3.lethal_means_request", 3,
       r"how (?:many|much) {G4}to (?:just )?EUPHEMISM", negation="none"),
    # means at hand: "forty of the tablets in front of me", a blade and a bath running, the gun in my hand
    _r("t3.means_at_hand", 3,
       r"{BIG_QUANTITY} {G4}{PILLS} {G2}(?:in front of me|in my hand|next to me|lined up|counted out)"
       r"(?! to (?:count|sort|pack|check|label|dispense|stock))|"
       r"(?:razor|blade|razor blade|knife|blades|razors) {G6}(?:bath|tub) (?:is |s )?(?:running|ful|filed|filing|ready)",
       negation="before", past=_PAST),
    _r("t3.means_at_hand", 3,
       r"(?:gun|pistol|rifle|shotgun|revolver) (?:is )?(?:in|on) my (?:hand|hands|lap)$",
       requires="distress", fallback=("t2.means_mention", 2), negation="before"),
    # round 9, a wish to be dead (C-SSRS item 1) said as a hoped-for illness or accident, as disappointment at
    # still being alive, as a life wanted over, as a prayer to be taken, or as envy of the dead: "I'd be
    # relieved if I caught something and died", "every morning I'm gutted I'm still here", "I just want my
    # life to be over", "praying the Lord takes me soon", "I'm jealous of the ones who died"
    _r("t2.passive_wish", 2,
       r"(?:wish|wishing|hope|hoping|pray|praying) (?:for|i get|i got|id get|i would get|i catch|id catch) "
       r"(?:a heart atack|an ilnes|a stroke|cancer|something) {G4}(?:and die|and died|that kils me)|"
       r"(?:wish|wishing|hope|hoping|pray|praying) (?:for )?(?:a heart atack|a stroke|an acident|a crash) "
       r"(?:every time|each time|to take me|would take me|wil take me)|"
       r"(?:id|i would|i d) be (?:relieved|glad|happy|grateful|fine) if i {G4}(?:died$|died in|didnt wake up$|"
       r"never woke up$|(?:got|was) hit by (?:a |the )?(?:car|bus|truck|lorry|train)|droped dead|keled over)|"
       r"(?:wish|wishing|hope|hoping) (?:that )?(?:i|id) (?:just )?(?:kel over|drop dead|droped dead)|"
       r"(?:disapointed|disapointment|gutted|sad|upset|angry|annoyed) (?:that |when )?(?:im|i am|i was|i) "
       r"(?:stil here|stil alive|stil breathing)$|"
       r"want (?:my life|my life to|it al|everything|my existence) (?:to )?be over(?! (?:with|by|before|so|and)\b)|"
       r"(?:pray|praying|prayed|asking|begging) {G1}(?:god|the lord|allah|jesus) (?:to )?(?:takes|take|wil take) me "
       r"(?:soon|already|home|now|away)|"
       r"(?:jealous|envious) of (?:the ones|those|people|the people|the men|the lads|the patients) (?:who|that) "
       r"(?:died|didnt make it(?! (?:to|in|into|through|on|onto|past|out|back)\b)|are dead|passed away|passed on)",
       negation="before", past=_PAST),
    # ---- round 10 (docs/safety.md, "Round 10"), the families the round-9 screen missed on safety_fresh8.
    # Death or absence with a date (C-SSRS item 5, a plan with its time): "i'll be dead by morning", "this time
    # next week i'll be gone", "not making it past tonight", "my last day on earth", "2 more days alive", "my
    # suicide is planned for friday". "Dead" with a date is ambiguous alone: a crisis after distress, else a
    # pause, and never said as hyperbole ("at this rate", "if this meeting goes on", "lol"); "gone" and "not
    # here" need earlier risk.
    _r("t3.timeline", 3,
       r"(?:{I}|i wil|im going to|i am going to|im gona) {G1}be dead(?! (?:tired|on my fet|bored|weight)\b) "
       r"(?:DATE_ANCHOR)(?!.*\b(?:HYPERBOLE)\b)|^(?:DATE_ANCHOR) (?:{I}|i wil) {G1}be dead$",
       requires="distress", fallback=("t2.timeline_ambiguous", 2), negation="before", past=_PAST),
    _r("t3.timeline", 3,
       r"(?:{I}|i wil|im going to|i am going to|im gona) {G1}be (?:gone|not here|not around|not alive) (?:DATE_ANCHOR)"
       r"(?! (?:for|to|on a|on holiday|on vacation|with)\b)(?!.*\b(?:HYPERBOLE)\b)|"
       r"^(?:DATE_ANCHOR) (?:{I}|i wil) {G1}be (?:gone|not here|not around)$",
       requires="risk", fallback=("t2.timeline_ambiguous", 2), fallback_requires="distress", negation="before"),
    _r("t3.timeline", 3,
       r"(?:(?:my|the) last (?:day|night|week|sunday|christmas|birthday) (?:on (?:this )?earth|alive|of my life)|"
       r"(?:not|never|wont|am not|im not) (?:going to |gona )?(?:make it|making it) (?:past|beyond) "
       r"(?:DATE_ANCHOR|the night|the weekend|tomorow)|"
       r"(?:[0-9]+|one|two|three|four|five|a few|a couple of|a couple) more (?:days|nights|weeks|sleps) "
       r"(?:alive|on (?:this )?earth|of (?:living|being alive|this life)$))(?!.*\b(?:HYPERBOLE)\b)",
       requires="distress", fallback=("t2.timeline_ambiguous", 2), negation="before", past=_PAST),
    _r("t3.timeline", 3,
       r"(?:suicide|kiling myself|ending my life|my death) (?:is|s|wil be) (?:happening|going to happen|planed|booked|"
       r"set|scheduled|going ahead) (?:for )?(?:DATE_ANCHOR)",
       negation="before"),
    # the place or the day chosen after distress (C-SSRS 5): "i've picked the bridge and the day"
    _r("t3.plan", 3,
       r"(?:picked|chosen|chose|choosen|decided on|worked out|found) (?:the|a|my) (?:ACT_PLACE|spot|place|day|date)"
       r"(?: and (?:the|a|my) (?:ACT_PLACE|spot|place|day|date|time))(?! (?:for|of|to)\b)",
       requires="distress", negation="before"),
    # abuse told with its act (round 10): "he's started hitting me", "my mum's been hitting me again", "me fella's
    # been knocking me about", "he dragged me by my hair", "slammed my head on the decks", "her father beats her";
    # only auxiliary words between the subject and the act ("my mum's cat bit me" is a cat), not at a game, in
    # sport, in sleep or in pregnancy ("she's been kicking me all night, 32 weeks")
    _r("t2.abuse_disclosed", 2,
       r"(?:(?:hes|shes|fela|felas|my (?:mums|moms|dads|husbands|wifes|partners|boyfriends|girlfriends|stepdads|"
       r"stepmums|mum|stepmum|stepmother|nan|fela|flatmate|landlord|manager)) SUBJ_GAP"
       r"(?:ABUSE_ACT) (?:me|my head|my face)(?! (?:again )?(?:at|to|up|into|of|about it|down|out|over|back|off|"
       r"in(?! (?:the|my) (?:face|head|stomach|ribs|chest|back|mouth|eye|throat|neck))|"
       r"with (?:a |an |the |some |this |that |more )?(?:\w+ )?{NOT_A_BLOW}s?)\b)|"
       r"(?:he|she|hes|shes|fela|felas|my \w+) SUBJ_GAP(?:knocks|knocked|knocking|kicks|kicked) me (?:about|around)|"
       r"(?:he|she|hes|shes) SUBJ_GAP(?:slamed|smashed|banged) my head|"
       r"(?:he|she|hes|shes|my \w+) SUBJ_GAP(?:dragged|draged) me (?:by (?:my|the) hair|across the|down the stairs|"
       r"out of bed by)|"
       r"(?:he|she|hes|shes|my (?:partner|husband|wife|boyfriend|girlfriend|dad|mum|mom|father|mother|stepdad|ex|"
       r"fela)) SUBJ_GAP(?:threw|throws|thrown) (?:hot (?:tea|cofee|water)|boiling water|a plate|plates|a glas|a chair|"
       r"a botle|a knife|a pan|bleach|acid|a mug) (?:at me|in my face)|"
       r"(?:her|his|their) (?:husband|boyfriend|partner|father|dad|stepdad|stepfather|mother|mum|wife|girlfriend|"
       r"uncle|fela) SUBJ_GAP(?:beats|beat|hits|hit|hurts|rapes|abuses|is beating|is hiting) (?:her|him|them)\b"
       r"(?! (?:up|at|in|to|by)\b))"
       r"(?!.*\b(?:pregnant|weks|in (?:my|her|his|their) sleep|al night|at (?:tenis|chess|fifa|golf|pol|darts|cards|"
       r"games|pong|badminton|squash)|bjj|judo|wrestling|sparing|training|tickle|tickling|pilow fight)\b)",
       negation="before"),
    # farewells that say what they are (round 10; C-SSRS item 6), after distress: "final goodbyes sent", "sent
    # the goodbye vid to everyone", a note apologising to the train driver, "like it was the last time, cause it
    # is" (the last two also alone: nobody writes them otherwise)
    _r("t3.preparatory", 3,
       r"(?:sent|posted|recorded|wrote|writen) {G2}(?:final|last) (?:godbyes|godbye)(?: to (?:everyone|everybody|al|"
       r"the world|you al|my friends|the group|the group chat))?$|^(?:my )?(?:final|last) godbyes (?:sent|posted)|"
       r"(?:sent|posted|recorded) {G2}godbye (?:video|vid|mesage|mesages|leter|note|text|post) to (?:everyone|"
       r"everybody|al|the world|you al|my friends|my family|the group|the group chat)|"
       r"wrote to the coroner(?! about)",
       requires="distress", negation="before", past=_PAST),
    _r("t3.preparatory", 3,
       r"(?:note|leter) (?:apologising|apologizing|saying sory) to (?:the )?(?:train driver|person who finds me|"
       r"whoever finds me)|(?:like|as if) (?:it was|its|it is) the last time (?:cause|because|cos|coz|cuz|bc|as) "
       r"it (?:is|wil be)$",
       negation="before", past=_PAST),
    # a dose taken on purpose (round 10; the act under way): "just took loads of stuff at the party on purpose",
    # someone else overdosing now ("my mate is 0d1ng in the toilets")
    _r("t3.in_progress", 3,
       r"(?:took|taken|swalowed|drank|downed|necked|injected) (?:al|al of|al the|the whole|the lot|loads of|a load of|"
       r"every|a handful of|a bunch of|everything) {G3}(?:pils|tablets|stuf|gear|drugs|{PILLS}|botle|of them|"
       r"i had|in the cupboard) {G4}(?:on purpose|deliberately|intentionaly)",
       negation="before", past=_PAST),
    _r("t3.other_in_danger", 3,
       r"(?:he|she|they|hes|shes|theyre|my \w+) {G1}(?:is |are )?(?:oding|overdosing)(?:$| (?:on (?:{PILLS}|"
       r"something|drugs|heroin|fentanyl|gear|pils)|in the \w+|rn|right now|now)\b)",
       negation="before", past=_PAST),
    # a method weighed after distress (round 10; C-SSRS item 3): fasting until the heart gives out, fuel and
    # matches
    _r("t3.method", 3,
       r"(?:stop|stoping|stoped|quit|not) (?:eating|drinking)(?: (?:and|or) (?:eating|drinking))? {G4}(?:until|til|till) "
       r"my heart (?:gives out|gives up|stops)|"
       r"(?:kerosene|petrol|gasoline|lighter fluid|paraffin) {G4}(?:matches|a match|lighter) {G4}(?:myself|on me|"
       r"over me)|(?:pour|pouring|douse|dousing) {G4}(?:kerosene|petrol|gasoline|lighter fluid|paraffin) (?:on|over) "
       r"(?:myself|me)",
       requires="distress", negation="before", past=_PAST),
    # means at hand said in new words (round 10; a means bought "not for cooking" is in _parts.py): the rope
    # tied to the banister (to a beam or the rafters after distress), tablets lined up, enough tablets saved
    _r("t3.means_at_hand", 3,
       r"rope {G3}tied (?:to|round|around) (?:the |a )?(?:banister|baniser|lof hatch|curtain rail|door handle)"
       r"(?! for (?:a |the )?(?:swing|hamock|dog|tent|washing|boxing bag|punch bag|punching bag|puley))|"
       r"enough {G3}{PILLS} to (?:do (?:it|what i)|end (?:it|things|my life)|not wake up|die)",
       negation="before", past=_PAST),
    _r("t3.means_at_hand", 3,
       r"rope {G3}tied (?:to|round|around) (?:the |a )?(?:beam|rafter|rafters)(?!.*\b(?:swing|hamock|climbing|"
       r"aerial|yoga|gym|boxing|punch|puley|tent|washing)\b)|"
       r"(?:{PILLS}|bottle of {PILLS}) (?:ive|i have|i|ive got) (?:lined up|laid out|counted out)"
       r"(?! (?:for the wek|for the month|into|in (?:the|my) (?:organiser|organizer|dosete|pil box)))",
       requires="distress", negation="before", past=_PAST),
    # preparing for after oneself (round 10; C-SSRS item 6): birthday cards written years ahead, everyone called
    # to hear their voices one more time, things promised to others after risk
    _r("t3.preparatory", 3,
       r"(?:birthday|christmas) cards for (?:the next|every year for the next) (?:[0-9]+|ten|twenty|five) years|"
       r"(?:caling|caled|ringing|rang|phoning|phoned|texting) (?:everyone|everybody|al my \w+|my \w+) {G6}hear "
       r"(?:their|his|her|your) voices? (?:one )?(?:more|last) time",
       requires="distress", fallback=("t2.farewell", 2), fallback_requires="distress", negation="before", past=_PAST),
    _r("t3.preparatory", 3,
       r"(?:he|she|they) can (?:have|keep) my (?:bike|rom|car|games|guitar|things|stuf|clothes|phone|console|pc|"
       r"dog|cat)\b(?! (?:while|when i am away|til|until|for the wekend|for a)\b)",
       requires="risk", fallback=("t2.preparatory_after_distress", 2), fallback_requires="distress",
       negation="before", past=_PAST),
    # intent said as a decision or as another's way (round 10): "I have decided to die", "I've decided I'm going to
    # die tonight" (not "to die my hair"), "I'm going to go the same way as him" after earlier risk
    _r("t3.intent_self_harm", 3,
       r"(?:{I}) {G1}decided (?:to die|(?:that )?(?:i|im) (?:want to|wil|am going to|going to|m going to) die)"
       r"(?! (?:on|in) (?:this|that) hil)(?! (?:my|her|his|the|it|them) )",
       negation="before", past=_PAST),
    _r("t3.intent_self_harm", 3,
       r"(?:going to|gona|wil|il) (?:go|end up going) the same way (?:as )?(?:him|her|them|my \w+|he did|she did)|"
       r"(?:going to|gona|wil|il) do what (?:my \w+|he|she) did(?! (?:and|to|with|at|for|in|when|last)\b)",
       requires="risk", fallback=("t2.ambiguous_intent", 2), fallback_requires="distress", negation="before"),
    # wishes to be dead in more frames (round 10; C-SSRS item 1): not to have been saved, death welcomed, a killer
    # "doing me a favour", the sea wanted to take me, disappointment that the lorry missed, "better I die", God
    # asked to let me die, not minding dying, envy of the dead
    _r("t2.passive_wish", 2,
       r"wish (?:the \w+|they|he|she|someone|you|my \w+|the doctors|the paramedics) (?:hadnt|had not|didnt|did not|"
       r"never|wouldnt have) (?:pulled me out|saved me|found me|resuscitated me|revived me|brought me back|"
       r"got to me)(?! (?:a|an|the|my|some|your|his|her|their|one|two|at|in the game)\b)|"
       r"wish (?:i|id|i had) (?:never|not) (?:come round|woke up|woken up|survived|come to)(?: (?:after|from|in) "
       r"(?:the|that|my) \w+)?$|"
       r"(?:id|i would|i d|i ll|il) (?:welcome|wouldnt mind|not mind) (?:death|dying|it al ending)$|"
       r"(?:stabbed|shot|kiled|hit|ran over|ran me over|finished) me {G6}(?:theyd|they would|hed|he would|shed|"
       r"she would|itd|it would|youd|you would) be doing me a favou?r|"
       r"(?:wanted|want|wanting|wish) the (?:sea|water|river|waves|cold|snow|ocean|lake) to (?:just )?(?:take|swalow) me|"
       r"(?:nearly|almost) (?:hit|cliped|ran over|knocked|knocked down) me {G8}(?:disapointed|gutted|sad|upset) "
       r"(?:that )?(?:it|they|he|she) mised(?: me)?$|"
       r"better (?:if |that )?i (?:die|died|was dead|were dead)(?! (?:on|in) (?:this|that) hil| first| last)|"
       r"(?:asking|begging|praying|pray|ask|beg) {G1}(?:god|the lord|allah|jesus) (?:to )?(?:just )?let me die|"
       r"(?:wouldnt|would not) mind if i (?:died|didnt wake up|never woke up|was gone)(?! (?:of|laughing|from)\b)|"
       r"envy (?:the ones|those|people|the people|anyone|everyone) (?:who|that) (?:died|are dead|passed (?:away|on))",
       negation="before", past=_PAST),
)  # fmt: skip
