"""A turn job that may be a redelivery (``coach worker``; docs/scale-out.md): what ``Turn`` keeps of the
turn already begun. The worker passes ``hooks`` (``launcher.scaleout.hooks.TurnHooks``, duck-typed: the
pipeline imports nothing of the scale-out layer above it):

* ``resume_turn``: the blackboard turn the job already began; no new turn is begun, and every entry
  already on the board (create-only, so final) is kept: the message, an agent's output (the agent is not
  run again), the delivery and the turn record;
* ``on_begun(turn_id)``: called right after a new turn is begun, before anything else is written for it;
  returns the turn id to use (the one the job row recorded);
* ``before_dispatch(agent)``: called before each agent (and Pineal) is started; raises when the worker's
  lease on the session went stale, which ends the turn there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from blackboard import Blackboard, WaitResult
from launcher.pipeline._turn_io import record_turn

if TYPE_CHECKING:
    from launcher.pipeline._turn_status import TurnResult

__all__ = ["TurnResume"]


class TurnResume:
    """The ``hooks`` of one turn (``None``: a plain turn, nothing resumed, nothing checked)."""

    def __init__(self, hooks: Any) -> None:
        self.hooks = hooks
        self.turn: str | None = getattr(hooks, "resume_turn", None)
        self.check: Callable[[str], Awaitable[None]] | None = getattr(hooks, "before_dispatch", None)
        #: The entries of a resumed turn already on the board (read once, when the turn opens).
        self.done: dict[str, Any] = {}

    async def begin(self, board: Blackboard, user: str, session: str, crisis_tier: int) -> str:
        """The resumed turn (its entries read into :attr:`done`), or a new one, recorded by ``on_begun``."""
        if self.turn is not None:
            self.done = dict(await anyio.to_thread.run_sync(board.read_turn, user, session, self.turn))
            return self.turn
        turn: str = await anyio.to_thread.run_sync(
            partial(board.begin_turn, user, session, crisis_tier=crisis_tier)
        )
        on_begun = getattr(self.hooks, "on_begun", None)
        if on_begun is not None:
            turn = await on_begun(turn)
        return turn

    async def dispatch(self, name: str) -> bool:
        """Whether agent ``name`` runs: not when its entry is on the board already; before it runs, the
        worker's lease is checked (``before_dispatch`` raises when it went stale)."""
        if name in self.done:
            return False
        if self.check is not None:
            await self.check(name)
        return True

    async def record(
        self,
        board: Blackboard,
        where: tuple[str, str, str],
        result: TurnResult,
        launched: Sequence[str],
        waited_versions: tuple[WaitResult, dict[str, int]] | None,
        started_at: float,
        resumed: bool | None = None,
    ) -> None:
        """:func:`launcher.pipeline._turn_io.record_turn`, except on a resumed turn (``resumed``; default:
        it had entries when it opened), where the delivery and the turn record are written only if
        missing."""
        have: Mapping[str, Any] = {}
        if bool(self.done) if resumed is None else resumed:
            have = await anyio.to_thread.run_sync(board.read_turn, *where)
        if "record" in have:
            return
        delivery = "delivery" not in have
        await record_turn(board, where, result, launched, waited_versions, started_at, delivery=delivery)
