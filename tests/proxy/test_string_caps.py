"""ModelPool.max_string_length: the forced tool's strings get a maxLength the grammar enforces, so a very
small model closes each string before its output cap instead of being cut (a cut call is refused)."""

from __future__ import annotations

from proxy._policy import string_caps


def test_every_string_gets_at_most_the_limit_and_the_rest_is_unchanged() -> None:
    schema = {
        "type": "object",
        "properties": {
            "reply": {"type": "string", "minLength": 1, "maxLength": 4000},
            "note": {"type": ["string", "null"]},
            "short": {"type": "string", "maxLength": 20},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 500}},
            "score": {"type": "integer", "minimum": 0, "maximum": 100},
        },
        "required": ["reply"],
    }
    out = string_caps(schema, 240)
    props = out["properties"]
    assert props["reply"] == {"type": "string", "minLength": 1, "maxLength": 240}
    assert props["note"]["maxLength"] == 240
    assert props["short"]["maxLength"] == 20  # a tighter bound stays
    assert props["tags"]["items"] == {"type": "string", "minLength": 240, "maxLength": 240}
    assert props["score"] == schema["properties"]["score"] and out["required"] == ["reply"]
    assert schema["properties"]["reply"]["maxLength"] == 4000  # the input is not modified


def test_no_limit_leaves_the_schema_alone() -> None:
    schema = {"type": "string", "maxLength": 4000}
    assert string_caps(schema, None) is schema
