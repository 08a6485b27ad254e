"""Readers for real coaching transcripts: the user side, split into sessions.

Three formats (the corpora in ``../shared/data``, see its README for licences and citations):

- **AnnoMI CSV** (Wu et al., ICASSP 2022; Future Internet 15(3):110, 2023), one transcript per
  ``transcript_id``. The user is the ``client``. Rows are deduplicated on (``transcript_id``,
  ``utterance_id``) because some transcripts were labelled by several annotators; the utterance's
  ``label`` is the majority ``client_talk_type`` over annotators (ties: the first seen). An optional
  ``session`` column (our ``examples/`` files add it) splits a transcript into sessions; without it the
  whole transcript is one session.
- **ESConv JSONL** (Liu et al., ACL 2021), one dialog per line, addressed by its 0-based line index.
  The user is the seeker (``speaker == "usr"``); one dialog is one session.
- **UIC health-coaching CSV** (Gupta et al., SIGDIAL 2020), one patient per file ``patient<N>.csv``.
  The user is the ``Patient``. The human-labelled ``stage`` column marks the start of each weekly
  SMART-goal cycle with ``goal_setting`` (dataset README); each cycle becomes a session. Rows before the
  first marker belong to the first cycle; cycles without a patient message are dropped.

Consecutive messages of the user with no reply in between (ESConv and UIC split one turn over several
messages) are merged into one utterance, joined by a newline; ``Utterance.index`` is the first one's.

Errors: every reader raises :class:`TranscriptError` (``code`` names the problem) saying what was wrong
and, for a wrong id, which ids exist.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from launcher.errors import LauncherError

__all__ = [
    "Source",
    "Transcript",
    "TranscriptError",
    "Utterance",
    "detect_source",
    "iter_transcripts",
    "list_ids",
    "read_annomi",
    "read_esconv",
    "read_transcript",
    "read_uic",
]

Source = Literal["annomi", "esconv", "uic"]

_ANNOMI_REQUIRED = ("transcript_id", "utterance_id", "interlocutor", "utterance_text")
_UIC_REQUIRED = ("speaker", "utterance", "stage", "id")
_UIC_FILE = re.compile(r"^patient(\d+)\.csv$")


class TranscriptError(LauncherError, ValueError):
    """A transcript file, format or id that cannot be read. ``code`` is one of ``not_found``,
    ``bad_format``, ``unknown_id``, ``empty``; never retryable (fix the input)."""

    code = "transcript_error"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, retryable=False)


@dataclass(frozen=True)
class Utterance:
    """One user turn. ``index``: its position in the source (AnnoMI ``utterance_id``, ESConv turn index,
    UIC row ``id``); ``label``: AnnoMI's majority ``client_talk_type`` (else None); ``timestamp``: as
    given in the source (AnnoMI ``hh:mm:ss`` into the video, UIC ``YYYY-mm-dd HH:MM:SS``) or None."""

    text: str
    index: int
    label: str | None = None
    timestamp: str | None = None


@dataclass(frozen=True)
class Transcript:
    """The user side of one conversation: ``sessions`` in order, each a non-empty list of utterances.
    ``meta`` holds the source's descriptive fields (e.g. AnnoMI ``topic``, ESConv ``problem_type``)."""

    source: Source
    id: str
    sessions: list[list[Utterance]]
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def utterances(self) -> list[Utterance]:
        """All utterances of all sessions, in order."""
        return [u for s in self.sessions for u in s]


def detect_source(path: Path | str) -> Source:
    """The format of ``path``: ``annomi`` (CSV with an ``interlocutor`` column), ``uic`` (a folder of
    ``patient<N>.csv`` or one such CSV), ``esconv`` (``.jsonl``). Raises TranscriptError."""
    p = _existing(path)
    if p.is_dir():
        if any(_UIC_FILE.match(f.name) for f in p.iterdir()):
            return "uic"
        raise TranscriptError("bad_format", f"{p} is a folder without patient<N>.csv files (UIC format)")
    if p.suffix == ".jsonl":
        return "esconv"
    if p.suffix == ".csv":
        header = _csv_header(p)
        if set(_ANNOMI_REQUIRED) <= set(header):
            return "annomi"
        if set(_UIC_REQUIRED) <= set(header):
            return "uic"
        raise TranscriptError(
            "bad_format",
            f"{p}: CSV columns {header} match neither AnnoMI (needs {list(_ANNOMI_REQUIRED)}) "
            f"nor UIC (needs {list(_UIC_REQUIRED)})",
        )
    raise TranscriptError("bad_format", f"{p}: expected an AnnoMI/UIC .csv, an ESConv .jsonl or a UIC folder")


