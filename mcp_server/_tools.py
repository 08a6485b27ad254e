"""The tools: one typed write tool per agent, and the read tools (entry, listing, profile, session
history, collect_turn). Handlers receive a validated scope and validated arguments (see ``_toolkit``);
all blackboard calls are synchronous and run in a worker thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from blackboard import (
    AGENT_NAMES,
    AGENT_OUTPUT_SCHEMAS,
    STAGE_OF,
    SYNTHESIS_INPUTS,
    Blackboard,
    Entry,
    Stage,
    SynthesisProblem,
    VersionConflictError,
    fallback_synthesis,
    turn_entry_key,
    validate_synthesis,
)
from mcp_server._descriptions import READ_DESCRIPTIONS, WRITE_DESCRIPTIONS, WRITE_TOOL_NAMES
from mcp_server._problems import Problem, error_result, ok_result
from mcp_server._scope import Scope
from mcp_server._toolkit import ToolSpec
from mcp_server.config import McpConfig

log = logging.getLogger("mcp_server.tools")

__all__ = ["ToolContext", "all_specs"]


@dataclass(frozen=True)
class ToolContext:
    """What every handler needs: the blackboard facade and the server configuration.

    ``collect_turn`` waits hold a worker thread for up to their deadline, so they run on their own
    capacity limiter (``config.max_concurrent_collects``): waiting Pineals can never take every thread
    of anyio's default limiter and starve the writes they are waiting for.
    """

    board: Blackboard
    config: McpConfig
    _limiters: dict[int, anyio.CapacityLimiter] = field(default_factory=dict, repr=False)

    def collect_limiter(self) -> anyio.CapacityLimiter:
        """This event loop's limiter for collect waits (created on first use, inside the loop)."""
        from anyio.lowlevel import current_token

        key = id(current_token())
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = anyio.CapacityLimiter(self.config.max_concurrent_collects)
        return limiter


def _entry_meta(entry: Entry) -> dict[str, Any]:
    return {
        "key": entry.key,
        "version": entry.version,
        "author": entry.author,
        "updated_at": entry.updated_at,
    }


# -- write tools ------------------------------------------------------------------------------------


def _gate_blocked(raw: Mapping[str, Any], stored: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Stability moves the gate stored as blocked although the model did not send ``blocked: true``."""
    sent = {m.get("id"): m for m in raw.get("moves", []) if isinstance(m, Mapping)}
    out = []
    for move in stored.get("moves", []):
        if move.get("blocked") and sent.get(move.get("id"), {}).get("blocked") is not True:
            out.append(
                {"id": move.get("id"), "blocked": True, "block_reasons": move.get("block_reasons", [])}
            )
    return out


def _synthesis_problems(problems: Sequence[SynthesisProblem]) -> list[Problem]:
    out = []
    for p in problems:
        if p.citation_index is not None:
            field = f"citations.{p.citation_index}"
        elif p.code == "no_citations":
            field = "citations"
        else:
            field = "text"
        out.append(Problem(field, p.detail, _SYNTHESIS_ALLOWED.get(p.code, "")))
    return out


_SYNTHESIS_ALLOWED = {
    "blocked_move": "text that never suggests a blocked move (see brief.blocked_moves)",
    "caution_without_professional": "mention the caution move only as a small reversible first step, "
    "with a suggestion to consult a professional",
    "citation_missing_entry": "citations of entries listed in collect_turn's versions",
    "citation_version_mismatch": "the version collect_turn returned for that entry",
    "citation_key_agent_mismatch": "a key and agent that name the same entry",
    "no_citations": "at least one citation of an entry listed in collect_turn's versions",
}


class _RepairCounter:
    """Rejected synthesis attempts per turn, in this server process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}

    def bump(self, key: tuple[str, str, str]) -> int:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1
            return self._counts[key]


def _write_or_same(
    board: Blackboard,
    agent: str,
    scope: Scope,
    turn: str,
    payload: dict[str, Any],
    stored: dict[str, Any] | None,
) -> tuple[Entry, bool]:
    """Write ``agent``'s entry; if it already exists with the same stored value (``stored``: the validated
    form; None: any value, for the server's own fallback), return it with ``True`` (an idempotent repeat).
    A different value re-raises the conflict."""
    try:
        return board.write_output(scope.user, scope.session, turn, agent, payload), False
    except VersionConflictError:
        existing = board.store.read(turn_entry_key(scope.user, scope.session, turn, agent))
        if existing is not None and (stored is None or existing.value == stored):
            return existing, True
        raise


