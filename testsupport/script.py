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
        """The arguments parsed (for non-streaming Anthropic ``input``); invalid JSON => ``{}``-less raw."""
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
        raise ScriptError(f"script step must be one of Text/ToolCall/Reply/Error/Hang/Delay/Garbage, got {step!r}")
    return step


def as_reply(step: Text | ToolCall | Reply) -> Reply:
    """Normalise a content step to a :class:`Reply`."""
    if isinstance(step, Reply):
        return step
    if isinstance(step, Text):
        return Reply(text=step.text)
    return Reply(text=step.text, tool_calls=(step,))
