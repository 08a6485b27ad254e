"""Valid example payloads of each agent, for tests (deep-copied per call)."""

from __future__ import annotations

import copy
from typing import Any

_TRAIT = {"score": 70, "confidence": 0.6, "evidence_count": 6}

_PAYLOADS: dict[str, dict[str, Any]] = {
    "shadow": {
        "pattern_class": "inclined_abstainer",
        "commitments": {"due": 5, "completed": 1, "sessions": 3},
        "patterns": [
            {
                "stated": "wants to exercise every morning",
                "revealed": "mornings go to email",
                "hypothesis": "may be protecting a sense of being reliable at work",
                "evidence": [{"session": "s1", "turn": "t000002"}, {"session": "s2", "turn": "t000001"}],
            }
        ],
        "follow_through": {"features": {"has_if_then_plan": False, "change_talk_share": 0.4}},
    },
    "persona": {
        "traits": {
            n: dict(_TRAIT)
            for n in ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
        },
        "goals": [{"description": "exercise in the morning", "mentions": 3}],
        "follow_through": {"due": 5, "completed": 1},
        "growth_areas": ["planning the first step"],
    },
    "plasticity": {
        "strategy": "Explore ambivalence before any plan.",
        "tone": "warm",
        "framing": "small experiments",
        "do": ["reflect before asking"],
        "dont": ["guilt framing"],
        "tailoring": [
            {
                "trait": "conscientiousness",
                "level": "high",
                "adaptation": "offer a checklist",
                "confidence": 0.6,
                "evidence_count": 6,
            }
        ],
    },
    "stability": {
        "moves": [
            {
                "id": "walk",
                "description": "Take a ten minute walk after lunch",
                "severity": 2,
                "occurrence": 2,
                "detection_difficulty": 2,
                "reversibility": 1,
            },
            {
                "id": "fast",
                "description": "Suggest a five-day water fast",
                "keywords": ["fasting", "water fast"],
                "severity": 8,
                "occurrence": 3,
                "detection_difficulty": 8,
                "reversibility": 5,
            },
            {
                "id": "quit",
                "description": "Quit the job this week",
                "severity": 6,
                "occurrence": 3,
                "detection_difficulty": 4,
                "reversibility": 7,
            },
        ]
    },
    "coach": {"reply": "It sounds like mornings matter to you. What would make one morning easier?"},
    "pineal": {"text": "A short synthesis.", "citations": [{"agent": "shadow", "version": 1}]},
}


def payload(agent: str) -> dict[str, Any]:
    return copy.deepcopy(_PAYLOADS[agent])
