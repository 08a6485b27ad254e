"""What ``Supervisor.run_turn`` needs from a worker to run a turn job safely when the job may be a
redelivery (``hooks=TurnHooks(...)``; docs/scale-out.md).

* ``resume_turn``: the blackboard turn the job already began (recorded in the job row): no new turn is
  begun, the user's message is not written again, and every agent whose entry is already on the
  board is not run again (its stored entry is used: entries are create-only, so a second write could
  never land anyway); the delivery and the turn record are written only if missing.
* ``on_begun(turn_id)``: called right after a new turn is begun and before anything else is written
  for it; the worker records the turn id in the job row (guarded by its lease) and returns the turn id
  to use (the one already recorded, if any).
* ``before_dispatch(agent)``: called before each agent is started (and before Pineal); raises
  ``blackboard._pg_lease.StaleLeaseError`` when the worker's lease on the session has gone stale, which
  ends the turn here (another worker has taken the session over).

This module imports nothing heavy: the supervisor only duck-types it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["TurnHooks"]


@dataclass
class TurnHooks:
    resume_turn: str | None = None
    on_begun: Callable[[str], Awaitable[str]] | None = None
    before_dispatch: Callable[[str], Awaitable[None]] | None = None
