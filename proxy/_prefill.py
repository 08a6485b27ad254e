"""Prefilling an agent's prompt ahead of its real request, so the model server's prefix cache holds it.

The supervisor sends an agent's context early, as the first message of that agent's own Claude Code
conversation, ending with :data:`PREFILL_MARKER` (Pineal's context while the specialists still run:
``launcher.pipeline._pineal_prefill``). Because it is the same process and the same conversation, the agent's
real request a few seconds later starts with exactly the bytes of this one (system prompt, tools, the
context message); only the reply to it and the next message follow.

The proxy recognises such a request (its latest message is a user text ending with the marker) and:

1. prepares it exactly as it would the agent's real first call of a turn (policies, the forced tool,
   the llama.cpp narrowing, thinking off), but asks the upstream for ``max_tokens: 1`` and sends
   ``x-coach-prefill: 1``, in the background: the model server computes the prompt's KV cache once
   (vLLM's automatic prefix caching; llama-server's slot cache with ``cache_prompt``), metered as usual;
2. answers the client at once, locally, with :data:`PREFILL_REPLY` (so the conversation goes on);
3. holds the same agent's next request of that session until the prefill is done (at most
   ``PREFILL_WAIT_S``): sending it earlier would make the server compute the same prefix twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from ._normalize import Prepared

__all__ = ["PREFILL_HEADER", "PREFILL_MARKER", "PREFILL_REPLY", "PREFILL_WAIT_S", "Prefills", "is_prefill"]

log = logging.getLogger("proxy.prefill")

PREFILL_MARKER = (
    "(Context only, to read now: your task and this turn's brief follow in the next message. Reply OK.)"
)
"""The last line of a prefill message (the supervisor writes it; the agent sees it in its conversation)."""
PREFILL_REPLY = "OK."
PREFILL_HEADER = "x-coach-prefill"
PREFILL_WAIT_S = 30.0
"""The most an agent's next request waits for its own prefill still running upstream."""


def is_prefill(p: Prepared) -> bool:
    """Whether ``p``'s latest message is a user text ending with :data:`PREFILL_MARKER`."""
    if not p.messages or p.messages[-1]["role"] != "user":
        return False
    texts = [b.get("text", "") for b in p.messages[-1]["content"] if b.get("type") == "text"]
    return bool(texts) and str(texts[-1]).rstrip().endswith(PREFILL_MARKER)


class Prefills:
    """Prefill calls running upstream, by (agent, user, session)."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, str, str], asyncio.Task[Any]] = {}

    def start(self, key: tuple[str, str, str], call: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(call)
        self._running[key] = task

        def done(t: asyncio.Task[Any], key: tuple[str, str, str] = key) -> None:
            if self._running.get(key) is t:
                del self._running[key]
            if not t.cancelled() and t.exception() is not None:
                log.warning("prefill of agent %s failed: %s", key[0], type(t.exception()).__name__)

        task.add_done_callback(done)

    async def wait(self, key: tuple[str, str, str]) -> None:
        """Until the prefill of ``key`` (if one runs) is done, at most :data:`PREFILL_WAIT_S`."""
        task = self._running.get(key)
        if task is None:
            return
        with contextlib.suppress(Exception, asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), PREFILL_WAIT_S)

    def cancel_all(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
