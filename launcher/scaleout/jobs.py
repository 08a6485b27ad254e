"""The turn-job message on the broker: ids only (docs/scale-out.md).

The user's message text lives in the job row in PostgreSQL (``blackboard._pg_jobs``); a broker message
only says "there is work": which job (its id is the pointer to the row), for which user and session,
and the job's ``seq`` (its place in the session's order). Hints (``kind="hint"``) tell the worker that
holds a session's lease that a job of that session is waiting. ``requeues`` (written only when above 0)
counts how often a worker put a dead-lettered job back on the queue because it had not really been
attempted that often (``launcher.scaleout.worker.Worker.on_dead``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

from blackboard._keys import check_part

__all__ = ["JobMessage", "decode", "encode"]

VERSION = 1


@dataclass(frozen=True)
class JobMessage:
    job_id: str
    user: str
    session: str
    seq: int
    kind: Literal["job", "hint"] = "job"
    requeues: int = 0


def encode(msg: JobMessage) -> bytes:
    d = asdict(msg)
    if not msg.requeues:
        del d["requeues"]
    return json.dumps({"v": VERSION, **d}, separators=(",", ":")).encode()


def decode(body: bytes) -> JobMessage:
    """Raises ValueError for anything that is not a turn-job message of this version."""
    try:
        d = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a turn-job message: {exc}") from None
    if not isinstance(d, dict) or d.get("v") != VERSION:
        raise ValueError("not a turn-job message of version 1")
    try:
        msg = JobMessage(
            str(d["job_id"]),
            str(d["user"]),
            str(d["session"]),
            int(d["seq"]),
            "hint" if d.get("kind") == "hint" else "job",
            max(0, int(d.get("requeues") or 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"turn-job message lacks a field: {exc}") from None
    for part, what in ((msg.job_id, "job id"), (msg.user, "user"), (msg.session, "session")):
        check_part(part, what)
    return msg
