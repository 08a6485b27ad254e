"""The supervisor's safety screen: an adapter over :mod:`launcher.safety` that keeps the per-session
``SafetyState`` on the blackboard (in each turn's ``message`` entry) instead of in memory, so a
post-crisis window survives restarts and works across processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from launcher.safety import SafetyConfig, SafetyState, crisis_response, screen, support_response

__all__ = ["SafetyScreen", "ScreenOutcome"]


@dataclass(frozen=True)
class ScreenOutcome:
    """The safety screen's verdict.

    Attributes:
        tier: 0-3 (COACHING.md, SAFETY).
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

    def __call__(self, text: str, state: Mapping[str, Any] | None) -> ScreenOutcome:
        st = SafetyState.model_validate(dict(state)) if state else SafetyState()
        result = screen(text, st, self.config)
        table = self.config.resource_table()
        response: str | None = None
        if result.tier >= 3:
            response = crisis_response(self.config.locale, table)
        elif result.tier == 2:
            response = support_response(self.config.locale, result.reasons, table)
        return ScreenOutcome(result.tier, response, tuple(result.reasons), st.model_dump(mode="json"))
