"""Accepting an agent's risk assessment as a raise of the screen's tier ("a model may raise a tier,
never lower it").

:func:`judge_raise` decides; :func:`apply_raise` merges an accepted decision into a :class:`ScreenResult`
through :func:`combine_tiers` (the one merge: the tier only goes up, and a raise to 3 starts the
post-crisis window in the session's :class:`SafetyState`).

A raise is accepted only when all of these hold, checked in this order (the first that fails is the
refusal reason):

1. the assessment's tier is above the current tier (``not_higher``);
2. the family is consistent with the tier (``family_tier_mismatch``): ``none`` and ``distress`` never
   raise past 1; every other family has a tier floor (:data:`FAMILY_TIER_FLOOR`: ideation, self-harm and
   abuse 2; method, intent, plan, means, preparatory acts, timeline, in progress, someone else in danger,
   a lethal-means request and a medical emergency 3) and the tier must be at least that floor;
3. there is a quote (``quote_missing``) of at least 2 words, unless it is the whole message
   (``quote_too_short``);
4. the quote occurs in the message, at word boundaries, after both are normalised (Unicode NFKC,
   casefold, typographic apostrophes and quotation marks folded to ASCII, whitespace collapsed,
   punctuation stripped at the ends) (``quote_not_in_message``);
5. :func:`_quote_supports` accepts the quote as evidence of that family at that tier
   (``quote_not_supporting``).

Decisions carry rule ids only (``model.coach.raised_t3``, ``model.family.plan``,
``model.stability.refused_quote_not_in_message``), never the message or the quote: safe to log.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._lexical import SafetyConfig, SafetyState, ScreenResult, combine_tiers, screen

__all__ = ["FAMILY_TIER_FLOOR", "REFUSALS", "RaiseDecision", "apply_raise", "judge_raise"]

#: Lowest tier each risk family stands for (``none``/``distress``: the highest tier they may raise to).
FAMILY_TIER_FLOOR: dict[str, int] = {
    "none": 1,
    "distress": 1,
    "passive_ideation": 2,
    "active_ideation": 2,
    "self_harm": 2,
    "abuse": 2,
    "method": 3,
    "intent": 3,
    "plan": 3,
    "means": 3,
    "preparatory": 3,
    "timeline": 3,
    "in_progress": 3,
    "other_in_danger": 3,
    "lethal_means_request": 3,
    "medical_emergency": 3,
}
_CEILING_FAMILIES = frozenset({"none", "distress"})

#: Every refusal reason (the id is ``model.<agent>.refused_<reason>``).
REFUSALS: tuple[str, ...] = (
    "invalid",
    "not_higher",
    "family_tier_mismatch",
    "quote_missing",
    "quote_too_short",
    "quote_not_in_message",
    "quote_not_supporting",
)

_MIN_QUOTE_WORDS = 2
_AGENT = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})


@dataclass(frozen=True)
class RaiseDecision:
    """The outcome of :func:`judge_raise`.

    Attributes:
        accepted: whether the tier is raised.
        tier: the tier after the decision (the assessment's when accepted, else the current tier).
        rules: rule ids; accepted: ``model.<agent>.raised_t<tier>`` and ``model.family.<family>``;
            refused: ``model.<agent>.refused_<reason>`` (see :data:`REFUSALS`).
        agent: the agent whose assessment it was.
        family: the assessment's risk family when accepted (``""`` when refused).
        reason: the refusal reason (``""`` when accepted).
    """

    accepted: bool
    tier: int
    rules: tuple[str, ...]
    agent: str
    family: str = ""
    reason: str = ""


def _normalise(text: str) -> str:
    text = " ".join(unicodedata.normalize("NFKC", text).casefold().translate(_FOLD).split())
    start, end = 0, len(text)
    while start < end and _is_edge(text[start]):
        start += 1
    while end > start and _is_edge(text[end - 1]):
        end -= 1
    return text[start:end]


def _is_edge(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch).startswith("P")


def _occurs(quote: str, message: str) -> bool:
    """Whether normalised ``quote`` occurs in normalised ``message`` with no letter or digit touching it."""
    start = message.find(quote)
    while start >= 0:
        end = start + len(quote)
        before = message[start - 1] if start > 0 else " "
        after = message[end] if end < len(message) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = message.find(quote, start + 1)
    return False


def _quote_supports(quote: str, family: str, tier: int, message: str = "") -> bool:
    """Whether the raise has risk evidence at all: the rules alone give the quote or the whole message
    tier >= 1, or the semantic layer's risk probability for the quote or the message is at least half
    its tier-2 threshold (the layer's own tier-1 bar). The bar is deliberately low - the agent's judgement
    is there to catch what the screen's high-precision thresholds miss, often from context ("I won't
    need my bike anymore" after "everything is ready") - but a message without any risk content ("I keep
    saying I'll start running", copied by a small model) cannot raise the tier."""
    from ._semantic import semantic_layer

    rules = SafetyConfig(semantic=False)
    texts = [t for t in (quote, message) if t]
    if any(screen(t, None, rules).tier >= 1 for t in texts):
        return True
    layer = semantic_layer()
    return any(layer.risk_score(t) >= layer.tier2 / 2 for t in texts)


def _field(assessment: Any, name: str) -> Any:
    if isinstance(assessment, Mapping):
        return assessment.get(name)
    return getattr(assessment, name, None)


def judge_raise(message: str, assessment: Any, current_tier: int, *, agent: str) -> RaiseDecision:
    """Decide whether ``agent``'s risk ``assessment`` of ``message`` raises the tier from ``current_tier``.

    Args:
        message: the user's message (never logged or returned).
        assessment: a ``blackboard.RiskAssessment``, or a mapping / object with ``tier``, ``family`` and
            ``quote``; None or a malformed one is refused (``invalid``).
        current_tier: the turn's tier so far (the screen's, or an earlier accepted raise).
        agent: the agent's name (``coach``, ``stability``), used in the rule ids.

    Returns:
        A :class:`RaiseDecision`; never raises for any assessment.
    """
    if not _AGENT.match(agent):
        raise ValueError(f"agent must be a lower-case name, got {agent!r}")
    current = min(3, max(0, int(current_tier)))

    def refused(reason: str) -> RaiseDecision:
        return RaiseDecision(False, current, (f"model.{agent}.refused_{reason}",), agent, reason=reason)

    tier, family, quote = (_field(assessment, n) for n in ("tier", "family", "quote"))
    if (
        isinstance(tier, bool)
        or not isinstance(tier, int)
        or not 0 <= tier <= 3
        or family not in FAMILY_TIER_FLOOR
        or not isinstance(quote, str)
    ):
        return refused("invalid")
    if tier <= current:
        return refused("not_higher")
    floor = FAMILY_TIER_FLOOR[family]
    if (tier > floor) if family in _CEILING_FAMILIES else (tier < floor):
        return refused("family_tier_mismatch")
    said, wrote = _normalise(message), _normalise(quote)
    if not wrote:
        return refused("quote_missing")
    if len(wrote.split()) < _MIN_QUOTE_WORDS and wrote != said:
        return refused("quote_too_short")
    if not _occurs(wrote, said):
        return refused("quote_not_in_message")
    if not _quote_supports(wrote, family, tier, message):
        return refused("quote_not_supporting")
    return RaiseDecision(
        True, tier, (f"model.{agent}.raised_t{tier}", f"model.family.{family}"), agent, family
    )


def apply_raise(
    result: ScreenResult,
    decision: RaiseDecision,
    *,
    state: SafetyState | None = None,
    config: SafetyConfig | None = None,
) -> ScreenResult:
    """``result`` merged with an accepted ``decision`` by :func:`combine_tiers` (the tier only goes up; a
    raise to 3 starts the post-crisis window in ``state``), with the decision's rule ids appended to
    ``reasons``. A refused decision returns ``result`` unchanged."""
    if not decision.accepted:
        return result
    merged = combine_tiers(result, decision.tier, state=state, config=config)
    if merged is result:
        return result
    return merged.model_copy(update={"reasons": [*merged.reasons, *decision.rules]})
