"""proxy._partial_json: the decoded prefix of a member never depends on how the JSON was chunked."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy._partial_json import PartialObject

# Text with everything that must be escaped or decoded with care: quotes, backslashes, control
# characters, non-ASCII, astral characters (surrogate pairs once \u-escaped) and lone surrogates.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list('"\\/\b\f\n\r\t\x00\x1f é€')),
        st.characters(min_codepoint=0x1F600, max_codepoint=0x1F64F),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
)
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False)
)
VALUE = st.recursive(
    st.one_of(SCALAR, TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def documents(draw: Any) -> tuple[dict[str, Any], str]:
    obj = draw(st.dictionaries(st.one_of(TEXT, st.sampled_from(["risk", "reply"])), VALUE, max_size=4))
    obj.setdefault("reply", draw(TEXT))
    ascii_only = draw(st.booleans())
    indent = draw(st.sampled_from([None, 0, 2]))
    return obj, json.dumps(obj, ensure_ascii=ascii_only, indent=indent)


def chunked(doc: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(doc) + 1) for c in cuts} | {0, len(doc)})
    return [doc[a:b] for a, b in itertools.pairwise(points)]


def prefixes(doc: str, chunks: list[str]) -> dict[int, str | None]:
    """Decoded text of "reply" after each chunk, keyed by how many characters were fed."""
    reader, seen, fed = PartialObject(), {}, 0
    for c in chunks:
        reader.feed(c)
        fed += len(c)
        seen[fed] = reader.text_of("reply")
    assert reader.complete and not reader.failed
    return seen


@settings(max_examples=300, deadline=None)
@given(
    documents(), st.lists(st.integers(0, 10**6), max_size=30), st.lists(st.integers(0, 10**6), max_size=30)
)
def test_any_chunking_gives_the_same_decoded_prefix_of_the_field(
    doc: tuple[dict[str, Any], str], cuts_a: list[int], cuts_b: list[int]
) -> None:
    _obj, text = doc
    final = json.loads(text)["reply"]
    a = prefixes(text, chunked(text, cuts_a))
    b = prefixes(text, chunked(text, cuts_b))
    one_by_one = prefixes(text, list(text))
    for fed, got in {**a, **b}.items():
        assert got == one_by_one[fed]  # a function of the characters fed, not of the chunking
    previous = ""
    for fed in sorted(one_by_one):
        got = one_by_one[fed]
        if got is None:
            continue
        if isinstance(final, str):
            assert final.startswith(got)
            assert got.startswith(previous) or previous == final  # grows until the value is complete
            previous = got
    if isinstance(final, str):
        assert one_by_one[len(text)] == final


@settings(max_examples=200, deadline=None)
@given(documents(), st.lists(st.integers(0, 10**6), max_size=20))
def test_complete_members_equal_json_loads(doc: tuple[dict[str, Any], str], cuts: list[int]) -> None:
    _obj, text = doc
    reader = PartialObject()
    for c in chunked(text, cuts):
        reader.feed(c)
    assert reader.complete
    assert reader.members == json.loads(text)
    assert reader.order == list(json.loads(text))


def test_an_escape_split_across_chunks_is_decoded_only_when_whole() -> None:
    reader = PartialObject()
    reader.feed('{"reply": "caf\\u00')
    assert reader.text_of("reply") == "caf"
    reader.feed("e9 \\")
    assert reader.text_of("reply") == "café "
    reader.feed('"ok')
    assert reader.text_of("reply") == 'café "ok'


def test_a_surrogate_pair_split_across_chunks_is_one_character() -> None:
    reader = PartialObject()
    reader.feed('{"reply": "hi \\ud83d')
    assert reader.text_of("reply") == "hi "  # the high half waits for its pair
    reader.feed('\\ude00!"}')
    assert reader.text_of("reply") == "hi \U0001f600!"
    assert reader.complete


def test_members_before_the_field_are_complete_when_it_starts() -> None:
    reader = PartialObject()
    reader.feed('{"risk": {"tier": 0, "family": "none", "quote": ""}, "reply": "It sounds')
    assert reader.members == {"risk": {"tier": 0, "family": "none", "quote": ""}}
    assert reader.order == ["risk", "reply"]
    assert reader.partial_key == "reply" and reader.partial_text == "It sounds"


def test_input_that_is_not_an_object_stops_the_reader() -> None:
    reader = PartialObject()
    reader.feed('{"reply": "a"')
    reader.feed(" x")
    assert reader.failed and not reader.complete
    assert reader.members == {"reply": "a"}
    assert not reader.feed("more")
