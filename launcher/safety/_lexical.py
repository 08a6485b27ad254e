"""The deterministic safety screen: every user message gets a crisis tier 0-3 before any agent runs.

Tiers (docs/coaching.md, SAFETY; docs/safety.md; rule sources in :mod:`launcher.safety._lexicon`):

- **3**: explicit intent, plan, means or timeline for self-harm; self-harm in progress; a medical
  emergency; imminent harm to others; a request for lethal-means information (heights, doses, weapons)
  after recent distress. The whole reply is replaced by :func:`crisis_response`.
- **2**: passive or non-specific ideation, recent self-harm, a past attempt, abuse disclosed, fear for
  one's safety. Coaching pauses: :func:`support_response` (reflect, ask directly, offer resources).
- **1**: distress or a risk topic mentioned (also a negated risk statement such as "I'm not
  suicidal"). Coaching continues; the tier is passed to the agents.
- **0**: nothing found.

Matching survives misspellings, spacing and leetspeak (:mod:`launcher.safety._normalize`); a negated
statement never reaches tier 3. A model may raise a tier, never lower it (:func:`combine_tiers`). The
``post_crisis_turns`` turns after a tier-3 event are screened at tier-2 sensitivity: the tier is at
least ``post_crisis_floor`` (coaching stays paused) and any tier-2 signal counts as tier 3
(``post_crisis_escalate``). That state lives in :class:`SafetyState`, one per session.

Results carry rule ids (``reasons``), never the user's text, so they are safe to log.

Example::

    state = SafetyState()
    result = screen("i w4nt to k1ll my self tonight", state)
    result.tier            # 3
    result.reasons         # ['t3.intent_self_harm', 't3.timeline', 't2.self_harm_mention']
    crisis_response("en-GB")   # Samaritans 116 123 ...
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ._compose import COMPOSED_IDS, composed_hits, qualified
from ._corroboration import corroborated as corroborates
from ._families import FAMILY_RULES
from ._lexicon import MEANS_WORDS, NEGATORS, PAST_MARKERS, QUESTION_AUX, Rule
from ._lexicon import RULES as _BASE_RULES
from ._negation import negated_before, neutral_mask
from ._normalize import Clause, normalize
from ._responses import (
    DEFAULT_RESOURCES,
    CrisisResource,
    LocaleResources,
    crisis_text,
    resources_for,
    support_text,
)

__all__ = [
    "DEFAULT_RESOURCES",
    "RULE_IDS",
    "CrisisResource",
    "ExtraRule",
    "LocaleResources",
    "SafetyConfig",
    "SafetyState",
    "ScreenResult",
    "combine_tiers",
    "crisis_response",
    "resources_for",
    "screen",
    "support_response",
]

#: The built-in rules: the first lexicon, then the families of :mod:`launcher.safety._families`.
RULES: tuple[Rule, ...] = _BASE_RULES + FAMILY_RULES

#: Every rule id the screen can report (plus the synthetic ids below).
RULE_IDS: frozenset[str] = frozenset(
    {r.id for r in RULES}
    | {r.fallback[0] for r in RULES if r.fallback}
    | {r.past[0] for r in RULES if r.past}
    | {r.question[0] for r in RULES if r.question}
    | {"t1.negated_risk", "post_crisis.floor", "post_crisis.escalated", "model.raised", "sem.negated"}
    | COMPOSED_IDS
)


class ExtraRule(BaseModel):
    """A configured rule, in the lexicon's template syntax (see :mod:`launcher.safety._lexicon`:
    normal spelling, ``{I}``/``{INTENT}``/``{ACT_SELF}``... vocabularies, ``{G2}`` gaps).

    Example (TOML)::

        [[safety.extra_rules]]
        id = "t3.local_slang"
        tier = 3
        template = "{I} {G2}{INTENT} {G2}(?:yeet myself)"
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^t[0-3]\.[a-z0-9_]{1,60}$")
    tier: int = Field(ge=0, le=3)
    template: str = Field(min_length=1, max_length=4000)
    negation: Literal["before", "inner", "none"] = "inner"
    requires: Literal["distress", "risk", "means"] | None = None

    @model_validator(mode="after")
    def _check(self) -> ExtraRule:
        if not self.id.startswith(f"t{self.tier}."):
            raise ValueError(f"id {self.id!r} must start with 't{self.tier}.' for tier {self.tier}")
        if self.id in RULE_IDS:
            raise ValueError(f"id {self.id!r} is a built-in rule id; choose a new one")
        try:
            self.compile()
        except re.error as exc:
            raise ValueError(f"template is not a valid pattern: {exc}") from None
        return self

    def compile(self) -> Rule:
        return Rule(self.id, self.tier, self.template, negation=self.negation, requires=self.requires)


