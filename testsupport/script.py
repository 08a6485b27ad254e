"""Scripts for the scripted upstream: what each agent's model "says" at each step of its turn.

A script is a sequence of steps, one per model call of the agent's turn: step 0 answers the first call,
step 1 the call after the first tool result, and so on (see :attr:`ModelRequest.step_index`). Past the
end of the script (or for an agent with no script) the upstream answers a short ``end_turn`` text.
A script may instead be a callable ``(request) -> Step`` for full control (e.g. random delays).

Steps (all frozen dataclasses):

* ``Text("hi")`` - an assistant text, ``end_turn`` / ``stop``.
* ``ToolCall("write_persona", {"traits": ...})`` - one tool call (arguments a dict or a JSON string,
  invalid JSON is sent as is); the short name is matched to the advertised tool ending in ``__<name>``
  (``mcp__coachboard__write_persona``). Optional ``text`` is sent before the call.
* ``Reply(text, tool_calls=(ToolCall(...), ...))`` - the general form (parallel tool calls).
* ``Error(status, body=None)`` - an HTTP error in the protocol's error shape (or ``body`` as given).
* ``Hang()`` - never answers (until the client disconnects or the server stops);
  ``Hang(after_first_token=True)`` starts the stream, then stalls.
* ``Delay(seconds, then=None)`` - waits ``seconds`` *model* seconds (scaled by ``time_scale``), then plays
  ``then`` (default: the default text).
* ``Garbage()`` - a 200 response whose body is not valid JSON / SSE.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .errors import ScriptError

__all__ = [
    "Delay",
    "Error",
    "Garbage",
    "Hang",
    "Reply",
    "Script",
    "Step",
    "Text",
    "ToolCall",
    "pick_step",
    "scripts_from_json",
    "step_from_json",
    "step_to_json",
]


@dataclass(frozen=True)
class ToolCall:
    """A tool call step. ``arguments``: dict (serialised compactly) or a raw JSON string."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    text: str = ""

    def arguments_json(self) -> str:
        """The arguments as the JSON text sent on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False, separators=(",", ":"))

    def arguments_obj(self) -> Any:
        """The arguments parsed (non-streaming Anthropic ``input``); invalid JSON => ``{"_raw": text}``."""
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            return json.loads(self.arguments)
        except ValueError:
            return {"_raw": self.arguments}


@dataclass(frozen=True)
class Text:
    """An assistant text reply ending the turn."""

    text: str


@dataclass(frozen=True)
class Reply:
    """General reply: optional text then zero or more tool calls (stop reason ``tool_use`` if any)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Error:
    """An HTTP error. ``body`` None => the protocol's standard error JSON; dict/str => sent verbatim."""

    status: int = 500
    body: Mapping[str, Any] | str | None = None
    message: str = "scripted upstream error"


