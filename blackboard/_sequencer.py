"""Per-turn barrier across processes: file locks (filelock) in the data directory, watchfiles to wake
waiters, polling as the fallback.

Layout: ``{data_dir}/sequencer/{turn_id parts...}/`` holds ``lock`` (an OS advisory lock via filelock:
the kernel releases it when the holder dies, so a writer killed while holding it leaves no stale
lock), ``state.json`` (required agents, written atomically by ``open_turn``) and one
``written.{agent}`` marker per agent, created atomically (write + rename) by ``mark_written``.
Callers mark an agent only after its blackboard write committed (``Blackboard.write_output`` does),
so a waiter that sees the marker can read the entry. Files are not fsynced: the barrier coordinates
live processes; the durable record of what was written is the store.

``remove_turn`` deletes a turn's directory once the turn is over (``Blackboard.prune_turn_barriers``,
at session close): under the turn's lock it unlinks every file, the lock file last, then the directory.
Deleting a held flock's file is safe with filelock: a waiter that wins the lock on the unlinked inode
retries on the path, and one that finds the directory gone gets ``TurnNotOpenError``; ``mark_written``
re-checks the turn under the lock, so it never recreates a removed turn.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import filelock

from ._keys import check_part
from .errors import (
    InvalidKeyError,
    InvalidValueError,
    LockTimeoutError,
    TurnAlreadyOpenError,
    TurnNotOpenError,
)

__all__ = ["Sequencer", "WaitResult"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WaitResult:
    """Outcome of :meth:`Sequencer.wait`: ``arrived`` and ``missing`` agents (in request order),
    ``timed_out`` (the deadline passed before all arrived), ``waited_s`` (seconds spent)."""

    arrived: tuple[str, ...]
    missing: tuple[str, ...]
    timed_out: bool
    waited_s: float

    @classmethod
    def of(cls, wanted: Sequence[str], got: Collection[str], waited_s: float) -> WaitResult:
        """The result for ``wanted`` agents of which ``got`` have arrived after ``waited_s`` seconds."""
        return cls(
            arrived=tuple(a for a in wanted if a in got),
            missing=tuple(a for a in wanted if a not in got),
            timed_out=len(set(got) & set(wanted)) < len(wanted),
            waited_s=waited_s,
        )


_Check = Callable[[], "WaitResult | None"]


def _is_part(name: str) -> bool:
    try:
        check_part(name)
    except InvalidKeyError:
        return False
    return True


class Sequencer:
    """File-lock barrier per turn (see module docstring). Safe across processes and threads.

    Args:
        data_dir: the data directory (``sequencer/`` is created inside it).
        lock_timeout_s: how long to wait for a turn's lock before LockTimeoutError (s).
        use_watchfiles: wake waiters with watchfiles (inotify); False (or watchfiles failing) = polling.
        poll_interval_s: polling period of the fallback and the re-check period with watchfiles (s).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        lock_timeout_s: float = 10.0,
        use_watchfiles: bool = True,
        poll_interval_s: float = 0.05,
    ) -> None:
        self.root = Path(data_dir) / "sequencer"
        self.root.mkdir(parents=True, exist_ok=True)
        self.lock_timeout_s = lock_timeout_s
        self.use_watchfiles = use_watchfiles
        self.poll_interval_s = poll_interval_s

    # -- paths and locks ---------------------------------------------------------------------------
    def turn_dir(self, turn_id: str) -> Path:
        """Directory of a turn. ``turn_id`` is 1-4 key parts joined by ``/`` (e.g. ``u1/s1/t000001``)."""
        if not isinstance(turn_id, str) or not turn_id:
            raise InvalidKeyError("turn_id must be a non-empty string")
        parts = turn_id.split("/")
        if len(parts) > 4:
            raise InvalidKeyError("turn_id has more than 4 parts")
        for p in parts:
            check_part(p, "turn_id part")
        return self.root.joinpath(*parts)

    @contextmanager
    def _locked(self, turn_dir: Path) -> Iterator[None]:
        lock = filelock.FileLock(str(turn_dir / "lock"), timeout=self.lock_timeout_s)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise LockTimeoutError(
                f"sequencer lock {turn_dir.name} still held after {self.lock_timeout_s}s; retry"
            ) from None
        except (FileNotFoundError, FileExistsError):
            # the turn's directory was removed (remove_turn) while we waited for its lock, or while
            # filelock recreated it (its mkdir then sees the directory exist, then not be a directory)
            raise TurnNotOpenError(f"turn {turn_dir.name} was removed (its session was closed)") from None
        try:
            yield
        finally:
            lock.release()

    @staticmethod
    def _atomic_write(path: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _required(self, d: Path, turn_id: str) -> list[str]:
        try:
            state = json.loads((d / "state.json").read_text())
        except FileNotFoundError:
            raise TurnNotOpenError(f"turn {turn_id} is not open; call open_turn (begin_turn) first") from None
        return list(state["required"])

    # -- API ------------------------------------------------------------------------------------------
    def open_turn(self, turn_id: str, required: Sequence[str] = ("shadow",)) -> None:
        """Open the barrier of ``turn_id``: ``wait`` will also wait for ``required`` agents.

        Raises TurnAlreadyOpenError if it was opened before (by any process; never a reset),
        InvalidKeyError, LockTimeoutError.
        """
        if isinstance(required, str):
            raise InvalidValueError("required must be a sequence of agent names, not a string")
        req = [check_part(a, "agent") for a in dict.fromkeys(required)]
        d = self.turn_dir(turn_id)
        for attempt in range(3):  # remove_turn may remove an empty session directory meanwhile
            try:
                d.mkdir(parents=True, exist_ok=True)
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        with self._locked(d):
            if (d / "state.json").exists():
                raise TurnAlreadyOpenError(f"turn {turn_id} is already open; reopening is not allowed")
            self._atomic_write(d / "state.json", json.dumps({"required": req, "opened_at": time.time()}))

    def is_open(self, turn_id: str) -> bool:
        """True once ``open_turn`` has completed for ``turn_id``."""
        return (self.turn_dir(turn_id) / "state.json").exists()

    def mark_written(self, turn_id: str, agent: str) -> None:
        """Record that ``agent`` committed its write for ``turn_id`` (idempotent) and wake waiters.

        Raises TurnNotOpenError, InvalidKeyError, LockTimeoutError.
        """
        check_part(agent, "agent")
        d = self.turn_dir(turn_id)
        self._required(d, turn_id)
        with self._locked(d):
            if not (d / "state.json").exists():  # removed since the check above (its session was closed)
                self._clear_locked(d)  # the lock file (and directory) taking the lock recreated
                raise TurnNotOpenError(f"turn {turn_id} was removed (its session was closed)")
            marker = d / f"written.{agent}"
            if not marker.exists():
                self._atomic_write(marker, json.dumps({"agent": agent, "at": time.time()}))

    def turn_ids(self, prefix: str) -> list[str]:
        """The turn ids one level below ``prefix`` (``u1/s1`` -> ``["u1/s1/t000001", ...]``), sorted;
        ``[]`` when there are none. Raises InvalidKeyError."""
        try:
            names = sorted(p.name for p in self.turn_dir(prefix).iterdir() if p.is_dir())
        except FileNotFoundError:
            return []
        return [f"{prefix}/{n}" for n in names if _is_part(n)]

    def last_change(self, turn_id: str) -> float | None:
        """When the turn's barrier last changed (newest mtime of its directory and files, epoch seconds),
        or None when the turn has no directory. Raises InvalidKeyError."""
        d = self.turn_dir(turn_id)
        times: list[float] = []
        with contextlib.suppress(FileNotFoundError):
            times.append(d.stat().st_mtime)
            for p in d.iterdir():
                with contextlib.suppress(FileNotFoundError):
                    times.append(p.stat().st_mtime)
        return max(times) if times else None

    def remove_turn(self, turn_id: str) -> bool:
        """Delete the turn's directory (lock, ``state.json``, markers), then its parent directory if that
        is now empty (a closed session's). Only for a turn that is over: a later ``mark_written`` or
        ``wait`` raises TurnNotOpenError, and ``is_open`` is False. Returns False when it did not exist.

        Raises InvalidKeyError, InvalidValueError (the directory holds other turns' directories),
        LockTimeoutError (a writer held the lock past ``lock_timeout_s``).
        """
        d = self.turn_dir(turn_id)
        if not d.is_dir():
            return False
        if any(p.is_dir() for p in d.iterdir()):
            raise InvalidValueError(f"{turn_id} holds other turns; remove those instead")
        try:
            with self._locked(d):
                self._clear_locked(d)
        except TurnNotOpenError:  # removed by another process meanwhile
            return False
        return True

    def _clear_locked(self, d: Path) -> None:
        """Under ``d``'s lock: unlink its files, the lock file last (waiters then retry on the path or
        find the directory gone), then the directory unless a waiter has already recreated its lock,
        and its parent if now empty."""
        for p in d.iterdir():
            if p.name != "lock":
                p.unlink(missing_ok=True)
        (d / "lock").unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # not empty: a waiter's lock file, other turns
            d.rmdir()
            if d.parent != self.root:
                d.parent.rmdir()

    def arrived(self, turn_id: str, agents: Sequence[str]) -> list[str]:
        """The subset of ``agents`` already marked for ``turn_id`` (no waiting)."""
        d = self.turn_dir(turn_id)
        return [a for a in agents if (d / f"written.{check_part(a, 'agent')}").exists()]

    def wait(self, turn_id: str, agents: Sequence[str], deadline_s: float) -> WaitResult:
        """Wait until every agent in ``agents`` plus the turn's required agents has been marked, or
        ``deadline_s`` seconds passed; never blocks past the deadline by more than one poll period.

        Raises TurnNotOpenError, InvalidKeyError, InvalidValueError (negative deadline).
        """
        if isinstance(agents, str):
            raise InvalidValueError("agents must be a sequence of agent names, not a string")
        if not isinstance(deadline_s, (int, float)) or deadline_s < 0:
            raise InvalidValueError(f"deadline_s must be a number >= 0, got {deadline_s!r}")
        start = time.monotonic()
        end = start + float(deadline_s)
        d = self.turn_dir(turn_id)
        wanted = list(dict.fromkeys([*self._required(d, turn_id), *(check_part(a, "agent") for a in agents)]))

        def done() -> WaitResult | None:
            got = set(self.arrived(turn_id, wanted))
            now = time.monotonic()
            if len(got) == len(wanted) or now >= end:
                return WaitResult.of(wanted, got, now - start)
            return None

        result = done()
        if result is not None:
            return result
        if self.use_watchfiles:
            result = self._wait_watchfiles(d, end, done)
            if result is not None:
                return result
        while True:  # polling fallback
            result = done()
            if result is not None:
                return result
            pause = min(self.poll_interval_s, max(0.0, end - time.monotonic()))
            time.sleep(pause)

    def _wait_watchfiles(self, d: Path, end: float, done: _Check) -> WaitResult | None:
        try:
            import watchfiles

            step_ms = max(1, int(self.poll_interval_s * 1000))
            for _changes in watchfiles.watch(
                d,
                watch_filter=None,
                debounce=step_ms,
                step=1,
                rust_timeout=step_ms,
                yield_on_timeout=True,
                recursive=False,
                raise_interrupt=True,
                force_polling=False,
            ):
                result = done()
                if result is not None:
                    return result
                if time.monotonic() >= end:  # pragma: no cover - done() returns at the deadline
                    break
        except (OSError, RuntimeError) as exc:  # watcher unavailable (e.g. inotify limits): poll instead
            log.warning(
                "watchfiles unavailable (%s); the sequencer falls back to polling", type(exc).__name__
            )
            return None
        return None
