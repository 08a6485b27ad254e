"""The Anthropic event-stream well-formedness checker, SSE encode/parse, and stream -> message.

:func:`check_events` is THE checker every stream test uses: exactly one ``message_start`` first, with
full message fields; each content block started once and stopped once, indexes 0, 1, 2, ... in order,
one block open at a time, no delta outside its open block, delta types matching the block type, a
tool_use block's ``input_json_delta`` fragments forming one JSON object;
``message_delta`` with ``stop_reason`` and ``usage.output_tokens`` before ``message_stop``; nothing after
``message_stop``. A stream may instead end with one ``error`` event (mid-stream failure).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["accumulate", "assert_well_formed", "check_events", "encode_sse", "parse_sse"]

_STOP_REASONS = {"end_turn", "max_tokens", "tool_use", "stop_sequence", "refusal", "pause_turn"}
_DELTA_FOR = {
    "text": {"text_delta"},
    "thinking": {"thinking_delta", "signature_delta"},
    "tool_use": {"input_json_delta"},
}
_MESSAGE_FIELDS = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")


def encode_sse(event: dict[str, Any]) -> bytes:
    """One SSE frame: ``event: <type>\\ndata: <compact json>\\n\\n``."""
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Parse a whole SSE body into its JSON ``data`` objects (``[DONE]`` and comments skipped)."""
    out = []
    for frame in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:"))
        if data and data != "[DONE]":
            out.append(json.loads(data))
    return out


def check_events(events: Iterable[dict[str, Any]]) -> list[str]:
    """Problems found in an Anthropic event sequence ([] == well formed)."""
    problems: list[str] = []
    started = stopped = saw_delta = errored = False
    open_idx: int | None = None
    open_type: str | None = None
    next_idx = 0
    tool_json: list[str] = []
    for n, ev in enumerate(events):
        t = ev.get("type")
        where = f"event {n} ({t})"
        if errored:
            problems.append(f"{where}: after an error event")
            continue
        if stopped:
            problems.append(f"{where}: after message_stop")
            continue
        if t == "ping":
            continue
        if t == "error":
            err = ev.get("error") or {}
            if not err.get("type") or not isinstance(err.get("message"), str):
                problems.append(f"{where}: error event without error.type and error.message")
            errored = True
            continue
        if t == "message_start":
            if started:
                problems.append(f"{where}: second message_start")
            started = True
            msg = ev.get("message") or {}
            missing = [f for f in _MESSAGE_FIELDS if f not in msg]
            if missing:
                problems.append(f"{where}: message lacks {missing}")
            if not str(msg.get("id", "")).startswith("msg_"):
                problems.append(f"{where}: message id {msg.get('id')!r} does not start with msg_")
            if msg.get("type") != "message" or msg.get("role") != "assistant" or msg.get("content") != []:
                problems.append(f"{where}: message must be type=message, role=assistant, content=[]")
            if not isinstance((msg.get("usage") or {}).get("input_tokens"), int):
                problems.append(f"{where}: usage.input_tokens missing")
            continue
        if not started:
            problems.append(f"{where}: before message_start")
            continue
        if t == "content_block_start":
            idx = ev.get("index")
            if open_idx is not None:
                problems.append(f"{where}: block {idx} started while block {open_idx} is open")
            if idx != next_idx:
                problems.append(f"{where}: index {idx}, expected {next_idx}")
            if saw_delta:
                problems.append(f"{where}: block started after message_delta")
            block = ev.get("content_block") or {}
            open_type = block.get("type")
            if open_type not in _DELTA_FOR:
                problems.append(f"{where}: unknown block type {open_type!r}")
            if open_type == "tool_use" and not (block.get("id") and block.get("name")):
                problems.append(f"{where}: tool_use block without id and name")
            open_idx = idx
            next_idx = (idx if isinstance(idx, int) else next_idx) + 1
            tool_json = []
        elif t == "content_block_delta":
            idx = ev.get("index")
            if idx != open_idx or open_idx is None:
                problems.append(f"{where}: delta for block {idx}, which is not open")
            dt = (ev.get("delta") or {}).get("type")
            if open_type in _DELTA_FOR and dt not in _DELTA_FOR[open_type]:
                problems.append(f"{where}: {dt} inside a {open_type} block")
            if dt == "input_json_delta":
                tool_json.append(str((ev.get("delta") or {}).get("partial_json", "")))
        elif t == "content_block_stop":
            idx = ev.get("index")
            if idx != open_idx or open_idx is None:
                problems.append(f"{where}: stop for block {idx}, which is not open")
            if open_type == "tool_use":
                raw = "".join(tool_json)
                try:
                    if not isinstance(json.loads(raw) if raw else {}, dict):
                        problems.append(f"{where}: tool_use input is not a JSON object")
                except ValueError:
                    problems.append(f"{where}: tool_use input_json_delta fragments are not valid JSON")
            open_idx = open_type = None
        elif t == "message_delta":
            if open_idx is not None:
                problems.append(f"{where}: message_delta while block {open_idx} is open")
            if saw_delta:
                problems.append(f"{where}: second message_delta")
            saw_delta = True
            d = ev.get("delta") or {}
            if d.get("stop_reason") not in _STOP_REASONS:
                problems.append(f"{where}: stop_reason {d.get('stop_reason')!r} invalid")
            if d.get("stop_reason") == "stop_sequence" and not d.get("stop_sequence"):
                problems.append(f"{where}: stop_sequence stop without the matched sequence")
            if not isinstance((ev.get("usage") or {}).get("output_tokens"), int):
                problems.append(f"{where}: usage.output_tokens missing")
        elif t == "message_stop":
            if not saw_delta:
                problems.append(f"{where}: message_stop without message_delta")
            if open_idx is not None:
                problems.append(f"{where}: message_stop while block {open_idx} is open")
            stopped = True
        else:
            problems.append(f"{where}: unknown event type")
    if not started:
        problems.append("no message_start")
    elif not stopped and not errored:
        problems.append("stream ended without message_stop or error")
    return problems


