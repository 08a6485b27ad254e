"""The benchmark's fixed inputs: latency models, the user's messages, the assumed typing time, and the
options set from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("qwen3-30b-a3b@2x4090", "qwen3-235b-a22b@a40")
REPORT_MODEL = "qwen3-30b-a3b@2x4090"
MODEL_PATHS = ("/v1/chat/completions", "/v1/messages")
USER = "bench-user"
MESSAGES = (
    "I keep planning to run three times a week and then skipping it. Work has been intense and by "
    "the evening I just collapse on the sofa. I feel like I'm letting myself down.",
    "This week I managed one run, on Sunday morning, and it actually felt good. Weekdays are still "
    "impossible though. Maybe I'm just not a morning person?",
    "My sister suggested we run together on Saturdays. I like the idea but I'm worried I'll slow her down.",
)
#: Assumed seconds between the chat opening and the prewarmed turn's message being sent: PREWARM_MESSAGE
#: is 38 words, about a minute at 40 words per minute, so 10 s is conservative (the turn starts later if the
#: prewarm takes longer). Scaled by --time-scale like the model's times.
TYPING_S = 10.0
#: Set from the command line (--no-prefill).
OPTIONS: dict[str, Any] = {"prefill": True}
PREWARM_MESSAGE = (
    "I signed up for a 5k in two months and now I'm panicking a bit. I've never trained for anything and "
    "I'm not sure where to start, or whether I should just pull out before I embarrass myself."
)
