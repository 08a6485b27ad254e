"""The safety screen's rules alone (no semantic layer), for tests of the lexicon and the composition:
:func:`screen_rules` screens one message, :func:`screen_after` one message after an earlier one in the
same session."""

from __future__ import annotations

from launcher.safety import SafetyConfig, SafetyState, ScreenResult, screen

RULES_ONLY = SafetyConfig(semantic=False)


def screen_rules(text: str, state: SafetyState | None = None) -> ScreenResult:
    """``launcher.safety.screen`` with the semantic layer off."""
    return screen(text, state, RULES_ONLY)


def screen_after(earlier: str, text: str) -> ScreenResult:
    """``text`` screened with the rules alone after ``earlier`` in a fresh session."""
    state = SafetyState()
    screen_rules(earlier, state)
    return screen_rules(text, state)