@dataclass(frozen=True)
class Hang:
    """Never answer. ``after_first_token``: send the stream's start and one token first (streams only)."""

    after_first_token: bool = False


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` model seconds (real = seconds * time_scale), then play ``then``."""

    seconds: float
    then: Step | None = None


@dataclass(frozen=True)
class Garbage:
    """A 200 response with an unparsable body."""

    body: str = "\x00<<not json, not sse>>{{{"


Step: TypeAlias = Text | ToolCall | Reply | Error | Hang | Delay | Garbage
Script: TypeAlias = Sequence[Step] | Callable[[Any], Step]
"""A list of steps, or a callable receiving the :class:`~testsupport.requests.ModelRequest`."""

_STEP_TYPES = (Text, ToolCall, Reply, Error, Hang, Delay, Garbage)


def pick_step(script: Script | None, request: Any, default: Step) -> Step:
    """The step that answers ``request`` (its ``step_index`` into ``script``), else ``default``.

    Raises :class:`ScriptError` when the script or a step has the wrong type.
    """
    if script is None:
        return default
    if callable(script):
        step = script(request)
    else:
        index = request.step_index
        step = script[index] if index < len(script) else default
    if not isinstance(step, _STEP_TYPES):
        raise ScriptError(
            f"script step must be one of Text/ToolCall/Reply/Error/Hang/Delay/Garbage, got {step!r}"
        )
    return step


def as_reply(step: Text | ToolCall | Reply) -> Reply:
    """Normalise a content step to a :class:`Reply`."""
    if isinstance(step, Reply):
        return step
    if isinstance(step, Text):
        return Reply(text=step.text)
    return Reply(text=step.text, tool_calls=(step,))


def step_from_json(data: Mapping[str, Any]) -> Step:
    """A step from its JSON form (for scripts in files / the subprocess server):

    ``{"type": "text", "text": "..."}``, ``{"type": "tool_call", "name": "...", "arguments": {...}, "text": ""}``,
    ``{"type": "reply", "text": "", "tool_calls": [{"name": ..., "arguments": ...}]}``,
    ``{"type": "error", "status": 500, "body": null, "message": "..."}``, ``{"type": "hang",
    "after_first_token": false}``, ``{"type": "delay", "seconds": 1.5, "then": {...}}``, ``{"type": "garbage"}``.

    Raises :class:`ScriptError` naming the bad field.
    """
    if not isinstance(data, Mapping):
        raise ScriptError(f"a step must be a JSON object, got {data!r}")
    kind = data.get("type")
    try:
        if kind == "text":
            return Text(str(data["text"]))
        if kind == "tool_call":
            return ToolCall(str(data["name"]), data.get("arguments", {}), str(data.get("text", "")))
        if kind == "reply":
            calls = tuple(
                ToolCall(str(c["name"]), c.get("arguments", {})) for c in data.get("tool_calls", [])
            )
            return Reply(str(data.get("text", "")), calls)
        if kind == "error":
            return Error(
                int(data.get("status", 500)),
                data.get("body"),
                str(data.get("message", "scripted upstream error")),
            )
        if kind == "hang":
            return Hang(bool(data.get("after_first_token", False)))
        if kind == "delay":
            then = data.get("then")
            return Delay(float(data["seconds"]), step_from_json(then) if then is not None else None)
        if kind == "garbage":
            return Garbage(str(data["body"])) if "body" in data else Garbage()
    except (KeyError, TypeError, ValueError) as exc:
        raise ScriptError(
            f"step {dict(data)!r} of type {kind!r} is missing or has a bad field: {exc}"
        ) from exc
    raise ScriptError(
        f"unknown step type {kind!r}; use text, tool_call, reply, error, hang, delay or garbage"
    )


def scripts_from_json(data: Mapping[str, Any]) -> dict[str, list[Step]]:
    """``{"agent": [step, ...]}`` in JSON form -> scripts. Raises :class:`ScriptError`."""
    if not isinstance(data, Mapping):
        raise ScriptError("scripts must be a JSON object mapping agent name to a list of steps")
    out: dict[str, list[Step]] = {}
    for agent, steps in data.items():
        if not isinstance(steps, list):
            raise ScriptError(f"script of agent {agent!r} must be a list of steps")
        out[str(agent)] = [step_from_json(s) for s in steps]
    return out


def step_to_json(step: Step) -> dict[str, Any]:
    """The JSON form of a step (inverse of :func:`step_from_json`)."""
    if isinstance(step, Text):
        return {"type": "text", "text": step.text}
    if isinstance(step, ToolCall):
        return {"type": "tool_call", "name": step.name, "arguments": _args(step), "text": step.text}
    if isinstance(step, Reply):
        return {
            "type": "reply",
            "text": step.text,
            "tool_calls": [{"name": c.name, "arguments": _args(c)} for c in step.tool_calls],
        }
    if isinstance(step, Error):
        body = step.body if step.body is None or isinstance(step.body, str) else dict(step.body)
        return {"type": "error", "status": step.status, "body": body, "message": step.message}
    if isinstance(step, Hang):
        return {"type": "hang", "after_first_token": step.after_first_token}
    if isinstance(step, Delay):
        return {
            "type": "delay",
            "seconds": step.seconds,
            "then": step_to_json(step.then) if step.then is not None else None,
        }
    return {"type": "garbage", "body": step.body}


def _args(call: ToolCall) -> Any:
    return call.arguments if isinstance(call.arguments, str) else dict(call.arguments)
