"""SharedBudgets on PostgreSQL in one process: no overspend under concurrency, idempotent settle, the
ledger equal to what was spent, and reservations whose lease ended no longer counting."""

from __future__ import annotations

import asyncio

import pytest

from blackboard import BudgetExhaustedError
from blackboard._budgets import Limit, SharedBudgets, agent_scope, session_scope
from testsupport.postgres import PgTarget

pytestmark = pytest.mark.anyio
S = session_scope("s1")


async def test_concurrent_reservations_never_exceed_the_budget(pg_target: PgTarget) -> None:
    budgets = [SharedBudgets(pg_target.url, schema=pg_target.schema, holder=f"p{i}") for i in range(3)]
    limit = 20_000

    async def one(i: int) -> int:
        try:
            return await budgets[i % 3].reserve(f"r{i}", [Limit(S, limit)], est_input=100, max_tokens=400)
        except BudgetExhaustedError:
            return 0

    try:
        granted = await asyncio.gather(*(one(i) for i in range(200)))
        reserved = sum(g + 100 for g in granted if g)
        assert reserved <= limit and sum(1 for g in granted if g) >= 30
        state = await budgets[0].state(S)
        assert state.reserved == reserved and state.spent == 0
        for i, g in enumerate(granted):
            if g:
                assert await budgets[(i + 1) % 3].settle(f"r{i}", 100 + g // 2) is True
        state = await budgets[0].state(S)
        assert state.reserved == 0 and state.open_reservations == 0
        assert state.spent == state.ledger == sum(100 + g // 2 for g in granted if g) <= limit
    finally:
        for b in budgets:
            await b.close()


async def test_settle_is_idempotent_and_reserve_again_returns_the_first_grant(pg_target: PgTarget) -> None:
    b = SharedBudgets(pg_target.url, schema=pg_target.schema)
    try:
        limits = [Limit(S, 1000), Limit(agent_scope("s1", "coach"), 500)]
        assert (
            await b.reserve("r1", limits, est_input=100, max_tokens=900) == 400
        )  # the agent budget is tighter
        assert await b.reserve("r1", limits, est_input=100, max_tokens=900) == 400
        assert await b.settle("r1", 250) is True
        assert await b.settle("r1", 250) is False
        assert (await b.state(S)).spent == 250 == (await b.state(agent_scope("s1", "coach"))).spent
        with pytest.raises(BudgetExhaustedError) as info:
            await b.reserve("r2", limits, est_input=300, max_tokens=10)
        assert info.value.scope == agent_scope("s1", "coach") and info.value.spent == 250
        assert info.value.code == "budget_exhausted"
    finally:
        await b.close()


async def test_an_expired_lease_stops_counting_and_a_late_settle_is_still_charged(
    pg_target: PgTarget,
) -> None:
    dead = SharedBudgets(pg_target.url, schema=pg_target.schema, holder="dead", lease_s=0.5)
    live = SharedBudgets(pg_target.url, schema=pg_target.schema, holder="live")
    try:
        assert await dead.reserve("r1", [Limit(S, 1000)], est_input=0, max_tokens=1000) == 1000
        with pytest.raises(BudgetExhaustedError):
            await live.reserve("r2", [Limit(S, 1000)], est_input=0, max_tokens=10)
        await asyncio.sleep(
            0.7
        )  # the lease is a wall-clock duration on the server: waiting it out is the test
        assert await live.reserve("r2", [Limit(S, 1000)], est_input=0, max_tokens=1000) == 1000
        assert await dead.settle("r1", 40, scopes=[S]) is True  # swept already: charged to the given scopes
        state = await live.state(S)
        assert state.spent == state.ledger == 40 and state.reserved == 1000
    finally:
        await dead.close()
        await live.close()
