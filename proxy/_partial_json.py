"""An incremental reader of one JSON object's top-level members, fed in arbitrary chunks.

:class:`PartialObject` is what lets the proxy show a tool call's text while its arguments are still
arriving (``proxy._tool_tap``): after every chunk it knows

* ``members``: the top-level members whose value is complete (decoded, in the order written);
* ``partial_key`` / ``partial_text``: the member whose *string* value is being written now, and the
  decoded prefix of that string so far.

Decoding is exact: ``partial_text`` is always a prefix of what ``json.loads`` gives for that value,
whatever the chunking. An escape (``\\n``, ``\\"``, ``\\u00e9``) is decoded only once all of it has
arrived, and a ``\\uD83D`` high surrogate is held until the next escape shows whether it is half of a
pair (``\\uD83D\\uDE00`` is one character, as ``json.loads`` reads it; a lone surrogate stays lone).
Control characters inside strings are accepted (as ``json.loads(strict=False)``): this reader shows
text early, it does not validate; the proxy still validates the whole call when it ends.

Input that is not a JSON object stops the reader (``failed``); what was read until then stays.
Duplicate keys: the later value replaces the earlier one in ``members`` (as ``json.loads``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["PartialObject"]

_WS = " \t\r\n"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_PLAIN = re.compile(r'[^"\\]+')
_HEX = re.compile(r"[0-9a-fA-F]{4}")

# states
_BEFORE, _KEY_OR_END, _KEY, _COLON, _VALUE, _STRING, _NESTED, _SCALAR, _AFTER, _NEXT_KEY, _DONE = range(11)


class PartialObject:
    """See the module docstring. ``feed(chunk)`` returns True when anything visible changed."""

    _READERS: ClassVar[dict[int, Callable[[PartialObject, str, int], int]]]
    """State -> the reader of a key or value in that state (set below the class)."""
    _SYNTAX: ClassVar[dict[int, Callable[[PartialObject, str], None]]]
    """State -> the handler of one structural character in that state (set below the class)."""

    def __init__(self) -> None:
        self.members: dict[str, Any] = {}
        self.order: list[str] = []
        """Top-level keys in the order their values started (a repeated key keeps its first place)."""
        self.partial_key: str | None = None
        self.partial_text = ""
        self.complete = False
        self.failed = False
        self._state = _BEFORE
        self._key: str | None = None
        self._raw: list[str] = []  # a key's raw text, or a nested / scalar value's raw JSON
        self._esc = ""  # an escape being read ("\\", "\\u12" ...), for keys and string values
        self._high = ""  # a decoded high surrogate waiting for its pair (string values)
        self._depth = 0
        self._in_str = False
        self._str_esc = False

    def text_of(self, key: str) -> str | None:
        """The decoded text of member ``key`` so far: its whole value once complete (if a string),
        the prefix while it is being written, else None."""
        if self.partial_key == key:
            return self.partial_text
        value = self.members.get(key)
        return value if isinstance(value, str) else None

    # ------------------------------------------------------------------------------------ feeding
    def feed(self, chunk: str) -> bool:
        if self.failed or not chunk:
            return False
        before = (len(self.members), len(self.partial_text), self.partial_key, self.complete)
        i, n = 0, len(chunk)
        try:
            while i < n:
                i = self._step(chunk, i)
        except ValueError:
            self.failed = True
            self.partial_key = None
        return (
            before != (len(self.members), len(self.partial_text), self.partial_key, self.complete)
            or self.failed
        )

    def _fail(self) -> int:
        raise ValueError("not a JSON object")

    def _step(self, s: str, i: int) -> int:
        """Read from ``s[i]`` in the current state; returns the index of the next unread character."""
        reader = self._READERS.get(self._state)
        if reader is not None:  # inside a key or a value: it reads as much as it can
            return reader(self, s, i)
        c = s[i]
        if c in _WS:
            return i + 1
        self._SYNTAX[self._state](self, c)
        return i + 1

    def _scalar(self, s: str, i: int) -> int:
        c = s[i]
        if c in ",}" or c in _WS:
            self._end_value(json.loads("".join(self._raw)))
            return i  # the delimiter is read in _AFTER
        self._raw.append(c)
        return i + 1

    # --- the structure between keys and values: one character at a time, whitespace skipped
    def _before(self, c: str) -> None:
        if c != "{":
            self._fail()
        self._state = _KEY_OR_END

    def _key_or_end(self, c: str) -> None:
        if c == '"':
            self._state, self._raw, self._esc = _KEY, [], ""
        elif c == "}" and not self.order:
            self._finish()
        else:
            self._fail()

    def _colon(self, c: str) -> None:
        if c != ":":
            self._fail()
        self._state = _VALUE

    def _value(self, c: str) -> None:
        assert self._key is not None
        if self._key not in self.order:
            self.order.append(self._key)
        if c == '"':
            self._state, self._esc, self._high = _STRING, "", ""
            self.partial_key, self.partial_text = self._key, ""
        elif c in "{[":
            self._state, self._raw, self._depth, self._in_str, self._str_esc = _NESTED, [c], 1, False, False
        elif c in "-0123456789tfn":
            self._state, self._raw = _SCALAR, [c]
        else:
            self._fail()

    def _after(self, c: str) -> None:
        if c == ",":
            self._state = _NEXT_KEY
        elif c == "}":
            self._finish()
        else:
            self._fail()

    def _next_key(self, c: str) -> None:
        if c != '"':
            self._fail()
        self._state, self._raw, self._esc = _KEY, [], ""

    def _done(self, c: str) -> None:
        self._fail()

    def _finish(self) -> None:
        self._state = _DONE
        self.complete = True

    def _end_value(self, value: Any) -> None:
        assert self._key is not None
        self.members[self._key] = value
        self._state = _AFTER
        self._key = None

    # --- keys: raw text until the closing quote, then json.loads
    def _key_chars(self, s: str, i: int) -> int:
        c = s[i]
        if self._esc:
            self._raw.append(c)
            self._esc = ""
            return i + 1
        if c == "\\":
            self._raw.append(c)
            self._esc = "\\"
            return i + 1
        if c == '"':
            self._key = json.loads('"' + "".join(self._raw) + '"', strict=False)
            self._state = _COLON
            return i + 1
        m = _PLAIN.match(s, i)
        end = m.end() if m else i + 1
        self._raw.append(s[i:end])
        return end

    # --- nested objects/arrays: raw JSON until depth 0, then json.loads
    def _nested(self, s: str, i: int) -> int:
        c = s[i]
        self._raw.append(c)
        if self._in_str:
            if self._str_esc:
                self._str_esc = False
            elif c == "\\":
                self._str_esc = True
            elif c == '"':
                self._in_str = False
        elif c == '"':
            self._in_str = True
        elif c in "{[":
            self._depth += 1
        elif c in "}]":
            self._depth -= 1
            if self._depth == 0:
                self._end_value(json.loads("".join(self._raw), strict=False))
        return i + 1

    # --- top-level string values: decoded as they arrive
    def _emit(self, text: str) -> None:
        if self._high:
            text, self._high = self._high + text, ""
        self.partial_text += text

    def _escape(self, c: str) -> None:
        """One more character of an escape in a string value; decoded once whole."""
        self._esc += c
        esc = self._esc
        if len(esc) == 2 and esc[1] != "u":
            if esc[1] not in _ESCAPES:
                self._fail()
            self._esc = ""
            self._emit(_ESCAPES[esc[1]])
        elif len(esc) == 6:
            if not _HEX.fullmatch(esc[2:]):
                self._fail()
            self._esc = ""
            code = int(esc[2:], 16)
            if 0xDC00 <= code <= 0xDFFF and self._high:
                pair = 0x10000 + ((ord(self._high) - 0xD800) << 10) + (code - 0xDC00)
                self._high = ""
                self.partial_text += chr(pair)
            elif 0xD800 <= code <= 0xDBFF:
                self._emit("")  # an earlier lone high surrogate stays lone
                self._high = chr(code)
            else:
                self._emit(chr(code))

    def _string(self, s: str, i: int) -> int:
        c = s[i]
        if self._esc:
            self._escape(c)
            return i + 1
        if c == "\\":
            self._esc = "\\"
            return i + 1
        if c == '"':
            self._emit("")
            text = self.partial_text
            self.partial_key, self.partial_text = None, ""
            self._end_value(text)
            return i + 1
        m = _PLAIN.match(s, i)
        end = m.end() if m else i + 1
        self._emit(s[i:end])
        return end


PartialObject._READERS = {
    _STRING: PartialObject._string,
    _KEY: PartialObject._key_chars,
    _NESTED: PartialObject._nested,
    _SCALAR: PartialObject._scalar,
}
PartialObject._SYNTAX = {
    _BEFORE: PartialObject._before,
    _KEY_OR_END: PartialObject._key_or_end,
    _COLON: PartialObject._colon,
    _VALUE: PartialObject._value,
    _AFTER: PartialObject._after,
    _NEXT_KEY: PartialObject._next_key,
    _DONE: PartialObject._done,
}
