"""Anthropic request -> normalised request -> OpenAI chat.completions request."""

from __future__ import annotations

from typing import Any

import pytest

from proxy._normalize import clamp_max_tokens, prepare
from proxy._openai_request import dumps, to_openai
from proxy.errors import InvalidRequestError

TOOL = {
    "name": "save",
    "description": "Save it",
    "input_schema": {"type": "object", "properties": {"v": {"type": "string"}}},
}


def oa(body: dict[str, Any], **kw: Any) -> dict[str, Any]:
    p = prepare({"model": "m", "max_tokens": 100, **body}, **kw)
    out, _ = to_openai(p, upstream_model="up", max_tokens=p.max_tokens, enable_thinking=p.thinking)
    return out


def test_billing_header_block_stripped_and_prefix_byte_identical() -> None:
    def req(h: str) -> dict:
        return {
            "system": [
                {"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1; cch={h};"},
                {"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}},
            ],
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [TOOL],
        }

    a, b = dumps(oa(req("abc"))), dumps(oa(req("xyz")))
    assert a == b
    assert b"billing" not in a
    assert oa(req("a"))["messages"][0] == {"role": "system", "content": "You are an agent."}
    assert (
        oa({"system": "x-anthropic-billing-header: x\nreal", "messages": []})["messages"][0]["content"]
        == "real"
    )


def test_system_items_inside_messages_folded() -> None:
    out = oa(
        {
            "system": "S",
            "messages": [
                {"role": "system", "content": "lead"},
                {"role": "user", "content": "u1"},
                {"role": "assistant", "content": "a1"},
                {"role": "system", "content": [{"type": "text", "text": "mid"}]},
                {"role": "user", "content": [{"type": "text", "text": "u2"}]},
                {"role": "system", "content": "after last user"},
            ],
        }
    )
    assert out["messages"] == [
        {"role": "system", "content": "S\n\nlead"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "mid\nu2\nafter last user"},
    ]


def test_system_after_tool_results_goes_after_them() -> None:
    p = prepare(
        {
            "model": "m",
            "max_tokens": 5,
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "save", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
                {"role": "system", "content": "reminder"},
            ],
        }
    )
    assert [b["type"] for b in p.messages[-1]["content"]] == ["tool_result", "text"]


def test_system_items_kept_in_place_in_keep_mode() -> None:
    out = oa(
        {"messages": [{"role": "user", "content": "u"}, {"role": "system", "content": "late"}]},
        system_mode="keep",
    )
    assert out["messages"] == [{"role": "user", "content": "u"}, {"role": "system", "content": "late"}]


def test_tool_result_string_list_images_and_errors() -> None:
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}}
    out = oa(
        {
            "messages": [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t", "signature": "s"},
                        {"type": "text", "text": "calling"},
                        {"type": "tool_use", "id": "a", "name": "save", "input": {"v": "é"}},
                        {"type": "tool_use", "id": "b", "name": "save", "input": {}},
                        {"type": "tool_use", "id": "c", "name": "save", "input": {}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "plain"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "b",
                            "content": [{"type": "text", "text": "l1"}, {"type": "text", "text": "l2"}, img],
                        },
                        {"type": "tool_result", "tool_use_id": "c", "content": "bad input", "is_error": True},
                        {"type": "text", "text": "next"},
                    ],
                },
            ],
            "tools": [TOOL],
        }
    )
    msgs = out["messages"]
    assert msgs[1] == {
        "role": "assistant",
        "content": "calling",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "save", "arguments": '{"v":"é"}'}},
            {"id": "b", "type": "function", "function": {"name": "save", "arguments": "{}"}},
            {"id": "c", "type": "function", "function": {"name": "save", "arguments": "{}"}},
        ],
    }
    assert msgs[2] == {"role": "tool", "tool_call_id": "a", "content": "plain"}
    assert msgs[3] == {"role": "tool", "tool_call_id": "b", "content": "l1\nl2"}
    assert msgs[4] == {"role": "tool", "tool_call_id": "c", "content": "Error: bad input"}
    assert msgs[5]["role"] == "user"
    assert msgs[5]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}
    assert msgs[5]["content"][-1] == {"type": "text", "text": "next"}
    assert "thinking" not in dumps(out).decode()


