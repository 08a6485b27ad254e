"""Problems in plain words, and the tool results that carry them back to the model.

A :class:`Problem` says which field was wrong, what was wrong with it and what is allowed, so a model
can repair its call. :func:`problems_from_validation` turns a pydantic ``ValidationError`` into
problems, describing what is allowed from the tool's JSON schema (types, ranges, lengths, enums,
known fields). :func:`error_result` and :func:`ok_result` build ``CallToolResult`` objects; the text
block is what the model reads, ``structured_content`` carries the same data for programs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import ValidationError

__all__ = ["Problem", "error_result", "ok_result", "problems_from_validation"]

_MAX_ECHO = 60  # characters of a rejected value echoed back to the model


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a tool call.

    Attributes:
        field: dotted path of the argument, e.g. ``"traits.openness.score"`` ("" = the whole call).
        problem: what was wrong, in plain words.
        allowed: what is allowed instead ("" when nothing more can be said).
    """

    field: str
    problem: str
    allowed: str = ""

    def line(self) -> str:
        where = f"`{self.field}`" if self.field else "the call"
        text = f"{where}: {self.problem}"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        return text


def _echo(value: Any) -> str:
    if isinstance(value, str) and len(value) > _MAX_ECHO:
        return f"text of {len(value)} characters"
    if isinstance(value, list | dict) and len(value) > 5:
        return f"a {'list' if isinstance(value, list) else 'object'} of {len(value)} items"
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= _MAX_ECHO else text[: _MAX_ECHO - 3] + "..."


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 20:
        target = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return _resolve(target, root, depth + 1)
    return schema