def default_encoder_threads() -> int:
    """1 on a machine of fewer than 4 CPUs (the other core is busy with the agents and the model
    server), else 2 (see :attr:`SafetyConfig.encoder_threads`)."""
    return 2 if (os.cpu_count() or 1) >= 4 else 1


class SafetyConfig(BaseModel):
    """The ``[safety]`` section of ``coach.toml``.

    Attributes:
        locale: the user's locale for resources (``"en-US"``, ``"en-GB"``, ``"IE"``...).
        resources: region code -> :class:`LocaleResources`; merged over :data:`DEFAULT_RESOURCES`
            (a ``"default"`` entry is always present).
        distress_window_turns: how many earlier turns count as "recent" for the rules that need
            distress (lethal-means requests) or risk (means, timeline, farewell). Default 5 (proposal).
        post_crisis_turns: turns after a tier-3 event screened at tier-2 sensitivity (docs/coaching.md: 3).
        post_crisis_floor: lowest tier during that window (2 = coaching stays paused; proposal).
        post_crisis_escalate: during that window a tier-2 signal gives tier 3 (proposal).
        semantic: run the semantic layer (:mod:`launcher.safety._semantic`) after the rules (default on;
            off only for measuring the rules alone).
        extra_rules: site-specific rules (:class:`ExtraRule`), e.g. local slang or another language.
        disabled_rules: rule ids switched off (must be known ids; see :data:`RULE_IDS`).
        encoder_threads: BLAS threads for the semantic layer's encoder, 1-8. Default 1 on a machine of
            fewer than 4 CPUs, else 2: measured on a quiet 2-core machine (docs/safety.md, round 6), 2
            threads cut the layer's p95 from about 19 to 13 ms, but on a busy 2-core machine OpenBLAS's
            second thread waits for a CPU (one product took 24 ms with 2 threads, 0.34 ms with 1).
    """

    model_config = ConfigDict(extra="forbid")

    locale: str = "en-US"
    resources: dict[str, LocaleResources] = Field(default_factory=dict)
    distress_window_turns: int = Field(default=5, ge=0, le=100)
    post_crisis_turns: int = Field(default=3, ge=0, le=100)
    post_crisis_floor: int = Field(default=2, ge=0, le=3)
    post_crisis_escalate: bool = True
    semantic: bool = True
    extra_rules: list[ExtraRule] = Field(default_factory=list, max_length=200)
    disabled_rules: list[str] = Field(default_factory=list)
    encoder_threads: int = Field(default_factory=default_encoder_threads, ge=1, le=8)
    _compiled: tuple[Rule, ...] | None = PrivateAttr(default=None)
    _any: re.Pattern[str] | None = PrivateAttr(default=None)

    @field_validator("disabled_rules")
    @classmethod
    def _known_rules(cls, value: list[str], info: ValidationInfo) -> list[str]:
        extra = {r.id for r in info.data.get("extra_rules", [])}
        unknown = sorted(set(value) - RULE_IDS - extra)
        if unknown:
            raise ValueError(f"unknown rule ids {unknown}; known ids: {sorted(RULE_IDS | extra)}")
        return value

    def rules(self) -> tuple[Rule, ...]:
        """The built-in :data:`~launcher.safety._lexicon.RULES` followed by ``extra_rules`` (compiled once)."""
        if self._compiled is None:
            self._compiled = RULES + tuple(r.compile() for r in self.extra_rules)
        return self._compiled

    def any_rule(self) -> re.Pattern[str]:
        """One pattern that matches where any of :meth:`rules` does (their alternation, compiled once):
        a clause it does not match needs no rule-by-rule scan."""
        if self._any is None:
            self._any = _alternation(self.rules())
        return self._any

    def resource_table(self) -> dict[str, LocaleResources]:
        """:data:`DEFAULT_RESOURCES` with this config's ``resources`` laid over it."""
        return {
            **DEFAULT_RESOURCES,
            **{k if k == "default" else k.upper(): v for k, v in self.resources.items()},
        }


