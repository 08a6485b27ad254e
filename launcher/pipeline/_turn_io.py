"""The supervisor's reads and writes on the blackboard for one turn (sync store calls in a thread).

Layout (all under ``users/{u}/sessions/{s}/turns/{t}/``, create-only except as noted):

* ``message``  — ``{"text": <user message>, "crisis_tier": n, "safety_reasons", "safety_state"}`` written
  when the turn begins; an agent's accepted tier raise writes a second version with the raised tier and
  the state after it (``launcher.pipeline._model_raise``), which the next turns' screen reads;
* ``delivery`` — what the user was shown: ``{"coach_reply", "synthesis", "synthesis_source",
  "degraded", "missing"}``;
* ``record``   — a ``blackboard.TurnRecord`` (no user text).

Earlier turns' ``message`` + ``delivery`` entries are the session history of the context packs; the
latest earlier turn's agent entries are the "relevant entries".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from blackboard import (
    AGENT_NAMES,
    AGENT_ORDER,
    Blackboard,
    Entry,
    Stage,
    TurnRecord,
    WaitResult,
    agents_at,
    profile_key,
    session_key,
    turn_entry_key,
)
from launcher.pipeline._context_pack import HistoryItem

if TYPE_CHECKING:
    from launcher.pipeline._turn_status import TurnResult

__all__ = [
    "SUPERVISOR_AUTHOR",
    "SessionContext",
    "load_context",
    "record_turn",
    "write_entry",
    "write_message",
]

log = logging.getLogger(__name__)

#: Author recorded on the entries the supervisor writes.
SUPERVISOR_AUTHOR = "supervisor"

#: The gate whose blocks every later agent must respect: its entry leads the context packs.
_GATE = "stability"
#: Specialists whose latest entries go into the context packs: the gate first, then the others in roster
#: order (a fixed order keeps the packs byte-identical across turns for the prefix cache).
_RELEVANT = (_GATE, *(n for n in agents_at(Stage.SPECIALIST) if n != _GATE))


def turn_order(turn: str) -> tuple[int, int, str]:
    """Sort key for turn ids: numeric ids in numeric order, then the others by name."""
    return (0, int(turn), "") if turn.isdigit() else (1, 0, turn)


@dataclass
class SessionContext:
    """What the context packs of a turn are built from."""

    profile: dict[str, Any] | None = None
    profile_version: int = 0
    history: list[HistoryItem] = field(default_factory=list)
    relevant: dict[str, dict[str, Any]] = field(default_factory=dict)
    previous_entries: dict[str, Entry] = field(default_factory=dict)
    recent_tiers: list[int] = field(default_factory=list)
    safety_state: dict[str, Any] | None = None
    earlier_stability: list[Entry] = field(default_factory=list)


def _load(store: Any, user: str, session: str, turn: str | None, history_turns: int) -> SessionContext:
    ctx = SessionContext()
    prof = store.read(profile_key(user))
    if prof is not None:
        ctx.profile = dict(prof.value)
        ctx.profile_version = prof.version
    by_turn: dict[str, dict[str, Entry]] = {}
    for e in store.list(session_key(user, session) + "/turns/"):
        parts = e.key.split("/")
        if len(parts) < 7 or parts[5] == turn:
            continue
        by_turn.setdefault(parts[5], {})[parts[6]] = e
    order = sorted(by_turn, key=turn_order)
    for t in order:
        kinds = by_turn[t]
        msg = kinds.get("message")
        if msg is not None:
            ctx.recent_tiers.append(int(msg.value.get("crisis_tier", 0)))
            state = msg.value.get("safety_state")
            ctx.safety_state = dict(state) if isinstance(state, dict) else ctx.safety_state
        st = kinds.get("stability")
        if st is not None and any(m.get("blocked") for m in st.value.get("moves", []) if isinstance(m, dict)):
            ctx.earlier_stability.append(st)
    for t in order[-history_turns:]:
        kinds = by_turn[t]
        msg = kinds.get("message")
        if msg is None:
            continue
        delivery = kinds.get("delivery")
        dv: Mapping[str, Any] = delivery.value if delivery is not None else {}
        ctx.history.append(
            HistoryItem(
                turn=t,
                user_text=str(msg.value.get("text", "")),
                coach_reply=str(dv.get("coach_reply", "")),
                synthesis=str(dv.get("synthesis", "")),
            )
        )
    for t in reversed(order):
        agents = {k: e for k, e in by_turn[t].items() if k in AGENT_NAMES}
        if agents:
            ctx.previous_entries = agents
            for k in _RELEVANT:
                if k in agents:
                    ctx.relevant[f"turns/{t}/{k}"] = dict(agents[k].value)
            break
    return ctx


async def load_context(
    store: Any, user: str, session: str, turn: str | None, history_turns: int
) -> SessionContext:
    """Profile, the last ``history_turns`` turns (other than ``turn``), the latest earlier agent
    entries and the session's crisis tiers (oldest first). Raises ``blackboard`` errors from the store."""
    return await anyio.to_thread.run_sync(partial(_load, store, user, session, turn, history_turns))


