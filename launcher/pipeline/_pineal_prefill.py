"""Pineal's prompt prefilled while the specialists work (``proxy._prefill`` says what the proxy does).

Pineal can only start once the specialists are done, and its prompt is the longest of the turn: the
shared context (profile, history, relevant entries, the user's message), then its task and the
arbitrated brief, which depend on the specialists' entries. The shared context does not, so it is sent
ahead, once per turn, as the first message of Pineal's own (prestarted, never used) Claude Code
conversation; the proxy has the model server compute it with a ``max_tokens: 1`` request and answers
locally. Pineal's real request then repeats that prefix byte for byte (same process, same
conversation) and only its task and brief are new to the server.

It never delays the others: it is sent only after the Coach and every specialist have their prompt in
at the model (so it competes with none of their prefills) or have ended, and not at all when every
specialist has already ended (nothing left to overlap with). "Prompt in" is the first text of the
agent's forced tool call reaching the in-process proxy (``ReplyTaps.watch``), else its first token as
Claude Code reports it. The latter alone comes late: the proxy hands a tool call to Claude Code only
once it is whole, so for an agent whose output is a tool call "first token" is nearly its end (measured
in ``bench/turn.py``'s cold turn: the prefill went out after the last specialist's whole call, 3.96 s
into the turn, and Pineal's real request then waited 0.17 s for it; with the proxy's signal it goes out
at about 0.4 s and is done long before Pineal starts).

Whether the model server has room for it is the proxy's call (``proxy._slots``): no free slot, and
nothing is sent upstream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any

import anyio

__all__ = ["POLL_S", "prefill_pineal", "prefill_text", "prestart_synthesis"]

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
    at_model: Collection[str] = (),
    armed: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> bool:
    """Wait until every agent of ``waited_for`` is writing at the model (named in ``at_model``, a live
    set: ``ReplyTaps.watch``), has its first token or has ended, then have ``runner`` send Pineal's
    shared context (``runner.prefill``: ``launcher.runner._warm_prefill.send_context``; a runner without
    it sends nothing), inside ``armed()`` when given (Pineal armed in the turn directory, so the proxy
    meters the prefill under its turn). Returns whether it was sent."""
    send = getattr(runner, "prefill", None)
    if send is None or not shared:
        return False
    # polled (every 50 ms) rather than signalled: the statuses are the supervisor's, updated in place
    while _before_first_token(statuses, [n for n in waited_for if n not in at_model]):  # noqa: ASYNC110
        await anyio.sleep(POLL_S)
    if not any(statuses[n].status in _LIVE for n in specialists if n in statuses):
        return False
    if armed is None:
        return bool(await send(invocation, prefill_text(shared)))
    async with armed():
        return bool(await send(invocation, prefill_text(shared)))


@asynccontextmanager
async def _armed(turn: Any, agent: str) -> AsyncIterator[None]:
    """``agent`` armed in ``turn``'s directory (and an external proxy told) for the block: its prefill is
    a request of this turn. Arming counts, so Pineal's own run arming it meanwhile keeps it armed."""
    turn.directory.arm(turn.user, turn.session, turn.turn, agent)
    try:
        await turn.directory.synced()
        yield
    finally:
        turn.directory.disarm(turn.user, turn.session, turn.turn, agent)


def _before_first_token(statuses: Mapping[str, Any], names: Sequence[str]) -> bool:
    """Whether an agent of ``names`` is still waiting for its first token."""
    return any(
        statuses[n].status in _LIVE and statuses[n].first_token_s is None for n in names if n in statuses
    )


async def prestart_synthesis(turn: Any) -> None:
    """For ``turn`` (a ``launcher.pipeline.turn.Turn``): Pineal's process is started once every
    specialist is up and prompted (not competing with their start-up for the CPU), while they wait on
    the model, so after the barrier only its query remains; then, with ``settings.pineal_prefill``, its
    shared context is sent ahead (:func:`prefill_pineal`, once per turn), watching the proxy's taps for
    the agents already writing at the model."""
    from blackboard import Stage, agents_at
    from launcher.pipeline._agent_task import prestart_agent
    from launcher.pipeline._reply_stream import taps_for

    (synthesis,) = agents_at(Stage.SYNTHESIS)
    taps = taps_for(turn.directory)
    at_model = taps.watch(turn.user, turn.session, turn.turn)
    try:
        with turn.stop.scope(synthesis):
            await turn._specialists_up.wait()
            v = turn.views[synthesis]
            # bounded: a stuck start must not hold up the join for long (the run would start its own)
            await prestart_agent(
                turn.sup.runner,
                turn._invocation(synthesis, "", ""),
                evict=True,
                limit_s=min(v.deadline_s, 30.0),
            )
            if turn.settings.pineal_prefill:
                shared = next(iter(turn.packs.values())).shared if turn.packs else ""
                await prefill_pineal(
                    turn.sup.runner,
                    turn._invocation(synthesis, "", ""),
                    shared,
                    turn.statuses,
                    turn.launch,
                    agents_at(Stage.SPECIALIST),
                    at_model,
                    armed=partial(_armed, turn, synthesis),
                )
    finally:
        taps.unwatch(turn.user, turn.session, turn.turn)
