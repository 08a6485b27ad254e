"""Reset a pooled warm process's conversation and hand it back to the pool, so another session can use it.

Claude Code's ``/clear``, sent as a prompt in a streaming session, replaces the process's conversation
with an empty one without a model call (verified with the bundled ``claude`` of claude-agent-sdk 0.2.189
against the scripted upstream, ``tests/launcher/test_process_reset.py``): Claude Code answers with a
``ConversationResetMessage``, a new ``init`` carrying a new session id, and a ``ResultMessage`` of zero
turns; the next model request carries only the next user message (no earlier turn, no earlier answer)
and the same system prompt. Nothing of the conversation is on disk (``--no-session-persistence``) and
the agents have no built-in tools (no file or shell access), so no tool reaches a previous transcript.

Only a process that started with a pool identity (``launcher.runner._process_pool``; with
``RunnerConfig.reuse_processes`` every warm process does, :func:`start_bound`) can serve another
session: its headers name the pool user and its own pool session, which the in-process MCP server and
proxy translate to whatever session it is bound to. :func:`recycle` therefore, in this order:

1. revokes the binding, so any request the process makes from now on acts as the pool user (no data,
   no turn: it can neither read nor write anyone's entries);
2. sends ``/clear`` and confirms it took (:func:`reset_conversation`);
3. releases the pool session (no binding at all, as a fresh pooled process) and puts the process back
   in the pool, where :meth:`~launcher.runner._process_pool.ProcessPool.hand_out` binds it to the next
   session that needs that agent; its pool session is marked in :class:`FreshStarts`, so the in-process
   proxy refuses its next model request unless it carries one message only (the reset checked again on
   the wire: a process that sends earlier turns fails that run and is replaced).

A process whose reset is not confirmed (no reset message, an error result, a model turn, the same
session id, the time limit) is killed, never reused; one the pool has no room for, or one past
:data:`MAX_RESETS`, is stopped.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import anyio

from launcher.runner._process_pool import FreshStarts

__all__ = [
    "MAX_RESETS",
    "RESET_COMMAND",
    "RESET_LIMIT_S",
    "FreshStarts",
    "recycle",
    "reset_conversation",
    "resets_of",
    "reusable",
    "start_bound",
]

log = logging.getLogger(__name__)

RESET_COMMAND = "/clear"
"""Claude Code's slash command that starts a fresh conversation in the same process."""
RESET_LIMIT_S = 5.0
"""Seconds a reset may take before the process is stopped instead (measured here: 0.05-0.25 s)."""
MAX_RESETS = 10
"""Sessions a process may serve after its first: a reset process keeps its heap, and the RSS of six grew
from 1,381 to 1,623 MiB over 9 resets, flattening (``bench/warm_memory.py --reuse 10 --chain``); beyond
10 is unmeasured, so the process is stopped then and a new one starts."""

_RESETS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def resets_of(client: Any) -> int:
    """How many confirmed resets the process of ``client`` has had."""
    return _RESETS.get(client, 0)


async def reset_conversation(client: Any, *, limit_s: float = RESET_LIMIT_S) -> bool:
    """Send ``/clear`` to an idle client's process and confirm that its conversation was replaced.

    True only when, within ``limit_s`` seconds, the process reported a ``ConversationResetMessage``
    and then a successful ``ResultMessage`` of zero model turns whose session id differs from the one
    the reset message was sent under (the old conversation's). Any error, a missing message or the time
    limit gives False (the caller must then stop the process). Never raises for the SDK's errors.
    """
    from claude_agent_sdk.types import ConversationResetMessage, ResultMessage

    reset_from: str | None = None
    confirmed = False
    with anyio.move_on_after(limit_s):
        try:
            await client.query(RESET_COMMAND)
            async for msg in client.receive_response():
                if isinstance(msg, ConversationResetMessage):
                    reset_from = msg.session_id
                elif isinstance(msg, ResultMessage):
                    confirmed = (
                        reset_from is not None
                        and not msg.is_error
                        and msg.num_turns == 0
                        and msg.session_id != reset_from
                    )
        except Exception as exc:  # the SDK's errors: not confirmed
            log.warning("conversation reset failed (%s)", type(exc).__name__)
            return False
    return confirmed


async def recycle(runner: Any, entry: Any) -> bool:
    """Reset the idle warm process of ``entry`` (a ``_Warm`` already taken out of the runner's warm
    processes) and return it to the runner's pool for the next session (module docstring for the
    order: revoke, reset, confirm, release). Returns True when it is back in the pool; False when the
    caller must stop it (its binding is revoked either way): not a pooled process, no room in the
    pool, :data:`MAX_RESETS` reached, or the reset not confirmed (then it was SIGKILLed already)."""
    from launcher.runner._claude_process import kill_process
    from launcher.runner._process_pool import PooledProcess

    pool = runner.pool
    bindings = pool._bindings
    client, pool_session = entry.client, entry.pool_session
    if client is None:
        return False
    pool.revoke(client)  # first: from now on every request of this process acts as the pool user
    if bindings is None or pool_session is None:
        return False
    bindings.fresh.forget(pool_session)
    if pool.size <= 0 or pool._idle.get(entry.fingerprint) or pool._room() <= 0:
        return False  # no room: the pool holds one idle process per agent at most
    if resets_of(client) >= MAX_RESETS:
        return False
    if not await reset_conversation(client):
        runner.reset_failures += 1
        log.warning("a warm process's reset was not confirmed: killed, not reused")
        kill_process(client)
        return False
    _RESETS[client] = resets_of(client) + 1
    bindings.fresh.mark(pool_session)  # before it can be bound: its next request is checked
    bindings.release(pool_session)
    pool._idle.setdefault(entry.fingerprint, []).append(
        PooledProcess(client, entry.fingerprint, pool_session, entry.stderr)
    )
    runner.reset_processes += 1
    return True


def reusable(runner: Any) -> bool:
    """Whether the runner's warm processes are started for reuse: ``reuse_processes`` on and a pool
    that can translate identities (``ProcessPool.size`` > 0: the in-process proxy and MCP server)."""
    return bool(runner.config.reuse_processes) and runner.pool.size > 0


def start_bound(runner: Any, inv: Any, entry: Any) -> Any:
    """A new (not yet connected) ``ClaudeSDKClient`` for the warm ``entry`` of ``inv``'s session, started
    under a fresh pool identity that is bound to that session before the process makes any request (so
    it can later be reset and bound to another session by :func:`recycle`); sets ``entry.pool_session``.
    Only when :func:`reusable`."""
    import dataclasses

    from claude_agent_sdk import ClaudeSDKClient

    from launcher.runner._process_pool import POOL_USER, new_pool_session

    pool = runner.pool
    pooled = dataclasses.replace(inv, user=POOL_USER, session=new_pool_session())
    client = ClaudeSDKClient(runner.options(pooled, one_shot=False, stderr=entry.stderr.append))
    pool._bindings.bind(pooled.session, inv.user, inv.session)
    pool._bound[id(client)] = pooled.session
    entry.pool_session = pooled.session
    return client
