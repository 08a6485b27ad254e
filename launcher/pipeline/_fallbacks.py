"""Deterministic text the supervisor falls back on, and the final-text safety check.

* :data:`FALLBACK_COACH_REPLY` — shown when the Coach failed, timed out, or its reply named a blocked
  move. A motivational-interviewing reflection plus one open question (docs/coaching.md, Coach: OARS, at most
  one question, no righting reflex), with no advice, so it can never contain a blocked move.
* :func:`blocked_problems` — runs ``blackboard.validate_synthesis`` on any text and keeps the
  blocked-move problems: the Coach's reply and the synthesis are both checked on the final text
  (docs/coaching.md, "Rules the code enforces": STABILITY).
* :func:`degraded_note` — the line appended to a synthesis that lacked some agents.
"""

from __future__ import annotations

from collections.abc import Sequence

from blackboard import Brief, SynthesisOutput, validate_synthesis

__all__ = ["FALLBACK_COACH_REPLY", "SAFE_SYNTHESIS_TEXT", "blocked_problems", "degraded_note"]

FALLBACK_COACH_REPLY = (
    "Thank you for telling me this. It sounds like this matters to you, and you're giving it real "
    "thought. What feels most important to you about it right now?"
)

_BLOCK_CODES = frozenset({"blocked_move"})


def blocked_problems(text: str, *briefs: Brief | None) -> list[str]:
    """Blocked moves of any of ``briefs`` that ``text`` suggests, as ``"move_id: detail"`` lines
    ([] = clean). Pass this turn's brief and the earlier turns' blocks: a move blocked once in a session
    stays blocked (docs/coaching.md: no later agent unblocks a move).

    Citations are not checked here (a reply cites nothing); only blocked-move problems count.
    """
    if not text.strip():
        return []
    probe = SynthesisOutput(text=text[:8000], citations=[])
    out: list[str] = []
    for brief in briefs:
        if brief is None or not brief.blocked_moves:
            continue
        out += [
            f"{p.move_id or '?'}: {p.detail}"
            for p in validate_synthesis(probe, brief)
            if p.code in _BLOCK_CODES
        ]
    return list(dict.fromkeys(out))


#: Used when even the deterministic fallback would touch a move blocked earlier in the session.
SAFE_SYNTHESIS_TEXT = "Thank you for sharing this. What would you like to focus on next?"


def degraded_note(missing: Sequence[str], fallback: bool) -> str:
    """One line saying what this synthesis lacked (agent names only; never user text)."""
    parts = []
    if missing:
        parts.append("no input from " + ", ".join(missing))
    if fallback:
        parts.append("assembled by the deterministic fallback")
    return f"\n\n(Partial synthesis this turn: {'; '.join(parts)}.)" if parts else ""
