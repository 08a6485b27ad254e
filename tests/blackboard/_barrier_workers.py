"""Process entry points of the barrier contract suite, for every backend (importable by spawned children).

A *spec* says which barrier to open, picklable: ``("file", data_dir, use_watchfiles)`` for the file-lock
Sequencer (with a SQLite store beside it) or ``("pg", url, schema)`` for PgBarrier (with PostgresStore).
Workers block on queues and events, never on sleeps.
"""

from __future__ import annotations

import threading
import time
import traceback
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from ._workers import SHADOW_PAYLOAD, fast_board

Spec = tuple[Any, ...]


def make_barrier(spec: Spec, *, lock_timeout_s: float = 10.0) -> Any:
    """The barrier ``spec`` names (a new instance: its own connections or file handles)."""
    if spec[0] == "file":
        from blackboard import Sequencer

        return Sequencer(spec[1], use_watchfiles=spec[2], poll_interval_s=0.01, lock_timeout_s=lock_timeout_s)
    from blackboard._pg_barrier import PgBarrier

    return PgBarrier(spec[1], schema=spec[2], lock_timeout_s=lock_timeout_s, pool_size=2)


def make_board(spec: Spec) -> Any:
    """A Blackboard on the backend ``spec`` names (SQLite + file locks, or PostgreSQL for both)."""
    if spec[0] == "file":
        return fast_board(spec[1], use_watchfiles=spec[2], poll_interval_s=0.01)
    from blackboard import Blackboard
    from blackboard._postgres import PostgresStore

    return Blackboard(store=PostgresStore(spec[1], schema=spec[2], pool_size=2), sequencer=make_barrier(spec))


def try_open_turn(spec: Spec, turn_id: str, out: Queue[str]) -> None:
    """Try to open an already-open turn from another process; report the error code (or "opened")."""
    from blackboard import BlackboardError

    barrier = make_barrier(spec)
    try:
        barrier.open_turn(turn_id)
        out.put("opened")
    except BlackboardError as exc:
        out.put(exc.code)
    finally:
        if hasattr(barrier, "close"):
            barrier.close()


def hold_turn(spec: Spec, turn_id: str, ready: Event) -> None:
    """Hold the turn's lock (file lock, or the barrier row locked in an open transaction), set ``ready``
    and keep it until killed."""
    if spec[0] == "file":
        from ._workers import hold_lock

        hold_lock(str(make_barrier(spec).turn_dir(turn_id) / "lock"), ready)
        return
    from ._pg_workers import pg_hold_turn

    pg_hold_turn(spec[1], spec[2], turn_id, ready)


def shadow_agent(spec: Spec, inbox: Queue[Any], out: Queue[Any]) -> None:
    """For each (trial, turn, delay): simulate work for ``delay`` s, then write Shadow's output."""
    board = make_board(spec)
    try:
        while (msg := inbox.get()) is not None:
            trial, turn, delay = msg
            threading.Event().wait(delay)
            entry = board.write_output("u", "s", turn, "shadow", SHADOW_PAYLOAD)
            out.put(("shadow", trial, {"seq": entry.seq}))
    except Exception:
        out.put(("shadow", -1, {"error": traceback.format_exc()}))
    finally:
        board.close()


def collector_agent(spec: Spec, name: str, inbox: Queue[Any], out: Queue[Any]) -> None:
    """For each (trial, turn, delay, deadline_s): simulate work, ``collect`` (waits for Shadow), then
    claim the turn by writing ``turns/{t}/collected`` create-only; reports whether it ``won`` the claim
    (a racing collector that lost gets VersionConflictError) and the claim's ``seq``."""
    from blackboard import VersionConflictError, turn_entry_key

    board = make_board(spec)
    try:
        while (msg := inbox.get()) is not None:
            trial, turn, delay, deadline_s = msg
            threading.Event().wait(delay)
            t0 = time.monotonic()
            brief, waited = board.collect("u", "s", turn, ["shadow"], deadline_s)
            elapsed = time.monotonic() - t0
            try:
                e = board.store.write(
                    turn_entry_key("u", "s", turn, "collected"),
                    {"present": brief.present_agents, "missing": brief.missing_agents, "by": name},
                    expected_version=0,
                    author=name,
                )
                won, seq = True, e.seq
            except VersionConflictError:
                won, seq = False, 0
            out.put(
                (
                    name,
                    trial,
                    {
                        "seq": seq,
                        "won": won,
                        "present": list(brief.present_agents),
                        "arrived": list(waited.arrived),
                        "missing": list(waited.missing),
                        "timed_out": waited.timed_out,
                        "elapsed": elapsed,
                    },
                )
            )
    except Exception:
        out.put((name, -1, {"error": traceback.format_exc()}))
    finally:
        board.close()