def _alternation(rules: tuple[Rule, ...]) -> re.Pattern[str]:
    parts = []
    for r in rules:
        flags = "".join(
            c for f, c in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s")) if r.regex.flags & f
        )
        parts.append(f"(?{flags}:{r.regex.pattern})" if flags else f"(?:{r.regex.pattern})")
    return re.compile("|".join(parts))


class SafetyState(BaseModel):
    """Per-session screen state (serialisable; keep one per session, pass it to every :func:`screen`).

    Attributes:
        turn: number of messages screened so far.
        last_distress_turn / last_risk_turn: turn number of the last tier >= 1 / >= 2 signal (0 = none).
        last_rule_signal_turn: turn number of the last tier >= 1 signal of the rules (lexicon and
            composition), not of the semantic layer alone (round 7: one noisy semantic reading does not
            make the next one a crisis).
    """

    turn: int = 0
    last_distress_turn: int = 0
    last_risk_turn: int = 0
    last_rule_signal_turn: int = 0
    crisis_turns_left: int = 0


class ScreenResult(BaseModel):
    """Outcome of screening one message.

    Attributes:
        tier: 0-3 (see the module docstring).
        reasons: rule ids that fired, highest tier first; never the user's text.
        negated: rule ids whose match was cancelled by a negation ("I'm not suicidal").
        distress: whether this message showed distress (feeds later lethal-means checks).
        post_crisis: whether the message fell inside a post-crisis window.
        model_raised: whether a model raised the tier (:func:`combine_tiers`).
    """

    model_config = ConfigDict(frozen=True)

    tier: int = Field(ge=0, le=3)
    reasons: list[str] = Field(default_factory=list)
    negated: list[str] = Field(default_factory=list)
    distress: bool = False
    post_crisis: bool = False
    model_raised: bool = False

    @property
    def action(self) -> Literal["coach", "pause", "crisis"]:
        """``"crisis"`` at tier 3, ``"pause"`` at tier 2, else ``"coach"``."""
        return "crisis" if self.tier >= 3 else "pause" if self.tier == 2 else "coach"


def _is_negated(rule: Rule, clause: Clause, start: int, end: int, neutral: set[int]) -> bool:
    if rule.negation == "none":
        return False
    if negated_before(clause, start, neutral):
        return True
    if rule.negation == "inner":
        first = clause.text[:start].count(" ")
        last = first + clause.text[start:end].count(" ")
        return any(clause.tokens[i] in NEGATORS and i not in neutral for i in range(first, last + 1))
    return False


def _is_question(clause: Clause, start: int) -> bool:
    first = clause.text[:start].count(" ")
    toks = clause.tokens
    if first > 0 and toks[first - 1] in QUESTION_AUX:
        return True
    return first > 1 and toks[first - 1] in ("i", "im") and toks[first - 2] in QUESTION_AUX


# Someone else's question or worry about the user's risk, in collapsed spelling ("my therapist asked if
# i have suicidal thoughts", "my sister thinks i'm suicidal"): reported speech, not a disclosure, unless
# the user says yes.
_REPORTED = re.compile(
    r"\b(?:asked|asks|asking|ask|wondered|wondering|wonders|checked|checking) (?:me |us )?(?:if|whether)\b|"
    r"\b(?:asked|asks|asking|screned|screning|checked|checking) (?:me |us )?(?:about|for)\b|"
    r"(?<!\bi )(?<!\bim )(?<!\bam )\b(?:thinks|woried|wories|asumes|asumed|convinced|believes|"
    r"is scared|is afraid)(?: that)? (?:(?:im|i am|i|ive|i have|i was|i wil|il|i might) )?$"
)
# The writer's own question to themselves ("i keep wondering if i should just end it all"): not reported.
_OWN_QUESTION = re.compile(
    r"\b(?:i|im|ive)\b(?: \w+){0,2} (?:wonder|wondering|wondered|ask|asking|asked) (?:myself )?(?:if|whether)\b"
)
_AFFIRMED = re.compile(r"\b(?:yes|yeah|yep|i said i do|i told (?:her|him|them) i do|and i (?:am|do|have))\b")


