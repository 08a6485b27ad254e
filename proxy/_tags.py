"""Streaming splitter for inline tags in model text: ``<think>``, ``</think>``, ``<tool_call>``,
``</tool_call>`` (Qwen3 / Hermes conventions). Tags split across chunks are reassembled: a trailing
fragment that could still become a tag is held back until the next chunk or :meth:`flush`.
"""

from __future__ import annotations

TAGS = ("<think>", "</think>", "<tool_call>", "</tool_call>")


class TagSplitter:
    """``feed(text)`` -> list of ``("text", str)`` and ``("tag", tag)`` items, in order."""

    def __init__(self) -> None:
        self._buf = ""

    def feed(self, text: str) -> list[tuple[str, str]]:
        buf = self._buf + text
        out: list[tuple[str, str]] = []
        while buf:
            i = buf.find("<")
            if i < 0:
                out.append(("text", buf))
                buf = ""
                break
            if i > 0:
                out.append(("text", buf[:i]))
                buf = buf[i:]
            tag = next((t for t in TAGS if buf.startswith(t)), None)
            if tag is not None:
                out.append(("tag", tag))
                buf = buf[len(tag) :]
                continue
            if any(t.startswith(buf) for t in TAGS):
                break  # could still become a tag: wait for more
            out.append(("text", "<"))
            buf = buf[1:]
        self._buf = buf
        return _merge(out)

    def flush(self) -> list[tuple[str, str]]:
        buf, self._buf = self._buf, ""
        return [("text", buf)] if buf else []


def _merge(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for kind, val in items:
        if kind == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + val)
        elif kind != "text" or val:
            out.append((kind, val))
    return out
