"""An agent's context sent ahead as the first message of its idle warm process (``ClaudeAgentRunner.prefill``):
the model server computes that prompt prefix now and the proxy answers it locally (``proxy._prefill``).
When to send it is the pipeline's choice (``launcher.pipeline._pineal_prefill``)."""

from __future__ import annotations

import logging
from typing import Any

import anyio

__all__ = ["send_context"]

log = logging.getLogger(__name__)


async def send_context(runner: Any, invocation: Any, text: str) -> bool:
    """Send ``text`` (an agent's context, ending with ``proxy._prefill.PREFILL_MARKER``) as the first
    message of the idle, started, never-used warm process of the invocation's (user, session, agent),
    so the model server computes that prompt prefix now (the proxy answers it locally; see
    ``launcher.pipeline._pineal_prefill``, which decides when). The conversation then holds the context: the next :meth:`run`
    sends ``invocation.followup``. A run meanwhile waits for it (it holds the process as a prestart
    does). Returns False (nothing sent) when there is no such process; a failure discards it."""
    inv = invocation
    key = (inv.user, inv.session, inv.agent)
    async with runner._lock:
        entry = runner._warm.get(key)
        if (
            entry is None
            or entry.busy
            or entry.primed
            or entry.client is None
            or entry.starting is not None
            or runner._stale(entry, inv)
            or runner.config.seed_way
        ):
            return False
        entry.busy, entry.starting = True, anyio.Event()
    ok = False
    try:
        from claude_agent_sdk.types import ResultMessage

        await entry.client.query(text)
        async for msg in entry.client.receive_response():
            if isinstance(msg, ResultMessage) and msg.is_error:
                raise RuntimeError(f"prefill ended with {msg.subtype}")
        ok = entry.primed = True
    except Exception as exc:  # the SDK's errors; the process is replaced by the next run
        log.warning("prefill of agent %s failed (%s)", inv.agent, type(exc).__name__)
    finally:
        await runner._release_held(inv, entry, ok=ok)
    return ok