def _variants(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out: list[Mapping[str, Any]] = []
            for sub in schema[key]:
                out.extend(_variants(sub, root))
            return out
    return [schema]


def _subschema(root: Mapping[str, Any], loc: Sequence[int | str]) -> Mapping[str, Any] | None:
    """The JSON schema at ``loc`` (a pydantic error location), or None when it cannot be found."""
    current: list[Mapping[str, Any]] = [root]
    for part in loc:
        nxt: list[Mapping[str, Any]] = []
        for schema in current:
            for variant in _variants(schema, root):
                if isinstance(part, int):
                    items = variant.get("items")
                    if isinstance(items, Mapping):
                        nxt.append(items)
                else:
                    props = variant.get("properties")
                    if isinstance(props, Mapping) and part in props:
                        nxt.append(props[part])
                    elif isinstance(variant.get("additionalProperties"), Mapping):
                        nxt.append(variant["additionalProperties"])
        if not nxt:
            return None
        current = nxt
    return current[0]


def _describe(schema: Mapping[str, Any] | None, root: Mapping[str, Any]) -> str:
    """Plain-words description of what a schema allows (type, range, length, choices, fields)."""
    if schema is None:
        return ""
    parts: list[str] = []
    for variant in _variants(schema, root):
        parts.append(_describe_one(variant))
    parts = [p for p in dict.fromkeys(parts) if p]
    return " or ".join(parts)


def _describe_one(s: Mapping[str, Any]) -> str:
    if "const" in s:
        return f"exactly {_echo(s['const'])}"
    if isinstance(s.get("enum"), list):
        return "one of " + ", ".join(_echo(v) for v in s["enum"])
    kind = s.get("type")
    if kind in ("integer", "number"):
        return _describe_number(s, "a whole number" if kind == "integer" else "a number")
    if kind == "string":
        return _describe_string(s)
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "null"
    if kind == "array":
        return f"a list{_list_size(s)}"
    if kind == "object" or "properties" in s:
        return _describe_object(s)
    return ""


def _describe_number(s: Mapping[str, Any], noun: str) -> str:
    lo = s.get("minimum", s.get("exclusiveMinimum"))
    hi = s.get("maximum", s.get("exclusiveMaximum"))
    if lo is not None and hi is not None:
        return f"{noun} from {lo} to {hi}"
    if lo is not None:
        return f"{noun} of at least {lo}"
    if hi is not None:
        return f"{noun} of at most {hi}"
    return noun


def _describe_string(s: Mapping[str, Any]) -> str:
    lo, hi = s.get("minLength"), s.get("maxLength")
    if lo and hi:
        return f"text of {lo} to {hi} characters"
    if hi:
        return f"text of at most {hi} characters"
    if lo:
        return f"text of at least {lo} characters"
    if s.get("pattern"):
        return f"text matching {s['pattern']}"
    return "text"


def _list_size(s: Mapping[str, Any]) -> str:
    lo, hi = s.get("minItems"), s.get("maxItems")
    if lo and hi:
        return f" of {lo} to {hi} items"
    if hi is not None:
        return f" of at most {hi} items"
    if lo:
        return f" of at least {lo} items"
    return ""


def _describe_object(s: Mapping[str, Any]) -> str:
    props = s.get("properties")
    if isinstance(props, Mapping) and props:
        required = set(s.get("required", []))
        names = [f"{k}{'' if k in required else ' (optional)'}" for k in props]
        return "an object with fields " + ", ".join(names)
    return "an object"


_PLAIN: dict[str, str] = {
    "missing": "is required but missing",
    "extra_forbidden": "is not a known field",
    "string_too_long": "is too long",
    "string_too_short": "is too short",
    "too_long": "has too many items",
    "too_short": "has too few items",
    "greater_than_equal": "is too small",
    "greater_than": "is too small",
    "less_than_equal": "is too large",
    "less_than": "is too large",
    "int_parsing": "is not a whole number",
    "int_type": "is not a whole number",
    "int_from_float": "is not a whole number",
    "float_parsing": "is not a number",
    "float_type": "is not a number",
    "string_type": "is not text",
    "bool_parsing": "is not true or false",
    "bool_type": "is not true or false",
    "list_type": "is not a list",
    "dict_type": "is not an object",
    "model_type": "is not an object",
    "model_attributes_type": "is not an object",
    "literal_error": "is not one of the allowed values",
    "enum": "is not one of the allowed values",
    "string_pattern_mismatch": "has the wrong format",
}


def problems_from_validation(exc: ValidationError, schema: Mapping[str, Any]) -> list[Problem]:
    """One :class:`Problem` per pydantic error, with ``allowed`` taken from ``schema`` (the tool's
    input JSON schema). Union errors that repeat the same location are merged."""
    problems: dict[str, Problem] = {}
    for err in exc.errors(include_url=False):
        loc = [p for p in err.get("loc", ()) if isinstance(p, int | str)]
        kind = err.get("type", "")
        # pydantic appends the union member / function name to the location: drop the non-field tail.
        path_loc = [p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]
        field = ".".join(str(p) for p in path_loc)
        if kind == "extra_forbidden":
            parent = _subschema(schema, path_loc[:-1])
            fields = _describe(parent, schema).replace("an object with fields ", "only the fields ")
            problem = Problem(field, "is not a known field (remove it)", fields)
        elif kind == "missing":
            problem = Problem(
                field, "is required but missing", _describe(_subschema(schema, path_loc), schema)
            )
        else:
            what = _PLAIN.get(kind, str(err.get("msg", "is invalid")).rstrip(".").lower())
            if "input" in err and kind not in ("missing",):
                what = f"got {_echo(err['input'])}, which {what}" if what.startswith("is") else what
            allowed = _describe(_subschema(schema, path_loc), schema)
            if kind.startswith("value_error") or kind == "assertion_error":
                # A rule across fields: the message names the fields and says what to do.
                what = str(err.get("msg", "is invalid")).removeprefix("Value error, ")
                allowed = ""
            problem = Problem(field, what, allowed)
        # Keep the first problem per field: union members repeat the same location.
        problems.setdefault(f"{field}|{kind if kind in ('extra_forbidden', 'missing') else ''}", problem)
    return list(problems.values())


def _text(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def ok_result(payload: Mapping[str, Any], *, note: str = "") -> CallToolResult:
    """A successful tool result: ``{"ok": true, "message": note, **payload}`` as JSON text and as
    ``structured_content`` (Claude Code shows the model the structured form when present, other clients
    the text, so both carry the same data and the note)."""
    data = {"ok": True, **({"message": note} if note else {}), **payload}
    text = _text(data)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def error_result(
    tool: str,
    headline: str,
    problems: Sequence[Problem] = (),
    *,
    code: str,
    retryable: bool = False,
    advice: str = "",
    extra: Mapping[str, Any] | None = None,
) -> CallToolResult:
    """An ``is_error`` tool result listing each problem in plain words.

    Text layout (what the model reads)::

        write_persona: NOT STORED. <headline>
        1. `traits.openness.score`: got 150, which is too large; allowed: a number from 0 to 100
        What to do: <advice>

    ``structured_content`` = ``{"ok": false, "error": code, "message": ..., "problems": [...], **extra,
    "what_to_do": advice, "retryable": ...}`` (what Claude Code shows the model; same content).
    """
    lines = [f"{tool}: {headline}"]
    lines += [f"{i}. {p.line()}" for i, p in enumerate(problems, 1)]
    if extra:
        lines += [f"{k}: {json.dumps(v, default=str)}" for k, v in extra.items()]
    if advice:
        lines.append(f"What to do: {advice}")
    data: dict[str, Any] = {
        "ok": False,
        "error": code,
        "message": f"{tool}: {headline}",
        "problems": [asdict(p) for p in problems],
        **(extra or {}),
        "what_to_do": advice,
        "retryable": retryable,
    }
    return CallToolResult(
        content=[TextContent(type="text", text="\n".join(lines))], structured_content=data, is_error=True
    )
