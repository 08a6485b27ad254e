"""Normalisation of an Anthropic Messages request, shared by both upstream kinds (pure functions).

What it does (each point is a known way gateways break Claude Code):
- validates the shape (clear ``InvalidRequestError`` naming the field);
- strips Claude Code's per-request billing-header system block (``x-anthropic-billing-header: ...``),
  whose hash changes every request and would defeat the upstream's prefix cache;
- folds ``role: "system"`` items found inside ``messages`` (leading ones into the system prompt, later ones
  into the nearest user turn, after its tool results) or keeps them in place (``keep`` mode);
- drops ``thinking``/``redacted_thinking`` blocks echoed back in history (never forwarded);
- drops server tools without ``input_schema`` (with a warning) and a ``tool_choice`` left with no tools;
- resolves ``thinking`` into one boolean.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import InvalidRequestError

BILLING_HEADER_PREFIX = "x-anthropic-billing-header"
_DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})


@dataclass
class Prepared:
    """A validated, normalised request. ``messages`` hold only user/assistant (and, in keep mode,
    system) items, each with ``content`` as a list of blocks."""

    model: str
    system: list[str]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_choice: dict[str, Any] | None
    max_tokens: int
    stop_sequences: list[str]
    stream: bool
    thinking: bool | None
    sampling: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        out = []
        for i, b in enumerate(content):
            if isinstance(b, str):
                b = {"type": "text", "text": b}
            if not isinstance(b, dict) or not isinstance(b.get("type"), str):
                raise InvalidRequestError(
                    f"{where}.content[{i}]: each content block must be an object with a 'type'"
                )
            out.append(b)
        return out
    if content is None:
        return []
    raise InvalidRequestError(f"{where}.content must be a string or a list of content blocks")


def _text_of(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text" and b.get("text"))


def _system_texts(system: Any) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        if system.lstrip().startswith(BILLING_HEADER_PREFIX):
            system = system.split("\n", 1)[1] if "\n" in system else ""
        return [system] if system else []
    if not isinstance(system, list):
        raise InvalidRequestError("system must be a string or a list of text blocks")
    out = []
    for i, b in enumerate(system):
        if isinstance(b, str):
            b = {"type": "text", "text": b}
        if not isinstance(b, dict) or b.get("type") != "text" or not isinstance(b.get("text"), str):
            raise InvalidRequestError(f"system[{i}] must be a text block {{'type': 'text', 'text': ...}}")
        text = b["text"]
        if text.lstrip().startswith(BILLING_HEADER_PREFIX) or not text:
            continue
        out.append(text)
    return out


def _fold_into_user(messages: list[dict[str, Any]], pos: int, text: str) -> bool:
    """Insert ``text`` into the first user message at or after ``pos`` (after its tool results), else
    append it to the last user message before ``pos``. False when there is no user message at all."""
    block = {"type": "text", "text": text}
    for m in messages[pos:]:
        if m["role"] == "user":
            k = 0
            while k < len(m["content"]) and m["content"][k].get("type") == "tool_result":
                k += 1
            m["content"].insert(k, block)
            return True
    for m in reversed(messages[:pos]):
        if m["role"] == "user":
            m["content"].append(block)
            return True
    return False


def prepare(body: Any, *, system_mode: Literal["fold", "keep"] = "fold") -> Prepared:
    """Validate and normalise an Anthropic Messages request body (a parsed JSON object).

    Raises InvalidRequestError naming the offending field.
    """
    if not isinstance(body, dict):
        raise InvalidRequestError("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("model: required, a non-empty string")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise InvalidRequestError("max_tokens: required, an integer >= 1")
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise InvalidRequestError("messages: required, a list of {role, content} objects")
    warnings: list[str] = []
    system = _system_texts(body.get("system"))
    messages = _messages(raw_messages, system, system_mode)
    raw_tools = body.get("tools") or []
    tools = _tools(raw_tools, warnings)
    tool_choice = _tool_choice(body.get("tool_choice"), tools, raw_tools, warnings)
    stop = body.get("stop_sequences") or []
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise InvalidRequestError("stop_sequences must be a list of strings")
    thinking_cfg = body.get("thinking")
    thinking: bool | None = None
    if isinstance(thinking_cfg, dict):
        thinking = thinking_cfg.get("type") in ("enabled", "adaptive")
    sampling = {k: body[k] for k in ("temperature", "top_p", "top_k") if body.get(k) is not None}
    return Prepared(
        model=model,
        system=system,
        messages=messages,
        tools=tools,
        tool_choice=tool_choice,
        max_tokens=max_tokens,
        stop_sequences=list(stop),
        stream=bool(body.get("stream", False)),
        thinking=thinking,
        sampling=sampling,
        warnings=warnings,
    )


def _messages(
    raw_messages: list[Any], system: list[str], system_mode: Literal["fold", "keep"]
) -> list[dict[str, Any]]:
    """The user and assistant messages with their blocks normalised; a system message becomes part of
    ``system`` (before any other message), stays a system message (``keep``), or is folded into the next
    user message (appended to ``system`` when there is none)."""
    messages: list[dict[str, Any]] = []
    late_system: list[tuple[int, str]] = []
    for i, m in enumerate(raw_messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
            raise InvalidRequestError(f"messages[{i}].role must be 'user', 'assistant' or 'system'")
        blocks = [b for b in _blocks(m.get("content"), f"messages[{i}]") if b["type"] not in _DROPPED_BLOCKS]
        blocks = [b for b in blocks if not (b["type"] == "text" and not b.get("text"))]
        if m["role"] == "system":
            _system_message(_text_of(blocks), messages, system, late_system, system_mode)
            continue
        if not blocks and m["role"] == "assistant":
            continue  # an assistant turn that held only thinking
        messages.append({"role": m["role"], "content": blocks})
    for pos, text in reversed(late_system):
        if not _fold_into_user(messages, pos, text):
            system.append(text)
    return messages


def _system_message(
    text: str,
    messages: list[dict[str, Any]],
    system: list[str],
    late_system: list[tuple[int, str]],
    system_mode: Literal["fold", "keep"],
) -> None:
    if not text:
        return
    if system_mode == "keep" and messages:
        messages.append({"role": "system", "content": [{"type": "text", "text": text}]})
    elif not messages:
        system.append(text)
    else:
        late_system.append((len(messages), text))


def _tools(raw_tools: Any, warnings: list[str]) -> list[dict[str, Any]]:
    """The client tools; server tools (no ``input_schema``) are dropped with a warning."""
    if not isinstance(raw_tools, list):
        raise InvalidRequestError("tools must be a list")
    tools: list[dict[str, Any]] = []
    for i, t in enumerate(raw_tools):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise InvalidRequestError(f"tools[{i}] must be an object with a 'name'")
        if not isinstance(t.get("input_schema"), dict):
            warnings.append(f"dropped server tool {t['name']!r} (type {t.get('type')!r}): no input_schema")
            continue
        tools.append(t)
    return tools


def _tool_choice(
    tool_choice: Any, tools: list[dict[str, Any]], raw_tools: list[Any], warnings: list[str]
) -> Any:
    """The checked ``tool_choice``: ``auto`` when it names a dropped server tool, None without tools."""
    if tool_choice is None:
        return None
    if not isinstance(tool_choice, dict) or tool_choice.get("type") not in ("auto", "any", "none", "tool"):
        raise InvalidRequestError("tool_choice.type must be one of auto, any, none, tool")
    if tool_choice["type"] == "tool":
        name = tool_choice.get("name")
        if not isinstance(name, str):
            raise InvalidRequestError("tool_choice.name is required when tool_choice.type is 'tool'")
        if not any(t["name"] == name for t in tools):
            if not any(isinstance(t, dict) and t.get("name") == name for t in raw_tools):
                raise InvalidRequestError(f"tool_choice names tool {name!r}, which is not in tools")
            warnings.append(f"tool_choice named dropped server tool {name!r}; using auto")
            tool_choice = {"type": "auto"}
    return tool_choice if tools else None


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text``: ceil(ASCII chars / 4) + one token per non-ASCII char.

    Four ASCII characters per token is the common rule of thumb for BPE tokenizers on English; a CJK
    character is one token or more in every tokenizer we serve (Qwen: mostly one, SmolLM2's byte-level
    BPE: up to three), so counting it as a quarter (the old chars / 4) undercounted Chinese text four
    times over. An estimate, never presented as exact."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def _prompt_text(p: Prepared) -> str:
    parts = [
        "\n".join(p.system),
        json.dumps(p.messages, ensure_ascii=False),
        json.dumps(p.tools, ensure_ascii=False),
    ]
    return "".join(parts)


#: Tokens a chat template adds at most per message (role markers, separators) and once per prompt (a
#: tools preamble, the generation prompt): the slack of :func:`prompt_token_bound`.
TEMPLATE_TOKENS_PER_MESSAGE = 16
TEMPLATE_TOKENS_FIXED = 256


def estimate_request_tokens(p: Prepared) -> int:
    """Estimated prompt tokens of a prepared request (system + messages + tools), via estimate_tokens."""
    return estimate_tokens(_prompt_text(p)) + 4 * len(p.messages)


def prompt_token_bound(p: Prepared) -> int:
    """An upper bound on the prompt's tokens: its UTF-8 bytes (a byte-level or byte-fallback tokenizer
    never makes more tokens than bytes) plus the template slack. Used to skip exact counting when even
    this many tokens leave room for max_tokens."""
    return (
        len(_prompt_text(p).encode("utf-8"))
        + TEMPLATE_TOKENS_PER_MESSAGE * len(p.messages)
        + TEMPLATE_TOKENS_FIXED
    )


def clamp_max_tokens(
    p: Prepared,
    *,
    context_window: int | None,
    max_output_tokens: int | None,
    prompt_tokens: int | None = None,
) -> int:
    """max_tokens clamped to the output cap and to what fits in ``context_window`` after the prompt:
    ``prompt_tokens`` when counted exactly, else the estimate padded by 10%; never below 1."""
    mt = p.max_tokens
    if max_output_tokens is not None:
        mt = min(mt, max_output_tokens)
    if context_window is not None:
        used = prompt_tokens if prompt_tokens is not None else math.ceil(estimate_request_tokens(p) * 1.1)
        mt = min(mt, max(context_window - used, 1))
    return max(mt, 1)