def assert_well_formed(events: Iterable[dict[str, Any]]) -> None:
    """Raise AssertionError listing every problem :func:`check_events` finds."""
    problems = check_events(list(events))
    if problems:
        raise AssertionError("malformed Anthropic event stream:\n  " + "\n  ".join(problems))


def accumulate(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Build the final Anthropic message from its event stream (tool inputs parsed from their JSON).

    Raises ValueError on an ``error`` event (its ``error`` object in ``args[0]``) or a stream without
    ``message_start``.
    """
    msg: dict[str, Any] | None = None
    partial: dict[int, list[str]] = {}
    for ev in events:
        t = ev.get("type")
        if t == "error":
            raise ValueError(ev.get("error"))
        if t == "message_start":
            msg = json.loads(json.dumps(ev["message"]))
            continue
        if msg is None:
            continue
        if t == "content_block_start":
            msg["content"].append(dict(ev["content_block"]))
        elif t == "content_block_delta":
            block, d = msg["content"][-1], ev["delta"]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = block.get("signature", "") + d["signature"]
            elif d["type"] == "input_json_delta":
                partial.setdefault(ev["index"], []).append(d["partial_json"])
        elif t == "content_block_stop":
            block = msg["content"][-1]
            if block.get("type") == "tool_use":
                raw = "".join(partial.pop(ev["index"], []))
                block["input"] = json.loads(raw) if raw else {}
        elif t == "message_delta":
            msg["stop_reason"] = ev["delta"].get("stop_reason")
            msg["stop_sequence"] = ev["delta"].get("stop_sequence")
            msg["usage"].update({k: v for k, v in (ev.get("usage") or {}).items() if v is not None})
    if msg is None:
        raise ValueError("no message_start in the stream")
    return msg
