"""Token budgets shared by every proxy instance of a deployment, enforced in PostgreSQL.

Protocol per request (one request id each): :meth:`SharedBudgets.reserve` before the upstream call
reserves the request's maximum (estimated input + the granted ``max_tokens``) against each of its
scopes, in one transaction that locks the scopes' ``budget_spent`` rows (``SELECT ... FOR UPDATE``, in
scope order: no deadlocks), so concurrent reservations on any number of proxies are serialised per scope
and the tokens granted never exceed the limit: ``spent + live reservations + this one <= limit``.
:meth:`SharedBudgets.settle` after the call deletes the reservation, writes the request's ledger row
(``INSERT ... ON CONFLICT (request_id) DO NOTHING``) and, only when that row is new, adds the real usage
to ``spent``: settling twice charges once. A reservation carries a lease (``lease_s``, on the server's
clock): a proxy killed mid-request never settles, and its reservation stops counting when the lease ends
(and is deleted by the next reservation on its scopes). A request settled after its lease ended is
still charged. Invariant: ``spent`` of a scope = the sum of its ledger rows.

This is the authority (a cache such as Redis may front it, never replace it). Usage: one instance per
process, ``await budgets.close()`` at shutdown. Tables: ``blackboard._pg_schema``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._pg_conn import describe, upgrade_schema
from ._pg_schema import DEFAULT_SCHEMA, check_schema_name
from .errors import BudgetExhaustedError, InvalidValueError, StoreUnavailableError

__all__ = ["DEFAULT_LEASE_S", "BudgetState", "Limit", "SharedBudgets", "agent_scope", "session_scope"]

#: Lease of a reservation (s): longer than the proxy's longest request (first byte 300 s + reads).
DEFAULT_LEASE_S = 900.0


def session_scope(session: str) -> str:
    """The scope of one session's budget (all agents together)."""
    return f"session:{session}"


def agent_scope(session: str, agent: str) -> str:
    """The scope of one agent's budget within one session."""
    return f"agent:{session}:{agent}"


@dataclass(frozen=True, slots=True)
class Limit:
    """One budget a request counts against: ``scope`` and its ``limit`` in tokens (input + output)."""

    scope: str
    limit: int


@dataclass(frozen=True, slots=True)
class BudgetState:
    """A scope's tokens now: ``spent`` (settled), ``reserved`` (live reservations), ``ledger`` (sum of its
    ledger rows; equals ``spent``) and ``open_reservations`` (count, expired ones excluded)."""

    spent: int
    reserved: int
    ledger: int
    open_reservations: int


