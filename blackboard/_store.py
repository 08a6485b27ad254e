"""The storage boundary: :class:`Entry`, the :class:`Store` protocol and the argument checks every
implementation shares (so both backends reject exactly the same inputs)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._keys import parse_key
from .errors import InvalidValueError

__all__ = ["MAX_VALUE_BYTES", "Entry", "Store", "check_write_args", "decode_value", "encode_value"]

MAX_VALUE_BYTES = 1_000_000
_AUTHOR = re.compile(r"[A-Za-z0-9_.:@\-]{1,64}")


@dataclass(frozen=True, slots=True)
class Entry:
    """One version of one key.

    Attributes:
        key: the full key (see ``parse_key``).
        value: the stored JSON object (a fresh copy per read; mutating it changes nothing stored).
        version: 1 for the first write, +1 per successful write.
        author: who wrote this version (agent name or component).
        created_at: Unix time (s) of the key's first write.
        updated_at: Unix time (s) of this version's write.
        seq: store-wide commit sequence number (strictly increasing in commit order across all keys
            and processes); compare ``seq`` to order commits, never wall clocks.
    """

    key: str
    value: dict[str, Any]
    version: int
    author: str
    created_at: float
    updated_at: float
    seq: int = field(default=0)


_Entries = list[Entry]


@runtime_checkable
class Store(Protocol):
    """Versioned key/value store with compare-and-swap writes and an append-only history.

    Implementations: ``SQLiteStore`` (cross-process) and ``MemoryStore`` (one process); both pass the
    same contract suite (``tests/blackboard/test_store_contract.py``).
    """

    def read(self, key: str) -> Entry | None:
        """Latest version of ``key`` or None. Raises InvalidKeyError, StoreUnavailableError."""
        ...

    def write(self, key: str, value: dict[str, Any], *, expected_version: int, author: str) -> Entry:
        """Compare-and-swap write; returns the new Entry (version = expected_version + 1).

        ``expected_version=0`` means create-only. Raises VersionConflictError(current_version=...) on
        mismatch (nothing is written), InvalidKeyError, InvalidValueError, StoreUnavailableError.
        """
        ...

    def list(self, prefix: str) -> _Entries:
        """Latest version of every key starting with ``prefix`` (literal), sorted by key."""
        ...

    def history(self, key: str) -> _Entries:
        """Every version of ``key``, oldest first ([] if never written)."""
        ...

    def close(self) -> None:
        """Release resources; further calls raise StoreUnavailableError. Idempotent."""
        ...


def encode_value(value: object) -> str:
    """Canonical JSON text for a value; raises InvalidValueError if not a JSON object or too large."""
    if not isinstance(value, dict):
        raise InvalidValueError(f"value must be a JSON object (dict), got {type(value).__name__}")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"value is not JSON-serialisable: {exc}") from None
    size = len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise InvalidValueError(f"value is {size} bytes as JSON; the limit is {MAX_VALUE_BYTES}")
    return text


def decode_value(text: str) -> dict[str, Any]:
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def check_write_args(key: str, value: object, expected_version: object, author: object) -> str:
    """Validate write arguments; returns the encoded value. Raises InvalidKeyError/InvalidValueError."""
    parse_key(key)
    if isinstance(expected_version, bool) or not isinstance(expected_version, int) or expected_version < 0:
        raise InvalidValueError(f"expected_version must be an int >= 0, got {expected_version!r}")
    if not isinstance(author, str) or not _AUTHOR.fullmatch(author):
        raise InvalidValueError("author must be 1-64 characters from A-Z a-z 0-9 _ . : @ -")
    return encode_value(value)
