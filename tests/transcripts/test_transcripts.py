"""launcher.transcripts on the real corpora in ../shared/data and on the example in examples/."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from launcher.transcripts import (
    Transcript,
    TranscriptError,
    detect_source,
    iter_transcripts,
    list_ids,
    read_annomi,
    read_esconv,
    read_transcript,
    read_uic,
)

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
ANNOMI = DATA / "annomi" / "AnnoMI-dev.csv"
ESCONV = DATA / "esconv" / "ESConv-test.jsonl"
UIC = DATA / "uic_health_coaching"
EXAMPLE = REPO / "examples" / "annomi_24.csv"

needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data folder {DATA} is absent")


def _raw_annomi() -> list[dict[str, str]]:
    with ANNOMI.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _assert_well_formed(t: Transcript) -> None:
    assert t.sessions and all(t.sessions)
    for u in t.utterances:
        assert u.text == u.text.strip() and u.text


# ------------------------------------------------------------------------------------------- AnnoMI
@needs_data
def test_annomi_ids_and_one_transcript() -> None:
    ids = list_ids(ANNOMI)
    assert len(ids) == 93 and ids[:3] == ["1", "2", "4"]
    t = read_annomi(ANNOMI, 24)
    _assert_well_formed(t)
    assert (t.source, t.id, len(t.sessions)) == ("annomi", "24", 1)
    assert [u.index for u in t.utterances] == [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21]
    assert t.utterances[3].text == "Sure. I can quit." and t.utterances[3].label == "change"
    assert t.utterances[0].timestamp == "00:00:15"
    assert t.meta["mi_quality"] == "high" and t.meta["topic"] == "smoking cessation"


@needs_data
def test_annomi_deduplicates_multi_annotator_transcripts_with_majority_label() -> None:
    raw = _raw_annomi()
    annotators: dict[str, set[str]] = {}
    for r in raw:
        annotators.setdefault(r["transcript_id"], set()).add(r["annotator_id"])
    multi = sorted((tid for tid, a in annotators.items() if len(a) > 1), key=int)
    assert multi, "the corpus README says some transcripts were labelled by several annotators"
    tid = multi[0]
    client_rows = [r for r in raw if r["transcript_id"] == tid and r["interlocutor"] == "client"]
    unique_ids = {int(r["utterance_id"]) for r in client_rows}
    t = read_annomi(ANNOMI, tid)
    assert len(client_rows) > len(unique_ids)
    assert [u.index for u in t.utterances] == sorted(unique_ids)
    for u in t.utterances:
        votes = [r["client_talk_type"] for r in client_rows if int(r["utterance_id"]) == u.index]
        assert votes.count(u.label) == max(votes.count(v) for v in set(votes))


@needs_data
def test_annomi_unknown_id_lists_the_ids() -> None:
    with pytest.raises(TranscriptError) as e:
        read_transcript(ANNOMI, "9999")
    assert e.value.code == "unknown_id" and "9999" in str(e.value) and "1, 2, 4" in str(e.value)
    with pytest.raises(TranscriptError, match="holds 93 transcripts"):
        read_annomi(ANNOMI)


# ------------------------------------------------------------------------------------------- ESConv
@needs_data
def test_esconv_seeker_turns_merged_between_supporter_replies() -> None:
    assert len(list_ids(ESCONV)) == 195
    first = json.loads(ESCONV.read_text(encoding="utf-8").splitlines()[0])
    t = read_transcript(ESCONV, 0)
    _assert_well_formed(t)
    assert (t.source, t.id, len(t.sessions)) == ("esconv", "0", 1)
    seeker = [d["text"].strip() for d in first["dialog"] if d["speaker"] == "usr"]
    assert "\n".join(u.text for u in t.utterances) == "\n".join(seeker)
    assert t.utterances[0].text == "hi i am okay, a little bit sad though"
    # turns 5 and 6 are both the seeker's: one utterance
    assert t.utterances[2].index == 5 and t.utterances[2].text.count("\n") == 1
    assert t.meta["problem_type"] == first["problem_type"]


@needs_data
@pytest.mark.parametrize("bad", ["195", "-1", "x"])
def test_esconv_bad_index(bad: str) -> None:
    with pytest.raises(TranscriptError, match=r"0\.\.194") as e:
        read_esconv(ESCONV, bad)
    assert e.value.code == "unknown_id"


@needs_data
def test_every_esconv_dialog_reads() -> None:
    assert sum(len(t.utterances) for t in iter_transcripts(ESCONV)) > 195


# ---------------------------------------------------------------------------------------------- UIC
@needs_data
def test_uic_goal_cycles_become_sessions() -> None:
    ids = list_ids(UIC)
    assert len(ids) == 26 and "10" not in ids and "15" not in ids
    with (UIC / "patient5.csv").open(newline="", encoding="utf-8") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["id"]))
    assert sum(r["stage"] == "goal_setting" for r in rows) == 8
    t = read_uic(UIC, "5")
    _assert_well_formed(t)
    assert (t.source, t.id, len(t.sessions)) == ("uic", "5", 8)
    starts = [int(r["id"]) for r in rows if r["stage"] == "goal_setting"]
    for k, session in enumerate(t.sessions):  # every utterance lies inside its own goal cycle
        end = starts[k + 1] if k + 1 < len(starts) else 10**9
        assert all(starts[k] <= u.index < end for u in session)
    patient_texts = [
        r["utterance"].strip() for r in rows if r["speaker"] == "Patient" and r["utterance"].strip()
    ]
    assert "\n".join(u.text for u in t.utterances) == "\n".join(patient_texts)
    assert t.utterances[0].text == "Ok thanks\nI already did over 2000 steps"


@needs_data
def test_uic_file_and_folder_agree_and_short_patients() -> None:
    assert read_transcript(UIC / "patient13.csv") == read_uic(UIC, 13)
    assert len(read_uic(UIC, 13).sessions) == 2  # patient 13 did not complete the study
    # patient 28's first goal_setting mark is on its second row: the first row still belongs to cycle 1
    assert len(read_uic(UIC, 28).sessions) == 9


@needs_data
def test_uic_wrong_patient() -> None:
    with pytest.raises(TranscriptError, match="patients: 3, 4, 5") as e:
        read_uic(UIC, 1)
    assert e.value.code == "unknown_id"
    with pytest.raises(TranscriptError, match="holds patient 5, not '6'"):
        read_uic(UIC / "patient5.csv", "6")


# --------------------------------------------------------------------------------- formats & errors
@needs_data
def test_detect_source() -> None:
    assert detect_source(ANNOMI) == "annomi"
    assert detect_source(ESCONV) == "esconv"
    assert detect_source(UIC) == "uic" and detect_source(UIC / "patient3.csv") == "uic"
    for bad in (DATA / "README.md", UIC / "HC_r2_demographics.csv", DATA):
        with pytest.raises(TranscriptError) as e:
            detect_source(bad)
        assert e.value.code == "bad_format"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="does not exist") as e:
        read_transcript(tmp_path / "nope.csv", 1)
    assert e.value.code == "not_found"


def test_malformed_inputs(tmp_path: Path) -> None:
    bad_csv = tmp_path / "x.csv"
    bad_csv.write_text(
        "transcript_id,utterance_id,interlocutor,utterance_text\n7,one,client,hi\n", encoding="utf-8"
    )
    with pytest.raises(TranscriptError, match="utterance_id holds 'one'"):
        read_annomi(bad_csv, 7)
    therapist_only = tmp_path / "t.csv"
    therapist_only.write_text("transcript_id,utterance_id,interlocutor,utterance_text\n7,0,therapist,hi\n")
    with pytest.raises(TranscriptError, match="no user utterances") as e:
        read_annomi(therapist_only)
    assert e.value.code == "empty"
    jl = tmp_path / "d.jsonl"
    jl.write_text('{"dialog": [{"text": "hi"}]}\n', encoding="utf-8")
    with pytest.raises(TranscriptError, match="line 1 is not an ESConv dialog") as e:
        read_esconv(jl, 0)
    assert e.value.code == "bad_format"
    uic = tmp_path / "notapatient.csv"
    uic.write_text("speaker,utterance,stage,id\nPatient,hi,goal_setting,0\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"patient<N>\.csv"):
        read_transcript(uic)


# ------------------------------------------------------------------------------------------ example
def test_example_has_two_sessions() -> None:
    example = read_transcript(EXAMPLE)
    assert (example.source, example.id, [len(s) for s in example.sessions]) == ("annomi", "24", [5, 6])


@needs_data
def test_example_is_a_verbatim_copy() -> None:
    example = read_transcript(EXAMPLE)
    original = read_annomi(ANNOMI, example.id)
    assert example.utterances == original.utterances
    assert example.meta == original.meta and example.meta["mi_quality"] == "high"