async def write_entry(
    store: Any, user: str, session: str, turn: str, kind: str, value: dict[str, Any]
) -> Entry:
    """Create ``turns/{turn}/{kind}`` (create-only). Raises ``VersionConflictError`` if it exists."""
    key = turn_entry_key(user, session, turn, kind)
    entry: Entry = await anyio.to_thread.run_sync(
        partial(store.write, key, value, expected_version=0, author=SUPERVISOR_AUTHOR)
    )
    return entry


async def write_message(store: Any, where: tuple[str, str, str], text: str, verdict: Any) -> None:
    """The user's message entry of turn ``where`` = (user, session, turn), with the screen's verdict
    (a ``ScreenOutcome``)."""
    user, session, turn = where
    await write_entry(
        store,
        user,
        session,
        turn,
        "message",
        {
            "text": text,
            "crisis_tier": verdict.tier,
            "safety_reasons": list(verdict.reasons),
            "safety_state": verdict.state,
        },
    )


async def record_turn(
    board: Blackboard,
    where: tuple[str, str, str],
    result: TurnResult,
    launched: Sequence[str],
    waited_versions: tuple[WaitResult, dict[str, int]] | None,
    started_at: float,
    *,
    delivery: bool = True,
) -> None:
    """The turn's delivery entry and its ``TurnRecord`` (the audit of what ran and what arrived) for
    ``where`` = (user, session, turn); ``waited_versions``: the barrier's wait and the entries' versions
    (None when no agent ran). ``delivery=False``: the record only (a resumed turn whose delivery is
    written)."""
    user, session, turn = where
    if delivery:
        await write_entry(
            board.store,
            user,
            session,
            turn,
            "delivery",
            {
                "coach_reply": result.coach_reply,
                "synthesis": result.synthesis,
                "synthesis_source": result.synthesis_source,
                "degraded": result.degraded,
                "missing": list(result.missing),
                "agents": {n: s.to_json() for n, s in result.agents.items()},
            },
        )
    arrived: list[str] = []
    timed_out = False
    versions: dict[str, int] = {}
    if waited_versions is not None:
        waited, versions = waited_versions
        arrived = sorted(set(waited.arrived))
        timed_out = bool(waited.timed_out)
    record = TurnRecord.model_validate(
        {
            "user": user,
            "session": session,
            "turn": turn,
            "crisis_tier": result.crisis_tier,
            "required": [n for n in launched if n in AGENT_ORDER],
            "arrived": arrived,
            "missing": [m for m in result.missing if m in AGENT_ORDER],
            "timed_out": timed_out,
            "synthesis_source": result.synthesis_source,
            "entry_versions": versions,
            "started_at": started_at,
            "finished_at": time.time(),
            "safety_raises": list(result.safety_raises),
            "safety_refused": list(result.safety_refused),
        }
    )
    await anyio.to_thread.run_sync(board.write_turn_record, record)
    log.info(
        "turn %s/%s/%s done: source=%s degraded=%s missing=%s",
        user,
        session,
        turn,
        result.synthesis_source,
        result.degraded,
        ",".join(result.missing),
    )