def _reported(clause: Clause, start: int, clauses: Sequence[Clause]) -> bool:
    """Whether the match at ``start`` is inside someone else's question or worry about the user, with no
    affirmative answer anywhere in the message."""
    before = clause.text[:start]
    if _REPORTED.search(before) is None or _OWN_QUESTION.search(before) is not None:
        return False
    return not any(_AFFIRMED.search(c.text) for c in clauses)


def _recent(state: SafetyState | None, last: int, window: int) -> bool:
    return state is not None and last > 0 and state.turn - last < window


#: Semantic families that, after an earlier risk signal in the session, make a message tier 3 even when
#: the layer alone is only confident enough for tier 2: means, preparation, farewells, timelines and the
#: act itself (docs/coaching.md: earlier ideation plus later means, preparation or a timeline is a crisis).
_ACTION_FAMILIES = frozenset(
    {"means", "preparatory", "timeline", "plan", "method", "intent", "in_progress", "lethal_means_request"}
)


_TIER3_FAMILIES = _ACTION_FAMILIES | {"other_in_danger", "medical_emergency"}
#: Rule-id prefixes of the semantic layer's hits: its tier-1 verdict is not the distress that makes a
#: bare conditional act ("once the kids are asleep, I'm gone") tier 3; its tier-2 verdict (risk) is.
_MODEL_IDS = ("sem.", "sem3.", "ctx.", "sem2.")
#: Rule-id prefix of a pause read near the tier-2 bar (round 11): a risk family at the semantic layer's
#: pause bar or more (``SemanticVerdict.paused``) gives tier 2 when nothing else gave tier 2 or more, and only
#: that: it composes with nothing and promotes nothing to tier 3; in the post-crisis window it is applied
#: after that window's rules (a tier below 2 there becomes 2; it is never escalated to 3).
_PAUSE = "sem2."
#: After earlier risk in the session, an action family at this share of the tier-2 bar is tier 3.
_CTX_SHARE = 0.8
#: A tier-3 family named at tier 2 needs a score this far from the tier-2 bar to the tier-3 bar, and a
#: corroborating word, to be tier 3 (``sem3.<family>``).
_SEM3_SHARE = 0.5


class Context(NamedTuple):
    """What the semantic layer's verdict is read with: risk (tier >= 2) or distress (tier >= 1) in the
    session's recent turns, a corroborating word (:func:`._corroboration.corroborated`) in the message, and the
    message's ``clauses``, read for a qualifier (:func:`._compose.qualified`: a means, a place to fall
    from, a plan) only when the verdict needs one."""

    earlier_risk: bool
    earlier_distress: bool
    corroborated: bool
    clauses: Sequence[Clause]
    earlier_rule_signal: bool


