"""Parsed model requests, agent matchers and the request log of the scripted upstream."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "AgentMatcher",
    "ModelRequest",
    "RecordedRequest",
    "RequestLog",
    "match_forced_tool",
    "match_system_marker",
    "match_tool",
]

Protocol: TypeAlias = Literal["openai", "anthropic"]
AGENT_HEADER = "x-coach-agent"


@dataclass
class ModelRequest:
    """One model call, protocol-neutral view.

    Attributes:
        protocol: ``"openai"`` (``/v1/chat/completions``) or ``"anthropic"`` (``/v1/messages``).
        body: the parsed JSON body.
        headers: request headers, names lower-cased.
        agent: the agent it was attributed to (header, then matchers), or None.
    """

    protocol: Protocol
    body: dict[str, Any]
    headers: dict[str, str]
    agent: str | None = None

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "")

    @property
    def max_tokens(self) -> int | None:
        value = self.body.get("max_tokens", self.body.get("max_completion_tokens"))
        return int(value) if isinstance(value, int | float) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []

    @property
    def tool_names(self) -> list[str]:
        """Names of the advertised tools (both protocols' shapes)."""
        names: list[str] = []
        for tool in self.body.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            fn = tool.get("function")
            name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
            if isinstance(name, str):
                names.append(name)
        return names

    @property
    def forced_tool(self) -> str | None:
        """The tool named by ``tool_choice`` (Anthropic ``{"type":"tool","name"}`` or OpenAI function)."""
        choice = self.body.get("tool_choice")
        if not isinstance(choice, dict):
            return None
        if isinstance(choice.get("name"), str):
            return str(choice["name"])
        fn = choice.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            return str(fn["name"])
        return None

    @property
    def system_text(self) -> str:
        """All system text: Anthropic ``system`` (string or blocks) plus any ``role: system`` messages."""
        parts: list[str] = []
        system = self.body.get("system")
        parts.extend(_texts(system))
        for m in self.messages:
            if m.get("role") in ("system", "developer"):
                parts.extend(_texts(m.get("content")))
        return "\n".join(parts)

    @property
    def step_index(self) -> int:
        """Assistant messages since the last *user text* message: 0 on a turn's first model call,
        1 after the first tool result, ... (a user message made only of tool results, or an OpenAI
        ``role: tool`` message, does not start a new turn). Warm multi-turn conversations restart at 0
        on each new user message."""
        count = 0
        for m in reversed(self.messages):
            role = m.get("role")
            if role == "assistant":
                count += 1
            elif role == "user" and not _is_tool_result_message(m):
                break
        return count

    def resolve_tool_name(self, name: str) -> str:
        """The advertised tool name for a scripted short ``name``: exact match, else the one ending in
        ``__<name>`` (e.g. ``mcp__coachboard__write_persona``), else ``name`` unchanged."""
        advertised = self.tool_names
        if name in advertised:
            return name
        for full in advertised:
            if full.endswith("__" + name):
                return full
        return name

    def prompt_text(self) -> str:
        """Canonical prompt text for token counting and prefix caching: system, then tools, then
        messages, as compact JSON (the order a chat template renders them)."""
        system = self.body.get("system")
        head = json.dumps(system, ensure_ascii=False, separators=(",", ":"), sort_keys=True) if system else ""
        tools = self.body.get("tools")
        tools_text = (
            json.dumps(tools, ensure_ascii=False, separators=(",", ":"), sort_keys=True) if tools else ""
        )
        msgs = json.dumps(self.messages, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        return head + tools_text + msgs


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                out.append(block["text"])
            elif isinstance(block, str):
                out.append(block)
    return out


def _is_tool_result_message(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


AgentMatcher: TypeAlias = Callable[[ModelRequest], str | None]
"""Returns the agent name for a request, or None to let the next matcher try."""


def _agent_for_tool(tool: str, mapping: Mapping[str, str]) -> str | None:
    """The agent of the first short name in ``mapping`` that ``tool`` is or ends with (``__<short>``)."""
    for short, agent in mapping.items():
        if tool == short or tool.endswith("__" + short):
            return agent
    return None


def match_tool(mapping: Mapping[str, str]) -> AgentMatcher:
    """Matcher: the first advertised tool whose name is, or ends in ``__``, a key of ``mapping``
    (short tool name -> agent). Ambiguous when every agent sees every tool: prefer
    :func:`match_forced_tool` or the ``x-coach-agent`` header then."""

    def matcher(request: ModelRequest) -> str | None:
        for full in request.tool_names:
            agent = _agent_for_tool(full, mapping)
            if agent is not None:
                return agent
        return None

    return matcher


def match_forced_tool(mapping: Mapping[str, str]) -> AgentMatcher:
    """Matcher: the tool forced by ``tool_choice`` (short name or ``__<short>`` suffix) -> agent."""

    def matcher(request: ModelRequest) -> str | None:
        forced = request.forced_tool
        return None if forced is None else _agent_for_tool(forced, mapping)

    return matcher


def match_system_marker(mapping: Mapping[str, str]) -> AgentMatcher:
    """Matcher: the first marker string (key) found in the system text -> agent (value)."""

    def matcher(request: ModelRequest) -> str | None:
        text = request.system_text
        for marker, agent in mapping.items():
            if marker in text:
                return agent
        return None

    return matcher


def identify_agent(request: ModelRequest, matchers: Iterable[AgentMatcher]) -> str | None:
    """``x-coach-agent`` header if present, else the first matcher that answers, else None."""
    header = request.headers.get(AGENT_HEADER)
    if header:
        return header.strip().lower()
    for matcher in matchers:
        agent = matcher(request)
        if agent:
            return agent
    return None


@dataclass
class RecordedRequest:
    """One request the upstream received. Times are ``time.monotonic()`` seconds (None until reached).

    Attributes:
        path: URL path (``/v1/messages``, ``/v1/chat/completions``, ``/tokenize``, ...).
        query: raw query string (``beta=true``).
        body: parsed JSON body ({} when not JSON); headers: lower-cased names.
        agent / step_index / step: attribution and the scripted step played (model calls only).
        status: HTTP status sent; prompt_tokens / cached_tokens / output_tokens: the latency accounting.
        arrived_at / first_byte_at / finished_at: arrival, first content byte, end of response.
    """

    path: str
    query: str
    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    arrived_at: float
    agent: str | None = None
    step_index: int | None = None
    step: Any = None
    status: int | None = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    first_byte_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_model_call(self) -> bool:
        return self.path in ("/v1/messages", "/v1/chat/completions")

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict of this record (``step`` in its JSON form), as served by ``/_scripted/requests``."""
        from .script import step_to_json

        data = {k: v for k, v in self.__dict__.items() if k != "step"}
        data["step"] = step_to_json(self.step) if self.step is not None else None
        return data


class RequestLog:
    """Thread-safe list of :class:`RecordedRequest` with a blocking ``wait_for``."""

    def __init__(self) -> None:
        self._items: list[RecordedRequest] = []
        self._cond = threading.Condition()

    def add(self, record: RecordedRequest) -> None:
        with self._cond:
            self._items.append(record)
            self._cond.notify_all()

    def touch(self) -> None:
        """Wake waiters after a record changed (first byte, finish)."""
        with self._cond:
            self._cond.notify_all()

    def snapshot(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._items)

    def clear(self) -> None:
        with self._cond:
            self._items.clear()

    def wait_for(self, predicate: Callable[[list[RecordedRequest]], bool], timeout_s: float) -> bool:
        """Block until ``predicate(records)`` is true or ``timeout_s`` passes; returns the last result."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate(list(self._items)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True
