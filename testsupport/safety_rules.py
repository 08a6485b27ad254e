"""The safety screen's rules alone (no semantic layer), for tests of the lexicon and the composition:
:func:`screen_rules` screens one message, :func:`screen_after` one message after an earlier one in the
same session; :class:`FixedVerdictLayer` replaces the semantic layer with one fixed verdict."""

from __future__ import annotations

from typing import Any

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


class FixedVerdictLayer:
    """A stand-in for the semantic layer at one boundary (``launcher.safety._semantic.semantic_layer``):
    it returns one fixed verdict for any text (or, given a mapping, the verdict of the text, else the
    ``default``), with bars ``tier2`` 0.9 and ``tier3`` 0.95."""

    tier2, tier3 = 0.9, 0.95

    def __init__(self, verdict: Any, *, default: Any = None) -> None:
        self.verdict = verdict
        self.default = default
        self.encoder = _NoThreads()

    def assess(self, text: str) -> Any:
        if isinstance(self.verdict, dict):
            return self.verdict.get(text, self.default)
        return self.verdict


class _NoThreads:
    def set_blas_threads(self, n: int) -> None:
        pass
