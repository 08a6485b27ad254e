"""Property test: any interleaving of read-then-CAS-write clients ends in the state of a serial order.

Each client repeatedly reads a key, then (later, at a point hypothesis chooses) writes back the value
it read with its own op id appended, expecting the version it read. CAS must accept exactly the writes
whose read is still current; the final value must be exactly the accepted ops in commit order (no lost
or phantom updates), the version must count them, and every history step must extend the previous one
by one op -- i.e. the result equals running the accepted ops one after another.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blackboard import MemoryStore, SQLiteStore, Store, VersionConflictError, turn_entry_key

KEYS = [turn_entry_key("u", "s", "t", k) for k in ("a", "b")]


@contextmanager
def _open(kind: str) -> Iterator[Store]:
    if kind == "memory":
        s: Store = MemoryStore()
        yield s
        s.close()
        return
    if kind == "postgres":
        from blackboard._postgres import PostgresStore
        from testsupport.postgres import fresh_schema

        with fresh_schema() as target:
            s = PostgresStore(target.url, schema=target.schema, pool_size=2)
            try:
                yield s
            finally:
                s.close()
        return
    with tempfile.TemporaryDirectory() as d:
        s = SQLiteStore(Path(d) / "bb.sqlite3", synchronous="NORMAL")
        try:
            yield s
        finally:
            s.close()


@dataclass
class _Client:
    key: str
    pending: tuple[int, list[str]] | None = None  # (version read, value read)
    ops: int = 0
    accepted: list[str] = field(default_factory=list)


# a schedule step: (client index, key index) -- the client reads if idle, else writes what it read
schedules = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), min_size=1, max_size=60)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schedule=schedules)
def test_random_interleavings_of_cas_writes_equal_a_serial_order(
    kind: str, schedule: list[tuple[int, int]]
) -> None:
    with _open(kind) as store:
        clients: dict[int, _Client] = {}
        commit_order: dict[str, list[str]] = {k: [] for k in KEYS}
        conflicts = 0
        for cid, kid in schedule:
            c = clients.setdefault(cid, _Client(KEYS[kid]))
            if c.pending is None:
                e = store.read(c.key)
                c.pending = (e.version, list(e.value["ops"])) if e else (0, [])
                continue
            version, ops = c.pending
            c.pending = None
            op = f"c{cid}.{c.ops}"
            c.ops += 1
            current = store.read(c.key)
            current_version = current.version if current else 0
            try:
                store.write(c.key, {"ops": [*ops, op]}, expected_version=version, author=f"c{cid}")
            except VersionConflictError as exc:
                conflicts += 1
                assert exc.current_version == current_version != version
                continue
            assert current_version == version  # accepted only if the read was still current
            commit_order[c.key].append(op)
            c.accepted.append(op)
        for key in KEYS:
            final = store.read(key)
            hist = store.history(key)
            if not commit_order[key]:
                assert final is None and hist == []
                continue
            assert final is not None
            assert final.value["ops"] == commit_order[key]  # exactly the accepted ops, in commit order
            assert final.version == len(commit_order[key])
            for i, h in enumerate(hist):  # each version = the previous one plus one op: a serial order
                assert h.version == i + 1
                assert h.value["ops"] == commit_order[key][: i + 1]
        accepted = sorted(op for c in clients.values() for op in c.accepted)
        assert accepted == sorted(op for ops in commit_order.values() for op in ops)
