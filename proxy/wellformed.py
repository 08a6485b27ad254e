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
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

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
    checker = _Checker()
    for n, ev in enumerate(events):
        checker.check(n, ev)
    return checker.finish()


class _Checker:
    """The state of :func:`check_events` over one sequence: one method per event type."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.started = self.stopped = self.saw_delta = self.errored = False
        self.open_idx: int | None = None
        self.open_type: str | None = None
        self.next_idx = 0
        self.tool_json: list[str] = []

    def check(self, n: int, ev: dict[str, Any]) -> None:
        t = ev.get("type")
        where = f"event {n} ({t})"
        if self.errored:
            self.problems.append(f"{where}: after an error event")
        elif self.stopped:
            self.problems.append(f"{where}: after message_stop")
        elif t == "ping":
            pass
        elif t == "error":
            self._error(where, ev)
        elif t == "message_start":
            self._message_start(where, ev)
        elif not self.started:
            self.problems.append(f"{where}: before message_start")
        else:
            handler = self._HANDLERS.get(str(t))
            if handler is None:
                self.problems.append(f"{where}: unknown event type")
            else:
                handler(self, where, ev)

    def finish(self) -> list[str]:
        if not self.started:
            self.problems.append("no message_start")
        elif not self.stopped and not self.errored:
            self.problems.append("stream ended without message_stop or error")
        return self.problems

    def _error(self, where: str, ev: dict[str, Any]) -> None:
        err = ev.get("error") or {}
        if not err.get("type") or not isinstance(err.get("message"), str):
            self.problems.append(f"{where}: error event without error.type and error.message")
        self.errored = True

    def _message_start(self, where: str, ev: dict[str, Any]) -> None:
        if self.started:
            self.problems.append(f"{where}: second message_start")
        self.started = True
        msg = ev.get("message") or {}
        missing = [f for f in _MESSAGE_FIELDS if f not in msg]
        if missing:
            self.problems.append(f"{where}: message lacks {missing}")
        if not str(msg.get("id", "")).startswith("msg_"):
            self.problems.append(f"{where}: message id {msg.get('id')!r} does not start with msg_")
        if msg.get("type") != "message" or msg.get("role") != "assistant" or msg.get("content") != []:
            self.problems.append(f"{where}: message must be type=message, role=assistant, content=[]")
        if not isinstance((msg.get("usage") or {}).get("input_tokens"), int):
            self.problems.append(f"{where}: usage.input_tokens missing")

    def _block_start(self, where: str, ev: dict[str, Any]) -> None:
        idx = ev.get("index")
        if self.open_idx is not None:
            self.problems.append(f"{where}: block {idx} started while block {self.open_idx} is open")
        if idx != self.next_idx:
            self.problems.append(f"{where}: index {idx}, expected {self.next_idx}")
        if self.saw_delta:
            self.problems.append(f"{where}: block started after message_delta")
        block = ev.get("content_block") or {}
        self.open_type = block.get("type")
        if self.open_type not in _DELTA_FOR:
            self.problems.append(f"{where}: unknown block type {self.open_type!r}")
        if self.open_type == "tool_use" and not (block.get("id") and block.get("name")):
            self.problems.append(f"{where}: tool_use block without id and name")
        self.open_idx = idx
        self.next_idx = (idx if isinstance(idx, int) else self.next_idx) + 1
        self.tool_json = []

    def _block_delta(self, where: str, ev: dict[str, Any]) -> None:
        idx = ev.get("index")
        if idx != self.open_idx or self.open_idx is None:
            self.problems.append(f"{where}: delta for block {idx}, which is not open")
        dt = (ev.get("delta") or {}).get("type")
        if self.open_type in _DELTA_FOR and dt not in _DELTA_FOR[self.open_type]:
            self.problems.append(f"{where}: {dt} inside a {self.open_type} block")
        if dt == "input_json_delta":
            self.tool_json.append(str((ev.get("delta") or {}).get("partial_json", "")))

    def _block_stop(self, where: str, ev: dict[str, Any]) -> None:
        idx = ev.get("index")
        if idx != self.open_idx or self.open_idx is None:
            self.problems.append(f"{where}: stop for block {idx}, which is not open")
        if self.open_type == "tool_use":
            raw = "".join(self.tool_json)
            try:
                if not isinstance(json.loads(raw) if raw else {}, dict):
                    self.problems.append(f"{where}: tool_use input is not a JSON object")
            except ValueError:
                self.problems.append(f"{where}: tool_use input_json_delta fragments are not valid JSON")
        self.open_idx = self.open_type = None

    def _message_delta(self, where: str, ev: dict[str, Any]) -> None:
        if self.open_idx is not None:
            self.problems.append(f"{where}: message_delta while block {self.open_idx} is open")
        if self.saw_delta:
            self.problems.append(f"{where}: second message_delta")
        self.saw_delta = True
        d = ev.get("delta") or {}
        if d.get("stop_reason") not in _STOP_REASONS:
            self.problems.append(f"{where}: stop_reason {d.get('stop_reason')!r} invalid")
        if d.get("stop_reason") == "stop_sequence" and not d.get("stop_sequence"):
            self.problems.append(f"{where}: stop_sequence stop without the matched sequence")
        if not isinstance((ev.get("usage") or {}).get("output_tokens"), int):
            self.problems.append(f"{where}: usage.output_tokens missing")

    def _message_stop(self, where: str, ev: dict[str, Any]) -> None:
        if not self.saw_delta:
            self.problems.append(f"{where}: message_stop without message_delta")
        if self.open_idx is not None:
            self.problems.append(f"{where}: message_stop while block {self.open_idx} is open")
        self.stopped = True

    _HANDLERS: ClassVar[dict[str, Callable[[_Checker, str, dict[str, Any]], None]]] = {
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
    }


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
