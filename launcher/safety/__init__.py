"""The safety screen: every user message gets a crisis tier 0-3 before any agent runs.

Public API (see ``docs/safety.md``): :func:`screen` is the one call that gives a tier for a message in a
session; :class:`SafetyState` is the per-session state it reads and updates; :class:`SafetyConfig` is the
``[safety]`` section of ``coach.toml``; :func:`crisis_response` / :func:`support_response` are the
replies for tiers 3 and 2.
"""

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
