"""The proxy's hook into the token budgets shared by all its instances (``blackboard._budgets``).

With ``shared_budgets_url`` set, every request that counts against a budget (``session_token_budget``
with an ``x-coach-session``, an agent's ``token_budget``) reserves its maximum in PostgreSQL before the
upstream call (:meth:`SharedBudgetHook.reserve`, which may lower ``max_tokens``) and settles its real
usage when its usage record is written (:meth:`SharedBudgetHook.on_record`, via ``Meter.on_record``).
The in-process counters of ``proxy._metering`` stay (they are this instance's share, restored from its
JSONL log, which stays the audit trail); the shared budgets are the authority across instances. A
proxy killed mid-request leaves its reservations to expire after ``budget_lease_s``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

from blackboard import BlackboardError, BudgetExhaustedError
from blackboard._budgets import Limit, SharedBudgets, agent_scope, session_scope

from ._metering import UsageRecord, Who
from .config import ProxyConfig
from .errors import BudgetExceededError, OverloadedError

__all__ = ["SharedBudgetHook"]

log = logging.getLogger("proxy.budgets")


class SharedBudgetHook:
    """Reserve/settle for one proxy app (``ProxyState.budgets``). ``config.shared_budgets_url`` must be set."""

    def __init__(self, config: ProxyConfig) -> None:
        assert config.shared_budgets_url is not None
        self.config = config
        holder = f"proxy@{socket.gethostname()}:{config.port}/{os.getpid()}"
        self.budgets = SharedBudgets(
            config.shared_budgets_url,
            schema=config.shared_budgets_schema,
            holder=holder[:200],
            lease_s=config.budget_lease_s,
        )
        self._open: dict[str, list[str]] = {}  # request id -> its scopes, until settled
        self._settling: set[asyncio.Task[None]] = set()

    def _limits(self, who: Who, agent_budget: int | None) -> list[Limit]:
        limits: list[Limit] = []
        if self.config.session_token_budget is not None and who.session:
            limits.append(Limit(session_scope(who.session), self.config.session_token_budget))
        if agent_budget is not None and who.agent:
            limits.append(Limit(agent_scope(who.session, who.agent), agent_budget))
        return limits

    async def reserve(
        self, who: Who, request_id: str, agent_budget: int | None, est_input: int, max_tokens: int
    ) -> int:
        """``max_tokens`` lowered to what the shared budgets grant (unchanged when none applies).

        Raises BudgetExceededError (403, as the local budgets), OverloadedError (529, retryable: the
        budgets' database cannot be reached, so nothing can be granted).
        """
        limits = self._limits(who, agent_budget)
        if not limits:
            return max_tokens
        try:
            granted = await self.budgets.reserve(
                request_id, limits, est_input=est_input, max_tokens=max_tokens
            )
        except BudgetExhaustedError as exc:
            raise BudgetExceededError(
                str(exc),
                budget=exc.scope,
                limit=exc.limit,
                used=exc.spent + exc.reserved,
                requested=exc.requested,
            ) from None
        except BlackboardError as exc:
            raise OverloadedError(f"shared token budgets unavailable: {exc}") from None
        self._open[request_id] = [lim.scope for lim in limits]
        return granted

    def on_record(self, rec: UsageRecord) -> None:
        """Settle ``rec``'s request in the background when it holds a reservation (called by Meter.record)."""
        scopes = self._open.pop(rec.id, None)
        if scopes is None:
            return
        used = rec.input_tokens + rec.cached_tokens + rec.output_tokens
        task = asyncio.get_running_loop().create_task(self._settle(rec.id, used, scopes))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _settle(self, request_id: str, used: int, scopes: list[str]) -> None:
        try:
            await self.budgets.settle(request_id, used, scopes=scopes)
        except BlackboardError as exc:  # the reservation expires after its lease; the JSONL log has the usage
            log.error("cannot settle request %s (%d tokens) in the shared budgets: %s", request_id, used, exc)

    async def close(self) -> None:
        """Wait for settlements in flight, then close the connections."""
        if self._settling:
            await asyncio.gather(*self._settling, return_exceptions=True)
        await self.budgets.close()
