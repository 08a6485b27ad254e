"""Crisis resources per locale and the fixed response texts for tiers 2 and 3.

Resource table (checked against the services' own sites, 2024): US and Canada 988 (988lifeline.org;
988.ca), UK and Ireland Samaritans 116 123 (samaritans.org), Shout text 85258 (UK), Ireland text 50808,
Australia Lifeline 13 11 14 (lifeline.org.au), New Zealand 1737 (1737.org.nz); the generic fallback
points at the local emergency number and findahelpline.com (an international directory run by
ThroughLine). Override or extend it with ``[safety.resources]`` in ``coach.toml``.

Texts follow docs/coaching.md (SAFETY): tier 3 = acknowledgement, encouragement to contact a crisis line or
emergency services now, at least one resource for the locale, an invitation to keep talking, no coaching
content and no method details; tier 2 = pause coaching, reflect, ask directly, offer resources. Asking
directly about suicide does not increase risk (Dazzi et al., Psychol Med 2014).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_RESOURCES",
    "CrisisResource",
    "LocaleResources",
    "crisis_text",
    "region_of",
    "resources_for",
    "support_text",
]


class CrisisResource(BaseModel):
    """One service: ``name`` ("Samaritans"), ``contact`` ("call 116 123, free, 24/7"), optional ``url``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=120)
    contact: str = Field(min_length=1, max_length=200)
    url: str | None = Field(default=None, max_length=200)

    def line(self) -> str:
        """``"Samaritans: call 116 123, free, 24/7 (samaritans.org)"``."""
        return f"{self.name}: {self.contact}" + (f" ({self.url})" if self.url else "")


class LocaleResources(BaseModel):
    """Resources of one region: crisis lines (at least one) and the emergency number."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    emergency: str = Field(min_length=1, max_length=80)
    lines: list[CrisisResource] = Field(min_length=1)


DEFAULT_RESOURCES: dict[str, LocaleResources] = {
    "US": LocaleResources(
        emergency="911",
        lines=[CrisisResource(name="988 Suicide & Crisis Lifeline", contact="call or text 988, 24/7",
                              url="988lifeline.org")],
    ),
    "CA": LocaleResources(
        emergency="911",
        lines=[CrisisResource(name="9-8-8 Suicide Crisis Helpline", contact="call or text 988, 24/7",
                              url="988.ca")],
    ),
    "GB": LocaleResources(
        emergency="999",
        lines=[
            CrisisResource(name="Samaritans", contact="call 116 123, free, 24/7", url="samaritans.org"),
            CrisisResource(name="Shout", contact="text SHOUT to 85258, 24/7"),
        ],
    ),
    "IE": LocaleResources(
        emergency="112 or 999",
        lines=[
            CrisisResource(name="Samaritans", contact="call 116 123, free, 24/7", url="samaritans.org"),
            CrisisResource(name="Text About It", contact="text HELLO to 50808, 24/7"),
        ],
    ),
    "AU": LocaleResources(
        emergency="000",
        lines=[CrisisResource(name="Lifeline", contact="call 13 11 14, 24/7", url="lifeline.org.au")],
    ),
    "NZ": LocaleResources(
        emergency="111",
        lines=[CrisisResource(name="Need to talk?", contact="call or text 1737, free, 24/7",
                              url="1737.org.nz")],
    ),
    "default": LocaleResources(
        emergency="your local emergency number (112 in much of the world, 911 in North America)",
        lines=[CrisisResource(name="Find a Helpline", contact="free, confidential crisis lines by country",
                              url="findahelpline.com")],
    ),
}  # fmt: skip

_ALIASES = {"UK": "GB"}
_LOCALE = re.compile(r"^\s*(?:([A-Za-z]{2,3})[-_])?([A-Za-z]{2})\s*$")


def region_of(locale: str) -> str:
    """Region code of a locale: ``"en-GB"``/``"en_gb"``/``"GB"``/``"uk"`` -> ``"GB"``; unknown -> ``""``."""
    m = _LOCALE.match(locale or "")
    if not m:
        return ""
    region = m.group(2).upper()
    return _ALIASES.get(region, region) if m.group(1) is None else region


def resources_for(locale: str, table: Mapping[str, LocaleResources] | None = None) -> LocaleResources:
    """The resources for ``locale``, else the table's ``"default"`` entry (always present in ours)."""
    table = DEFAULT_RESOURCES if table is None else table
    region = region_of(locale)
    if region in table:
        return table[region]
    if "default" in table:
        return table["default"]
    return DEFAULT_RESOURCES["default"]


def _resource_lines(res: LocaleResources) -> str:
    return "\n".join(f"- {r.line()}" for r in res.lines)


def crisis_text(locale: str, table: Mapping[str, LocaleResources] | None = None) -> str:
    """Tier-3 crisis response: replaces the whole reply. No coaching content, no method details."""
    res = resources_for(locale, table)
    return (
        "Thank you for telling me. I'm really glad you did, and I'm taking what you said seriously. "
        "Your safety matters more than anything we were working on.\n\n"
        "Please reach out to someone who can help right now:\n"
        f"{_resource_lines(res)}\n"
        f"- If you are in immediate danger or have already hurt yourself, call {res.emergency} now.\n\n"
        "If you can, let someone near you know what is going on and stay with them.\n\n"
        "I'm an AI coach, not a crisis service, but I'm here and I'd like to keep talking with you "
        "while you reach out. Are you safe right now?"
    )


def support_text(
    locale: str, reasons: Sequence[str] = (), table: Mapping[str, LocaleResources] | None = None
) -> str:
    """Tier-2 response: coaching paused; reflect, ask directly, offer resources, invite to keep talking.

    ``reasons`` (rule ids) choose the direct question: abuse or fear for one's safety (``t2.abuse*``,
    ``t2.safety*``, the semantic layer's ``sem.abuse`` or its pause ``sem2.abuse``) asks about safety;
    someone else at risk (``t2.third_party_risk``, ``sem.other_in_danger`` or ``sem2.other_in_danger``
    alone) asks whether that person is safe and how the user is; everything else asks about thoughts of
    suicide.
    """
    res = resources_for(locale, table)
    about_safety = any(r.startswith(("t2.abuse", "t2.safety", "sem.abuse", "sem2.abuse")) for r in reasons)
    third_party = any(
        r in ("t2.third_party_risk", "sem.other_in_danger", "sem2.other_in_danger") for r in reasons
    )
    own = ("t2.abuse", "t2.safety", "t2.third_party")
    ideation = any(not r.startswith(own) and r.startswith("t2.") for r in reasons)
    if third_party and not ideation and not about_safety:
        reflect = "It sounds like you are worried about someone you care about, and that is a lot to carry."
        question = (
            "Can I ask you directly: is this person safe right now? And how are you doing with all this? "
            "These services also help people who are worried about someone else, and if they are in "
            "immediate danger, emergency services can reach them."
        )
    elif about_safety and not ideation:
        reflect = "It sounds like someone has been hurting or frightening you, and that is not okay."
        question = "Can I ask you directly: are you safe right now?"
    else:
        reflect = "It sounds like you are carrying something really heavy right now."
        question = "Can I ask you directly: are you having thoughts of ending your life?"
    return (
        f"I want to pause our coaching for a moment. {reflect} Thank you for trusting me with it.\n\n"
        f"{question}\n\n"
        "Whatever the answer, you don't have to handle this alone. You can talk to someone now:\n"
        f"{_resource_lines(res)}\n"
        f"- In an emergency, call {res.emergency}.\n\n"
        "I'm here and happy to keep listening."
    )
