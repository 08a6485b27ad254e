"""Pineal's prompt prefilled while the specialists work (``proxy._prefill`` says what the proxy does).

Pineal can only start once the specialists are done, and its prompt is the longest of the turn: the
shared context (profile, history, relevant entries, the user's message), then its task and the
arbitrated brief, which depend on the specialists' entries. The shared context does not, so it is sent
ahead, once per turn, as the first message of Pineal's own (prestarted, never used) Claude Code
conversation; the proxy has the model server compute it with a ``max_tokens: 1`` request and answers
locally. Pineal's real request then repeats that prefix byte for byte (same process, same
conversation) and only its task and brief are new to the server.

It never delays the others: it is sent only after the Coach and every specialist have their first
token (their prompts are in, so it competes with none of their prefills) or have ended, and not at all
when every specialist has already ended (nothing left to overlap with).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

__all__ = ["POLL_S", "prefill_pineal", "prefill_text"]

log = logging.getLogger(__name__)

POLL_S = 0.05
_LIVE = ("pending", "running")


def prefill_text(shared: str) -> str:
    """The prefill message: the shared context, then the proxy's marker line."""
    from proxy import PREFILL_MARKER

    return shared + PREFILL_MARKER + "\n"


async def prefill_pineal(
    runner: Any,
    invocation: Any,
    shared: str,
    statuses: Mapping[str, Any],
    waited_for: Sequence[str],
    specialists: Sequence[str],
) -> bool:
    """Wait until every agent of ``waited_for`` has its first token or has ended, then have ``runner``
    send Pineal's shared context (``runner.prefill``: ``launcher.runner._warm_prefill.send_context``; a
    runner without it sends nothing). Returns whether it was sent."""
    send = getattr(runner, "prefill", None)
    if send is None or not shared:
        return False
    # polled (every 50 ms) rather than signalled: the statuses are the supervisor's, updated in place
    while _before_first_token(statuses, waited_for):  # noqa: ASYNC110
        await anyio.sleep(POLL_S)
    if not any(statuses[n].status in _LIVE for n in specialists if n in statuses):
        return False
    return bool(await send(invocation, prefill_text(shared)))


def _before_first_token(statuses: Mapping[str, Any], names: Sequence[str]) -> bool:
    """Whether an agent of ``names`` is still waiting for its first token."""
    return any(
        statuses[n].status in _LIVE and statuses[n].first_token_s is None for n in names if n in statuses
    )
