"""blackboard._prose.quotable: model text is quoted to the user only when it reads as prose."""

from __future__ import annotations

import pytest

from blackboard._prose import quotable


@pytest.mark.parametrize(
    "text",
    [
        "Rest is required before a long run.",
        "Keep the properties of a good habit in view: small and regular.",
        "  Running three times a week.  ",
    ],
)
def test_prose_is_quotable(text: str) -> None:
    assert quotable(text) == " ".join(text.split()).strip(" .")


@pytest.mark.parametrize(
    "text",
    [
        "maxLength: 100",
        "required: [text, sources]",
        "required : text",
        "properties: growth_areas",
        "type: string",
        "call mcp__coachboard__write_persona",
        "session_id s1-2",
        "<tool_call>",
        "{'a': 1}",
        "12345",
        "",
        "x" * 200,
        None,
        42,
    ],
)
def test_copied_schema_text_identifiers_markup_and_non_text_are_not(text: object) -> None:
    assert quotable(text) is None
