"""The state machine that produces a well-formed Anthropic event stream from upstream deltas.

Both upstream kinds feed it the same abstract deltas (:meth:`StreamBuilder.text`, ``reasoning``,
``tool_delta``, ``usage``, ``finish``); it guarantees by construction: one ``message_start`` with full
fields and a unique id, every block started once and stopped once, increasing indexes, no delta after a
block stopped, ``message_delta`` with ``stop_reason`` and usage, then ``message_stop``.

Decisions:
- reasoning (``reasoning_content``/``reasoning`` or inline ``<think>``) becomes ``thinking`` blocks, never
  text; a ``<tool_call>{json}</tool_call>`` inside text or thinking becomes a ``tool_use``;
- tool calls are buffered per upstream index and emitted whole when the stream ends, so interleaved
  parallel argument fragments give contiguous blocks, and arguments are validated JSON
  (``proxy._toolargs``: repaired only where the repair cannot change their meaning). A call whose
  arguments stay invalid is never delivered: after a ``max_tokens`` stop it is dropped (the stop reason
  says why; counted), otherwise :meth:`StreamBuilder.end` raises InvalidToolArgumentsError;
- tool names are given back in the client's spelling (``proxy._toolnames``);
- whitespace-only text is not opened as a block (Qwen's "\\n\\n" after ``</think>``);
- a stream that produced no block at all still gets one empty text block, so the message is never empty.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._tags import TagSplitter
from ._toolargs import parse_tool_arguments
from .errors import InvalidToolArgumentsError, ProxyError

log = logging.getLogger("proxy.stream")

Event = dict[str, Any]
_ID_OK = re.compile(r"[^A-Za-z0-9_-]")
SIGNATURE = "coachboard-proxy"


def new_message_id() -> str:
    return "msg_" + uuid.uuid4().hex


def new_tool_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


@dataclass
class _ToolCall:
    id: str | None = None
    name: str | None = None
    args: list[str] = field(default_factory=list)


class StreamBuilder:
    """Anthropic event stream builder. Every method returns the events to send, in order."""

    def __init__(
        self,
        *,
        model: str,
        input_tokens: int = 0,
        message_id: str | None = None,
        think_tags: bool = True,
        start_in_think: bool = False,
        tool_name: Callable[[str], str] | None = None,
    ) -> None:
        self.message_id = message_id or new_message_id()
        self.model = model
        self.input_tokens = input_tokens
        self.output_tokens: int | None = None
        self.cached_tokens = 0
        self.think_tags = think_tags
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.invalid_tool_arguments = 0
        """Tool calls whose arguments stayed invalid (each one refused the response or was dropped)."""
        self.dropped_tool_calls = 0
        """Of those, calls cut by a ``max_tokens`` stop and dropped."""
        self.upstream_finished = False
        """Whether the upstream sent a finish reason (:meth:`finish`)."""
        self._tool_name = tool_name or (lambda n: n)
        self.emitted_chars = 0
        self._index = -1
        self._open: str | None = None  # "text" | "thinking"
        self._started = self._ended = False
        self._blocks = 0
        self._tools: dict[Any, _ToolCall] = {}
        self._tool_order: list[Any] = []
        self._splitters = {"content": TagSplitter(), "reasoning": TagSplitter()}
        self._in_think = start_in_think and think_tags
        self._tool_buf: list[str] | None = None
        self._tool_buf_mode = "text"
        self._tag_tools = 0
        self.tool_uses = 0
        self.tap: Any = None
        """A ``proxy._tool_tap.ToolTap`` that reads tool-call fragments as they arrive (or None)."""

    # ----- lifecycle
    def start(self) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [
            {
                "type": "message_start",
                "message": {
                    "id": self.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": self.input_tokens,
                        "output_tokens": 0,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                    },
                },
            }
        ]

    def _block_start(self, block: dict[str, Any]) -> list[Event]:
        ev = self.start() + self._close()
        self._index += 1
        self._blocks += 1
        return [*ev, {"type": "content_block_start", "index": self._index, "content_block": block}]

    def _close(self) -> list[Event]:
        if self._open is None:
            return []
        ev: list[Event] = []
        if self._open == "thinking":
            ev.append(
                {
                    "type": "content_block_delta",
                    "index": self._index,
                    "delta": {"type": "signature_delta", "signature": SIGNATURE},
                }
            )
        self._open = None
        ev.append({"type": "content_block_stop", "index": self._index})
        return ev

    def _emit(self, kind: str, s: str) -> list[Event]:
        """Emit ``s`` into a block of ``kind`` ("text" or "thinking"), opening one when needed."""
        ev: list[Event] = []
        if self._open != kind:
            s = s.lstrip()
            if not s:
                return []
            if kind == "text":
                ev += self._block_start({"type": "text", "text": ""})
            else:
                ev += self._block_start({"type": "thinking", "thinking": "", "signature": ""})
            self._open = kind
        self.emitted_chars += len(s)
        delta = (
            {"type": "text_delta", "text": s} if kind == "text" else {"type": "thinking_delta", "thinking": s}
        )
        ev.append({"type": "content_block_delta", "index": self._index, "delta": delta})
        return ev

    # ----- deltas
    def text(self, s: str) -> list[Event]:
        """Content text from the upstream (inline tags parsed when ``think_tags``)."""
        if not s:
            return self.start()
        if not self.think_tags:
            return self.start() + self._emit("text", s)
        return self.start() + self._route(self._splitters["content"].feed(s), content=True)

    def reasoning(self, s: str) -> list[Event]:
        """Reasoning text (``reasoning_content``); only ``<tool_call>`` tags are parsed inside it."""
        if not s:
            return self.start()
        if not self.think_tags:
            return self.start() + self._emit("thinking", s)
        return self.start() + self._route(self._splitters["reasoning"].feed(s), content=False)

    def _route(self, items: list[tuple[str, str]], *, content: bool) -> list[Event]:
        ev: list[Event] = []
        for kind, val in items:
            mode = "thinking" if (not content or self._in_think) else "text"
            if kind == "tag":
                if val == "<tool_call>" and self._tool_buf is None:
                    self._tool_buf, self._tool_buf_mode = [], mode
                elif val == "</tool_call>" and self._tool_buf is not None:
                    ev += self._end_tag_tool()
                elif self._tool_buf is not None:
                    self._tool_buf.append(val)
                elif content and val == "<think>":
                    self._in_think = True
                elif content and val == "</think>":
                    self._in_think = False
                else:
                    ev += self._emit(mode, val)
            elif self._tool_buf is not None:
                self._tool_buf.append(val)
            else:
                ev += self._emit(mode, val)
        return ev

    def _end_tag_tool(self) -> list[Event]:
        raw = "".join(self._tool_buf or [])
        mode, self._tool_buf = self._tool_buf_mode, None
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            args = obj.get("arguments", obj.get("parameters", {}))
            self._tag_tools += 1
            key = ("tag", self._tag_tools)
            self._tools[key] = _ToolCall(
                None, obj["name"], [args if isinstance(args, str) else json.dumps(args)]
            )
            self._tool_order.append(key)
            return []
        return self._emit(mode, f"<tool_call>{raw}</tool_call>")

    def tool_delta(
        self, index: Any, id: str | None = None, name: str | None = None, arguments: str | None = None
    ) -> list[Event]:
        """A fragment of the upstream tool call number ``index`` (fragments may interleave)."""
        call = self._tools.get(index)
        if call is None:
            call = self._tools[index] = _ToolCall()
            self._tool_order.append(index)
        if id:
            call.id = id
        if name and not call.name:
            call.name = name
        if arguments:
            call.args.append(arguments)
            if self.tap is not None:
                self.tap.feed(index, call.name, arguments)
        return self.start()

    def usage(
        self,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cached_tokens: int | None = None,
    ) -> None:
        """Upstream token counts; ``input_tokens`` includes cached ones (OpenAI semantics)."""
        if input_tokens is not None:
            self.input_tokens = input_tokens
        if output_tokens is not None:
            self.output_tokens = output_tokens
        if cached_tokens is not None:
            self.cached_tokens = cached_tokens

    def finish(self, reason: str | None, stop_sequence: str | None = None) -> None:
        """Record the upstream's stop: an Anthropic stop_reason (end_turn, max_tokens, tool_use,
        stop_sequence, refusal) and, for stop_sequence, the matched sequence."""
        self.stop_reason = reason
        self.stop_sequence = stop_sequence
        self.upstream_finished = True

    # ----- end
    def _flush_tags(self) -> list[Event]:
        ev: list[Event] = []
        for name, sp in self._splitters.items():
            items = sp.flush()
            if items:
                ev += self._route(items, content=name == "content")
        if self._tool_buf is not None:  # unterminated <tool_call>: show it as it came
            raw, mode, self._tool_buf = "".join(self._tool_buf), self._tool_buf_mode, None
            ev += self._emit(mode, "<tool_call>" + raw)
        return ev

    def _checked_calls(self) -> list[tuple[_ToolCall, dict[str, Any]]]:
        """The buffered calls with their parsed input; raises InvalidToolArgumentsError for a call whose
        arguments are invalid unless the upstream stopped at max_tokens (then the call is dropped)."""
        out = []
        for key in self._tool_order:
            call = self._tools[key]
            if not call.name:
                continue  # a call without a name cannot run; dropped
            parsed = parse_tool_arguments("".join(call.args))
            name = self._tool_name(call.name)
            if parsed.input is None:
                self.invalid_tool_arguments += 1
                if self.stop_reason == "max_tokens":
                    self.dropped_tool_calls += 1
                    log.warning("dropped a call of tool %r cut off by max_tokens: %s", name, parsed.problem)
                    continue
                raise InvalidToolArgumentsError(
                    f"the model called tool {name!r} with arguments that are not a valid JSON object: "
                    f"{parsed.problem}; nothing was delivered to run, retry the request",
                    tool=name,
                )
            if parsed.repair:
                log.info("repaired the arguments of a call of tool %r: %s", name, parsed.repair)
            out.append((_ToolCall(call.id, name, []), parsed.input))
        return out

    def _tool_blocks(self, calls: list[tuple[_ToolCall, dict[str, Any]]]) -> list[Event]:
        ev: list[Event] = []
        for call, tool_input in calls:
            tid = _ID_OK.sub("_", call.id) if call.id else new_tool_id()
            ev += self._block_start({"type": "tool_use", "id": tid, "name": call.name, "input": {}})
            ev.append(
                {
                    "type": "content_block_delta",
                    "index": self._index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(tool_input, ensure_ascii=False),
                    },
                }
            )
            ev.append({"type": "content_block_stop", "index": self._index})
            self.tool_uses += 1
        self._tools.clear()
        self._tool_order.clear()
        return ev

    def end(self) -> list[Event]:
        """Close everything: pending tags, open block, buffered tool calls, message_delta, message_stop.

        Raises InvalidToolArgumentsError (before any of these events is returned) when a buffered tool
        call's arguments are invalid and the stop was not ``max_tokens``."""
        if self._ended:
            return []
        calls = self._checked_calls()  # raises before any state changes
        ev = self.start() + self._flush_tags() + self._close() + self._tool_blocks(calls)
        if self._blocks == 0:
            ev += self._block_start({"type": "text", "text": ""})
            ev.append({"type": "content_block_stop", "index": self._index})
        self._ended = True
        reason = self.stop_reason
        if reason == "max_tokens" or reason == "refusal":
            pass
        elif self.tool_uses:
            reason = "tool_use"
        elif reason == "tool_use" or reason is None:
            reason = "end_turn"
        stop_seq = self.stop_sequence if reason == "stop_sequence" else None
        if self.output_tokens is None:
            self.output_tokens = max(1, (self.emitted_chars + 3) // 4)
        ev.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": stop_seq},
                "usage": {
                    "input_tokens": max(self.input_tokens - self.cached_tokens, 0),
                    "output_tokens": self.output_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": self.cached_tokens,
                },
            }
        )
        ev.append({"type": "message_stop"})
        self.stop_reason = reason
        return ev

    def fail(self, err: ProxyError) -> list[Event]:
        """An error event (mid-stream upstream failure); the stream ends after it."""
        self._ended = True
        return [{"type": "error", "error": {"type": err.error_type, "message": err.message}}]

    @property
    def ended(self) -> bool:
        return self._ended
