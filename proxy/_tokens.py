"""``/v1/messages/count_tokens``: exact counts from the upstream when it can tokenize, else an estimate.

Order tried, per replica (the first that works is remembered):
1. ``anthropic`` kind: the upstream's own ``/v1/messages/count_tokens``;
2. vLLM: ``POST /tokenize`` with ``{"model", "messages", "tools", "add_generation_prompt": true}`` ->
   ``{"count": n}`` (the chat template applied, so system and tools are included);
3. llama.cpp: ``POST /apply-template`` with ``{"messages", "tools"}`` -> ``{"prompt"}``, then
   ``POST /tokenize`` with ``{"content": prompt}`` -> ``{"tokens": [...]}``;
4. otherwise :func:`proxy._normalize.estimate_request_tokens` (chars / 4), reported as an estimate.
"""

from __future__ import annotations

from typing import Any

import httpx

from ._anthropic_request import to_anthropic
from ._normalize import Prepared, estimate_request_tokens
from ._openai_request import dumps, to_openai
from ._router import Replica
from .config import ModelPool


async def count_tokens(
    client: httpx.AsyncClient,
    pool: ModelPool,
    replica: Replica,
    p: Prepared,
    methods: dict[str, str],
    headers: dict[str, str],
    timeout_s: float,
) -> tuple[int, str]:
    """Returns ``(input_tokens, method)`` with method one of "upstream", "vllm-tokenize",
    "llamacpp-tokenize", "estimate". ``methods`` caches the working method per replica URL."""
    known = methods.get(replica.url)
    order = (
        [known]
        if known
        else (["upstream"] if pool.kind == "anthropic" else ["vllm-tokenize", "llamacpp-tokenize"])
    )
    for method in order:
        try:
            n = await _try(client, method, pool, replica, p, headers, timeout_s)
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            n = None
        if n is not None:
            methods[replica.url] = method
            return n, method
    if not known:
        methods[replica.url] = "estimate"
    return estimate_request_tokens(p), "estimate"


async def _try(
    client: httpx.AsyncClient,
    method: str,
    pool: ModelPool,
    replica: Replica,
    p: Prepared,
    headers: dict[str, str],
    timeout_s: float,
) -> int | None:
    if method == "estimate":
        return None
    if method == "upstream":
        abody = to_anthropic(p, upstream_model=pool.upstream_name, max_tokens=1)
        for k in ("max_tokens", "stream", "stop_sequences", "temperature", "top_p", "top_k"):
            abody.pop(k, None)
        r = await client.post(
            replica.url + "/v1/messages/count_tokens",
            content=dumps(abody),
            headers=headers,
            timeout=timeout_s,
        )
        return int(r.json()["input_tokens"]) if r.status_code == 200 else None
    oa, _ = to_openai(
        p, upstream_model=pool.upstream_name, max_tokens=1, enable_thinking=None, chat_template_kwargs=False
    )
    if method == "vllm-tokenize":
        body: dict[str, Any] = {
            "model": oa["model"],
            "messages": oa["messages"],
            "add_generation_prompt": True,
        }
        if "tools" in oa:
            body["tools"] = oa["tools"]
        r = await client.post(
            replica.url + "/tokenize", content=dumps(body), headers=headers, timeout=timeout_s
        )
        if r.status_code != 200:
            return None
        j = r.json()
        return int(j["count"]) if "count" in j else None
    tbody: dict[str, Any] = {"messages": oa["messages"]}
    if "tools" in oa:
        tbody["tools"] = oa["tools"]
    r = await client.post(
        replica.url + "/apply-template", content=dumps(tbody), headers=headers, timeout=timeout_s
    )
    if r.status_code != 200:
        return None
    prompt = r.json()["prompt"]
    r = await client.post(
        replica.url + "/tokenize", content=dumps({"content": prompt}), headers=headers, timeout=timeout_s
    )
    if r.status_code != 200:
        return None
    return len(r.json()["tokens"])
