"""Issue 14, one section per case: tool names every upstream accepts; a cut-off stream is an error; broken
tool JSON is never turned into ``{}``; max_tokens capped from the upstream's own limit; only transient
5xx retried; a dropped attachment leaves a note. The proxy is the real app, over HTTP (in-process ASGI);
the upstream is the scripted MockTransport fake, or a raw TCP server where bytes on the wire matter."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from proxy import ModelPool, ProxyConfig, accumulate, check_events, create_app, parse_sse
from proxy._normalize import estimate_tokens
from proxy._toolnames import ToolNames, upstream_tool_name

from .fakes import A, FakeUpstream, Sse, Status, make_config, msg_body, proxy_client, text_chunks, tool_chunks
from .rawupstream import RawUpstream, frame, sse_reply

pytestmark = pytest.mark.anyio
VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
LONG = "mcp__" + "a-very-long-mcp-server-name-built-from-a-package-path" + "__write_entry_for_the_session"


def _tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "d",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


def _stop_reason(events: list[dict[str, Any]]) -> str | None:
    d = [e for e in events if e["type"] == "message_delta"]
    return d[0]["delta"]["stop_reason"] if d else None


# ----- 1. tool names ---------------------------------------------------------------------------------


def test_tool_name_mapping_is_valid_deterministic_and_reversible() -> None:
    names = ["files.read", LONG, "mcp__coach__write_shadow", "ok-name_1", "ünïcode tool"]
    m = ToolNames(names)
    for n in names:
        up = m.upstream(n)
        assert VALID.match(up) and m.client(up) == n
        assert up == ToolNames(reversed(names)).upstream(n)  # independent of order
    assert m.upstream("mcp__coach__write_shadow") == "mcp__coach__write_shadow"  # valid names pass unchanged
    assert m.upstream("files.read").startswith("files_read_") and len(m.upstream(LONG)) <= 64


def test_tool_name_collision_with_a_valid_name_gets_a_longer_suffix() -> None:
    taken = upstream_tool_name("files.read")  # a client tool literally named like our mapping
    m = ToolNames(["files.read", taken])
    assert m.upstream(taken) == taken and m.upstream("files.read") != taken
    assert VALID.match(m.upstream("files.read")) and m.client(m.upstream("files.read")) == "files.read"


@pytest.mark.parametrize("stream", [True, False])
async def test_invalid_tool_names_sent_valid_upstream_and_given_back(stream: bool) -> None:
    mapped = upstream_tool_name("files.read")
    up = FakeUpstream(lambda b: Sse(tool_chunks(mapped, '{"path": "a.txt"}')))
    history = [
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t0", "name": "files.read", "input": {"path": "x"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": "..."}]},
    ]
    body = msg_body(
        stream=stream,
        tools=[_tool("files.read"), _tool(LONG), _tool("mcp__coach__save")],
        tool_choice={"type": "tool", "name": "files.read"},
        messages=history,
    )
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=body)
    sent = up.calls()[0].json
    upstream_names = [t["function"]["name"] for t in sent["tools"]]
    assert all(VALID.match(n) for n in upstream_names) and "mcp__coach__save" in upstream_names
    assert sent["tool_choice"] == {"type": "function", "function": {"name": mapped}}
    assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == mapped
    if stream:
        assert check_events(parse_sse(r.text)) == []
    msg = accumulate(parse_sse(r.text)) if stream else r.json()
    (use,) = [b for b in msg["content"] if b["type"] == "tool_use"]
    assert use["name"] == "files.read" and use["input"] == {"path": "a.txt"}


async def test_invalid_tool_names_mapped_for_an_anthropic_upstream_too() -> None:
    seen: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(404)
        seen.append(json.loads(request.content))
        name = seen[-1]["tools"][0]["name"]
        return httpx.Response(
            200,
            json={
                "type": "message",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": {"path": "p"}}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 3, "output_tokens": 2},
            },
        )

    up = FakeUpstream()
    up.transport = httpx.MockTransport(handler)
    cfg = ProxyConfig(models=[ModelPool(name="qwen3", kind="anthropic", replicas=[A])])
    async with proxy_client(up, cfg) as c:
        r = await c.post("/v1/messages", json=msg_body(tools=[_tool("files.read")]))
    assert VALID.match(seen[0]["tools"][0]["name"])
    assert r.json()["content"][0]["name"] == "files.read"


# ----- 2. a stream cut off without a finish reason ---------------------------------------------------


def _raw_app(up: RawUpstream, **kw: Any) -> httpx.AsyncClient:
    cfg = ProxyConfig(
        models=[ModelPool(name="qwen3", replicas=[up.url])],
        default_model="qwen3",
        backoff_base_s=0.0,
        ping_interval_s=0.05,
        **kw,
    )
    app = create_app(cfg, health_checks=False)
    c = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://proxy", timeout=30)
    c.app = app  # type: ignore[attr-defined]
    return c


_TEXT_NO_FINISH = [frame(c) for c in text_chunks("Hello| wor")[:3]]  # role chunk + two text chunks, no finish
_TOOL_CUT = [
    frame(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "bash",
                                    "arguments": '{"command": "rm -rf /tmp/build && echo',
                                },
                            }
                        ]
                    },
                    "finish_reason": None,
                }
            ]
        }
    )
]


@pytest.mark.parametrize("mode", ["chunked", "close", "chunked-cut"])
@pytest.mark.parametrize("frames", [_TEXT_NO_FINISH, _TOOL_CUT], ids=["text", "tool"])
async def test_stream_cut_without_finish_reason_is_an_error_event(mode: str, frames: list[bytes]) -> None:
    with RawUpstream(lambda r: sse_reply(frames, done=False, mode=mode)) as up:
        async with _raw_app(up) as c:
            r = await c.post("/v1/messages", json=msg_body(stream=True, tools=[_tool("bash")]))
            metrics = (await c.get("/metrics")).text
    events = parse_sse(r.text)
    assert check_events(events) == []
    assert events[-1]["type"] == "error" and events[-1]["error"]["type"] == "api_error"
    assert not any(e["type"] == "message_delta" for e in events)  # never end_turn / tool_use
    assert not any(e.get("content_block", {}).get("type") == "tool_use" for e in events)
    if mode != "chunked-cut":  # the other one is a read error, already an error before the fix
        assert f'coach_proxy_truncated_streams_total{{replica="{up.url}"}} 1' in metrics


async def test_stream_cut_without_finish_reason_non_streaming_is_502() -> None:
    with RawUpstream(lambda r: sse_reply(_TOOL_CUT, done=False, mode="close")) as up:
        async with _raw_app(up) as c:
            r = await c.post("/v1/messages", json=msg_body(tools=[_tool("bash")]))
    assert r.status_code == 502 and r.json()["error"]["type"] == "api_error"
    assert "without a finish reason" in r.json()["error"]["message"]


@pytest.mark.parametrize("done", [True, False])
async def test_stream_with_finish_reason_or_done_is_complete(done: bool) -> None:
    frames = [frame(c) for c in text_chunks("Hello| world")]
    if done:
        frames = [f for f in frames if b'finish_reason": "stop' not in f]  # [DONE] but no finish reason
    with RawUpstream(lambda r: sse_reply(frames, done=done, mode="close")) as up:
        async with _raw_app(up) as c:
            r = await c.post("/v1/messages", json=msg_body(stream=True))
    events = parse_sse(r.text)
    assert check_events(events) == [] and _stop_reason(events) == "end_turn"


# ----- 3. tool arguments that are not valid JSON -----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    ['{"command": "rm -rf /tmp/bu', '{"path":', '{"n": 12', "{'path': 'a'}", '{"a": 1}{"b": 2}', "[1, 2]"],
    ids=["cut-string", "cut-after-colon", "cut-number", "single-quotes", "two-objects", "array"],
)
async def test_invalid_tool_arguments_are_an_error_never_empty_input(args: str) -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("bash", args)))
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(stream=True, tools=[_tool("bash")]))
        whole = await c.post("/v1/messages", json=msg_body(tools=[_tool("bash")]))
        m = await c.get("/metrics")
    events = parse_sse(r.text)
    assert check_events(events) == []
    assert events[-1]["type"] == "error" and events[-1]["error"]["type"] == "api_error"
    assert "'bash'" in events[-1]["error"]["message"]
    assert not any(e.get("content_block", {}).get("type") == "tool_use" for e in events)
    assert whole.status_code == 502 and "not a valid JSON object" in whole.json()["error"]["message"]
    assert 'coach_proxy_invalid_tool_arguments_total{outcome="error"} 2' in m.text


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ('{"path": "a"}}', {"path": "a"}),
        ('{"path": "a"}\n]}', {"path": "a"}),
        ('```json\n{"path": "a"}\n```', {"path": "a"}),
        ('"{\\"path\\": \\"a\\"}"', {"path": "a"}),
        ("", {}),
    ],
)
async def test_tool_arguments_repaired_only_when_meaning_cannot_change(
    args: str, expected: dict[str, Any]
) -> None:
    up = FakeUpstream(lambda b: Sse(tool_chunks("bash", args)))
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(tools=[_tool("bash")]))
    assert r.status_code == 200 and r.json()["content"][0]["input"] == expected


async def test_tool_call_cut_by_max_tokens_is_dropped_with_stop_reason_max_tokens() -> None:
    chunks = tool_chunks("bash", '{"command": "rm -rf /tmp/bu')
    chunks[1]["choices"][0]["finish_reason"] = "length"
    up = FakeUpstream(lambda b: Sse(chunks))
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(tools=[_tool("bash")]))
        m = await c.get("/metrics")
    msg = r.json()
    assert msg["stop_reason"] == "max_tokens" and all(b["type"] != "tool_use" for b in msg["content"])
    assert 'coach_proxy_invalid_tool_arguments_total{outcome="dropped"} 1' in m.text


# ----- 4. max_tokens capped from the replica's served limit ------------------------------------------


async def test_max_tokens_capped_from_vllm_max_model_len_with_exact_prompt_count() -> None:
    up = FakeUpstream()
    up.models = {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 32768}]}
    up.tokenize_count = 1234
    async with proxy_client(up, make_config()) as c:  # no context_window configured (coach proxy --upstream)
        for _ in range(3):
            assert (await c.post("/v1/messages", json=msg_body(max_tokens=128000))).status_code == 200
        small = await c.post("/v1/messages", json=msg_body(max_tokens=256))
    assert small.status_code == 200
    assert [s.json["max_tokens"] for s in up.calls()] == [32768 - 1234 - 8] * 3 + [256]
    assert len([s for s in up.seen if s.path == "/v1/models"]) == 1  # cached per replica
    assert len([s for s in up.seen if s.path == "/tokenize"]) == 3  # not needed when max_tokens surely fits


async def test_max_tokens_capped_from_llama_server_props_per_replica() -> None:
    up = FakeUpstream()
    up.props = {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 6}
    up.tokenize_count = 100
    async with proxy_client(up, make_config([A, "http://b.test"])) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=128000))
    assert up.calls()[0].json["max_tokens"] == 8192 - 100 - 8
    assert {s.url for s in up.seen if s.path == "/props"} == {A, "http://b.test"}


async def test_llama_server_slot_context_read_from_v1_models_meta() -> None:
    up = FakeUpstream()
    up.models = {"data": [{"id": "smollm2", "meta": {"n_ctx": 2048, "n_ctx_train": 8192}}]}
    up.tokenize_count = 100
    async with proxy_client(up, make_config()) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=128000))
    assert up.calls()[0].json["max_tokens"] == 2048 - 100 - 8
    assert not [s for s in up.seen if s.path == "/props"]


async def test_configured_context_window_lowers_the_served_one() -> None:
    up = FakeUpstream()
    up.models = {"data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 32768}]}
    up.tokenize_count = 100
    async with proxy_client(up, make_config(pool={"context_window": 4096, "max_output_tokens": 2000})) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=128000))
    assert up.calls()[0].json["max_tokens"] == 2000


async def test_prompt_longer_than_the_served_context_is_a_clear_400() -> None:
    up = FakeUpstream()
    up.models = {"data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 4096}]}
    up.tokenize_count = 5000
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body("x" * 5000, max_tokens=1000))
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"].startswith("prompt is too long: 5000 tokens > 4088 maximum")
    assert up.calls() == []


async def test_served_limit_wins_over_a_larger_configured_context_window() -> None:
    up = FakeUpstream()
    up.props = {"default_generation_settings": {"n_ctx": 8192}}
    up.tokenize_count = 100
    async with proxy_client(up, make_config(pool={"context_window": 100000})) as c:
        await c.post("/v1/messages", json=msg_body(max_tokens=128000))
    assert up.calls()[0].json["max_tokens"] == 8192 - 100 - 8


async def test_cap_falls_back_to_a_cjk_aware_estimate_when_the_upstream_cannot_tokenize() -> None:
    up = FakeUpstream()
    up.props = {"default_generation_settings": {"n_ctx": 8192}}
    up.tokenize_count = -1  # /tokenize answers 404
    text = "我想开始跑步，但是总是坚持不下去。" * 200  # 3400 chars: about 3400 tokens, not 850
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(text, max_tokens=128000))
    assert r.status_code == 200
    assert up.calls()[0].json["max_tokens"] <= 8192 - 3400


def test_token_estimate_does_not_undercount_cjk() -> None:
    assert estimate_tokens("我想开始跑步，但是总是坚持不下去。" * 100) >= 1700
    assert estimate_tokens("a" * 400) == 100


# ----- 5. only transient 5xx retried -----------------------------------------------------------------

LLAMA_IMAGE_500 = {
    "error": {
        "code": 500,
        "message": "image input is not supported - hint: if this is unexpected, "
        "you may need to provide the mmproj",
        "type": "server_error",
    }
}


@pytest.mark.parametrize("stream", [True, False])
async def test_deterministic_500_not_retried_and_mapped_to_400(stream: bool) -> None:
    up = FakeUpstream(lambda b: Status(500, LLAMA_IMAGE_500))
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(stream=stream))
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert "image input is not supported" in r.json()["error"]["message"] and len(up.calls()) == 1


async def test_501_and_505_not_retried_but_502_503_504_are() -> None:
    up = FakeUpstream(
        lambda b: Status(
            501,
            {
                "error": {
                    "code": 501,
                    "message": "Infill is not supported by this model",
                    "type": "not_supported_error",
                }
            },
        )
    )
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body())
    assert (
        r.status_code == 400
        and "Infill is not supported" in r.json()["error"]["message"]
        and len(up.calls()) == 1
    )
    up = FakeUpstream(lambda b: Status(505))
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body())
    assert r.status_code == 502 and r.json()["error"]["type"] == "api_error" and len(up.calls()) == 1
    up = FakeUpstream()
    up.script(A, Status(502), Status(504))
    async with proxy_client(up, make_config()) as c:
        assert (await c.post("/v1/messages", json=msg_body())).status_code == 200
    assert len(up.calls()) == 3


# ----- 6. a dropped attachment leaves a note ---------------------------------------------------------


async def test_pdf_and_file_id_image_in_tool_result_leave_a_note() -> None:
    up = FakeUpstream()
    pdf = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    file_img = {"type": "image", "source": {"type": "file", "file_id": "file_011abc"}}
    messages = [
        {"role": "user", "content": "read"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "here:"}, pdf, file_img],
                },
                pdf,
            ],
        },
    ]
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json=msg_body(messages=messages, tools=[_tool("read")]))
    assert r.status_code == 200
    sent = up.calls()[0].json["messages"]
    tool_msg = next(m for m in sent if m["role"] == "tool")
    assert tool_msg["content"] == (
        "here:\n[attachment omitted: application/pdf is not supported by this model]\n"
        "[attachment omitted: an image given by file id is not supported by this model]"
    )
    assert "[attachment omitted: application/pdf is not supported by this model]" in sent[-1]["content"]


# ----- bad input and logs ----------------------------------------------------------------------------


async def test_empty_messages_is_a_clear_400() -> None:
    up = FakeUpstream()
    async with proxy_client(up, make_config()) as c:
        r = await c.post("/v1/messages", json={**msg_body(), "messages": []})
        only_system = await c.post(
            "/v1/messages", json={**msg_body(), "messages": [{"role": "system", "content": "s"}]}
        )
    for resp in (r, only_system):
        assert resp.status_code == 400 and resp.json()["error"]["type"] == "invalid_request_error"
        assert resp.json()["error"]["message"].startswith("messages: at least one user or assistant message")
    assert up.calls() == []


async def test_no_user_text_in_logs_at_info_level(caplog: pytest.LogCaptureFixture) -> None:
    marker = "MARKER-private-user-words"
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": marker}}
    steps = [
        Sse(text_chunks(marker)),
        Sse(tool_chunks("bash", '{"c": "' + marker)),
        Status(500, LLAMA_IMAGE_500),
        Sse(tool_chunks(upstream_tool_name("files.read"), '{"c": "' + marker + '"}}')),
    ]
    up = FakeUpstream()
    up.script(A, *steps)
    with caplog.at_level("INFO"):
        async with proxy_client(up, make_config()) as c:
            for _ in steps:
                await c.post(
                    "/v1/messages",
                    json=msg_body(
                        marker,
                        tools=[_tool("bash"), _tool("files.read")],
                        messages=[{"role": "user", "content": [{"type": "text", "text": marker}, pdf]}],
                    ),
                )
    assert len(up.calls()) == len(steps)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= 20 and marker in r.getMessage()]
