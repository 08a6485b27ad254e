"""Crisis (tier 3) and support (tier 2) texts: resources per locale, no coaching, no method details."""

from __future__ import annotations

import re

import pytest

from launcher.safety import (
    DEFAULT_RESOURCES,
    CrisisResource,
    LocaleResources,
    SafetyConfig,
    crisis_response,
    resources_for,
    support_response,
)

COACHING_WORDS = re.compile(r"\b(goal|plan|habit|commitment|next step|strategy|you should|try to)\b", re.I)
METHOD_WORDS = re.compile(r"\b(pills?|dose|rope|gun|bridge|jump|cut|overdose|lethal|height)\b", re.I)


@pytest.mark.parametrize(
    ("locale", "must_contain"),
    [("en-US", "988"), ("en_US", "988"), ("en-GB", "116 123"), ("UK", "116 123"), ("en-IE", "116 123"),
     ("en-AU", "13 11 14"), ("fr-CA", "988"), ("xx-ZZ", "findahelpline.com"), ("", "findahelpline.com")],
)  # fmt: skip
def test_crisis_response_has_a_resource_for_the_locale(locale: str, must_contain: str) -> None:
    text = crisis_response(locale)
    assert must_contain in text
    assert "now" in text  # contact a crisis line or emergency services now
    assert "keep talking" in text  # invitation to keep talking
    assert not COACHING_WORDS.search(text)
    assert not METHOD_WORDS.search(text)


def test_crisis_response_names_the_emergency_number() -> None:
    assert "999" in crisis_response("en-GB")
    assert "911" in crisis_response("en-US")


def test_support_response_asks_directly_and_offers_resources() -> None:
    ideation = support_response("en-US", ["t2.passive_ideation"])
    assert "thoughts of ending your life" in ideation and "988" in ideation
    abuse = support_response("en-GB", ["t2.abuse_disclosed"])
    assert "are you safe right now" in abuse and "116 123" in abuse
    for text in (ideation, abuse):
        assert "pause our coaching" in text
        assert not METHOD_WORDS.search(text)


def test_resource_table_is_configurable() -> None:
    cfg = SafetyConfig(
        locale="de-DE",
        resources={
            "de": LocaleResources(
                emergency="112",
                lines=[CrisisResource(name="TelefonSeelsorge", contact="call 0800 111 0 111")],
            )
        },
    )
    table = cfg.resource_table()
    assert "0800 111 0 111" in crisis_response(cfg.locale, table)
    assert "988" in crisis_response("en-US", table)  # defaults kept
    assert resources_for("de-DE", table).emergency == "112"


def test_every_default_locale_has_a_line() -> None:
    assert "default" in DEFAULT_RESOURCES
    for res in DEFAULT_RESOURCES.values():
        assert res.lines