def _semantic_hits(
    text: str, hits: list[tuple[str, int, bool]], negated: list[str], ctx: Context, threads: int = 1
) -> list[tuple[str, int, bool]]:
    """The semantic layer's hits for ``text`` (rule ids ``sem.<family>``; ``ctx.<family>`` when the
    session's earlier risk or distress makes an action family tier 3; ``sem3.<family>`` when the
    message itself corroborates a tier-3 family).

    - Its own verdict stands (tier 2, or tier 3 when it is confident and the tier-3 families hold most
      of the risk: see :mod:`._semantic`), except that
    - after earlier risk in the session, an action family (means, preparation, a timeline, the act...)
      at :data:`_CTX_SHARE` of its tier-2 bar or more is tier 3 (``ctx.<family>``): a counsellor reads
      "so that's everything sorted now" or "picked up the tablets on the way home" differently after "I
      can't do this anymore" (other families do not: "she won't pick up her phone" stays ordinary);
      after earlier distress only (round 5), the same holds for an action family at its tier-2 bar;
    - a tier-3 family at tier 2 is tier 3 (``sem3.<family>``) when the message names a means, a place
      to fall from or a plan (:func:`._compose.qualified`; round 5), or when its tier-3 score is at least
      halfway from 0.5 to the tier-3 bar (round 7; before, its risk score halfway from the tier-2 bar) and
      the message anchors the act in time or place
      (:mod:`._corroboration`: a time, a place, or from round 9 the act's vocabulary, a means, a farewell or
      a danger sign): "the plan is sunday, the bridge" is a plan, not a thought;
    - a one-sentence message whose risk phrases the rules found negated ("I'm not going to kill
      myself") stays below tier 2 (``sem.negated``): negation never reaches tier 3 (docs/coaching.md,
      SAFETY), and an embedding does not see "not". In a longer message the negated phrase may be
      another sentence than the risky one, so the verdict stands;
    - a risk family read below the tier-2 bar but at the layer's pause bar or more (round 11) is returned
      as ``sem2.<family>`` at tier 2 (not for a negated one-sentence message); :func:`screen` applies it
      last, only when nothing else gave tier 2 or more, after the post-crisis window's rules (never
      escalated to 3 there).
    """
    from ._segments import pieces
    from ._semantic import semantic_layer

    layer = semantic_layer()
    layer.encoder.set_blas_threads(threads)
    lexical_risk = any(t >= 2 for _, t, _ in hits)
    single_negated = any(r.startswith(("t2.", "t3.")) for r in negated) and len(pieces(text)) == 1
    verdict = layer.assess(text)
    tier = verdict.tier
    action = verdict.family in _ACTION_FAMILIES
    if tier == 1 and action and ctx.earlier_risk and verdict.score >= _CTX_SHARE * layer.tier2:
        tier = 2
    if tier < 2:
        if verdict.paused and not single_negated:
            return [(f"{_PAUSE}{verdict.family}", 2, verdict.family not in _NOT_OWN_RISK)]
        return []
    if not lexical_risk and single_negated:
        return [("sem.negated", 1, True)]
    if _told_as_history(ctx.clauses):
        # "years ago i took 30 paracetamol": a past attempt is tier 2, whatever the context (round 6)
        return [(f"sem.{verdict.family}", 2, verdict.family not in _NOT_OWN_RISK)]
    # halfway from the least a tier-3 score can be (0.5: a majority of tier-3 mass) to the tier-3 bar
    sem3_ok = verdict.score3 >= 0.5 + _SEM3_SHARE * (layer.tier3 - 0.5)
    if (
        action
        and (ctx.earlier_risk or (ctx.earlier_distress and verdict.tier >= 2))
        and ctx.earlier_rule_signal
    ):
        return [(f"ctx.{verdict.family}", 3, True), (f"sem.{verdict.family}", tier, True)]
    if (
        tier == 2
        and verdict.family in _TIER3_FAMILIES
        and ((ctx.corroborated and sem3_ok) or qualified(ctx.clauses) or (lexical_risk and action))
    ):
        return [(f"sem3.{verdict.family}", 3, True), (f"sem.{verdict.family}", tier, True)]
    # someone else's emergency is not the user's own risk: it does not arm the context rules for the
    # user's later turns (round 6: "everybody who uses has some concern of overdosing" then "I got some
    # of that already from the needle exchange")
    return [(f"sem.{verdict.family}", tier, verdict.family not in _NOT_OWN_RISK)]


#: Words that put an act in the present although the message also tells history.
_NOW = re.compile(r"\b(?:now|just|right now|tonight|today|again|an hour ago|this morning|currently)\b")


def _told_as_history(clauses: Sequence[Clause]) -> bool:
    """A message that tells the remote past (:data:`._lexicon.PAST_MARKERS`) and nothing of now: the
    embedding does not see the tense, so its tier-3 verdict there is capped at tier 2."""
    return any(PAST_MARKERS.search(c.text) for c in clauses) and not any(_NOW.search(c.text) for c in clauses)


#: Semantic families that are someone else's emergency, not the writer's own risk.
_NOT_OWN_RISK = frozenset({"medical_emergency", "other_in_danger"})


