"""Schema-valid agent outputs for launcher and e2e tests (what a scripted model writes)."""

from __future__ import annotations

from typing import Any

__all__ = ["BLOCKED_MOVE", "payload_for", "stability_blocking", "synthesis_citing"]

_TRAIT = {"score": 50, "confidence": 0.3, "evidence_count": 2}

#: A move Stability blocks (medication category) and the keywords a synthesis must never contain.
BLOCKED_MOVE: dict[str, Any] = {
    "id": "stop-meds",
    "description": "stop taking your medication",
    "category": "medication_or_diagnosis",
    "keywords": ["stop taking your medication", "quit your meds"],
    "severity": 9,
    "occurrence": 3,
    "detection_difficulty": 6,
    "reversibility": 8,
    "rationale": "medical decision",
}

PAYLOADS: dict[str, dict[str, Any]] = {
    "shadow": {
        "pattern_class": "insufficient_data",
        "commitments": {"due": 0, "completed": 0, "sessions": 1},
        "summary": "not enough history yet",
    },
    "persona": {
        "traits": {
            t: dict(_TRAIT)
            for t in ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
        },
        "goals": [{"description": "run three times a week", "mentions": 1}],
        "follow_through": {"due": 0, "completed": 0},
        "growth_areas": ["consistency"],
    },
    "plasticity": {"strategy": "reflect first, then one small step", "tone": "warm"},
    "stability": {"moves": [], "summary": "no risky moves"},
    "coach": {"reply": "It sounds like running matters to you. What would make this week easier?"},
}


def payload_for(agent: str) -> dict[str, Any]:
    """A valid payload for one agent's write tool (not Pineal: see :func:`synthesis_citing`)."""
    return {k: (dict(v) if isinstance(v, dict) else v) for k, v in PAYLOADS[agent].items()}


def stability_blocking() -> dict[str, Any]:
    """A Stability output that blocks :data:`BLOCKED_MOVE`."""
    return {"moves": [dict(BLOCKED_MOVE)], "summary": "medication changes are blocked"}


def synthesis_citing(
    brief: Any, text: str = "Here is a small, reversible next step: a ten-minute walk."
) -> dict[str, Any]:
    """A synthesis citing every source of ``brief`` (a ``blackboard.Brief`` or its JSON dict)."""
    sources = brief["sources"] if isinstance(brief, dict) else [s.model_dump() for s in brief.sources]
    return {
        "text": text,
        "citations": [{"agent": s["agent"], "key": s["key"], "version": s["version"]} for s in sources],
    }
