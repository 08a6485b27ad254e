"""Prepared Anthropic request -> OpenAI ``/v1/chat/completions`` request (pure).

Mapping (Anthropic -> OpenAI):
- ``system`` texts -> one leading ``system`` message (texts joined by a blank line);
- user ``tool_result`` blocks -> ``tool`` messages (first, in order); their images and the user's own
  text/images -> one ``user`` message after them; ``is_error`` results are prefixed ``Error: ``;
- a block the upstream cannot take (a PDF or other base64/URL/file document, an image given by file id,
  an unknown block type), in a tool_result or a user message, is replaced by a short note in the text
  the model sees (``[attachment omitted: application/pdf is not supported by this model]``), so the model
  knows something was there; a ``text`` document is sent as its text;
- assistant ``text`` -> ``content``, ``tool_use`` -> ``tool_calls`` (arguments compact JSON);
- ``tools`` -> ``function`` tools; ``tool_choice`` auto/any/none/tool -> auto/required/none/
  ``{"type": "function", "function": {"name": ...}}`` (vLLM constrains decoding to that tool's schema);
  ``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``;
- ``thinking`` -> ``chat_template_kwargs.enable_thinking`` (Qwen3 chat template switch);
- ``stop_sequences`` -> ``stop``; always ``stream: true`` with ``stream_options.include_usage``.

Keys are emitted in a fixed order and serialised compactly, so identical prefixes are byte-identical.
"""

from __future__ import annotations

import json
from typing import Any

from ._normalize import Prepared


def dumps(obj: Any) -> bytes:
    """Deterministic compact JSON (UTF-8, no ASCII escaping, insertion order kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _image_part(block: dict[str, Any]) -> dict[str, Any] | None:
    src = block.get("source") or {}
    if src.get("type") == "base64":
        url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
    elif src.get("type") == "url":
        url = src.get("url", "")
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def omitted_note(block: dict[str, Any]) -> str:
    """The note that stands in for a block the upstream cannot take, naming its kind (a media type when
    the block has one: ``[attachment omitted: application/pdf is not supported by this model]``)."""
    raw = block.get("source")
    src: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = str(block.get("type", "block"))
    article = "an" if kind[:1] in ("a", "e", "i", "o", "u") else "a"
    media = src.get("media_type")
    if isinstance(media, str) and media:
        what = media
    elif src.get("type") == "file":
        what = f"{article} {kind} given by file id"
    elif kind == "document":
        what = f"a document ({src.get('type', 'unknown')} source)"
    else:
        what = f"{article} {kind} block"
    return f"[attachment omitted: {what} is not supported by this model]"


def _part(b: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """One user or tool_result block -> an OpenAI content part (a note for what cannot be sent)."""
    t = b.get("type")
    if t == "text":
        return {"type": "text", "text": b.get("text", "")}
    if t == "image":
        img = _image_part(b)
        if img is not None:
            return img
    if t == "document" and (b.get("source") or {}).get("type") == "text":
        return {"type": "text", "text": b["source"].get("data", "")}
    note = omitted_note(b)
    warnings.append(f"replaced a {t!r} content block the upstream cannot take by a note: {note}")
    return {"type": "text", "text": note}


def _user_parts(blocks: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
    return [_part(b, warnings) for b in blocks]


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _tool_result(block: dict[str, Any], warnings: list[str]) -> tuple[str, list[dict[str, Any]]]:
    content = block.get("content")
    images: list[dict[str, Any]] = []
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    else:
        texts = []
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            part = _part(b, warnings)
            if part["type"] == "text":
                texts.append(part["text"])
            else:
                images.append(part)
        text = "\n".join(texts)
    if block.get("is_error") and not text.lower().startswith(("error", "<tool_use_error>")):
        text = f"Error: {text}"
    return text, images


def _messages(p: Prepared, warnings: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if p.system:
        out.append({"role": "system", "content": "\n\n".join(p.system)})
    for m in p.messages:
        role, blocks = m["role"], m["content"]
        if role == "system":
            out.append({"role": "system", "content": "\n".join(b.get("text", "") for b in blocks)})
        elif role == "user":
            rest: list[dict[str, Any]] = []
            tool_images: list[dict[str, Any]] = []
            for b in blocks:
                if b["type"] == "tool_result":
                    text, images = _tool_result(b, warnings)
                    out.append(
                        {"role": "tool", "tool_call_id": str(b.get("tool_use_id", "")), "content": text}
                    )
                    if images:
                        tool_images.append(
                            {
                                "type": "text",
                                "text": f"Images returned by tool call {b.get('tool_use_id', '')}:",
                            }
                        )
                        tool_images.extend(images)
                else:
                    rest.append(b)
            parts = tool_images + _user_parts(rest, warnings)
            if parts:
                out.append({"role": "user", "content": _content(parts)})
        else:
            texts = [b.get("text", "") for b in blocks if b["type"] == "text"]
            calls = [
                {
                    "id": str(b.get("id", "")),
                    "type": "function",
                    "function": {
                        "name": b.get("name", ""),
                        "arguments": dumps(b.get("input") or {}).decode("utf-8"),
                    },
                }
                for b in blocks
                if b["type"] == "tool_use"
            ]
            for b in blocks:
                if b["type"] not in ("text", "tool_use"):
                    warnings.append(f"dropped an assistant {b['type']!r} block the upstream cannot take")
            msg: dict[str, Any] = {
                "role": "assistant",
                "content": "\n".join(texts) if texts or not calls else None,
            }
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
    return out


def tool_choice_to_openai(choice: dict[str, Any] | None) -> str | dict[str, Any] | None:
    """Anthropic tool_choice -> OpenAI tool_choice (None when absent)."""
    if choice is None:
        return None
    t = choice["type"]
    if t == "tool":
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"auto": "auto", "any": "required", "none": "none"}[t]


def to_openai(
    p: Prepared,
    *,
    upstream_model: str,
    max_tokens: int,
    enable_thinking: bool | None,
    chat_template_kwargs: bool = True,
) -> tuple[dict[str, Any], list[str]]:
    """Build the OpenAI chat.completions body for ``p``. Returns ``(body, warnings)``.

    ``enable_thinking`` None leaves the chat template's default.
    """
    warnings: list[str] = []
    body: dict[str, Any] = {"model": upstream_model, "messages": _messages(p, warnings)}
    if p.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t["input_schema"],
                },
            }
            for t in p.tools
        ]
        tc = tool_choice_to_openai(p.tool_choice)
        if tc is not None:
            body["tool_choice"] = tc
        if p.tool_choice and p.tool_choice.get("disable_parallel_tool_use"):
            body["parallel_tool_calls"] = False
    body["max_tokens"] = max_tokens
    for k in ("temperature", "top_p", "top_k"):
        if k in p.sampling:
            body[k] = p.sampling[k]
    if p.stop_sequences:
        body["stop"] = p.stop_sequences
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    if chat_template_kwargs and enable_thinking is not None:
        body["chat_template_kwargs"] = {"enable_thinking": enable_thinking}
    return body, warnings
