"""Tool-call argument strings from the upstream -> the ``input`` object of a ``tool_use`` block.

An agent acts on a tool call's input (a shell command, an entry written to the blackboard), so an input
that is not exactly what the model wrote must never look like a good one. The rule: a string that is
not a JSON object is repaired only where the repair cannot change its meaning; everything else is
reported as invalid (the caller turns that into an error the client sees, never into ``input: {}``).

Repaired (the object is complete and unambiguous; only packaging around it is removed):

- surrounding whitespace;
- a Markdown code fence around the object (````` ```json\\n{...}\\n``` `````);
- closing brackets (and whitespace) after a complete object (``{"a": 1}}``, a common slip of small
  models): nothing after the object's own closing brace can add or remove a key or value;
- a JSON string whose content is a JSON object (double-encoded arguments).

An empty string is ``{}`` (OpenAI servers send it for a call with no arguments).

Never repaired: a truncated object (cut after a colon, inside a string or number, or before its closing
brace: closing it could deliver a shortened command as valid input), single-quoted or otherwise
non-JSON text, two objects back to back (two calls or one? unknowable), and JSON that is not an object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ParsedArguments", "parse_tool_arguments"]

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_CLOSERS = frozenset("}] \t\r\n")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ParsedArguments:
    """The outcome of :func:`parse_tool_arguments`.

    ``input``: the arguments object, or None when invalid. ``repair``: what was removed to get it (None
    when the string was valid as sent). ``problem``: why the string is invalid (None when valid).
    ``truncated``: the string ends inside a value, i.e. it was cut (a stream or ``max_tokens`` stop).
    """

    input: dict[str, Any] | None
    repair: str | None = None
    problem: str | None = None
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.input is not None


def _object(value: Any) -> dict[str, Any] | None:
    """``value`` as an arguments object: itself when a dict, the object a JSON string holds, else None."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except ValueError:
            return None
        return inner if isinstance(inner, dict) else None
    return None


def _parse(s: str) -> ParsedArguments:
    try:
        value = json.loads(s)
    except json.JSONDecodeError as exc:
        return _after_error(s, exc)
    obj = _object(value)
    if obj is None:
        return ParsedArguments(
            None, problem=f"the arguments are a JSON {type(value).__name__}, not an object"
        )
    return ParsedArguments(
        obj, repair=None if isinstance(value, dict) else "double-encoded JSON string decoded"
    )


def _after_error(s: str, exc: json.JSONDecodeError) -> ParsedArguments:
    if s.startswith("{"):
        try:
            value, end = _DECODER.raw_decode(s)
        except json.JSONDecodeError:
            value, end = None, -1
        if isinstance(value, dict):
            rest = s[end:]
            if set(rest) <= _CLOSERS:
                return ParsedArguments(
                    value, repair=f"stray closing brackets after the object removed ({rest.strip()!r})"
                )
            return ParsedArguments(
                None, problem="more text follows the first complete object (two objects back to back?)"
            )
    if _open_at_end(s):
        return ParsedArguments(
            None, problem="the arguments end before the object is complete (cut off)", truncated=True
        )
    return ParsedArguments(
        None, problem=f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    )


def _open_at_end(s: str) -> bool:
    """Whether ``s`` ends inside a string or with brackets still open (it was cut off)."""
    depth, in_str, esc = 0, False, False
    for ch in s:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_str or depth > 0


def parse_tool_arguments(raw: str) -> ParsedArguments:
    """Parse one tool call's argument string (module docstring: what is repaired and what is not).

    Never raises; an invalid string gives ``ParsedArguments(input=None, problem=...)``.
    """
    s = raw.strip()
    if not s:
        return ParsedArguments({})
    out = _parse(s)
    if out.ok or out.truncated:
        return out
    fence = _FENCE.match(s)
    if fence is not None:
        inner = _parse(fence.group(1).strip())
        if inner.ok:
            return ParsedArguments(inner.input, repair="Markdown code fence removed")
    return out