def screen(text: str, state: SafetyState | None = None, config: SafetyConfig | None = None) -> ScreenResult:
    """Screen one user message; updates ``state`` (if given) in place.

    Args:
        text: the user's message (any string; never logged).
        state: the session's :class:`SafetyState`; without it the message is screened alone.
        config: thresholds and switches; defaults to ``SafetyConfig()``.

    Returns:
        A :class:`ScreenResult`. Never raises on any string input.
    """
    cfg = config or SafetyConfig()
    disabled = set(cfg.disabled_rules)
    clauses = normalize(text)
    means_now = any(MEANS_WORDS.search(c.text) for c in clauses)
    hits, pending, negated = _rule_hits(clauses, cfg, disabled)
    window = cfg.distress_window_turns
    earlier_risk = _recent(state, state.last_risk_turn if state else 0, window)
    earlier_distress = _recent(state, state.last_distress_turn if state else 0, window)
    earlier_rule_signal = _recent(state, state.last_rule_signal_turn if state else 0, window)
    if cfg.semantic and max((t for _, t, _ in hits), default=0) < 3:
        corroborated = means_now or corroborates(clauses)
        sem = _semantic_hits(
            text,
            hits,
            negated,
            Context(earlier_risk, earlier_distress, corroborated, clauses, earlier_rule_signal),
            cfg.encoder_threads,
        )
        pause = [h for h in sem if h[0].startswith(_PAUSE)]
        hits.extend(h for h in sem if not h[0].startswith(_PAUSE))
    else:
        pause = []
    if max((t for _, t, _ in hits), default=0) < 3:
        composed = composed_hits(
            clauses,
            [rid for rid, _, _ in hits],
            negated,
            risk_now=any(t >= 2 for _, t, _ in hits),
            earlier_risk=earlier_risk,
            distress=earlier_distress
            or any(d and (t >= 2 or (t >= 1 and not rid.startswith(_MODEL_IDS))) for rid, t, d in hits),
        )
        hits.extend(h for h in composed if h[0] not in disabled)
    distress_now = any(d and t >= 1 for _, t, d in hits) or bool(negated)
    risk_now = any(d and t >= 2 for _, t, d in hits)
    distress = distress_now or _recent(state, state.last_distress_turn if state else 0, window)
    risk = risk_now or _recent(state, state.last_risk_turn if state else 0, window)
    hits.extend(_pending_hits(pending, disabled, means_now=means_now, distress=distress, risk=risk))
    if negated and not any(t >= 2 for _, t, _ in hits) and any(r.startswith(("t2.", "t3.")) for r in negated):
        hits.append(("t1.negated_risk", 1, True))
    post_crisis = state is not None and state.crisis_turns_left > 0
    # the pause reading counts only when nothing else gave tier 2 or more; then it arms the context rules
    # for later turns as a tier-2 verdict of its family does (someone else's emergency does not)
    pause = pause if max((t for _, t, _ in hits), default=0) < 2 else []
    if any(d for _, _, d in pause):
        distress_now = risk_now = True
    tier = max((t for _, t, _ in hits), default=0)
    reasons = list(dict.fromkeys(rid for rid, _, _ in sorted(hits, key=lambda h: -h[1])))
    if post_crisis:
        tier = _post_crisis_tier(tier, reasons, cfg)
    if pause and tier < 2:  # after the post-crisis rules: a pause, never escalated to 3 there
        tier = 2
        reasons.append(pause[0][0])
    if state is not None:
        rule_signal = any(d and t >= 1 and not rid.startswith(_MODEL_IDS) for rid, t, d in hits)
        _advance(state, cfg, tier, distress_now=distress_now, risk_now=risk_now, rule_signal=rule_signal)
    return ScreenResult(
        tier=tier, reasons=reasons, negated=negated, distress=distress_now, post_crisis=post_crisis
    )


#: A rule hit: (rule id, tier, whether it counts as distress for the conversation context).
_Hit = tuple[str, int, bool]


def _rule_hits(
    clauses: list[Clause], cfg: SafetyConfig, disabled: set[str]
) -> tuple[list[_Hit], list[tuple[Rule, str, int]], list[str]]:
    """The lexicon over every clause: (hits, rules waiting on context, negated rule ids)."""
    hits: list[_Hit] = []
    pending: list[tuple[Rule, str, int]] = []
    negated: list[str] = []
    any_rule = cfg.any_rule()
    for clause in clauses:
        if any_rule.search(clause.text) is None:
            continue
        neutral = neutral_mask(clause.tokens)
        past = PAST_MARKERS.search(clause.text) is not None
        for rule in cfg.rules():
            if rule.id in disabled:
                continue
            for m in rule.regex.finditer(clause.text):
                if _is_negated(rule, clause, m.start(), m.end(), neutral) or (
                    rule.tier >= 2 and _reported(clause, m.start(), clauses)
                ):
                    if rule.id not in negated:
                        negated.append(rule.id)
                    continue
                rid, tier = rule.past if (rule.past and past) else (rule.id, rule.tier)
                if rule.question and _is_question(clause, m.start()) and rule.question[1] < tier:
                    rid, tier = rule.question
                if rule.requires:
                    pending.append((rule, rid, tier))
                else:
                    hits.append((rid, tier, rule.distress))
                break
    return hits, pending, negated


