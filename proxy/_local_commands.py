"""Claude Code's record of a ``/clear`` taken out of what the model sees.

A pooled agent process (``launcher.runner._process_pool``) ends its warm-up with Claude Code's ``/clear``.
Claude Code then puts a record of that command at the head of the next user message: a
``<local-command-caveat>`` note, ``<command-name>/clear</command-name>`` with its empty message, args
and output (measured with the bundled CLI 2.1.332: about 100 tokens, in every request of that
conversation). It holds no one's data, but it is text the model reads before the agent's context and
that an agent started afresh never has, and it is prefilled in every request of the conversation. So
the proxy removes exactly that record (an empty ``/clear``: no arguments, no output, three text blocks
each matched whole) from user messages; anything else, and the same words inside other text, stays.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["strip_clear_records"]

#: The record, block by block as Claude Code sends it (three text blocks), each matched whole.
_RECORD: tuple[re.Pattern[str], ...] = (
    re.compile(r"\s*<local-command-caveat>[^<]*</local-command-caveat>\s*"),
    re.compile(
        r"\s*<command-name>/clear</command-name>\s*<command-message>clear</command-message>\s*"
        r"<command-args></command-args>\s*"
    ),
    re.compile(r"\s*<local-command-stdout></local-command-stdout>\s*"),
)


def _text(block: Any) -> str | None:
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def _is_record(blocks: list[Any], i: int) -> bool:
    if i + len(_RECORD) > len(blocks):
        return False
    for k, pattern in enumerate(_RECORD):
        text = _text(blocks[i + k])
        if text is None or not pattern.fullmatch(text):
            return False
    return True


def strip_clear_records(messages: list[dict[str, Any]]) -> int:
    """Remove Claude Code's records of an empty ``/clear`` (three consecutive text blocks: the caveat,
    the command, its empty output) from user messages, in place. Returns how many were removed."""
    removed = 0
    for m in messages:
        blocks = m.get("content")
        if m.get("role") != "user" or not isinstance(blocks, list) or len(blocks) < len(_RECORD):
            continue
        i = 0
        while i < len(blocks):
            if _is_record(blocks, i):
                del blocks[i : i + len(_RECORD)]
                removed += 1
            else:
                i += 1
    return removed
