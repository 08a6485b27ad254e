"""Protocol-neutral playback state: the reply plan and the per-response context."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from .latency import Admission, LatencySimulator, split_tokens
from .model_request import ModelRequest, RecordedRequest, RequestLog
from .script import Reply

StopReason = Literal["end_turn", "tool_use", "max_tokens"]


def new_id(prefix: str) -> str:
    """A unique id such as ``msg_5f0c...`` (Claude Code needs a unique message id per response)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


@dataclass
class PlannedCall:
    id_suffix: str
    name: str
    arguments_json: str
    arguments_obj: Any
    tokens: list[str]


@dataclass
class Plan:
    """What one response contains, already cut to ``max_tokens``."""

    text_tokens: list[str]
    calls: list[PlannedCall]
    stop: StopReason
    hang_after_first_token: bool = False

    @property
    def text(self) -> str:
        return "".join(self.text_tokens)

    @property
    def output_tokens(self) -> int:
        return len(self.text_tokens) + sum(len(c.tokens) for c in self.calls)


def build_plan(reply: Reply, request: ModelRequest, *, default_text: str) -> Plan:
    """Turn a scripted reply into a :class:`Plan`: resolve tool names, tokenise, apply ``max_tokens``
    (text cut first; a tool call that does not fit whole is dropped; stop becomes ``max_tokens``)."""
    text = reply.text
    if not text and not reply.tool_calls:
        text = default_text
    text_tokens = split_tokens(text)
    calls = [
        PlannedCall(
            id_suffix=uuid.uuid4().hex[:24],
            name=request.resolve_tool_name(call.name),
            arguments_json=call.arguments_json(),
            arguments_obj=call.arguments_obj(),
            tokens=split_tokens(call.arguments_json()) or [""],
        )
        for call in reply.tool_calls
    ]
    stop: StopReason = "tool_use" if calls else "end_turn"
    budget = request.max_tokens
    if budget is not None and budget >= 0:
        if len(text_tokens) > budget:
            return Plan(text_tokens[:budget], [], "max_tokens")
        left = budget - len(text_tokens)
        kept: list[PlannedCall] = []
        for call in calls:
            if len(call.tokens) > left:
                return Plan(text_tokens, kept, "max_tokens")
            kept.append(call)
            left -= len(call.tokens)
    return Plan(text_tokens, calls, stop)


@dataclass
class PlaybackContext:
    """Everything a protocol renderer needs for one response."""

    request: ModelRequest
    record: RecordedRequest
    log: RequestLog
    sim: LatencySimulator
    admission: Admission
    stopping: threading.Event
    model_name: str
    created: int = field(default_factory=lambda: int(time.time()))

    def mark_first_byte(self) -> None:
        if self.record.first_byte_at is None:
            self.record.first_byte_at = time.monotonic()
            self.log.touch()

    def finish(self, status: int, output_tokens: int, error: str | None = None) -> None:
        self.record.status = status
        self.record.output_tokens = output_tokens
        if error and self.record.error is None:
            self.record.error = error
        if self.record.finished_at is None:
            self.record.finished_at = time.monotonic()
        self.log.touch()

    async def hang(self) -> None:
        """Block until the server stops (the response's task is cancelled if the client goes away)."""
        await wait_threading_event(self.stopping)


async def wait_threading_event(event: threading.Event, poll_s: float = 0.05) -> None:
    """Wait for a ``threading.Event`` set from another thread (the upstream's ``stop()``), cancellably.

    Polls instead of blocking a worker thread: an abandoned worker stuck in ``event.wait()`` would keep
    the interpreter from exiting when the event is never set (in-process use without ``stop()``).
    """
    while not event.is_set():  # noqa: ASYNC110 - set from a foreign thread, no anyio.Event possible
        await anyio.sleep(poll_s)
