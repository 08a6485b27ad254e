"""Context packs: what each agent is told at the start of a turn, cut to its token budget.

A pack is ``shared + tail``. The shared part (compacted profile, recent session history, relevant
entries, the user's message) comes FIRST and is byte-identical for every agent of the turn, so a
prefix-caching server (vLLM) reuses it; the agent-specific tail (who it is, which tool to call) comes
last. Because budgets differ per agent, the shared part is cut once, to the smallest budget among the
agents of the turn less the longest tail; each pack then fits its own agent's budget.

Cutting order when over budget (least valuable first): the oldest history turns, then the relevant
entries (largest first), then the profile; the user's message is cut last, and only from the end.

Token counts are estimated as ceil(UTF-8 bytes / 4) — the usual rule of thumb for English BPE
vocabularies (OpenAI / Anthropic guidance, "about 4 characters per token"); the budget is a soft
planning figure, the proxy enforces the hard limits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AgentPackSpec",
    "ContextPack",
    "HistoryItem",
    "PackInputs",
    "build_followups",
    "build_packs",
    "build_shared",
    "estimate_tokens",
]

_CUT_MARK = " [...cut to fit the context budget]"
_MIN_SHARED_TOKENS = 64


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ceil(UTF-8 bytes / 4) (see the module docstring)."""
    return (len(text.encode("utf-8")) + 3) // 4


@dataclass(frozen=True)
class HistoryItem:
    """One earlier turn of the session as the agents see it."""

    turn: str
    user_text: str
    coach_reply: str = ""
    synthesis: str = ""


@dataclass(frozen=True)
class PackInputs:
    """Everything the shared part is built from.

    ``profile``: the user's compacted profile value (or None for a new user); ``history``: earlier turns
    of this session, oldest first; ``entries``: relevant blackboard entries by a short label (e.g.
    ``"turns/3/stability"``) to their values; ``message``: the user's message for this turn.
    """

    message: str
    profile: Mapping[str, Any] | None = None
    history: Sequence[HistoryItem] = ()
    entries: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentPackSpec:
    """One agent's part: its budget in tokens and its agent-specific tail text."""

    budget_tokens: int
    tail: str


@dataclass(frozen=True)
class ContextPack:
    """One agent's pack. ``text == shared + tail``; ``tokens`` is the estimate of ``text``."""

    shared: str
    tail: str
    tokens: int
    cut: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.shared + self.tail


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _history_block(items: Sequence[HistoryItem]) -> str:
    lines = []
    for h in items:
        lines.append(f"[turn {h.turn}] user: {h.user_text}")
        if h.coach_reply:
            lines.append(f"[turn {h.turn}] coach: {h.coach_reply}")
        if h.synthesis:
            lines.append(f"[turn {h.turn}] synthesis: {h.synthesis}")
    return "\n".join(lines)


def _render(
    profile: str | None,
    history: str,
    entries: Sequence[tuple[str, str]],
    message: str,
    followup: bool = False,
) -> str:
    if followup:
        parts = ["# New turn (earlier turns of this session are in this conversation above)\n"]
    else:
        parts = ["# Context (shared by every agent of this turn)\n"]
        parts.append("## User profile (compacted from earlier sessions)\n")
        parts.append((profile if profile else "(no profile yet: this is a new user)") + "\n")
        parts.append("## This session so far\n")
        parts.append((history if history else "(this is the first turn of the session)") + "\n")
    if entries:
        parts.append("## Relevant blackboard entries\n")
        for label, text in entries:
            parts.append(f"- {label}: {text}\n")
    parts.append("## The user's message for this turn\n")
    parts.append(message + "\n\n")
    return "".join(parts)


def _truncate(text: str, max_tokens: int) -> str:
    if estimate_tokens(text) <= max_tokens:
        return text
    keep = max(0, max_tokens * 4 - len(_CUT_MARK.encode()) - 4)
    raw = text.encode("utf-8")[:keep].decode("utf-8", errors="ignore")
    return raw + _CUT_MARK


def build_shared(
    inputs: PackInputs, budget_tokens: int, *, followup: bool = False
) -> tuple[str, tuple[str, ...]]:
    """The shared part cut to ``budget_tokens``; returns (text, what was cut). ``followup``: the short
    form for a warm conversation (no profile or history sections)."""
    profile = _json(dict(inputs.profile)) if inputs.profile else None
    history = list(inputs.history)
    entries = [(label, _json(dict(v))) for label, v in inputs.entries.items()]
    message = inputs.message
    cut: list[str] = []

    def size() -> int:
        return estimate_tokens(_render(profile, _history_block(history), entries, message, followup))

    while history and size() > budget_tokens:
        history.pop(0)
        if "history" not in cut:
            cut.append("history")
    while entries and size() > budget_tokens:
        biggest = max(range(len(entries)), key=lambda i: len(entries[i][1]))
        label, text = entries[biggest]
        over = size() - budget_tokens
        room = estimate_tokens(text) - over
        if room < 16:
            entries.pop(biggest)
        else:
            entries[biggest] = (label, _truncate(text, room))
        if "entries" not in cut:
            cut.append("entries")
    if profile is not None and size() > budget_tokens:
        over = size() - budget_tokens
        room = estimate_tokens(profile) - over
        profile = _truncate(profile, room) if room >= 16 else None
        cut.append("profile")
    if size() > budget_tokens:
        over = size() - budget_tokens
        message = _truncate(message, max(16, estimate_tokens(message) - over))
        cut.append("message")
    return _render(profile, _history_block(history), entries, message, followup), tuple(cut)


def build_packs(inputs: PackInputs, agents: Mapping[str, AgentPackSpec]) -> dict[str, ContextPack]:
    """One pack per agent; every pack's ``shared`` is the same string.

    Each agent's tail is cut to at most half of its own budget; the shared part gets the smallest
    remaining budget (at least 64 tokens). Raises ValueError when ``agents`` is empty or a budget < 1.
    """
    if not agents:
        raise ValueError("build_packs needs at least one agent")
    tails: dict[str, str] = {}
    for name, spec in agents.items():
        if spec.budget_tokens < 1:
            raise ValueError(f"agent {name}: context budget must be >= 1 token, got {spec.budget_tokens}")
        tails[name] = _truncate(spec.tail, max(1, spec.budget_tokens // 2))
    shared_budget = min(spec.budget_tokens - estimate_tokens(tails[n]) for n, spec in agents.items())
    shared, cut = build_shared(inputs, max(_MIN_SHARED_TOKENS, shared_budget))
    return {
        name: ContextPack(
            shared=shared, tail=tails[name], tokens=estimate_tokens(shared + tails[name]), cut=cut
        )
        for name in agents
    }


def build_followups(
    message: str, entries: Mapping[str, Mapping[str, Any]], tails: Mapping[str, str], budget_tokens: int
) -> dict[str, str]:
    """What a warm process (whose conversation already holds the session) is sent for a new turn:
    the new entries and message (shared, first) then the agent's tail. Cut to ``budget_tokens``."""
    shared, _ = build_shared(PackInputs(message=message, entries=entries), budget_tokens, followup=True)
    return {name: shared + tail for name, tail in tails.items()}
