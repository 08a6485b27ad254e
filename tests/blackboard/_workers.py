"""Process entry points for the multi-process blackboard tests (importable by spawned children).

Workers never sleep to synchronise: they block on multiprocessing queues/events. ``_busy_for`` is the
simulated work of an agent (a random delay), implemented with an Event timeout.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
import traceback
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from typing import Any

SHADOW_PAYLOAD: dict[str, Any] = {
    "pattern_class": "insufficient_data",
    "commitments": {"due": 1, "completed": 1, "sessions": 1},
}


def context() -> Any:
    """The multiprocessing context of these tests: forkserver with blackboard preloaded, so each
    worker is a fresh, single-threaded fork (no inherited SQLite connection) that starts in ms."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["blackboard", "tests.blackboard._workers"])
    return ctx


def fast_board(data_dir: str, **sequencer_options: Any) -> Any:
    """A Blackboard whose SQLite store skips fsync (synchronous=NORMAL): the ordering tests are about
    commit order, which fsync does not change, and the shared test machine's disk is slow."""
    from blackboard import Blackboard, Sequencer, SQLiteStore
    from blackboard._sqlite import DB_FILENAME

    store = SQLiteStore(os.path.join(data_dir, DB_FILENAME), synchronous="NORMAL")
    return Blackboard(data_dir, store=store, sequencer=Sequencer(data_dir, **sequencer_options))


def _busy_for(seconds: float) -> None:
    threading.Event().wait(seconds)


def cas_incrementer(db_path: str, key: str, n: int, start: Barrier, out: Queue[dict[str, Any]]) -> None:
    """Do ``n`` successful read-modify-write increments of ``key`` (retrying on conflict); report."""
    from blackboard import SQLiteStore, VersionConflictError

    done = conflicts = 0
    errors: list[str] = []
    store = SQLiteStore(db_path)
    start.wait(60)
    while done < n and not errors:
        try:
            e = store.read(key)
            value = {"n": (e.value["n"] if e else 0) + 1, "pid": os.getpid()}
            store.write(key, value, expected_version=e.version if e else 0, author=f"p{os.getpid()}")
            done += 1
        except VersionConflictError:
            conflicts += 1
        except Exception as exc:  # anything else (e.g. "database is locked") is a failure to report
            errors.append(f"{type(exc).__name__}: {exc}")
    store.close()
    out.put({"pid": os.getpid(), "done": done, "conflicts": conflicts, "errors": errors})


def write_loop(db_path: str, counter_key: str, report_at: int, reached: Event) -> None:
    """Write forever (a CAS counter plus one new 20 KB entry per step); set ``reached`` after
    ``report_at`` steps so the parent can SIGKILL the process in the middle of the loop."""
    from blackboard import SQLiteStore, turn_entry_key

    def blob_key(n: int) -> str:
        return turn_entry_key("u", "s", f"t{n}", "blob")

    store = SQLiteStore(db_path)
    e = store.read(counter_key)
    i = e.version if e else 0
    if i and store.read(blob_key(i)) is None:  # the previous run was killed between the two writes
        store.write(blob_key(i), {"i": i, "blob": "y" * 20_000}, expected_version=0, author="looper")
    steps = 0
    while True:
        store.write(
            counter_key, {"n": i + 1, "pad": "x" * (1000 * (i % 50))}, expected_version=i, author="looper"
        )
        store.write(blob_key(i + 1), {"i": i + 1, "blob": "y" * 20_000}, expected_version=0, author="looper")
        i += 1
        steps += 1
        if steps == report_at:
            reached.set()


def hold_lock(lock_path: str, ready: Event) -> None:
    """Acquire the sequencer lock file and hold it until killed."""
    import filelock

    lock = filelock.FileLock(lock_path)
    lock.acquire()
    ready.set()
    threading.Event().wait(3600)


def try_open_turn(data_dir: str, turn_id: str, out: Queue[str]) -> None:
    """Try to open an already-open turn from another process; report the error code (or "opened")."""
    from blackboard import BlackboardError, Sequencer

    try:
        Sequencer(data_dir).open_turn(turn_id)
        out.put("opened")
    except BlackboardError as exc:
        out.put(exc.code)


def shadow_agent(data_dir: str, inbox: Queue[Any], out: Queue[Any]) -> None:
    """For each (trial, turn, delay): simulate work for ``delay`` s, then write Shadow's output."""
    board = fast_board(data_dir)
    try:
        while (msg := inbox.get()) is not None:
            trial, turn, delay = msg
            _busy_for(delay)
            entry = board.write_output("u", "s", turn, "shadow", SHADOW_PAYLOAD)
            out.put(("shadow", trial, {"seq": entry.seq}))
    except Exception:
        out.put(("shadow", -1, {"error": traceback.format_exc()}))
    finally:
        board.close()


def collector_agent(data_dir: str, inbox: Queue[Any], out: Queue[Any]) -> None:
    """For each (trial, turn, delay, deadline_s, watch): simulate work, ``collect`` (waits for Shadow),
    then record its own commit as ``turns/{t}/collected`` so commit order can be compared by seq."""
    from blackboard import Blackboard, Sequencer, turn_entry_key

    boards = {
        True: Blackboard(data_dir),
        False: Blackboard(
            data_dir, sequencer=Sequencer(data_dir, use_watchfiles=False, poll_interval_s=0.005)
        ),
    }
    boards[False].store = boards[True].store
    try:
        while (msg := inbox.get()) is not None:
            trial, turn, delay, deadline_s, watch = msg
            _busy_for(delay)
            board = boards[watch]
            t0 = time.monotonic()
            brief, waited = board.collect("u", "s", turn, ["shadow"], deadline_s)
            elapsed = time.monotonic() - t0
            e = board.store.write(
                turn_entry_key("u", "s", turn, "collected"),
                {"present": brief.present_agents, "missing": brief.missing_agents},
                expected_version=0,
                author="collector",
            )
            out.put(
                (
                    "collector",
                    trial,
                    {
                        "seq": e.seq,
                        "present": list(brief.present_agents),
                        "arrived": list(waited.arrived),
                        "missing": list(waited.missing),
                        "timed_out": waited.timed_out,
                        "elapsed": elapsed,
                    },
                )
            )
    except Exception:
        out.put(("collector", -1, {"error": traceback.format_exc()}))
    finally:
        for b in boards.values():
            b.close()
