"""The PostgreSQL schema of one deployment, created and versioned by the code (no ORM).

One PostgreSQL schema (``[data] schema``, default ``coachboard``) holds everything a deployment shares:

* ``entries`` (latest version per key) and ``history`` (append-only, one row per version; triggers
  refuse UPDATE/DELETE): the blackboard (``blackboard._postgres.PostgresStore``);
* ``commit_seq``: one row whose counter gives every write its store-wide ``seq``; the row stays locked
  until the writing transaction commits, so ``seq`` order is commit order;
* ``barrier_turns`` and ``barrier_marks``: the Shadow barrier (``blackboard._pg_barrier.PgBarrier``). A
  trigger on ``entries`` marks ``{agent}`` written for an open turn in the same transaction as the
  agent's entry (a crash can never leave one without the other), and a trigger on ``barrier_marks``
  sends ``NOTIFY coachboard_barrier, '{schema} {turn_id}'``, which PostgreSQL delivers after commit;
* ``budget_reservations``, ``budget_spent`` and ``budget_ledger``: the token budgets shared by proxy
  instances (``blackboard._budgets.SharedBudgets``).

``schema_version`` holds one row: the number of migrations applied. :func:`upgrade` applies the missing
ones in one transaction under an advisory lock (so two processes starting at once do not race) and
refuses a schema written by a newer coachboard. Migrations are append-only: never edit a released one.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidValueError, StoreUnavailableError

__all__ = [
    "CHANNEL",
    "DEFAULT_SCHEMA",
    "LATEST_VERSION",
    "MIGRATIONS",
    "check_schema_name",
    "schema_version",
    "upgrade",
]

DEFAULT_SCHEMA = "coachboard"
#: The LISTEN/NOTIFY channel of every barrier; payload ``"{schema} {turn_id}"`` (< 8,000 bytes).
CHANNEL = "coachboard_barrier"
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# Each migration: a list of statements with ``{s}`` for the quoted schema and ``{schema}`` for its name.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE {s}.entries (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1),
            author TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            seq BIGINT NOT NULL)""",
        """CREATE TABLE {s}.history (
            seq BIGINT PRIMARY KEY,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            version INTEGER NOT NULL,
            author TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            UNIQUE (key, version))""",
        """CREATE FUNCTION {s}.history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'history is append-only'; END $$""",
        """CREATE TRIGGER history_append_only BEFORE UPDATE OR DELETE ON {s}.history
            FOR EACH ROW EXECUTE FUNCTION {s}.history_append_only()""",
        "CREATE TABLE {s}.commit_seq (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row), seq BIGINT NOT NULL)",
        "INSERT INTO {s}.commit_seq (seq) VALUES (0)",
        """CREATE TABLE {s}.barrier_turns (
            turn_id TEXT PRIMARY KEY,
            required TEXT[] NOT NULL,
            opened_at DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE {s}.barrier_marks (
            turn_id TEXT NOT NULL REFERENCES {s}.barrier_turns (turn_id) ON DELETE CASCADE,
            agent TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (turn_id, agent))""",
        # users/{u}/sessions/{s}/turns/{t}/{kind} -> mark {kind} of turn {u}/{s}/{t} when that turn is open
        """CREATE FUNCTION {s}.mark_on_entry() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE p TEXT[] := string_to_array(NEW.key, '/'); tid TEXT;
            BEGIN
              IF array_length(p, 1) = 7 AND p[1] = 'users' AND p[3] = 'sessions' AND p[5] = 'turns' THEN
                tid := p[2] || '/' || p[4] || '/' || p[6];
                INSERT INTO {s}.barrier_marks (turn_id, agent, at)
                  SELECT tid, p[7], NEW.updated_at FROM {s}.barrier_turns WHERE turn_id = tid
                  ON CONFLICT DO NOTHING;
              END IF;
              RETURN NULL;
            END $$""",
        """CREATE TRIGGER mark_on_entry AFTER INSERT ON {s}.entries
            FOR EACH ROW EXECUTE FUNCTION {s}.mark_on_entry()""",
        """CREATE FUNCTION {s}.notify_mark() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_notify('coachboard_barrier', '{schema} ' || NEW.turn_id); RETURN NULL; END $$""",
        """CREATE TRIGGER notify_mark AFTER INSERT ON {s}.barrier_marks
            FOR EACH ROW EXECUTE FUNCTION {s}.notify_mark()""",
        """CREATE TABLE {s}.budget_spent (
            scope TEXT PRIMARY KEY,
            spent BIGINT NOT NULL DEFAULT 0 CHECK (spent >= 0))""",
        """CREATE TABLE {s}.budget_reservations (
            request_id TEXT PRIMARY KEY,
            scopes TEXT[] NOT NULL,
            tokens BIGINT NOT NULL CHECK (tokens >= 0),
            holder TEXT NOT NULL,
            lease_until DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX budget_reservations_scopes ON {s}.budget_reservations USING GIN (scopes)",
        """CREATE TABLE {s}.budget_ledger (
            request_id TEXT PRIMARY KEY,
            scopes TEXT[] NOT NULL,
            reserved BIGINT NOT NULL,
            spent BIGINT NOT NULL CHECK (spent >= 0),
            holder TEXT NOT NULL,
            settled_at DOUBLE PRECISION NOT NULL)""",
    ),
)
LATEST_VERSION = len(MIGRATIONS)


def check_schema_name(name: object) -> str:
    """Return ``name`` if it is a plain PostgreSQL schema name (1-63 of a-z 0-9 _, not starting with a
    digit, not ``pg_*``/``information_schema``); raises InvalidValueError otherwise."""
    if (
        not isinstance(name, str)
        or not _NAME.fullmatch(name)
        or name.startswith("pg_")
        or name == "information_schema"
    ):
        raise InvalidValueError(
            f"PostgreSQL schema name {name!r} is invalid: use 1-63 characters from a-z 0-9 _ (not starting with "
            "a digit or pg_)"
        )
    return name


def _quoted(schema: str) -> str:
    return '"' + check_schema_name(schema) + '"'


def schema_version(conn: Any, schema: str) -> int:
    """The schema's applied migration count (0: the schema or its version table does not exist)."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{_quoted(schema)}.schema_version",)
    ).fetchone()
    if not row or not row[0]:
        return 0
    got = conn.execute(f"SELECT version FROM {_quoted(schema)}.schema_version").fetchone()
    return int(got[0]) if got else 0


