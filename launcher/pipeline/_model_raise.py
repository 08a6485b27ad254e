"""The supervisor's side of "a model may raise a tier, never lower it": one :class:`TurnSafety` per turn.

The Coach's and Stability's outputs carry a ``risk`` assessment (``blackboard.RiskAssessment``).
:meth:`TurnSafety.raise_from` judges one (``launcher.safety.judge_raise``) against the turn's tier so
far; an accepted raise becomes the turn's outcome (``SafetyScreen.raised``: the tiers merged by
``combine_tiers``, the crisis or support response, the post-crisis window started at tier 3) and is
stored at once: the turn's ``message`` entry gets the new ``crisis_tier``, reasons and ``safety_state``
(a new version, so ``load_context`` screens the next turns with it) and the turn's ``meta`` the new
tier (so the brief is built in that tier's mode). Every judged assessment leaves its rule ids in
``raises`` / ``refused`` (ids only: the message and the quote are never logged or stored here).

:class:`StopCoaching` holds the cancel scopes of the specialists (and Pineal's prestart), so a Coach
raise to tier 3 ends the turn's coaching the moment it is accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from pydantic import ValidationError

from blackboard import Blackboard, RiskAssessment, VersionConflictError, turn_entry_key
from launcher.pipeline._screen import ScreenOutcome, raised_outcome
from launcher.pipeline._turn_io import SUPERVISOR_AUTHOR
from launcher.safety import RaiseDecision, judge_raise

__all__ = ["RaiseFn", "StopCoaching", "TurnSafety", "raise_fn_of", "risk_of"]

log = logging.getLogger(__name__)

RaiseFn = Callable[[ScreenOutcome, RaiseDecision], ScreenOutcome]
"""``(outcome so far, accepted decision) -> the turn's new outcome`` (``SafetyScreen.raised``)."""


def risk_of(value: Mapping[str, Any] | None) -> Any:
    """The ``risk`` assessment of an agent's stored output as a ``RiskAssessment`` (None when absent; the
    raw value when it does not validate, which :func:`judge_raise` refuses as ``invalid``)."""
    raw = value.get("risk") if isinstance(value, Mapping) else None
    if raw is None:
        return None
    try:
        return RiskAssessment.model_validate(raw)
    except ValidationError:
        return raw


def raise_fn_of(screen: Any) -> RaiseFn:
    """The screen's own ``raised`` (its locale and resources), else the default config's."""
    raised = getattr(screen, "raised", None)
    return raised if callable(raised) else partial(raised_outcome, config=None)


class TurnSafety:
    """The safety outcome of one turn as agents' assessments arrive (see the module docstring).

    Attributes:
        screened: the deterministic screen's outcome for the message.
        outcome: the outcome now (``screened`` until a raise is accepted).
        raises / refused: rule ids of accepted / refused raises, in order.
    """

    def __init__(
        self,
        board: Blackboard,
        user: str,
        session: str,
        turn: str,
        text: str,
        screened: ScreenOutcome,
        raise_fn: RaiseFn,
    ) -> None:
        self.board = board
        self.user, self.session, self.turn = user, session, turn
        self._text = text
        self._raise = raise_fn
        self.screened = screened
        self.outcome = screened
        self.raises: list[str] = []
        self.refused: list[str] = []

    @property
    def tier(self) -> int:
        return self.outcome.tier

    @property
    def raised(self) -> bool:
        return self.outcome.tier > self.screened.tier

    def judge(self, agent: str, risk: Any) -> RaiseDecision | None:
        """Judge ``agent``'s ``risk`` assessment (a mapping, a model or None). None when it claims no risk
        (absent or tier 0: nothing recorded); else the decision, recorded in ``raises`` / ``refused`` and,
        when accepted, made the turn's outcome (not yet stored: see :meth:`raise_from`)."""
        tier = risk.get("tier") if isinstance(risk, Mapping) else getattr(risk, "tier", None)
        if risk is None or tier == 0:
            return None
        decision = judge_raise(self._text, risk, self.tier, agent=agent)
        if decision.accepted:
            self.outcome = self._raise(self.outcome, decision)
            self.raises.extend(r for r in decision.rules if r not in self.raises)
            log.info(
                "turn %s/%s/%s: safety tier raised to %d (%s)",
                self.user,
                self.session,
                self.turn,
                self.tier,
                ", ".join(decision.rules),
            )
        else:
            self.refused.extend(decision.rules)
            log.info(
                "turn %s/%s/%s: safety raise refused (%s)",
                self.user,
                self.session,
                self.turn,
                ", ".join(decision.rules),
            )
        return decision

    async def raise_from(self, agent: str, risk: Any) -> str | None:
        """Judge ``risk`` (:meth:`judge`); when it raised the tier to 2 or 3, store the new outcome and
        return the response that replaces what the user would have seen (crisis or support); else None."""
        decision = self.judge(agent, risk)
        if decision is None or not decision.accepted:
            return None
        await self.store()
        return self.outcome.response if self.tier >= 2 else None

    async def store(self) -> None:
        """Write the current outcome to the turn's ``message`` (new version) and ``meta`` entries."""
        await anyio.to_thread.run_sync(self._store)

    def _store(self) -> None:
        key = turn_entry_key(self.user, self.session, self.turn, "message")
        store = self.board.store
        for _ in range(100):
            current = store.read(key)
            value = dict(current.value) if current is not None else {}
            value.update(
                crisis_tier=self.tier,
                safety_reasons=list(self.outcome.reasons),
                safety_state=dict(self.outcome.state),
            )
            try:
                store.write(
                    key, value, expected_version=current.version if current else 0, author=SUPERVISOR_AUTHOR
                )
                break
            except VersionConflictError:
                continue
        self.board.raise_crisis_tier(self.user, self.session, self.turn, self.tier)


class StopCoaching:
    """Cancel scopes of the tasks a crisis stops (specialists, Pineal's prestart). :meth:`stop` cancels
    them all, also those not entered yet (they end as soon as they start)."""

    def __init__(self) -> None:
        self._scopes: dict[str, anyio.CancelScope] = {}
        self.stopped = False

    def scope(self, name: str) -> anyio.CancelScope:
        scope = self._scopes[name] = anyio.CancelScope()
        if self.stopped:
            scope.cancel()
        return scope

    def stop(self) -> None:
        self.stopped = True
        for scope in self._scopes.values():
            scope.cancel()
