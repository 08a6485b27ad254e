"""The supervisor's safety screen: an adapter over :mod:`launcher.safety` that keeps the per-session
``SafetyState`` on the blackboard (in each turn's ``message`` entry) instead of in memory, so a
post-crisis window survives restarts and works across processes.

:meth:`SafetyScreen.raised` (and :func:`raised_outcome` for screens without it) turns an accepted
:class:`launcher.safety.RaiseDecision` into the turn's new outcome: the higher tier, its response and the
state with the post-crisis window started at tier 3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from launcher.safety import (
    RaiseDecision,
    SafetyConfig,
    SafetyState,
    ScreenResult,
    apply_raise,
    crisis_response,
    screen,
    support_response,
)

__all__ = ["SafetyScreen", "ScreenOutcome", "raised_outcome"]

#: The screen reason that picks the support response's direct question for a model's tier-2 family
#: (abuse asks "are you safe right now?"; every other tier-2 family asks about suicidal thoughts).
_SUPPORT_REASON = {"abuse": "t2.abuse_disclosed"}


@dataclass(frozen=True)
class ScreenOutcome:
    """The safety screen's verdict.

    Attributes:
        tier: 0-3 (docs/coaching.md, SAFETY).
        response: tier 3: the crisis response (replaces everything); tier 2: the support response
            (reflect, ask directly, offer resources; shown instead of a coaching reply); else None.
        reasons: rule ids (never user text; safe to log).
        state: the session's safety state after this message (stored with the turn).
    """

    tier: int
    response: str | None = None
    reasons: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)


class SafetyScreen:
    """``(text, previous state or None) -> ScreenOutcome`` using the deterministic screen."""

    def __init__(self, config: SafetyConfig | None = None) -> None:
        self.config = config or SafetyConfig()
        if self.config.semantic:  # load the model now: a missing model stops the start, not a turn
            from launcher.safety._semantic import semantic_layer

            semantic_layer()

    def __call__(self, text: str, state: Mapping[str, Any] | None) -> ScreenOutcome:
        st = SafetyState.model_validate(dict(state)) if state else SafetyState()
        result = screen(text, st, self.config)
        response = _response(self.config, result.tier, result.reasons)
        return ScreenOutcome(result.tier, response, tuple(result.reasons), st.model_dump(mode="json"))

    def raised(self, outcome: ScreenOutcome, decision: RaiseDecision) -> ScreenOutcome:
        """``outcome`` after an accepted raise (see :func:`raised_outcome`), with this screen's config."""
        return raised_outcome(outcome, decision, self.config)


def _response(config: SafetyConfig, tier: int, reasons: Sequence[str]) -> str | None:
    table = config.resource_table()
    if tier >= 3:
        return crisis_response(config.locale, table)
    if tier == 2:
        return support_response(config.locale, reasons, table)
    return None


def raised_outcome(
    outcome: ScreenOutcome, decision: RaiseDecision, config: SafetyConfig | None = None
) -> ScreenOutcome:
    """The turn's outcome after ``decision`` (an accepted raise; a refused one returns ``outcome``):
    the tiers merged by :func:`launcher.safety.apply_raise` (``combine_tiers``: only up; at tier 3 the
    post-crisis window starts in the returned ``state``), the decision's rule ids appended to the reasons,
    and the crisis or support response for the new tier (the decision's family picks the support
    response's direct question).
    """
    if not decision.accepted or decision.tier <= outcome.tier:
        return outcome
    cfg = config or SafetyConfig()
    st = SafetyState.model_validate(dict(outcome.state)) if outcome.state else SafetyState()
    merged = apply_raise(
        ScreenResult(tier=outcome.tier, reasons=list(outcome.reasons)), decision, state=st, config=cfg
    )
    extra = [_SUPPORT_REASON[decision.family]] if decision.family in _SUPPORT_REASON else []
    response = _response(cfg, merged.tier, [*merged.reasons, *extra])
    return ScreenOutcome(merged.tier, response, tuple(merged.reasons), st.model_dump(mode="json"))