def list_ids(path: Path | str) -> list[str]:
    """The transcript ids in ``path`` (AnnoMI transcript ids, ESConv line indexes, UIC patient numbers),
    sorted numerically where they are numbers."""
    p = _existing(path)
    source = detect_source(p)
    if source == "annomi":
        return _sorted_ids({r["transcript_id"] for r in _annomi_rows(p)})
    if source == "esconv":
        return [str(i) for i in range(len(_esconv_lines(p)))]
    if p.is_dir():
        return _sorted_ids({m.group(1) for f in p.iterdir() if (m := _UIC_FILE.match(f.name))})
    return [_uic_patient_of(p)]


def read_transcript(path: Path | str, transcript_id: str | int | None = None) -> Transcript:
    """Read one transcript, detecting the format (see :func:`detect_source`). ``transcript_id`` may be
    omitted only where the file holds exactly one transcript (an example file, a UIC patient file)."""
    p = _existing(path)
    source = detect_source(p)
    if source == "annomi":
        return read_annomi(p, transcript_id)
    if source == "esconv":
        if transcript_id is None:
            raise TranscriptError("unknown_id", f"{p}: give a dialog index (0..{len(_esconv_lines(p)) - 1})")
        return read_esconv(p, transcript_id)
    return read_uic(p, transcript_id)


def read_annomi(path: Path | str, transcript_id: str | int | None = None) -> Transcript:
    """The client utterances of one AnnoMI transcript (one session, or one per ``session`` value in
    first-seen order). ``transcript_id`` may be omitted when the file holds one transcript."""
    p = _existing(path)
    rows = _annomi_rows(p)
    ids = _sorted_ids({r["transcript_id"] for r in rows})
    if transcript_id is None:
        if len(ids) != 1:
            raise TranscriptError(
                "unknown_id", f"{p} holds {len(ids)} transcripts; give one of: {_show(ids)}"
            )
        transcript_id = ids[0]
    tid = str(transcript_id).strip()
    mine = [r for r in rows if r["transcript_id"] == tid]
    if not mine:
        raise TranscriptError("unknown_id", f"{p}: no AnnoMI transcript_id {tid!r}; ids: {_show(ids)}")
    labels: dict[int, list[str]] = {}
    first: dict[int, dict[str, str]] = {}
    for r in mine:
        if r["interlocutor"].strip().lower() != "client":
            continue
        uid = _int(r["utterance_id"], p, "utterance_id")
        first.setdefault(uid, r)
        talk = (r.get("client_talk_type") or "").strip()
        if talk and talk != "n/a":
            labels.setdefault(uid, []).append(talk)
    sessions: dict[str, list[Utterance]] = {}
    for uid in sorted(first):
        r = first[uid]
        text = r["utterance_text"].strip()
        if not text:
            continue
        label = Counter(labels[uid]).most_common(1)[0][0] if uid in labels else None
        utt = Utterance(text=text, index=uid, label=label, timestamp=(r.get("timestamp") or None))
        sessions.setdefault((r.get("session") or "1").strip(), []).append(utt)
    meta = {
        k: mine[0][k].strip() for k in ("mi_quality", "topic", "video_title", "video_url") if mine[0].get(k)
    }
    return _transcript("annomi", tid, list(sessions.values()), meta, p)


def read_esconv(path: Path | str, dialog_index: str | int) -> Transcript:
    """The seeker turns of ESConv dialog number ``dialog_index`` (0-based line of the JSONL), one session."""
    p = _existing(path)
    lines = _esconv_lines(p)
    try:
        idx = int(str(dialog_index).strip())
    except ValueError:
        idx = -1
    if not lines:
        raise TranscriptError("empty", f"{p} holds no ESConv dialogs (no non-blank lines)")
    if not 0 <= idx < len(lines):
        raise TranscriptError(
            "unknown_id", f"{p}: dialog index {dialog_index!r} is not in 0..{len(lines) - 1} (0-based line)"
        )
    try:
        obj = json.loads(lines[idx])
        turns = [(i, t["speaker"], t["text"]) for i, t in enumerate(obj["dialog"])]
        if not all(isinstance(speaker, str) and isinstance(text, str) for _, speaker, text in turns):
            raise TypeError("dialog[].speaker and dialog[].text must be strings")
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise TranscriptError(
            "bad_format", f"{p}: line {idx + 1} is not an ESConv dialog with dialog[].speaker/.text ({exc!r})"
        ) from None
    meta = {k: str(obj[k]) for k in ("emotion_type", "problem_type", "experience_type") if k in obj}
    session = _merge([(i, text, None) for i, speaker, text in turns if speaker == "usr"])
    return _transcript("esconv", str(idx), [session], meta, p)