def write_spec(agent: str, tc: ToolContext) -> ToolSpec:
    """The ``write_<agent>`` tool: input schema = ``AGENT_OUTPUT_SCHEMAS[agent]``; only ``agent`` may call it.

    Pineal's synthesis is first checked against the turn's brief (``validate_synthesis``); after
    ``config.synthesis_attempts`` rejected attempts the deterministic ``fallback_synthesis`` is stored
    instead (docs/coaching.md, PINEAL: "rejected and repaired once, then replaced by a deterministic fallback").
    """
    model = AGENT_OUTPUT_SCHEMAS[agent]
    tool = WRITE_TOOL_NAMES[agent]
    board = tc.board
    repairs = _RepairCounter()

    write_or_same = partial(_write_or_same, board, agent)

    def already(turn: str, entry: Entry) -> CallToolResult:
        return ok_result(
            {"stored": True, "already_stored": True, "agent": agent, "turn": turn, **_entry_meta(entry)},
            note=f"Already stored as version {entry.version}; stop now. Do not call {tool} again.",
        )

    async def check_synthesis(scope: Scope, turn: str, payload: BaseModel) -> CallToolResult | None:
        brief = await anyio.to_thread.run_sync(partial(board.brief, scope.user, scope.session, turn))
        problems = validate_synthesis(payload, brief)  # type: ignore[arg-type]
        if not problems:
            return None
        attempts = repairs.bump((scope.user, scope.session, turn))
        limit = tc.config.synthesis_attempts
        # Rule codes only (never the text): what operators need to see why Pineal's syntheses fail.
        log.info(
            "write_synthesis rejected (session %s turn %s, attempt %d): %s",
            scope.session,
            turn,
            attempts,
            ", ".join(sorted({p.code for p in problems})),
        )
        if limit and attempts >= limit:
            fallback = fallback_synthesis(brief).model_dump(mode="json")
            entry, _ = await anyio.to_thread.run_sync(write_or_same, scope, turn, fallback, None)
            # A success result, so the client's stop-after-tool ends the agent's turn (an error would make
            # it call the tool again); the rejected problems are still listed for the log.
            return ok_result(
                {
                    "stored": True,
                    "fallback": True,
                    "code": "synthesis_replaced_by_fallback",
                    "agent": agent,
                    "turn": turn,
                    **_entry_meta(entry),
                    "rejected_problems": [p.line() for p in _synthesis_problems(problems)],
                },
                note=f"Stored the deterministic fallback synthesis (version {entry.version}) after {attempts} "
                "rejected attempts; stop now. Do not call write_synthesis again.",
            )
        return error_result(
            tool,
            f"NOT STORED. {len(problems)} rule problem(s) in the synthesis:",
            _synthesis_problems(problems),
            code="synthesis_rejected",
            advice="repair exactly these problems and call write_synthesis once more with the whole object; "
            "a second rejection stores the server's fallback synthesis instead.",
        )

    async def handler(scope: Scope, payload: BaseModel, raw: dict[str, Any]) -> CallToolResult:
        turn = scope.require_turn()
        if STAGE_OF[agent] is Stage.SYNTHESIS:
            refused = await check_synthesis(scope, turn, payload)
            if refused is not None:
                return refused
        entry, repeat = await anyio.to_thread.run_sync(
            write_or_same, scope, turn, raw, payload.model_dump(mode="json")
        )
        if repeat:
            return already(turn, entry)
        result: dict[str, Any] = {"stored": True, "agent": agent, "turn": turn, **_entry_meta(entry)}
        note = "STORED."
        coerced = entry.value.get("coerced") if isinstance(entry.value, Mapping) else None
        if coerced:
            result["coerced"] = coerced
            note = (
                "STORED, with changes to the safe value (see coerced): a rule you broke was enforced, "
                "not rejected. Stop now."
            )
        if agent == "stability":
            blocked = _gate_blocked(raw, entry.value)
            if blocked:
                result["blocked_by_gate"] = blocked
                note = (
                    "STORED. The gate blocked move(s) you did not mark blocked (see blocked_by_gate); they are "
                    "stored as blocked and no agent may suggest them."
                )
        return ok_result(result, note=note)

    return ToolSpec(
        name=tool,
        title=f"Write {agent} output",
        description=WRITE_DESCRIPTIONS[agent],
        input_model=model,
        handler=handler,
        read_only=False,
        idempotent=False,
        agents=frozenset({agent}),
        validation_context=lambda: {"thresholds": board.thresholds},
    )


# -- read tools -------------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadEntryArgs(_Args):
    key: str = Field(
        min_length=1,
        max_length=400,
        description="Entry name of this turn ('shadow'), 'turns/<turn>/<entry>', 'profile' or 'session'.",
    )


class ListEntriesArgs(_Args):
    prefix: str = Field(
        default="", max_length=400, description="Prefix relative to this session, e.g. 'turns/3/'."
    )
    include_values: bool = Field(default=False, description="Also return each entry's value.")
    limit: int = Field(default=50, ge=1, le=500, description="Most entries to return.")


class NoArgs(_Args):
    pass


class SessionHistoryArgs(_Args):
    last_n: int = Field(default=10, ge=1, le=1000, description="How many of the most recent turns to return.")


