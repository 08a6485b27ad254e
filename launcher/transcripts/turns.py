"""The user turns of transcript files as :class:`EvalTurn` (what ``coach eval safety`` screens and
``python -m launcher.safety._train`` trains on)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["EvalTurn", "turns_from_file"]


@dataclass(frozen=True)
class EvalTurn:
    """One user turn: ``session_key`` groups turns that share a :class:`SafetyState`; ``location`` is a
    human-readable address ("esconv:127 session 1 turn 7") printed instead of the text."""

    session_key: str
    location: str
    text: str


def turns_from_file(
    path: Path, ids: list[str] | None = None, skipped: list[str] | None = None
) -> Iterator[EvalTurn]:
    """The user turns of every transcript in ``path`` (or only ``ids``), via :mod:`launcher.transcripts`.

    Without ``ids``, a transcript with no user turn (an ESConv dialog of only supporter turns) is
    skipped and its id appended to ``skipped`` (when given) instead of ending the whole run; one named
    in ``ids`` is an error.

    Raises:
        launcher.transcripts.TranscriptError: unreadable file, unknown format or id, a named transcript
            without user turns, or a file holding no transcript at all (code ``empty``).
    """
    from launcher.transcripts import TranscriptError, detect_source, list_ids, read_transcript

    source = detect_source(path)
    wanted = ids or list_ids(path)
    if not wanted:
        raise TranscriptError("empty", f"{path} holds no transcripts. Fix: pass a non-empty transcript file")
    for tid in wanted:
        try:
            transcript = read_transcript(path, tid)
        except TranscriptError as exc:
            if ids or exc.code != "empty":
                raise
            if skipped is not None:
                skipped.append(tid)
            continue
        for s_no, session in enumerate(transcript.sessions, start=1):
            key = f"{source}:{transcript.id}:{s_no}"
            for utt in session:
                yield EvalTurn(key, f"{source}:{transcript.id} session {s_no} turn {utt.index}", utt.text)
