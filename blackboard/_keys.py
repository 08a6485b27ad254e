"""Hierarchical blackboard keys.

Shapes (every ``{part}`` matches ``[A-Za-z0-9_.-]{1,64}`` and is not ``.`` or ``..``)::

    users/{user}/profile                                   the compacted cross-session profile
    users/{user}/sessions/{session}                        session record (turn counter)
    users/{user}/sessions/{session}/turns/{turn}/{kind}    one entry of a turn (agent name or a kind
                                                           such as "meta", "record", "brief")

Anything else (slashes inside a part, NUL, empty parts, ``..``) raises :class:`InvalidKeyError`, so a
key can never escape its namespace or, used as a path, the data directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .errors import InvalidKeyError

__all__ = [
    "MAX_KEY_LENGTH",
    "KeyParts",
    "check_part",
    "check_prefix",
    "parse_key",
    "profile_key",
    "session_key",
    "turn_entry_key",
    "turn_prefix",
]

_PART = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_KEY_LENGTH = 400

KeyKind = Literal["profile", "session", "turn_entry"]


@dataclass(frozen=True, slots=True)
class KeyParts:
    """A parsed key. ``shape`` is ``"profile"``, ``"session"`` or ``"turn_entry"``; unused parts are None."""

    shape: KeyKind
    user: str
    session: str | None = None
    turn: str | None = None
    kind: str | None = None


def check_part(value: object, what: str = "key part") -> str:
    """Return ``value`` if it is a safe key part, else raise :class:`InvalidKeyError` saying why."""
    if not isinstance(value, str):
        raise InvalidKeyError(f"{what} must be a string, got {type(value).__name__}")
    if value in (".", ".."):
        raise InvalidKeyError(f"{what} {value!r} is not allowed (could escape its namespace)")
    if not _PART.fullmatch(value):
        raise InvalidKeyError(
            f"{what} {value[:80]!r} is invalid: use 1-64 characters from A-Z a-z 0-9 _ . - "
            "(no slashes, spaces, NUL or empty parts)"
        )
    return value


def turn_entry_key(user: str, session: str, turn: str, agent_or_kind: str) -> str:
    """``users/{user}/sessions/{session}/turns/{turn}/{agent_or_kind}``; raises InvalidKeyError."""
    return (
        f"users/{check_part(user, 'user')}/sessions/{check_part(session, 'session')}"
        f"/turns/{check_part(turn, 'turn')}/{check_part(agent_or_kind, 'agent_or_kind')}"
    )


def turn_prefix(user: str, session: str, turn: str) -> str:
    """Prefix (ending in ``/``) of every entry of one turn, for ``Store.list``."""
    return (
        f"users/{check_part(user, 'user')}/sessions/{check_part(session, 'session')}"
        f"/turns/{check_part(turn, 'turn')}/"
    )


def session_key(user: str, session: str) -> str:
    """``users/{user}/sessions/{session}``; raises InvalidKeyError."""
    return f"users/{check_part(user, 'user')}/sessions/{check_part(session, 'session')}"


def profile_key(user: str) -> str:
    """``users/{user}/profile``; raises InvalidKeyError."""
    return f"users/{check_part(user, 'user')}/profile"


def parse_key(key: object) -> KeyParts:
    """Parse and validate a full key; raises :class:`InvalidKeyError` naming the problem."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"key must be a string, got {type(key).__name__}")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"key is {len(key)} characters long; the limit is {MAX_KEY_LENGTH}")
    parts = key.split("/")
    if len(parts) >= 2 and parts[0] == "users":
        check_part(parts[1], "user")
        if len(parts) == 3 and parts[2] == "profile":
            return KeyParts("profile", parts[1])
        if len(parts) >= 4 and parts[2] == "sessions":
            check_part(parts[3], "session")
            if len(parts) == 4:
                return KeyParts("session", parts[1], parts[3])
            if len(parts) == 7 and parts[4] == "turns":
                check_part(parts[5], "turn")
                check_part(parts[6], "agent_or_kind")
                return KeyParts("turn_entry", parts[1], parts[3], parts[5], parts[6])
    raise InvalidKeyError(
        f"key {key[:120]!r} has an unknown shape; expected users/{{u}}/profile, users/{{u}}/sessions/{{s}} "
        "or users/{u}/sessions/{s}/turns/{t}/{kind}"
    )


def check_prefix(prefix: object) -> str:
    """Validate a ``Store.list`` prefix: a string of at most MAX_KEY_LENGTH chars without NUL or ``..``.

    The prefix is matched literally against the start of keys (``""`` lists everything).
    """
    if not isinstance(prefix, str):
        raise InvalidKeyError(f"prefix must be a string, got {type(prefix).__name__}")
    if len(prefix) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"prefix is {len(prefix)} characters long; the limit is {MAX_KEY_LENGTH}")
    if "\x00" in prefix or any(p in (".", "..") for p in prefix.split("/")):
        raise InvalidKeyError(f"prefix {prefix[:120]!r} contains NUL or a '.'/'..' part")
    return prefix