def read_uic(path: Path | str, patient: str | int | None = None) -> Transcript:
    """The patient messages of one UIC patient, one session per goal cycle. ``path`` is a
    ``patient<N>.csv`` (``patient`` optional; must match N) or the folder holding them."""
    p = _existing(path)
    if p.is_dir():
        ids = list_ids(p)
        if patient is None:
            raise TranscriptError(
                "unknown_id", f"{p} is a UIC folder: give --patient N; patients: {_show(ids)}"
            )
        if str(patient).strip() not in ids:
            raise TranscriptError("unknown_id", f"{p}: no patient {patient!r}; patients: {_show(ids)}")
        p = p / f"patient{str(patient).strip()}.csv"
    pid = _uic_patient_of(p)
    if patient is not None and str(patient).strip() != pid:
        raise TranscriptError("unknown_id", f"{p} holds patient {pid}, not {patient!r}")
    rows = _read_csv(p, _UIC_REQUIRED)
    rows.sort(key=lambda r: _int(r["id"], p, "id"))
    cycles: dict[int, list[tuple[int, str, str | None]]] = {}
    cycle = 0
    for pos, r in enumerate(rows):
        if r["stage"].strip() == "goal_setting":
            cycle += 1
        if r["speaker"].strip().lower() != "patient":
            continue
        # each cycle gets positions (row order), so _merge joins messages with no coach reply between
        cycles.setdefault(max(cycle, 1), []).append((pos, r["utterance"], r.get("time") or None))
    sessions = [
        _merge(items, ids=[_int(rows[i]["id"], p, "id") for i, _, _ in items]) for items in cycles.values()
    ]
    return _transcript("uic", pid, sessions, {}, p)


def iter_transcripts(path: Path | str) -> Iterator[Transcript]:
    """Every transcript in ``path``, in id order (skips none; errors propagate)."""
    for tid in list_ids(path):
        yield read_transcript(path, tid)


# ---------------------------------------------------------------------------------------------- helpers


def _existing(path: Path | str) -> Path:
    p = Path(path)
    if not p.exists():
        raise TranscriptError("not_found", f"transcript file {p} does not exist")
    return p


def _csv_header(p: Path) -> list[str]:
    try:
        with p.open(newline="", encoding="utf-8") as f:
            return next(csv.reader(f), [])
    except UnicodeDecodeError:
        raise TranscriptError("bad_format", f"{p} is not UTF-8 text") from None


def _read_csv(p: Path, required: Iterable[str]) -> list[dict[str, str]]:
    """The rows of ``p`` as dicts; a row that lacks one of the ``required`` columns (a truncated line),
    a file that is not UTF-8 or not CSV is a ``bad_format`` TranscriptError naming the line."""
    required = list(required)
    missing = [c for c in required if c not in _csv_header(p)]
    if missing:
        raise TranscriptError("bad_format", f"{p}: missing CSV column(s) {missing}")
    rows: list[dict[str, str]] = []
    try:
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            for row in reader:
                short = [c for c in required if row.get(c) is None]
                if short:
                    raise TranscriptError(
                        "bad_format",
                        f"{p}: line {reader.line_num} has no value for column(s) {short} (a truncated row?). "
                        "Fix: give every row all the header's columns",
                    )
                rows.append(row)
    except UnicodeDecodeError:
        raise TranscriptError("bad_format", f"{p} is not UTF-8 text") from None
    except csv.Error as exc:
        raise TranscriptError("bad_format", f"{p}: not a readable CSV file ({exc})") from None
    return rows


def _annomi_rows(p: Path) -> list[dict[str, str]]:
    return _read_csv(p, _ANNOMI_REQUIRED)


def _esconv_lines(p: Path) -> list[str]:
    try:
        return [line for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        raise TranscriptError("bad_format", f"{p} is not UTF-8 text") from None


def _uic_patient_of(p: Path) -> str:
    m = _UIC_FILE.match(p.name)
    if not m:
        raise TranscriptError("bad_format", f"{p}: a UIC file must be named patient<N>.csv")
    return m.group(1)


def _int(value: str, p: Path, column: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise TranscriptError(
            "bad_format", f"{p}: column {column} holds {value!r}, expected an integer"
        ) from None


def _merge(items: list[tuple[int, str, str | None]], ids: list[int] | None = None) -> list[Utterance]:
    """Utterances from (position, text, timestamp); adjacent positions (no reply between) are joined.
    ``ids`` (same length) replaces the positions as ``Utterance.index``."""
    out: list[Utterance] = []
    last = -2
    for k, (pos, text, ts) in enumerate(items):
        text = text.strip()
        if not text:
            continue
        if out and pos == last + 1:
            prev = out[-1]
            out[-1] = Utterance(text=f"{prev.text}\n{text}", index=prev.index, timestamp=prev.timestamp)
        else:
            out.append(Utterance(text=text, index=ids[k] if ids is not None else pos, timestamp=ts))
        last = pos
    return out


def _transcript(
    source: Source, tid: str, sessions: list[list[Utterance]], meta: dict[str, str], p: Path
) -> Transcript:
    kept = [s for s in sessions if s]
    if not kept:
        raise TranscriptError("empty", f"{p}: {source} transcript {tid} has no user utterances")
    return Transcript(source=source, id=tid, sessions=kept, meta=meta)


def _sorted_ids(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s))


def _show(ids: list[str], limit: int = 40) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")
