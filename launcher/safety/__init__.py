"""The safety screen: every user message gets a crisis tier 0-3 before any agent runs.

Public API (see ``docs/safety.md``): :func:`screen` is the one call that gives a tier for a message in a
session; :class:`SafetyState` is the per-session state it reads and updates; :class:`SafetyConfig` is the
``[safety]`` section of ``coach.toml``; :func:`crisis_response` / :func:`support_response` are the
replies for tiers 3 and 2. :func:`judge_raise` decides whether an agent's risk assessment raises the tier
(:func:`apply_raise` merges an accepted one through :func:`combine_tiers`).
"""

from ._judgement import FAMILY_TIER_FLOOR, REFUSALS, RaiseDecision, apply_raise, judge_raise
from ._lexical import (
    DEFAULT_RESOURCES,
    RULE_IDS,
    CrisisResource,
    ExtraRule,
    LocaleResources,
    SafetyConfig,
    SafetyState,
    ScreenResult,
    combine_tiers,
    crisis_response,
    resources_for,
    screen,
    support_response,
)

__all__ = [
    "DEFAULT_RESOURCES",
    "FAMILY_TIER_FLOOR",
    "REFUSALS",
    "RULE_IDS",
    "CrisisResource",
    "ExtraRule",
    "LocaleResources",
    "RaiseDecision",
    "SafetyConfig",
    "SafetyState",
    "ScreenResult",
    "apply_raise",
    "combine_tiers",
    "crisis_response",
    "judge_raise",
    "resources_for",
    "screen",
    "support_response",
]
