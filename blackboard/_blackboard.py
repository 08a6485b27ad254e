"""The facade the MCP server and the supervisor use: turns, validated agent writes, collection."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ._arbitration import build_brief, validate_synthesis
from ._backend import open_backend
from ._barrier import Barrier
from ._brief import Brief
from ._keys import check_part, profile_key, session_key, turn_entry_key, turn_prefix
from ._pg_schema import DEFAULT_SCHEMA
from ._records import TurnRecord, UserProfile, merge_profile
from ._registry import validate_output
from ._roster import SYNTHESIS_INPUTS
from ._schema_agents import SynthesisOutput
from ._sequencer import Sequencer, WaitResult
from ._sqlite import open_store
from ._store import Entry, Store
from .config import Thresholds
from .errors import (
    InvalidValueError,
    SchemaValidationError,
    SessionClosedError,
    TurnNotOpenError,
    VersionConflictError,
)

__all__ = ["STALE_TURN_S", "Blackboard", "PrunedTurns"]

_CAS_ATTEMPTS = 1000

#: A turn of a closed session without a turn record is treated as abandoned (its process died) once its
#: barrier has not changed for this long (s): far beyond the longest turn, the agents' longest deadline
#: (Pineal, 90 s) times ``coach demo --deadline-scale`` 12 times two attempts (36 min).
STALE_TURN_S = 6 * 3600.0


class PrunedTurns(NamedTuple):
    """Outcome of :meth:`Blackboard.prune_turn_barriers`: turn ids (``session/turn``) whose sequencer
    directory was ``removed``, and those ``kept`` because the turn may still be running."""

    removed: tuple[str, ...]
    kept: tuple[str, ...]


class Blackboard:
    """Turns, schema-validated agent outputs and collection over a Store and a Sequencer.

    Construct with a data directory (``SQLiteStore`` in ``data_dir/blackboard.sqlite3`` plus a
    ``Sequencer`` in ``data_dir/sequencer``), with ``database_url`` (``PostgresStore`` + ``PgBarrier`` in
    ``database_schema``; ``data_dir`` is then unused here), or pass ``store`` and ``sequencer`` explicitly.
    Thread-safe if the store is. All methods are synchronous; async callers use ``anyio.to_thread``.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        sequencer: Barrier | None = None,
        thresholds: Thresholds | None = None,
        database_url: str | None = None,
        database_schema: str = DEFAULT_SCHEMA,
    ) -> None:
        if store is not None and sequencer is not None:
            self.store: Store = store
            self.sequencer: Barrier = sequencer
        elif database_url:  # PostgreSQL for both (docs/postgresql.md)
            if store is not None or sequencer is not None:
                raise InvalidValueError("with database_url, Blackboard opens both the store and the barrier")
            self.store, self.sequencer = open_backend(None, url=database_url, schema=database_schema)
        else:
            if data_dir is None:
                raise InvalidValueError("Blackboard needs a data_dir, or both store and sequencer")
            self.store = store if store is not None else open_store(data_dir)
            self.sequencer = sequencer if sequencer is not None else Sequencer(data_dir)
        self.thresholds = thresholds or Thresholds()

    @staticmethod
    def turn_id(user: str, session: str, turn: str) -> str:
        """The sequencer's id of a turn: ``{user}/{session}/{turn}``."""
        return f"{check_part(user, 'user')}/{check_part(session, 'session')}/{check_part(turn, 'turn')}"

    def begin_turn(
        self, user: str, session: str, *, crisis_tier: int = 0, required: Sequence[str] = ("shadow",)
    ) -> str:
        """Allocate the session's next turn id (``t000001``, ``t000002``, ...; CAS on the session
        record, so concurrent callers get distinct ids), store the turn's ``meta`` entry and open its
        barrier for ``required``. Returns the turn id.

        Raises SessionClosedError (the session was closed: no turn is begun, nothing is written),
        InvalidKeyError, InvalidValueError (crisis_tier not 0-3), StoreUnavailableError.
        """
        if isinstance(crisis_tier, bool) or not isinstance(crisis_tier, int) or not 0 <= crisis_tier <= 3:
            raise InvalidValueError(f"crisis_tier must be an int 0-3, got {crisis_tier!r}")
        key = session_key(user, session)
        for _ in range(_CAS_ATTEMPTS):
            current = self.store.read(key)
            _refuse_closed(user, session, current)
            value: dict[str, Any] = dict(current.value) if current else {"user": user, "session": session}
            count = int(value.get("turn_count", 0)) + 1
            value["turn_count"] = count
            try:
                self.store.write(
                    key, value, expected_version=current.version if current else 0, author="blackboard"
                )
            except VersionConflictError:
                continue
            turn = f"t{count:06d}"
            meta = {
                "index": count,
                "crisis_tier": crisis_tier,
                "required": list(required),
                "opened_at": time.time(),
            }
            self.store.write(
                turn_entry_key(user, session, turn, "meta"), meta, expected_version=0, author="blackboard"
            )
            self.sequencer.open_turn(self.turn_id(user, session, turn), required)
            return turn
        raise InvalidValueError(
            f"could not allocate a turn id after {_CAS_ATTEMPTS} attempts"
        )  # pragma: no cover

    def raise_crisis_tier(self, user: str, session: str, turn: str, tier: int) -> int:
        """Raise the crisis tier in the turn's ``meta`` entry to ``tier`` (compare-and-swap; never lowers
        it), so the brief built from now on (``collect``, ``brief``, MCP ``collect_turn``) has the higher
        tier's mode. Returns the stored tier. Raises TurnNotOpenError (no ``meta``: the turn was never
        begun), InvalidValueError (tier not 0-3), InvalidKeyError, StoreUnavailableError."""
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier <= 3:
            raise InvalidValueError(f"crisis_tier must be an int 0-3, got {tier!r}")
        key = turn_entry_key(user, session, turn, "meta")
        for _ in range(_CAS_ATTEMPTS):
            current = self.store.read(key)
            if current is None:
                raise TurnNotOpenError(f"turn {turn} of session {session} was never begun")
            stored = int(current.value.get("crisis_tier", 0))
            if stored >= tier:
                return stored
            try:
                self.store.write(
                    key,
                    {**current.value, "crisis_tier": tier},
                    expected_version=current.version,
                    author="blackboard",
                )
            except VersionConflictError:
                continue
            return tier
        raise InvalidValueError(
            f"could not raise the crisis tier after {_CAS_ATTEMPTS} attempts"
        )  # pragma: no cover

    def check_session_open(self, user: str, session: str) -> None:
        """Raise SessionClosedError when ``session`` was closed (``begin_turn`` refuses it the same way;
        callers use this to refuse early, e.g. before starting agent processes). A session that does not
        exist yet is open. Raises InvalidKeyError, StoreUnavailableError too."""
        _refuse_closed(user, session, self.store.read(session_key(user, session)))

    def write_output(self, user: str, session: str, turn: str, agent: str, payload: dict[str, Any]) -> Entry:
        """Validate ``payload`` against ``agent``'s schema (Stability's gate applied; Pineal's synthesis
        also checked against the turn's brief), store it create-only at
        ``users/{u}/sessions/{s}/turns/{t}/{agent}`` and release waiters for ``agent``.

        Raises SchemaValidationError (every problem listed), TurnNotOpenError, VersionConflictError
        (the agent already wrote this turn), InvalidKeyError, StoreUnavailableError.
        """
        tid = self.turn_id(user, session, turn)
        model = validate_output(agent, payload, self.thresholds)
        if not self.sequencer.is_open(tid):
            raise TurnNotOpenError(
                f"turn {turn} of session {session} is not open (never begun, or over and its "
                "session closed); call begin_turn first"
            )
        if isinstance(model, SynthesisOutput):
            problems = validate_synthesis(model, self.brief(user, session, turn))
            if problems:
                raise SchemaValidationError([f"{p.code}: {p.detail}" for p in problems], what="synthesis")
        key = turn_entry_key(user, session, turn, agent)
        try:
            entry = self.store.write(key, model.model_dump(mode="json"), expected_version=0, author=agent)
        except VersionConflictError:
            # Already written: an earlier call may have committed and then failed to mark (e.g. lock
            # timeout); marking is idempotent, so make sure waiters are released before reporting.
            self.sequencer.mark_written(tid, agent)
            raise
        self.sequencer.mark_written(tid, agent)
        return entry

    def read_turn(self, user: str, session: str, turn: str) -> dict[str, Entry]:
        """Every entry of a turn, by kind (agent name, ``meta``, ``record``...)."""
        prefix = turn_prefix(user, session, turn)
        return {e.key[len(prefix) :]: e for e in self.store.list(prefix)}

    def brief(
        self, user: str, session: str, turn: str, *, expected: Sequence[str] = SYNTHESIS_INPUTS
    ) -> Brief:
        """The arbitrated brief of a turn as it stands now (no waiting)."""
        entries = self.read_turn(user, session, turn)
        tier = int(entries["meta"].value.get("crisis_tier", 0)) if "meta" in entries else 0
        return build_brief(entries, crisis_tier=tier, thresholds=self.thresholds, expected=expected)

    def collect(
        self, user: str, session: str, turn: str, agents: Sequence[str], deadline_s: float
    ) -> tuple[Brief, WaitResult]:
        """Wait (at most ``deadline_s`` s) for the turn's required agents and ``agents``, then build the
        brief from what has been written; ``brief.missing_agents`` lists the absent ones.

        Raises TurnNotOpenError, InvalidKeyError, InvalidValueError.
        """
        result = self.sequencer.wait(self.turn_id(user, session, turn), agents, deadline_s)
        expected = tuple(dict.fromkeys([*result.arrived, *result.missing]))
        return self.brief(user, session, turn, expected=expected), result

    def write_turn_record(self, record: TurnRecord) -> Entry:
        """Store a turn's record (create-only) at ``.../turns/{t}/record``."""
        key = turn_entry_key(record.user, record.session, record.turn, "record")
        return self.store.write(key, record.model_dump(mode="json"), expected_version=0, author="supervisor")

    def read_profile(self, user: str) -> UserProfile | None:
        """The user's compacted profile, or None."""
        e = self.store.read(profile_key(user))
        return (
            None
            if e is None
            else UserProfile.model_validate(e.value, context={"thresholds": self.thresholds})
        )

    def update_profile(self, user: str, session: str, session_outputs: Mapping[str, Any]) -> Entry:
        """Fold one session's outputs into the profile with :func:`merge_profile` (CAS, retried)."""
        key = profile_key(user)
        for _ in range(_CAS_ATTEMPTS):
            current = self.store.read(key)
            old = (
                UserProfile.model_validate(current.value, context={"thresholds": self.thresholds})
                if current
                else UserProfile(user=user)
            )
            new = merge_profile(old, session_outputs, self.thresholds, session=session)
            try:
                return self.store.write(
                    key,
                    new.model_dump(mode="json"),
                    expected_version=current.version if current else 0,
                    author="blackboard",
                )
            except VersionConflictError:
                continue
        raise InvalidValueError(
            f"could not update profile after {_CAS_ATTEMPTS} attempts"
        )  # pragma: no cover

    def prune_turn_barriers(self, user: str, *, stale_after_s: float = STALE_TURN_S) -> PrunedTurns:
        """Remove the sequencer directories (``sequencer/{user}/{session}/{turn}/``) of the turns of
        ``user``'s closed sessions that are over: the turn has its record (``write_turn_record``: the
        supervisor finished it), or its barrier has not changed for ``stale_after_s`` seconds (abandoned,
        or a manual turn of the MCP session server, which has no record). A turn of a closed session
        still running (no record, recent activity) is kept, and removed by a later call (the next close
        of any of the user's sessions). Open sessions are never touched. The store is not changed.

        Raises InvalidKeyError, InvalidValueError (negative ``stale_after_s``), LockTimeoutError,
        StoreUnavailableError, OSError (the data directory is unusable).
        """
        if not isinstance(stale_after_s, (int, float)) or stale_after_s < 0:
            raise InvalidValueError(f"stale_after_s must be a number >= 0, got {stale_after_s!r}")
        removed: list[str] = []
        kept: list[str] = []
        cutoff = time.time() - stale_after_s
        for session_id in self.sequencer.turn_ids(check_part(user, "user")):
            session = session_id.split("/")[1]
            record = self.store.read(session_key(user, session))
            if record is None or not record.value.get("closed_at"):
                continue
            for turn_id in self.sequencer.turn_ids(session_id):
                turn = turn_id.split("/")[2]
                changed = self.sequencer.last_change(turn_id)
                over = self.store.read(turn_entry_key(user, session, turn, "record")) is not None
                if over or changed is None or changed < cutoff:
                    if self.sequencer.remove_turn(turn_id):
                        removed.append(f"{session}/{turn}")
                else:
                    kept.append(f"{session}/{turn}")
            if isinstance(self.sequencer, Sequencer) and not self.sequencer.turn_ids(session_id):
                with contextlib.suppress(OSError):  # not empty: a kept turn, or one begun meanwhile
                    self.sequencer.turn_dir(session_id).rmdir()
        return PrunedTurns(tuple(removed), tuple(kept))

    def close(self) -> None:
        """Close the store (and the barrier's connections, when it holds any)."""
        self.store.close()
        closer = getattr(self.sequencer, "close", None)
        if callable(closer):
            closer()


def _refuse_closed(user: str, session: str, record: Entry | None) -> None:
    """The one rule: a session record with ``closed_at`` takes no new turns (its turns would never be
    compacted into the profile: closing is a one-time CAS)."""
    closed_at = record.value.get("closed_at") if record is not None else None
    if closed_at:
        raise SessionClosedError(user, session, float(closed_at))