def _pending_hits(
    pending: list[tuple[Rule, str, int]], disabled: set[str], *, means_now: bool, distress: bool, risk: bool
) -> list[_Hit]:
    """Rules that count only in context (means in the message, earlier risk or distress), else their
    fallback."""
    out: list[_Hit] = []
    for rule, rid, tier in pending:
        if rule.requires == "means":
            met = means_now
        else:
            met = risk if rule.requires == "risk" else (distress or risk)
        if met:
            out.append((rid, tier, rule.distress))
        elif (
            rule.fallback
            and rule.fallback[0] not in disabled
            and (rule.fallback_requires is None or distress or risk)
        ):
            out.append((rule.fallback[0], rule.fallback[1], False))
    return out


def _post_crisis_tier(tier: int, reasons: list[str], cfg: SafetyConfig) -> int:
    """The post-crisis window: a tier-2 signal counts as 3, and the tier is at least the floor
    (``reasons`` gains the rule ids)."""
    if cfg.post_crisis_escalate and tier == 2:
        tier = 3
        reasons.insert(0, "post_crisis.escalated")
    if tier < cfg.post_crisis_floor:
        tier = cfg.post_crisis_floor
        reasons.append("post_crisis.floor")
    return tier


def _advance(
    state: SafetyState, cfg: SafetyConfig, tier: int, *, distress_now: bool, risk_now: bool, rule_signal: bool
) -> None:
    """Move the session's state past this message."""
    state.turn += 1
    if rule_signal:
        state.last_rule_signal_turn = state.turn
    if distress_now:
        state.last_distress_turn = state.turn
    if risk_now:
        state.last_risk_turn = state.turn
    if tier >= 3:
        state.crisis_turns_left = cfg.post_crisis_turns
    elif state.crisis_turns_left > 0:
        state.crisis_turns_left -= 1


def combine_tiers(
    result: ScreenResult,
    model_tier: int | None,
    *,
    state: SafetyState | None = None,
    config: SafetyConfig | None = None,
) -> ScreenResult:
    """Merge a model's tier into the screen's: the tier can only go up.

    Args:
        result: the deterministic screen's result for the message.
        model_tier: a model's assessment 0-3, or None (no assessment). Out-of-range values are clamped.
        state: if given and the model raised the tier to 3, the post-crisis window starts now.

    Returns:
        ``result`` unchanged when the model does not raise the tier; else a copy with the higher tier,
        ``model_raised=True`` and ``"model.raised"`` appended to ``reasons``.
    """
    if model_tier is None:
        return result
    model_tier = min(3, max(0, int(model_tier)))
    if model_tier <= result.tier:
        return result
    if state is not None and model_tier >= 3:
        state.crisis_turns_left = (config or SafetyConfig()).post_crisis_turns
    return result.model_copy(
        update={"tier": model_tier, "reasons": [*result.reasons, "model.raised"], "model_raised": True}
    )


def crisis_response(locale: str = "en-US", resources: Mapping[str, LocaleResources] | None = None) -> str:
    """Tier-3 reply (replaces the whole reply): acknowledgement, contact a crisis line or emergency
    services now, the locale's resources (``resources`` table or :data:`DEFAULT_RESOURCES`, falling back
    to its ``"default"`` entry), an invitation to keep talking. No coaching content, no method details."""
    return crisis_text(locale, resources)


def support_response(
    locale: str = "en-US",
    reasons: Sequence[str] = (),
    resources: Mapping[str, LocaleResources] | None = None,
) -> str:
    """Tier-2 reply: coaching paused; reflect, ask directly (about safety for abuse reasons, about
    suicidal thoughts otherwise), offer the locale's resources, invite the user to keep talking."""
    return support_text(locale, reasons, resources)
