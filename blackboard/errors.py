"""The blackboard's error hierarchy: every error is a :class:`BlackboardError` with a stable ``code``.

Callers branch on ``code`` / ``retryable`` (or the subclass), never on message text. Messages say what
was wrong and what to do; they never contain user message text.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BlackboardError",
    "BudgetExhaustedError",
    "InvalidKeyError",
    "InvalidValueError",
    "LockTimeoutError",
    "SchemaValidationError",
    "SessionClosedError",
    "StoreUnavailableError",
    "TurnAlreadyOpenError",
    "TurnNotOpenError",
    "VersionConflictError",
]


class BlackboardError(Exception):
    """Root of all blackboard errors.

    Attributes:
        code: stable machine-readable identifier (e.g. ``"version_conflict"``).
        retryable: True when the same call may succeed if repeated (possibly after re-reading).
    """

    code: str = "blackboard_error"
    retryable: bool = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return self.message


class InvalidKeyError(BlackboardError, ValueError):
    """A key, key part or prefix is malformed or could escape its namespace (``..``, ``/``, NUL, empty)."""

    code = "invalid_key"


class InvalidValueError(BlackboardError, ValueError):
    """A value or argument cannot be stored (not a JSON object, too large, bad author or version)."""

    code = "invalid_value"


class VersionConflictError(BlackboardError):
    """Compare-and-swap failed: ``expected_version`` did not match the stored version.

    Attributes:
        key: the key written.
        expected_version: the version the caller expected (0 = create-only).
        current_version: the version actually stored (0 = the key does not exist).
    """

    code = "version_conflict"
    retryable = True

    def __init__(self, key: str, *, expected_version: int, current_version: int) -> None:
        if expected_version == 0:
            msg = (
                f"{key} already exists at version {current_version}; expected_version=0 means create-only. "
                "Read the entry and write again with its version, or write a new key."
            )
        else:
            msg = (
                f"{key} is at version {current_version}, not {expected_version}; "
                "read the current entry, re-apply your change and retry with its version."
            )
        super().__init__(msg)
        self.key = key
        self.expected_version = expected_version
        self.current_version = current_version


class SchemaValidationError(BlackboardError, ValueError):
    """An agent output (or synthesis) failed validation.

    Attributes:
        problems: one human-readable line per problem, each naming the field path, e.g.
            ``"traits.openness.score: Input should be less than or equal to 100"``.
    """

    code = "schema_validation"

    def __init__(self, problems: Sequence[str], *, what: str = "payload") -> None:
        self.problems = list(problems)
        lines = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"{what} is invalid ({len(self.problems)} problem(s)); fix each and retry:\n{lines}")


class TurnAlreadyOpenError(BlackboardError):
    """``open_turn`` was called for a turn that is already open; reopening is an error, not a reset."""

    code = "turn_already_open"


class TurnNotOpenError(BlackboardError):
    """The turn was never opened (call ``begin_turn`` / ``open_turn`` first)."""

    code = "turn_not_open"


class StoreUnavailableError(BlackboardError):
    """The backing store could not be opened or stayed busy past the retry budget."""

    code = "store_unavailable"
    retryable = True


class LockTimeoutError(BlackboardError):
    """A sequencer file lock could not be acquired within its timeout (another process holds it)."""

    code = "lock_timeout"
    retryable = True


class SessionClosedError(BlackboardError):
    """A turn was begun on a session that was closed (compacted into the profile): its outputs would
    never reach the profile. Start a new session id instead.

    Attributes:
        user, session: the ids; closed_at: when it was closed (Unix seconds).
    """

    code = "session_closed"

    def __init__(self, user: str, session: str, closed_at: float) -> None:
        import datetime

        when = datetime.datetime.fromtimestamp(closed_at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        super().__init__(
            f"session {session} of {user} was closed at {when}; start a new session with --session NEW"
        )
        self.user = user
        self.session = session
        self.closed_at = closed_at


class BudgetExhaustedError(BlackboardError):
    """A shared token budget (``blackboard._budgets.SharedBudgets``) cannot fit a request.

    Attributes:
        scope: the budget's scope (``session:{s}`` or ``agent:{s}:{agent}``); limit, spent, reserved: its
            tokens (``reserved``: held by requests in flight, on any proxy); requested: what the request
            needed at least (estimated input plus one output token).
    """

    code = "budget_exhausted"

    def __init__(self, scope: str, *, limit: int, spent: int, reserved: int, requested: int) -> None:
        left = max(limit - spent - reserved, 0)
        super().__init__(
            f"token budget {scope} is exhausted: limit {limit}, {spent} spent, {reserved} reserved by requests in "
            f"flight, {left} left, and this request needs at least {requested}; raise the budget or start a new "
            "session"
        )
        self.scope = scope
        self.limit = limit
        self.spent = spent
        self.reserved = reserved
        self.requested = requested
