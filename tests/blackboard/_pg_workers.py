"""Process entry points of the PostgreSQL tests (importable by spawned children; see ``_workers``)."""

from __future__ import annotations

import os
import threading
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from typing import Any


def pg_cas_incrementer(
    url: str, schema: str, key: str, n: int, start: Barrier, out: Queue[dict[str, Any]]
) -> None:
    """Do ``n`` successful read-modify-write increments of ``key`` on PostgreSQL (retrying on conflict)."""
    from blackboard import VersionConflictError
    from blackboard._postgres import PostgresStore

    done = conflicts = 0
    errors: list[str] = []
    store = PostgresStore(url, schema=schema, pool_size=1)
    start.wait(60)
    while done < n and not errors:
        try:
            e = store.read(key)
            value = {"n": (e.value["n"] if e else 0) + 1, "pid": os.getpid()}
            store.write(key, value, expected_version=e.version if e else 0, author=f"p{os.getpid()}")
            done += 1
        except VersionConflictError:
            conflicts += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    store.close()
    out.put({"pid": os.getpid(), "done": done, "conflicts": conflicts, "errors": errors})


def pg_hold_turn(url: str, schema: str, turn_id: str, ready: Event) -> None:
    """Lock the turn's barrier row (``SELECT ... FOR UPDATE`` in an open transaction), set ``ready``
    and hold it until killed: a writer that dies in the middle of its transaction."""
    from blackboard._pg_conn import connect

    conn = connect(url)
    conn.execute("BEGIN")
    conn.execute(f'SELECT 1 FROM "{schema}".barrier_turns WHERE turn_id = %s FOR UPDATE', (turn_id,))
    ready.set()
    threading.Event().wait(3600)
