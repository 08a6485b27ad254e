"""OpenAI / Anthropic upstream chunk sequences -> Anthropic event stream, checked by the one checker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy._adapters import AnthropicAdapter, feed_openai
from proxy._stream import StreamBuilder
from proxy._toolargs import parse_tool_arguments
from proxy.errors import InvalidToolArgumentsError, UpstreamError
from proxy.wellformed import accumulate, assert_well_formed, check_events


def chunk(
    content: str | None = None,
    *,
    reasoning: str | None = None,
    tool_calls: list | None = None,
    finish: str | None = None,
    stop_reason: Any = None,
    usage: dict | None = None,
) -> dict:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    c: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if stop_reason is not None:
        c["choices"][0]["stop_reason"] = stop_reason
    if usage is not None:
        c["usage"] = usage
    return c


def tc(index: int, *, id: str | None = None, name: str | None = None, args: str | None = None) -> dict:
    fn: dict[str, Any] = {}
    if name is not None:
        fn["name"] = name
    if args is not None:
        fn["arguments"] = args
    d: dict[str, Any] = {"index": index, "function": fn}
    if id is not None:
        d["id"] = id
        d["type"] = "function"
    return d


def run(
    chunks: list[dict], stop: list[str] | None = None, **kw: Any
) -> tuple[list[dict], dict, StreamBuilder]:
    b = StreamBuilder(model="qwen3", input_tokens=10, **kw)
    events = b.start()
    for c in chunks:
        events += feed_openai(b, c, stop or [])
    events += b.end()
    assert_well_formed(events)
    return events, accumulate(events), b


def types(msg: dict) -> list[str]:
    return [blk["type"] for blk in msg["content"]]


def test_plain_text_with_usage() -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 32}}
    events, msg, _ = run([chunk("Hel"), chunk("lo"), chunk(finish="stop"), {"choices": [], "usage": usage}])
    assert msg["content"] == [{"type": "text", "text": "Hello"}]
    assert msg["stop_reason"] == "end_turn"
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["usage"] == {
        "input_tokens": 18,
        "output_tokens": 3,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 32,
    }


def test_text_and_complete_tool_call_in_one_chunk() -> None:
    c = chunk(
        "Let me check.", tool_calls=[tc(0, id="call_1", name="get", args='{"k": 1}')], finish="tool_calls"
    )
    _, msg, _ = run([c])
    assert types(msg) == ["text", "tool_use"]
    assert msg["content"][1] == {"type": "tool_use", "id": "call_1", "name": "get", "input": {"k": 1}}
    assert msg["stop_reason"] == "tool_use"


def test_interleaved_parallel_tool_call_fragments() -> None:
    chunks = [
        chunk(tool_calls=[tc(0, id="a", name="f", args='{"x"')]),
        chunk(tool_calls=[tc(1, id="b", name="g", args='{"y":')]),
        chunk(tool_calls=[tc(0, args=": 1}")]),
        chunk(tool_calls=[tc(1, args=' "two"}')]),
        chunk(finish="tool_calls"),
    ]
    events, msg, _ = run(chunks)
    assert [(b["id"], b["name"], b["input"]) for b in msg["content"]] == [
        ("a", "f", {"x": 1}),
        ("b", "g", {"y": "two"}),
    ]
    starts = [e["index"] for e in events if e["type"] == "content_block_start"]
    assert starts == [0, 1]


def test_empty_tool_calls_array_with_text() -> None:
    _, msg, _ = run([chunk("hi", tool_calls=[]), chunk(" there", tool_calls=[]), chunk(finish="stop")])
    assert msg["content"] == [{"type": "text", "text": "hi there"}]
    assert msg["stop_reason"] == "end_turn"


def test_reasoning_content_becomes_thinking_never_text() -> None:
    _, msg, _ = run([chunk(reasoning="hmm "), chunk(reasoning="ok"), chunk("Answer"), chunk(finish="stop")])
    assert types(msg) == ["thinking", "text"]
    assert msg["content"][0]["thinking"] == "hmm ok"
    assert msg["content"][0]["signature"]
    assert msg["content"][1]["text"] == "Answer"


def test_vllm_reasoning_field_name() -> None:
    c = {"choices": [{"index": 0, "delta": {"reasoning": "think"}, "finish_reason": None}]}
    _, msg, _ = run([c, chunk("A", finish="stop")])
    assert types(msg) == ["thinking", "text"]


@pytest.mark.parametrize("split", [1, 2, 3, 5, 7])
def test_inline_think_tags_split_anywhere(split: int) -> None:
    text = "<think>\nplan it\n</think>\n\nThe answer."
    pieces = [text[i : i + split] for i in range(0, len(text), split)]
    _, msg, _ = run([chunk(p) for p in pieces] + [chunk(finish="stop")])
    assert types(msg) == ["thinking", "text"]
    assert msg["content"][0]["thinking"].strip() == "plan it"
    assert msg["content"][1]["text"] == "The answer."


def test_tool_call_inside_think_section_becomes_tool_use() -> None:
    text = '<think>I will call it <tool_call>{"name": "save", "arguments": {"v": 2}}</tool_call>'
    _, msg, _ = run([chunk(text[:20]), chunk(text[20:]), chunk(finish="stop")])
    assert types(msg) == ["thinking", "tool_use"]
    assert msg["content"][1]["name"] == "save" and msg["content"][1]["input"] == {"v": 2}
    assert msg["stop_reason"] == "tool_use"


def test_openai_tool_call_while_reasoning_becomes_tool_use() -> None:
    _, msg, _ = run(
        [
            chunk(reasoning="need tool"),
            chunk(tool_calls=[tc(0, id="t", name="save", args="{}")]),
            chunk(finish="tool_calls"),
        ]
    )
    assert types(msg) == ["thinking", "tool_use"]


def test_tool_call_tag_in_reasoning_content() -> None:
    _, msg, _ = run(
        [chunk(reasoning='x <tool_call>{"name":"s","arguments":{}}</tool_call>'), chunk(finish="stop")]
    )
    assert types(msg) == ["thinking", "tool_use"]


def test_all_max_tokens_spent_on_reasoning_is_still_valid() -> None:
    _, msg, _ = run([chunk("<think>long long"), chunk(" thought"), chunk(finish="length")])
    assert types(msg) == ["thinking"]
    assert msg["stop_reason"] == "max_tokens"


def test_max_tokens_one_probe_and_empty_stream_are_valid() -> None:
    _, msg, _ = run([chunk("\n", finish="length")])
    assert msg["content"] == [{"type": "text", "text": ""}]
    assert msg["stop_reason"] == "max_tokens"
    _, msg, _ = run([])
    assert msg["content"] == [{"type": "text", "text": ""}] and msg["stop_reason"] == "end_turn"


def test_stop_sequence_with_matched_sequence() -> None:
    _, msg, _ = run([chunk("abc"), chunk(finish="stop", stop_reason="END")], stop=["END", "STOP"])
    assert msg["stop_reason"] == "stop_sequence" and msg["stop_sequence"] == "END"
    _, msg, _ = run([chunk("abc"), chunk(finish="stop", stop_reason=151645)], stop=["END"])
    assert msg["stop_reason"] == "end_turn" and msg["stop_sequence"] is None


def test_invalid_tool_arguments_refuse_the_response_or_are_dropped_at_max_tokens() -> None:
    with pytest.raises(InvalidToolArgumentsError):  # cut inside a string: never closed into a valid input
        run([chunk(tool_calls=[tc(0, id="a", name="f", args='{"x": "trunc')]), chunk(finish="tool_calls")])
    _, msg, b = run(
        [chunk(tool_calls=[tc(0, id="a", name="f", args='{"x": "trunc')]), chunk(finish="length")]
    )
    assert msg["stop_reason"] == "max_tokens" and all(c["type"] != "tool_use" for c in msg["content"])
    assert (b.invalid_tool_arguments, b.dropped_tool_calls) == (1, 1)


def test_parse_tool_arguments() -> None:
    assert parse_tool_arguments("").input == {}
    assert parse_tool_arguments('{"a": [1, 2]}}').input == {"a": [1, 2]}
    cut = parse_tool_arguments('{"a": [1, 2')
    assert cut.input is None and cut.truncated
    assert parse_tool_arguments("[1]").input is None
    assert parse_tool_arguments("nope").input is None and not parse_tool_arguments("nope").truncated


def test_unique_message_ids() -> None:
    ids = {StreamBuilder(model="m").start()[0]["message"]["id"] for _ in range(200)}
    assert len(ids) == 200


def test_error_chunk_raises_mapped_error() -> None:
    b = StreamBuilder(model="m")
    with pytest.raises(UpstreamError):
        feed_openai(b, {"error": {"message": "boom", "type": "InternalServerError"}}, [])
    events = b.start() + b.fail(UpstreamError("boom"))
    assert check_events(events) == []


def test_non_streamed_completion_is_read_like_a_chunk() -> None:
    whole = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "ok",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2},
    }
    _, msg, _ = run([whole])
    assert types(msg) == ["text", "tool_use"] and msg["usage"]["output_tokens"] == 2


def test_checker_catches_malformed_streams() -> None:
    b = StreamBuilder(model="m")
    good = b.start() + b.text("hi") + b.end()
    assert check_events(good) == []
    assert check_events(good + good[:1])  # second message_start / after stop
    assert check_events([e for e in good if e["type"] != "content_block_stop"])
    assert check_events([e for e in good if e["type"] != "message_delta"])
    assert check_events(good[1:])
    dup = json.loads(json.dumps(good))
    dup.insert(2, dup[1])
    assert check_events(dup)


# ----- anthropic upstream pass-through


def anth(events: list[dict]) -> dict:
    b = StreamBuilder(model="client-name")
    a = AnthropicAdapter(b)
    out = b.start()
    for e in events:
        out += a.feed(e)
    out += b.end()
    assert_well_formed(out)
    return accumulate(out)


def test_anthropic_upstream_renumbered_and_revalidated() -> None:
    upstream = [
        {"type": "message_start", "message": {"id": "msg_same", "usage": {"input_tokens": 7}}},
        {"type": "ping"},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "text_delta", "text": "<think>x</think>Hi"},
        },
        # no content_block_stop for the text block: the builder closes it
        {
            "type": "content_block_start",
            "index": 4,
            "content_block": {"type": "tool_use", "id": "tu1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 4,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":'},
        },
        {
            "type": "content_block_delta",
            "index": 4,
            "delta": {"type": "input_json_delta", "partial_json": "1}"},
        },
        {"type": "content_block_stop", "index": 4},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    msg = anth(upstream)
    assert msg["id"] != "msg_same" and msg["model"] == "client-name"
    assert types(msg) == ["thinking", "text", "tool_use"]
    assert msg["content"][2]["input"] == {"a": 1}
    assert msg["stop_reason"] == "tool_use" and msg["usage"]["output_tokens"] == 9


def test_anthropic_upstream_stop_sequence_and_whole_message() -> None:
    b = StreamBuilder(model="m")
    a = AnthropicAdapter(b)
    ev = (
        b.start()
        + a.feed_message(
            {
                "type": "message",
                "content": [{"type": "text", "text": "x"}],
                "stop_reason": "stop_sequence",
                "stop_sequence": "##",
                "usage": {"input_tokens": 3, "output_tokens": 1},
            }
        )
        + b.end()
    )
    assert_well_formed(ev)
    msg = accumulate(ev)
    assert msg["stop_reason"] == "stop_sequence" and msg["stop_sequence"] == "##"


def test_anthropic_upstream_error_event_raises() -> None:
    b = StreamBuilder(model="m")
    with pytest.raises(UpstreamError):
        AnthropicAdapter(b).feed({"type": "error", "error": {"type": "api_error", "message": "x"}})


def test_checker_catches_invalid_tool_json() -> None:
    b = StreamBuilder(model="m")
    events = b.start()
    events.append(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        }
    )
    events.append(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":'},
        }
    )
    events.append({"type": "content_block_stop", "index": 0})
    assert any("not valid JSON" in p for p in check_events(events))


_PIECES = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<",
        ">",
        "plan",
        " ",
        "\n",
        '{"name": "f", "arguments": {"a": 1}}',
        "text",
        "<thi",
        "nk>",
        "</tool",
        "_call>",
    ]
)


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(_PIECES, max_size=14),
    cuts=st.lists(st.integers(min_value=1, max_value=9), max_size=30),
    reasoning=st.booleans(),
    finish=st.sampled_from(["stop", "length", "tool_calls", None]),
)
def test_any_split_of_any_tagged_text_is_well_formed_and_split_invariant(
    pieces: list[str], cuts: list[int], reasoning: bool, finish: str | None
) -> None:
    text = "".join(pieces)
    whole = [chunk(reasoning=text) if reasoning else chunk(text), chunk(finish=finish)]
    split, i = [], 0
    for n in [*cuts, len(text)]:
        if i >= len(text):
            break
        part = text[i : i + n]
        split.append(chunk(reasoning=part) if reasoning else chunk(part))
        i += n
    _, m1, _ = run(whole)
    _, m2, _ = run([*split, chunk(finish=finish)])
    strip = [{k: v for k, v in b.items() if k != "id"} for b in m1["content"]]
    assert strip == [{k: v for k, v in b.items() if k != "id"} for b in m2["content"]]
    assert m1["stop_reason"] == m2["stop_reason"]


def test_output_starting_inside_think_section() -> None:
    _, msg, _ = run(
        [chunk("still thinking"), chunk("</think>\n\nAnswer"), chunk(finish="stop")], start_in_think=True
    )
    assert types(msg) == ["thinking", "text"] and msg["content"][1]["text"] == "Answer"
