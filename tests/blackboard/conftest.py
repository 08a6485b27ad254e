"""Fixtures of the blackboard tests: one ``store`` fixture parametrised over every Store backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from blackboard import MemoryStore, SQLiteStore, Store


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "postgres":
        from blackboard._postgres import PostgresStore

        target = request.getfixturevalue("pg_target")
        s: Store = PostgresStore(target.url, schema=target.schema)
    else:
        s = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "bb.sqlite3")
    yield s
    s.close()