class CollectTurnArgs(_Args):
    deadline_s: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="Seconds to wait for the other agents (default and maximum set by the server).",
    )


def _read_specs(tc: ToolContext) -> list[ToolSpec]:
    store = tc.board.store

    async def read_entry(scope: Scope, args: ReadEntryArgs, raw: dict[str, Any]) -> CallToolResult:
        key = scope.resolve_key(args.key)
        entry = await anyio.to_thread.run_sync(store.read, key)
        if entry is None:
            return ok_result(
                {"found": False, "key": key}, note="NOT FOUND: nothing is stored at this key yet."
            )
        return ok_result({"found": True, **_entry_meta(entry), "value": entry.value})

    async def list_entries(scope: Scope, args: ListEntriesArgs, raw: dict[str, Any]) -> CallToolResult:
        prefix = scope.resolve_prefix(args.prefix)
        entries = await anyio.to_thread.run_sync(store.list, prefix)
        shown = entries[-args.limit :]
        rows = [{**_entry_meta(e), **({"value": e.value} if args.include_values else {})} for e in shown]
        return ok_result(
            {"prefix": prefix, "count": len(entries), "truncated": len(entries) > len(shown), "entries": rows}
        )

    async def get_profile(scope: Scope, args: NoArgs, raw: dict[str, Any]) -> CallToolResult:
        entry = await anyio.to_thread.run_sync(store.read, scope.profile_key)
        if entry is None:
            return ok_result(
                {"found": False, "version": 0, "profile": None}, note="No profile yet (new user)."
            )
        return ok_result({"found": True, "version": entry.version, "profile": entry.value})

    async def get_session_history(
        scope: Scope, args: SessionHistoryArgs, raw: dict[str, Any]
    ) -> CallToolResult:
        entries = await anyio.to_thread.run_sync(store.list, scope.session_key + "/turns/")
        turns: dict[str, dict[str, Any]] = {}
        for e in entries:
            parts = e.key.split("/")
            turn, kind = parts[5], parts[6]
            turns.setdefault(turn, {})[kind] = {"version": e.version, "author": e.author, "value": e.value}
        order = sorted(turns, key=_turn_order)
        if scope.turn is not None:
            order = [t for t in order if t != scope.turn]
        recent = order[-args.last_n :]
        return ok_result(
            {
                "session": scope.session,
                "turn_count": len(order),
                "turns": [{"turn": t, "entries": turns[t]} for t in recent],
            }
        )

    async def collect_turn(scope: Scope, args: CollectTurnArgs, raw: dict[str, Any]) -> CallToolResult:
        turn = scope.require_turn()
        deadline = min(args.deadline_s or tc.config.collect_deadline_s, tc.config.collect_deadline_max_s)
        agents = [a for a in tc.config.collect_agents if a in SYNTHESIS_INPUTS]
        brief, waited = await anyio.to_thread.run_sync(
            partial(tc.board.collect, scope.user, scope.session, turn, agents, deadline),
            abandon_on_cancel=True,
            limiter=tc.collect_limiter(),
        )
        versions = {src.agent: src.version for src in brief.sources}
        data = {
            "turn": turn,
            "timed_out": bool(waited.timed_out),
            "waited_s": round(float(waited.waited_s), 3),
            "arrived": sorted(waited.arrived),
            "missing": sorted(waited.missing),
            "versions": versions,
            "brief": _dump(brief),
        }
        note = (
            "COLLECTED."
            if not waited.missing
            else f"COLLECTED, missing: {', '.join(sorted(waited.missing))}."
        )
        return ok_result(data, note=note)

    return [
        ToolSpec(
            "read_entry",
            "Read a blackboard entry",
            READ_DESCRIPTIONS["read_entry"],
            ReadEntryArgs,
            read_entry,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "list_entries",
            "List blackboard entries",
            READ_DESCRIPTIONS["list_entries"],
            ListEntriesArgs,
            list_entries,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "get_profile",
            "Get the user's profile",
            READ_DESCRIPTIONS["get_profile"],
            NoArgs,
            get_profile,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "get_session_history",
            "Get the session history",
            READ_DESCRIPTIONS["get_session_history"],
            SessionHistoryArgs,
            get_session_history,
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "collect_turn",
            "Collect this turn's brief",
            READ_DESCRIPTIONS["collect_turn"],
            CollectTurnArgs,
            collect_turn,
            read_only=True,
            idempotent=True,
            agents=frozenset({"pineal"}),
        ),
    ]


def _turn_order(turn: str) -> tuple[int, int, str]:
    return (0, int(turn), "") if turn.isdigit() else (1, 0, turn)


def _dump(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(obj)
    return obj


def all_specs(tc: ToolContext) -> list[ToolSpec]:
    """Every tool of the server, write tools first (in agent order)."""
    return [write_spec(agent, tc) for agent in AGENT_NAMES] + _read_specs(tc)
