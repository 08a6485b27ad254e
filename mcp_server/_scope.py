"""Connection scope: which user, session, turn and agent a connection acts for.

The scope is fixed by how the server was started (stdio: ``--user/--session/--turn/--agent`` or the
``COACH_USER``/``COACH_SESSION``/``COACH_TURN``/``COACH_AGENT`` environment) or, over HTTP, by the
``x-coach-user``/``x-coach-session``/``x-coach-turn``/``x-coach-agent`` headers of each request. It is
never taken from tool arguments: arguments are resolved *inside* the scope, and any argument naming a
key of another user or session is refused with :class:`~mcp_server.errors.OutOfScopeError`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mcp_server.errors import OutOfScopeError, ScopeError

__all__ = [
    "ENV_VARS",
    "HEADERS",
    "SCOPE_TOKEN_HEADER",
    "FixedScope",
    "HeaderScope",
    "Scope",
    "ScopeSource",
    "scope_from_env",
    "scope_token",
]

#: HTTP header per scope field (docs/mcp.md, Scope).
HEADERS: dict[str, str] = {
    "user": "x-coach-user",
    "session": "x-coach-session",
    "turn": "x-coach-turn",
    "agent": "x-coach-agent",
}

#: Environment variable per scope field (stdio servers started by Claude Code's MCP config).
ENV_VARS: dict[str, str] = {
    "user": "COACH_USER",
    "session": "COACH_SESSION",
    "turn": "COACH_TURN",
    "agent": "COACH_AGENT",
}

#: HTTP header carrying :func:`scope_token` when the server has a secret (``COACH_MCP_SECRET``).
SCOPE_TOKEN_HEADER = "x-coach-scope-token"

# Same rule as blackboard keys (docs/blackboard.md, Keys): parts match [A-Za-z0-9_.-]{1,64}, not "." or "..".
_PART = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _part_problem(value: str) -> str | None:
    if not _PART.fullmatch(value) or value in (".", ".."):
        return "must be 1-64 characters of letters, digits, '_', '.' or '-' (not '.' or '..')"
    return None


@dataclass(frozen=True)
class Scope:
    """What one connection acts for. ``turn`` and ``agent`` are optional: without them the connection
    may read its session but not write.

    Construct with :meth:`create`, which validates every part.
    """

    user: str
    session: str
    turn: str | None = None
    agent: str | None = None

    @classmethod
    def create(
        cls, user: str | None, session: str | None, turn: str | None = None, agent: str | None = None
    ) -> Scope:
        """Validate and build a scope.

        Raises:
            ScopeError: listing each missing or malformed part (user and session are required; agent
                must be one of ``blackboard.AGENT_NAMES``).
        """
        problems: list[str] = []
        for name, value, required in (
            ("user", user, True),
            ("session", session, True),
            ("turn", turn, False),
        ):
            if value is None or value == "":
                if required:
                    problems.append(f"{name} is missing")
                continue
            why = _part_problem(value)
            if why:
                problems.append(f"{name} {why}")
        if agent:
            from blackboard import AGENT_NAMES  # imported here: `coach --help` does not load the blackboard

            if agent not in AGENT_NAMES:
                problems.append(f"agent must be one of {', '.join(AGENT_NAMES)}")
        if problems:
            raise ScopeError("connection scope is invalid: " + "; ".join(problems))
        return cls(user=str(user), session=str(session), turn=turn or None, agent=agent or None)

    # -- keys inside the scope -------------------------------------------------------------------

    @property
    def user_prefix(self) -> str:
        return f"users/{self.user}"

    @property
    def session_key(self) -> str:
        """``users/{u}/sessions/{s}`` (same layout as ``blackboard.session_key``)."""
        return f"users/{self.user}/sessions/{self.session}"

    @property
    def profile_key(self) -> str:
        """``users/{u}/profile`` (same layout as ``blackboard.profile_key``)."""
        return f"users/{self.user}/profile"

    def require_turn(self) -> str:
        if self.turn is None:
            raise ScopeError(
                "this connection has no turn: start the server with --turn (or COACH_TURN) or send the "
                "x-coach-turn header"
            )
        return self.turn

    def turn_key(self, kind: str, turn: str | None = None) -> str:
        """``users/{u}/sessions/{s}/turns/{t}/{kind}``; ``turn`` defaults to the scope's turn."""
        t = turn if turn is not None else self.require_turn()
        for label, value in (("turn", t), ("entry name", kind)):
            why = _part_problem(value)
            if why:
                raise OutOfScopeError(f"{label} {why}", code="invalid_key")
        return f"{self.session_key}/turns/{t}/{kind}"

    def resolve_key(self, key: str) -> str:
        """Resolve a key the model passed to a full key inside this scope.

        Accepted forms: ``"shadow"`` (this turn's entry of that agent or kind), ``"turns/3/shadow"``
        (a turn of this session), ``"profile"``, ``"session"``, or a full ``users/...`` key of this
        user and session.

        Raises:
            OutOfScopeError: code ``invalid_key`` for a malformed key, ``out_of_scope`` for a key of
                another user or session.
        """
        key = key.strip().strip("/")
        if key == "profile":
            return self.profile_key
        if key == "session":
            return self.session_key
        if key.startswith("users/"):
            full = key
        elif key.startswith("turns/"):
            full = f"{self.session_key}/{key}"
        elif "/" not in key:
            return self.turn_key(key)
        else:
            raise OutOfScopeError(
                "key must be an entry name like 'shadow', 'turns/<turn>/<entry>', 'profile', 'session' "
                "or a full key 'users/<user>/sessions/<session>/...'",
                code="invalid_key",
            )
        self._check_parts(full)
        if full == self.profile_key or full == self.session_key or full.startswith(self.session_key + "/"):
            return full
        raise OutOfScopeError(_outside_message(full, self))

    def resolve_prefix(self, prefix: str) -> str:
        """Resolve a listing prefix (relative to this session, or a full key prefix) inside the scope.

        ``""`` lists the whole session; ``"turns/3/"`` one turn; ``"users/<u>/sessions/<s>/turns"``
        is accepted when it names this user and session.

        Raises:
            OutOfScopeError: as :meth:`resolve_key`.
        """
        raw = prefix.strip()
        full = raw if raw.startswith("users/") else f"{self.session_key}/{raw.lstrip('/')}"
        inside = self.session_key + "/"
        if full.rstrip("/") == self.session_key:
            full = inside
        if not full.startswith(inside):
            raise OutOfScopeError(_outside_message(full, self))
        # Every part must be a valid key part; the last one may be a partial name ("turns/1" or "turns/").
        for part in full.rstrip("/").split("/"):
            if part in (".", "..") or not _PART.fullmatch(part):
                raise OutOfScopeError(
                    "prefix parts must be letters, digits, '_', '.' or '-' (not '.' or '..')",
                    code="invalid_key",
                )
        return full

    def _check_parts(self, full: str) -> None:
        parts = full.split("/")
        if any(not _PART.fullmatch(p) or p in (".", "..") for p in parts):
            raise OutOfScopeError(
                "key parts must be 1-64 letters, digits, '_', '.' or '-' (not '.' or '..')",
                code="invalid_key",
            )


