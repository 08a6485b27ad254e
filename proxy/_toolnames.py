"""Tool names every upstream accepts: a deterministic, reversible mapping applied to a prepared request.

OpenAI-style servers (vLLM, llama-server, OpenAI) and Anthropic accept tool names matching
``^[A-Za-z0-9_-]{1,64}$`` and refuse the request (400) otherwise. Clients send other names: ``files.read``,
``mcp__<server>__<tool>`` built from a long MCP server name. The proxy sends a valid name upstream and
gives the client back its own name.

The mapping of one name (a pure function of the name, so it is the same in every request of a
conversation and the upstream's prefix cache still matches):

- a valid name is sent unchanged;
- otherwise every character outside ``[A-Za-z0-9_-]`` becomes ``_``, the result is cut to 55 characters
  and ``_`` plus the first 8 hex digits of the SHA-256 of the original name (UTF-8) is appended
  (``files.read`` -> ``files_read_4f2a...``), at most 64 characters in all.

Collisions (the mapped name equals another tool's name, valid or mapped, in the same request) are
resolved by lengthening the hash suffix (12, 16, ... up to 64 hex digits), names taken in sorted order,
so the outcome depends only on the set of names. Names are collected from ``tools``, ``tool_choice``
and the ``tool_use`` blocks of the history; an upstream name that is not in the map (a model inventing
a name) is passed back unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from ._normalize import Prepared

__all__ = ["ToolNames", "map_tool_names", "upstream_tool_name"]

VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID_CHAR = re.compile(r"[^A-Za-z0-9_-]")
MAX_LEN = 64
_STEM_LEN = 55


def upstream_tool_name(name: str, hex_digits: int = 8) -> str:
    """The upstream name of ``name`` (module docstring), with a hash suffix of ``hex_digits`` digits."""
    if VALID_NAME.match(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:hex_digits]
    stem = _INVALID_CHAR.sub("_", name)[: max(MAX_LEN - len(digest) - 1, 0)][:_STEM_LEN]
    return f"{stem}_{digest}" if stem else f"t_{digest}"[:MAX_LEN]


class ToolNames:
    """The request's name mapping: :meth:`upstream` (client -> upstream) and :meth:`client` (back)."""

    def __init__(self, names: Iterable[str]) -> None:
        unique = sorted(set(names))
        self._up: dict[str, str] = {}
        taken = {n for n in unique if VALID_NAME.match(n)}
        for n in unique:
            if n in taken:
                self._up[n] = n
                continue
            digits, mapped = 8, upstream_tool_name(n)
            while mapped in taken and digits < 64:
                digits += 4
                mapped = upstream_tool_name(n, digits)
            taken.add(mapped)
            self._up[n] = mapped
        self._back = {v: k for k, v in self._up.items()}

    @property
    def changed(self) -> bool:
        """Whether any name is sent differently."""
        return any(k != v for k, v in self._up.items())

    def upstream(self, name: str) -> str:
        return self._up.get(name) or upstream_tool_name(name)

    def client(self, name: str) -> str:
        """The client's name of an upstream tool name (unknown names unchanged)."""
        return self._back.get(name, name)


def _names(p: Prepared) -> list[str]:
    names = [str(t["name"]) for t in p.tools]
    if p.tool_choice and isinstance(p.tool_choice.get("name"), str):
        names.append(p.tool_choice["name"])
    for m in p.messages:
        if m["role"] == "assistant":
            names += [
                str(b.get("name", "")) for b in m["content"] if b.get("type") == "tool_use" and b.get("name")
            ]
    return names


def map_tool_names(p: Prepared) -> ToolNames:
    """Rewrite the tool names of ``p`` in place (tools, tool_choice, history ``tool_use`` blocks) to their
    upstream names and return the mapping (for the response). Blocks and tools whose name changes are
    copied, so the caller's objects are left alone."""
    names = ToolNames(_names(p))
    if not names.changed:
        return names
    p.tools = [{**t, "name": names.upstream(str(t["name"]))} for t in p.tools]
    if p.tool_choice and isinstance(p.tool_choice.get("name"), str):
        p.tool_choice = {**p.tool_choice, "name": names.upstream(p.tool_choice["name"])}
    for m in p.messages:
        if m["role"] == "assistant" and any(b.get("type") == "tool_use" for b in m["content"]):
            m["content"] = [
                {**b, "name": names.upstream(str(b.get("name", "")))} if b.get("type") == "tool_use" else b
                for b in m["content"]
            ]
    return names