def test_thinking_only_assistant_turn_dropped() -> None:
    out = oa(
        {
            "messages": [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]},
                {"role": "user", "content": "b"},
            ]
        }
    )
    assert [m["role"] for m in out["messages"]] == ["user", "user"]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "save"}, {"type": "function", "function": {"name": "save"}}),
    ],
)
def test_tool_choice_mapping(choice: dict, expected: Any) -> None:
    out = oa({"messages": [{"role": "user", "content": "x"}], "tools": [TOOL], "tool_choice": choice})
    assert out["tool_choice"] == expected
    assert out["tools"][0] == {
        "type": "function",
        "function": {"name": "save", "description": "Save it", "parameters": TOOL["input_schema"]},
    }


def test_tool_choice_without_tools_and_parallel_flag() -> None:
    out = oa({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "any"}})
    assert "tool_choice" not in out and "tools" not in out
    out = oa(
        {
            "messages": [{"role": "user", "content": "x"}],
            "tools": [TOOL],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        }
    )
    assert out["parallel_tool_calls"] is False


def test_server_tools_dropped_with_warning() -> None:
    p = prepare(
        {
            "model": "m",
            "max_tokens": 5,
            "messages": [],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}, TOOL],
            "tool_choice": {"type": "tool", "name": "web_search"},
        }
    )
    assert [t["name"] for t in p.tools] == ["save"]
    assert any("web_search" in w for w in p.warnings)
    assert p.tool_choice == {"type": "auto"}


def test_named_tool_choice_unknown_is_invalid() -> None:
    with pytest.raises(InvalidRequestError, match="nope"):
        prepare(
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [],
                "tools": [TOOL],
                "tool_choice": {"type": "tool", "name": "nope"},
            }
        )


@pytest.mark.parametrize(
    ("thinking", "flag"),
    [
        (None, None),
        ({"type": "enabled", "budget_tokens": 1024}, True),
        ({"type": "adaptive"}, True),
        ({"type": "disabled"}, False),
    ],
)
def test_thinking_to_enable_thinking(thinking: Any, flag: Any) -> None:
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "x"}]}
    if thinking is not None:
        body["thinking"] = thinking
    out = oa(body)
    if flag is None:
        assert "chat_template_kwargs" not in out
    else:
        assert out["chat_template_kwargs"] == {"enable_thinking": flag}


def test_max_tokens_clamped_to_context() -> None:
    p = prepare({"model": "m", "max_tokens": 128000, "messages": [{"role": "user", "content": "x" * 4000}]})
    mt = clamp_max_tokens(p, context_window=8192, max_output_tokens=None)
    assert 6000 < mt < 8192 - 1000
    assert clamp_max_tokens(p, context_window=100, max_output_tokens=None) == 1
    assert clamp_max_tokens(p, context_window=None, max_output_tokens=512) == 512


def test_stop_sampling_and_stream_options() -> None:
    out = oa(
        {
            "messages": [{"role": "user", "content": "x"}],
            "stop_sequences": ["##"],
            "temperature": 0.2,
            "top_k": 5,
            "metadata": {"user_id": "u"},
        }
    )
    assert out["stop"] == ["##"] and out["temperature"] == 0.2 and out["top_k"] == 5
    assert out["stream"] is True and out["stream_options"] == {"include_usage": True}
    assert list(out) == [
        "model",
        "messages",
        "max_tokens",
        "temperature",
        "top_k",
        "stop",
        "stream",
        "stream_options",
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 5, "messages": []}, "model"),
        ({"model": "m", "messages": []}, "max_tokens"),
        ({"model": "m", "max_tokens": 0, "messages": []}, "max_tokens"),
        ({"model": "m", "max_tokens": 5}, "messages"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "bot", "content": "x"}]}, "role"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": 5}]}, "content"),
        ({"model": "m", "max_tokens": 5, "messages": [], "tool_choice": {"type": "maybe"}}, "tool_choice"),
    ],
)
def test_invalid_requests_name_the_field(body: dict, field: str) -> None:
    with pytest.raises(InvalidRequestError, match=field):
        prepare(body)
