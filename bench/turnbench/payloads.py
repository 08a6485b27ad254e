"""What each agent's model writes in the benchmark: schema-valid outputs of realistic lengths, and the
thinking the seed's way adds."""

from __future__ import annotations

import json
from typing import Any

_EV = [
    {"session": "s-prev", "turn": "t000002", "note": "said evenings are for running, skipped twice"},
    {"session": "s-prev", "turn": "t000004", "note": "described collapsing after work again"},
]
PAYLOADS: dict[str, dict[str, Any]] = {
    "coach": {
        "risk": {"tier": 0, "family": "none", "quote": ""},
        "reply": (
            "It sounds like running three times a week really matters to you, and it is frustrating when the plan "
            "slips. You have already noticed the pattern, which is a real first step. What tends to happen on the "
            "days you skip: is it time, energy, or something else competing for that slot? If we picked just one "
            "run this week, which day would give it the best odds?"
        ),
    },
    "shadow": {
        "pattern_class": "insufficient_data",
        "commitments": {"due": 2, "completed": 1, "sessions": 1},
        "patterns": [
            {
                "stated": "wants to run three evenings a week",
                "revealed": "evenings go to recovering from work; the one completed run was on a weekend morning",
                "hypothesis": "protecting rest after demanding workdays may compete with the evening plan",
                "evidence": _EV,
            },
            {
                "stated": "says consistency is the main goal",
                "revealed": "plans are ambitious (three runs) while recent weeks held at most one",
                "hypothesis": "the plan's size, not the wish to run, may be what keeps breaking",
                "evidence": _EV,
            },
        ],
        "follow_through": {
            "features": {
                "has_if_then_plan": False,
                "change_talk_share": 0.6,
                "sustain_talk": True,
                "goal_growth": False,
            }
        },
        "summary": (
            "Two sessions of evidence only, so no pattern class yet. Stated goal (three evening runs) "
            "and revealed priority (rest after work) diverge; weekend mornings look more reliable."
        ),
    },
    "persona": {
        "traits": {
            "openness": {"score": 58, "confidence": 0.3, "evidence_count": 2},
            "conscientiousness": {"score": 52, "confidence": 0.35, "evidence_count": 3},
            "extraversion": {"score": 47, "confidence": 0.25, "evidence_count": 2},
            "agreeableness": {"score": 63, "confidence": 0.3, "evidence_count": 2},
            "neuroticism": {"score": 55, "confidence": 0.3, "evidence_count": 3},
        },
        "goals": [
            {"description": "run three times a week", "mentions": 3},
            {"description": "feel less drained after work", "mentions": 2},
            {"description": "run with my sister on Saturdays", "mentions": 1},
        ],
        "follow_through": {"due": 2, "completed": 1},
        "growth_areas": [
            "sizing plans to the week that is actually available",
            "self-talk after a missed session",
            "protecting energy on workdays",
        ],
        "readiness_stage": "preparation",
        "summary": (
            "Moderate, low-confidence trait estimates from few observations. Clear, repeated running "
            "goal; follow-through not yet measurable (2 commitments due). Self-criticism after misses."
        ),
    },
    "plasticity": {
        "strategy": (
            "Reflect the effort and the frustration first, then shrink the plan: one anchored run at "
            "the most reliable time (weekend morning) before adding weekday runs. Evoke the user's "
            "own reasons; avoid prescribing a schedule."
        ),
        "tone": "warm, plain, unhurried",
        "framing": "experiments to learn what fits, not tests to pass",
        "do": [
            "reflect the feeling before any suggestion",
            "ask one open question at a time",
            "offer a choice between two small options",
        ],
        "dont": [
            "stack several suggestions in one reply",
            "use words like should or failure",
            "assume mornings suit the user",
        ],
        "readiness_stage": "preparation",
    },
    "stability": {
        "moves": [
            {
                "id": "anchor-weekend-run",
                "description": "schedule one run on Saturday or Sunday morning",
                "keywords": ["weekend run", "saturday run"],
                "severity": 2,
                "occurrence": 2,
                "detection_difficulty": 2,
                "reversibility": 1,
                "rationale": "low effort, easy to undo",
            },
            {
                "id": "buddy-run",
                "description": "run together with the sister on Saturdays",
                "keywords": ["run with your sister"],
                "severity": 2,
                "occurrence": 3,
                "detection_difficulty": 2,
                "reversibility": 1,
                "rationale": "social support; mild risk of pace pressure, easy to adjust",
            },
        ],
        "summary": "Both candidate moves are low risk and reversible; nothing blocked this turn.",
    },
    "pineal": {
        "text": (
            "You have been carrying a plan of three evening runs through weeks that leave you drained, and it "
            "makes sense that it keeps slipping; that says more about the plan's size than about you. Your one "
            "run this week happened on a weekend morning and felt good, which is useful information.\n\n"
            "A small experiment for the coming week: keep one anchored run on Saturday or Sunday morning and let "
            "the weekday runs be optional extras rather than promises. If your sister's Saturday idea appeals, it "
            "could be that anchor; agree beforehand that either of you can set the pace, so neither feels held "
            "back.\n\nAfter the week, notice what made the run easier or harder: time of day, company, how "
            "tired you were. We can build on whatever worked. Which of the two options feels more like you?"
        ),
        "citations": [{"agent": a, "version": 1} for a in ("shadow", "persona", "plasticity", "stability")],
    },
}
WRITE_TOOL = {
    "shadow": "write_shadow",
    "persona": "write_persona",
    "plasticity": "write_plasticity",
    "stability": "write_stability",
    "coach": "write_coach",
    "pineal": "write_synthesis",
}
THINK_TOKENS = {
    "coach": 250,
    "shadow": 500,
    "persona": 500,
    "plasticity": 500,
    "stability": 500,
    "pineal": 600,
}
SECOND_CALL_THINK_TOKENS = 40


def output_tokens() -> dict[str, int]:
    """Approximate output tokens of each agent's write (tool-call arguments as sent)."""
    from testsupport.latency import approx_token_count

    return {
        a: approx_token_count(json.dumps(p, ensure_ascii=False, separators=(",", ":")))
        for a, p in PAYLOADS.items()
    }


def check_payloads() -> None:
    """Fail fast if a payload does not validate against its agent's schema."""
    from blackboard import AGENT_OUTPUT_SCHEMAS

    for agent, payload in PAYLOADS.items():
        AGENT_OUTPUT_SCHEMAS[agent].model_validate(payload)