class SharedBudgets:
    """Reservations, settlement and the ledger of token budgets (see module docstring). Async-safe.

    Args:
        url: libpq URI; schema: the deployment's schema (the blackboard's).
        holder: who reserves (e.g. ``proxy@host:port``), stored with each reservation and ledger row.
        lease_s: lifetime of a reservation that is never settled (s).
        pool_size: most connections held at once.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        holder: str = "proxy",
        lease_s: float = DEFAULT_LEASE_S,
        pool_size: int = 10,
    ) -> None:
        if not lease_s > 0:
            raise InvalidValueError(f"lease_s must be > 0, got {lease_s!r}")
        self.url = url
        self.schema = check_schema_name(schema)
        self.holder = holder
        self.lease_s = float(lease_s)
        self._q = f'"{self.schema}"'
        self._pool_size = pool_size
        self._pool: Any = None
        self._open_lock = asyncio.Lock()

    async def _conn_pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._pool is None:
                from psycopg_pool import AsyncConnectionPool, PoolTimeout

                from ._pg_conn import CONNECT_TIMEOUT_S

                await asyncio.to_thread(upgrade_schema, self.url, self.schema)
                pool = AsyncConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self._pool_size,
                    open=False,
                    kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
                    name=f"budgets-{self.schema}",
                )
                try:
                    await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 1)
                except PoolTimeout:
                    await pool.close()
                    raise StoreUnavailableError(
                        f"cannot reach PostgreSQL at {describe(self.url)} for the shared token budgets",
                        code="database_unreachable",
                    ) from None
                self._pool = pool
        return self._pool

    async def _run(self, fn: Any) -> Any:
        import psycopg

        pool = await self._conn_pool()
        try:
            async with pool.connection() as conn:
                return await fn(conn)
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(
                f"lost the PostgreSQL connection to {describe(self.url)} ({str(exc).strip()[:200]})"
            ) from None

    async def reserve(
        self, request_id: str, limits: Sequence[Limit], *, est_input: int, max_tokens: int
    ) -> int:
        """Reserve ``est_input + granted`` tokens on every scope of ``limits`` for ``request_id``; returns
        ``granted``: ``max_tokens`` lowered to what every budget has left after ``est_input`` (>= 1).
        Reserving the same request id again returns the first grant (nothing more is reserved).

        Raises BudgetExhaustedError (not even ``est_input + 1`` fits one budget; nothing is reserved),
        InvalidValueError (negative numbers, no limits), StoreUnavailableError.
        """
        if est_input < 0 or max_tokens < 1 or not limits:
            raise InvalidValueError("reserve needs est_input >= 0, max_tokens >= 1 and at least one limit")
        by_scope = {lim.scope: lim.limit for lim in limits}
        scopes = sorted(by_scope)
        q = self._q

        async def op(conn: Any) -> int:
            async with conn.transaction():
                cur = await conn.execute(
                    f"SELECT tokens, scopes FROM {q}.budget_reservations WHERE request_id = %s", (request_id,)
                )
                if (again := await cur.fetchone()) is not None:
                    return max(int(again[0]) - est_input, 1)
                now = float(
                    (await (await conn.execute("SELECT extract(epoch FROM clock_timestamp())")).fetchone())[0]
                )
                await conn.execute(
                    f"INSERT INTO {q}.budget_spent (scope) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING",
                    (scopes,),
                )
                cur = await conn.execute(
                    f"SELECT scope, spent FROM {q}.budget_spent WHERE scope = ANY(%s) ORDER BY scope FOR UPDATE",
                    (scopes,),
                )
                spent = {r[0]: int(r[1]) for r in await cur.fetchall()}
                await conn.execute(
                    f"DELETE FROM {q}.budget_reservations WHERE scopes && %s AND lease_until <= %s",
                    (scopes, now),
                )
                cur = await conn.execute(
                    f"SELECT s, sum(r.tokens) FROM {q}.budget_reservations r, unnest(r.scopes) s"
                    " WHERE r.scopes && %s GROUP BY s",
                    (scopes,),
                )
                reserved = {r[0]: int(r[1]) for r in await cur.fetchall()}
                granted = max_tokens
                for scope in scopes:
                    left = by_scope[scope] - spent.get(scope, 0) - reserved.get(scope, 0)
                    if left < est_input + 1:
                        raise BudgetExhaustedError(
                            scope,
                            limit=by_scope[scope],
                            spent=spent.get(scope, 0),
                            reserved=reserved.get(scope, 0),
                            requested=est_input + 1,
                        )
                    granted = min(granted, left - est_input)
                await conn.execute(
                    f"INSERT INTO {q}.budget_reservations (request_id, scopes, tokens, holder, lease_until)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (request_id, scopes, est_input + granted, self.holder, now + self.lease_s),
                )
                return granted

        return int(await self._run(op))

    async def settle(self, request_id: str, used: int, *, scopes: Sequence[str] = ()) -> bool:
        """Charge ``used`` tokens (the real input + output) of ``request_id`` and release its reservation.
        ``scopes`` are charged when the reservation is gone (expired and swept); else its own scopes are.
        Returns True when this call charged, False when the request was already settled (idempotent).

        Raises InvalidValueError (negative ``used``), StoreUnavailableError.
        """
        if used < 0:
            raise InvalidValueError(f"used must be >= 0, got {used!r}")
        q = self._q

        async def op(conn: Any) -> bool:
            async with conn.transaction():
                cur = await conn.execute(
                    f"DELETE FROM {q}.budget_reservations WHERE request_id = %s RETURNING scopes, tokens",
                    (request_id,),
                )
                held = await cur.fetchone()
                charged = sorted(held[0]) if held else sorted(set(scopes))
                cur = await conn.execute(
                    f"INSERT INTO {q}.budget_ledger (request_id, scopes, reserved, spent, holder, settled_at)"
                    " VALUES (%s, %s, %s, %s, %s, extract(epoch FROM clock_timestamp())) ON CONFLICT (request_id) DO NOTHING"
                    " RETURNING 1",
                    (request_id, charged, int(held[1]) if held else 0, used, self.holder),
                )
                if await cur.fetchone() is None:
                    return False
                await conn.execute(
                    f"INSERT INTO {q}.budget_spent (scope) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING",
                    (charged,),
                )
                await conn.execute(
                    f"UPDATE {q}.budget_spent SET spent = spent + %s WHERE scope = ANY(%s)", (used, charged)
                )
                return True

        return bool(await self._run(op))

    async def state(self, scope: str) -> BudgetState:
        """The scope's spent, live reserved, ledger sum and open reservation count (expired excluded)."""
        q = self._q

        async def op(conn: Any) -> BudgetState:
            cur = await conn.execute(
                f"SELECT (SELECT coalesce(sum(spent), 0) FROM {q}.budget_spent WHERE scope = %s),"
                f" (SELECT coalesce(sum(tokens), 0) FROM {q}.budget_reservations WHERE %s = ANY(scopes)"
                "   AND lease_until > extract(epoch FROM clock_timestamp())),"
                f" (SELECT coalesce(sum(spent), 0) FROM {q}.budget_ledger WHERE %s = ANY(scopes)),"
                f" (SELECT count(*) FROM {q}.budget_reservations WHERE %s = ANY(scopes)"
                "   AND lease_until > extract(epoch FROM clock_timestamp()))",
                (scope, scope, scope, scope),
            )
            row = await cur.fetchone()
            return BudgetState(int(row[0]), int(row[1]), int(row[2]), int(row[3]))

        return await self._run(op)  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Close the connections (idempotent)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()