def refuse_newer(version: int, schema: str) -> None:
    """Raise StoreUnavailableError (code ``schema_too_new``, not retryable) when ``version`` is beyond
    what this code knows: its tables may mean something else now, so nothing is read or written."""
    if version > LATEST_VERSION:
        raise StoreUnavailableError(
            f"PostgreSQL schema {schema!r} is at version {version}, written by a newer coachboard; this one "
            f"knows versions up to {LATEST_VERSION}. Nothing was changed. Fix: upgrade coachboard on this "
            "machine (pip install -U coachboard), or point [data] schema at another schema",
            code="schema_too_new",
            retryable=False,
        )


def upgrade(conn: Any, schema: str = DEFAULT_SCHEMA) -> tuple[int, int]:
    """Create ``schema`` if missing and apply the missing migrations, all in one transaction under a
    transaction-level advisory lock on the schema name. ``conn`` is a psycopg Connection in autocommit
    mode. Returns ``(version_before, version_after)``; existing rows are never touched.

    Raises StoreUnavailableError (``schema_too_new`` when the schema is newer than this code),
    InvalidValueError (bad schema name), psycopg.Error (the server refused a statement).
    """
    q = _quoted(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('coachboard.schema.' || %s))", (schema,))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {q}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {q}.schema_version (only_row BOOLEAN PRIMARY KEY DEFAULT TRUE "
            "CHECK (only_row), version INTEGER NOT NULL, upgraded_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        before = schema_version(conn, schema)
        refuse_newer(before, schema)
        for stmts in MIGRATIONS[before:]:
            for stmt in stmts:
                conn.execute(stmt.replace("{s}", q).replace("{schema}", schema))
        if before < LATEST_VERSION:
            conn.execute(
                f"INSERT INTO {q}.schema_version (version) VALUES (%s) ON CONFLICT (only_row) DO UPDATE "
                "SET version = excluded.version, upgraded_at = now()",
                (LATEST_VERSION,),
            )
    return before, LATEST_VERSION
