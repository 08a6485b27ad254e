"""The per-turn barrier's protocol (the Shadow-before-Pineal guarantee), shared by the file-lock
:class:`~blackboard._sequencer.Sequencer` (one machine) and :class:`~blackboard._pg_barrier.PgBarrier`
(PostgreSQL, many machines). Both pass one contract suite (``tests/blackboard/test_barrier_contract.py``).

A turn id is 1-4 key parts joined by ``/`` (``{user}/{session}/{turn}``). ``mark_written(t, a)`` is
called only after agent ``a``'s entry for turn ``t`` committed (PgBarrier marks in the entry's own
transaction), so a waiter that sees the mark can read the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._keys import check_part
from ._sequencer import WaitResult
from .errors import InvalidKeyError

__all__ = ["Barrier", "check_turn_id"]


def check_turn_id(turn_id: object) -> list[str]:
    """The parts of ``turn_id`` (1-4 key parts joined by ``/``); raises InvalidKeyError otherwise."""
    if not isinstance(turn_id, str) or not turn_id:
        raise InvalidKeyError("turn_id must be a non-empty string")
    parts = turn_id.split("/")
    if len(parts) > 4:
        raise InvalidKeyError("turn_id has more than 4 parts")
    for p in parts:
        check_part(p, "turn_id part")
    return parts


@runtime_checkable
class Barrier(Protocol):
    """A barrier per turn, safe across processes (see the module docstring for the id format)."""

    def open_turn(self, turn_id: str, required: Sequence[str] = ("shadow",)) -> None:
        """Open the barrier; ``wait`` then always waits for ``required`` too. Raises TurnAlreadyOpenError
        (opened before, by any process: never a reset), InvalidKeyError, InvalidValueError,
        LockTimeoutError."""
        ...

    def is_open(self, turn_id: str) -> bool:
        """True once ``open_turn`` has completed for ``turn_id`` (and until ``remove_turn``)."""
        ...

    def mark_written(self, turn_id: str, agent: str) -> None:
        """Record that ``agent`` committed its write (idempotent) and wake waiters. Raises
        TurnNotOpenError, InvalidKeyError, LockTimeoutError (a holder kept the turn locked too long)."""
        ...

    def arrived(self, turn_id: str, agents: Sequence[str]) -> list[str]:
        """The subset of ``agents`` already marked, in the given order (no waiting)."""
        ...

    def wait(self, turn_id: str, agents: Sequence[str], deadline_s: float) -> WaitResult:
        """Wait until ``agents`` plus the required agents are marked or ``deadline_s`` seconds passed
        (late by at most one re-check period). Raises TurnNotOpenError, InvalidKeyError,
        InvalidValueError (negative deadline, a string for ``agents``)."""
        ...

    def turn_ids(self, prefix: str) -> list[str]:
        """The ids one level below ``prefix`` (``u1/s1`` -> ``["u1/s1/t000001", ...]``), sorted."""
        ...

    def last_change(self, turn_id: str) -> float | None:
        """When the turn's barrier last changed (Unix seconds), None when there is no such turn."""
        ...

    def remove_turn(self, turn_id: str) -> bool:
        """Delete a finished turn's barrier (False when absent). Raises InvalidValueError (it holds
        other turns), InvalidKeyError, LockTimeoutError."""
        ...
