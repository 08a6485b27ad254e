"""Which backend holds the blackboard and its barrier: SQLite and file locks in the data directory
(the default; nothing to run), or PostgreSQL when a database URL is configured (``[data] url`` or
``COACH_DATABASE_URL``; several machines). The one place that chooses (docs/postgresql.md)."""

from __future__ import annotations

import os
from pathlib import Path

from ._barrier import Barrier
from ._pg_schema import DEFAULT_SCHEMA
from ._sequencer import Sequencer
from ._sqlite import open_store
from ._store import Store
from .errors import InvalidValueError

__all__ = ["ENV_DATABASE_URL", "open_backend"]

#: The environment variable that overrides ``[data] url`` (read by the config loaders, not here).
ENV_DATABASE_URL = "COACH_DATABASE_URL"


def open_backend(
    data_dir: str | os.PathLike[str] | None, *, url: str | None = None, schema: str = DEFAULT_SCHEMA
) -> tuple[Store, Barrier]:
    """The store and barrier: PostgresStore + PgBarrier in ``schema`` of ``url`` when ``url`` is set
    (the schema created or upgraded on open), else SQLiteStore in ``data_dir/blackboard.sqlite3`` +
    the file-lock Sequencer in ``data_dir/sequencer``.

    Raises StoreUnavailableError (unreachable server: host, port and how to start it; a schema of a
    newer coachboard; an unusable SQLite file), InvalidValueError (bad URL or schema name, no
    ``data_dir`` for SQLite).
    """
    if url:
        from ._pg_barrier import PgBarrier
        from ._postgres import PostgresStore

        store = PostgresStore(url, schema=schema)
        try:
            return store, PgBarrier(url, schema=schema, upgrade=False)
        except BaseException:
            store.close()
            raise
    if data_dir is None:
        raise InvalidValueError("the SQLite blackboard needs a data directory (or set a PostgreSQL url)")
    return open_store(data_dir), Sequencer(Path(data_dir))
