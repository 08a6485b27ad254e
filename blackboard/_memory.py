"""In-memory reference implementation of the Store protocol (one process, thread-safe)."""

from __future__ import annotations

import threading
import time
from typing import Any

from ._keys import check_prefix, parse_key
from ._store import Entry, check_write_args, decode_value
from .errors import StoreUnavailableError, VersionConflictError

__all__ = ["MemoryStore"]

_Entries = list[Entry]


class MemoryStore:
    """Store kept in process memory; values are stored as canonical JSON text, so reads return fresh
    copies and behave exactly like SQLiteStore (tuples come back as lists, etc.)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._history: dict[str, list[tuple[str, Entry]]] = {}
        self._seq = 0
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError("store is closed", retryable=False)

    @staticmethod
    def _materialise(text: str, e: Entry) -> Entry:
        return Entry(e.key, decode_value(text), e.version, e.author, e.created_at, e.updated_at, e.seq)

    def read(self, key: str) -> Entry | None:
        parse_key(key)
        with self._lock:
            self._check_open()
            versions = self._history.get(key)
            if not versions:
                return None
            text, e = versions[-1]
        return self._materialise(text, e)

    def write(self, key: str, value: dict[str, Any], *, expected_version: int, author: str) -> Entry:
        text = check_write_args(key, value, expected_version, author)
        with self._lock:
            self._check_open()
            versions = self._history.setdefault(key, [])
            current = versions[-1][1].version if versions else 0
            if current != expected_version:
                if not versions:
                    del self._history[key]
                raise VersionConflictError(key, expected_version=expected_version, current_version=current)
            now = time.time()
            created = versions[0][1].created_at if versions else now
            self._seq += 1
            entry = Entry(key, {}, current + 1, author, created, now, self._seq)
            versions.append((text, entry))
        return self._materialise(text, entry)

    def list(self, prefix: str) -> _Entries:
        check_prefix(prefix)
        with self._lock:
            self._check_open()
            latest = [v[-1] for k, v in self._history.items() if k.startswith(prefix) and v]
        latest.sort(key=lambda te: te[1].key)
        return [self._materialise(t, e) for t, e in latest]

    def history(self, key: str) -> _Entries:
        parse_key(key)
        with self._lock:
            self._check_open()
            versions = list(self._history.get(key, []))
        return [self._materialise(t, e) for t, e in versions]

    def close(self) -> None:
        with self._lock:
            self._closed = True