def _outside_message(full: str, scope: Scope) -> str:
    parts = full.split("/")
    what = "key"
    if len(parts) >= 2 and parts[1] != scope.user:
        what = "a different user"
    elif len(parts) >= 4 and parts[2] == "sessions" and parts[3] != scope.session:
        what = "a different session"
    return (
        f"The key names {what}, outside this connection's scope. You can only use this session's "
        "keys: an entry name like 'shadow', 'turns/<turn>/<entry>', 'profile' or 'session'."
    )


class ScopeSource(Protocol):
    """Where a request's scope comes from. ``headers`` is the HTTP request's headers or None (stdio)."""

    def scope_for(self, headers: Mapping[str, str] | None) -> Scope: ...


@dataclass(frozen=True)
class FixedScope:
    """One scope for the whole server process (stdio). Request headers are ignored."""

    scope: Scope

    def scope_for(self, headers: Mapping[str, str] | None) -> Scope:
        return self.scope


def scope_token(secret: str, scope: Scope) -> str:
    """HMAC-SHA256 (hex) of the scope under ``secret``: the value of ``x-coach-scope-token``.

    The supervisor mints one per agent connection; a server started with the same secret refuses
    scope headers whose token does not match, so a process that can reach the HTTP port but lacks the
    secret (e.g. a prompt-injected agent with a shell) cannot act for another user.
    """
    message = "\n".join((scope.user, scope.session, scope.turn or "", scope.agent or "")).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class HeaderScope:
    """Scope read from each HTTP request's ``x-coach-*`` headers (see :data:`HEADERS`).

    With ``secret`` set, the request must also carry ``x-coach-scope-token: scope_token(secret, scope)``.
    Raises ScopeError (from :meth:`scope_for`) when the headers are absent, malformed or not signed.
    """

    secret: str | None = field(default=None, repr=False)

    def scope_for(self, headers: Mapping[str, str] | None) -> Scope:
        if headers is None:
            raise ScopeError("this HTTP server needs the x-coach-user and x-coach-session headers")
        values = {name: headers.get(header) for name, header in HEADERS.items()}
        scope = Scope.create(values["user"], values["session"], values["turn"], values["agent"])
        if self.secret is not None:
            token = headers.get(SCOPE_TOKEN_HEADER) or ""
            if not hmac.compare_digest(token.encode(), scope_token(self.secret, scope).encode()):
                raise ScopeError(
                    "the x-coach-scope-token header is missing or does not match the scope headers",
                    code="scope_forbidden",
                )
        return scope


def scope_from_env(
    env: Mapping[str, str] | None = None,
    *,
    user: str | None = None,
    session: str | None = None,
    turn: str | None = None,
    agent: str | None = None,
) -> Scope:
    """Build a stdio scope: explicit arguments win over ``COACH_USER`` etc. in ``env`` (default os.environ).

    Raises:
        ScopeError: when user or session is missing, or a part is malformed.
    """
    e = os.environ if env is None else env
    return Scope.create(
        user or e.get(ENV_VARS["user"]),
        session or e.get(ENV_VARS["session"]),
        turn or e.get(ENV_VARS["turn"]) or None,
        agent or e.get(ENV_VARS["agent"]) or None,
    )
