"""Is a model's free text prose a user may be shown, or text it copied from its prompt (schema keywords,
identifiers, markup, code)? Used where the system quotes model text on its own authority: the fallback
synthesis and the compacted profile."""

from __future__ import annotations

import re

__all__ = ["quotable"]

# JSON-schema keywords, tool names, markup and code: text a model copied from its prompt, not prose.
# Keywords that are also English words ("required", "properties") count only as ``keyword:``.
_NOT_PROSE = re.compile(
    r"(maxLength|minLength|maxItems|minItems|additionalProperties|\$ref|\$defs|anyOf|oneOf|json_schema"
    r"|\b(?:required|properties|items|enum|type)\s*:|\bmcp__|[{}<>\[\]`|\\]|\b[a-z]+_[a-z_]+\b|\w+:\S)",
    re.IGNORECASE,
)


def quotable(text: object, *, max_chars: int = 160) -> str | None:
    """``text`` stripped if the fallback may quote it to the user, else None: a model's free text is quoted
    only when it reads as prose (a word of three or more letters, at most ``max_chars``, no schema keywords,
    identifiers, markup or code; a 135M model has copied ``maxLength: 100`` into a growth area)."""
    if not isinstance(text, str):
        return None
    t = " ".join(text.split()).strip(" .")
    if not t or len(t) > max_chars or _NOT_PROSE.search(t):
        return None
    return t if re.search(r"[^\W\d_]{3,}", t) else None
