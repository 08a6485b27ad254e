"""Valid example outputs for each agent (tool arguments), shared by the MCP tests."""

from __future__ import annotations

import copy
from typing import Any


def _trait(score: float) -> dict[str, Any]:
    return {"score": score, "confidence": 0.6, "evidence_count": 6}


SHADOW: dict[str, Any] = {
    "pattern_class": "insufficient_data",
    "commitments": {"due": 1, "completed": 0, "sessions": 1},
    "patterns": [],
    "summary": "Too early to classify.",
}

PERSONA: dict[str, Any] = {
    "traits": {
        "openness": _trait(70),
        "conscientiousness": _trait(40),
        "extraversion": _trait(55),
        "agreeableness": _trait(60),
        "neuroticism": _trait(45),
    },
    "goals": [{"description": "run three times a week", "mentions": 2}],
    "follow_through": {"due": 4, "completed": 2},
    "growth_areas": ["planning"],
    "summary": "Curious, moderately organised.",
}

PLASTICITY: dict[str, Any] = {
    "strategy": "Small if-then plans, framed as experiments.",
    "tone": "warm",
    "framing": "experiment",
    "do": ["offer one tiny step"],
    "dont": ["guilt framing"],
}

STABILITY: dict[str, Any] = {
    "moves": [
        {
            "id": "walk_after_lunch",
            "description": "suggest a ten minute walk after lunch",
            "keywords": ["walk after lunch"],
            "severity": 1,
            "occurrence": 2,
            "detection_difficulty": 1,
            "reversibility": 1,
        }
    ],
    "summary": "Low risk.",
}

# A move sent as allowed (blocked false) whose ratings cross the gate: S >= 9 blocks.
STABILITY_BLOCKED_SENT_AS_ALLOWED: dict[str, Any] = {
    "moves": [
        {
            "id": "stop_medication",
            "description": "stop taking the prescribed medication",
            "keywords": ["stop taking", "medication"],
            "severity": 9,
            "occurrence": 3,
            "detection_difficulty": 3,
            "reversibility": 8,
            "blocked": False,
        },
        copy.deepcopy(STABILITY["moves"][0]),
    ]
}

COACH: dict[str, Any] = {"reply": "It sounds like the evenings are the hard part. What has worked before?"}

PAYLOADS: dict[str, dict[str, Any]] = {
    "shadow": SHADOW,
    "persona": PERSONA,
    "plasticity": PLASTICITY,
    "stability": STABILITY,
    "coach": COACH,
}


def payload(agent: str) -> dict[str, Any]:
    """A fresh deep copy of the agent's valid example."""
    return copy.deepcopy(PAYLOADS[agent])
