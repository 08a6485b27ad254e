"""Bad files and paths given to ``coach replay`` / ``coach eval safety`` / ``coach board show`` /
``coach session close`` and bad ``coach.toml`` values: a clear error and exit 2, never a traceback,
nothing already stored lost. Each case failed before its fix (second fresh-eyes pass)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launcher.agents import AgentProblem, AgentSpecError
from launcher.cli import app
from launcher.config import ConfigError, load_config
from launcher.transcripts import TranscriptError, read_annomi, read_esconv

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "annomi_24.csv"
WIDE = {"COLUMNS": "400"}


def _no_traceback(res: Any) -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output


def _dialog(*turns: tuple[str, Any]) -> str:
    return json.dumps({"dialog": [{"speaker": s, "text": t} for s, t in turns]})


# ------------------------------------------------------------------------------------------ transcripts


def test_truncated_csv_row_is_a_bad_format_error_naming_the_line(tmp_path: Path) -> None:
    rows = EXAMPLE.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "short.csv"
    bad.write_text("\n".join([*rows[:3], "24,99,1,client"]) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match="line 4 has no value for column") as exc:
        read_annomi(bad)
    assert exc.value.code == "bad_format"
    for command in (["eval", "safety", str(bad)], ["replay", str(bad)]):
        res = CliRunner().invoke(app, command, env=WIDE)
        assert res.exit_code == 2, res.output
        _no_traceback(res)
        assert "line 4" in res.output


def test_esconv_text_that_is_not_a_string_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    f.write_text(_dialog(("usr", None)) + "\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match="line 1 is not an ESConv dialog") as exc:
        read_esconv(f, 0)  # it was replayed as the message "None"
    assert exc.value.code == "bad_format"


def test_empty_esconv_file_says_it_holds_no_dialogs(tmp_path: Path) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_text("\n\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["replay", str(f), "--dialog", "0"], env=WIDE)
    assert res.exit_code == 2 and "holds no ESConv dialogs" in res.output, res.output
    res = CliRunner().invoke(app, ["eval", "safety", str(f)], env=WIDE)
    assert res.exit_code == 2 and "holds no transcripts" in res.output, res.output  # was: exit 0, "0 turns"


def test_uic_folder_without_patient_asks_for_one(tmp_path: Path) -> None:
    (tmp_path / "patient7.csv").write_text(
        "id,speaker,utterance,stage\n1,Patient,hi,goal_setting\n", encoding="utf-8"
    )
    res = CliRunner().invoke(app, ["replay", str(tmp_path)], env=WIDE)
    assert res.exit_code == 2, res.output
    assert "give --patient N" in res.output and "None" not in res.output


# ------------------------------------------------------------------------------------------ eval safety


def test_eval_safety_skips_a_dialog_without_user_turns_instead_of_failing(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    f.write_text(
        _dialog(("usr", "I feel low"), ("sys", "ok"))
        + "\n"
        + _dialog(("sys", "hello?"))
        + "\n"
        + _dialog(("usr", "work is hard"))
        + "\n",
        encoding="utf-8",
    )
    res = CliRunner().invoke(app, ["eval", "safety", str(f), "--json"], env=WIDE)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["turns"] == 2 and doc["skipped_without_user_turns"] == ["1"]
    res = CliRunner().invoke(app, ["eval", "safety", str(f), "--id", "1"], env=WIDE)
    assert res.exit_code == 2 and "no user utterances" in res.output  # named explicitly: still an error


# ------------------------------------------------------------------------------------------ replay


@pytest.fixture
def failing_runtime(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A runtime that fails like a missing agents folder, after the --out file would have been opened."""
    started: list[Any] = []

    @contextlib.asynccontextmanager
    async def fake_runtime(config: Any, **kw: Any) -> AsyncIterator[Any]:
        started.append(config)
        raise AgentSpecError(
            [
                AgentProblem(
                    "agents", 0, None, "the agents directory is missing", "set [agents] dir in coach.toml"
                )
            ]
        )
        yield  # pragma: no cover

    monkeypatch.setattr("launcher.pipeline._runtime.coach_runtime", fake_runtime)
    return started


def test_replay_out_that_is_a_folder_or_under_a_file_is_refused_before_any_turn(
    tmp_path: Path, failing_runtime: list[Any]
) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("keep")
    for out in (tmp_path, a_file / "x.jsonl"):
        res = CliRunner().invoke(app, ["replay", str(EXAMPLE), "--out", str(out)], env=WIDE)
        assert res.exit_code == 2, res.output
        _no_traceback(res)
        assert f"--out {out} cannot be written" in res.output
    assert not failing_runtime and a_file.read_text() == "keep"


def test_replay_failing_at_start_keeps_an_existing_out_file_and_prints_brackets(
    tmp_path: Path, failing_runtime: list[Any]
) -> None:
    out = tmp_path / "turns.jsonl"
    out.write_text('{"earlier": "run"}\n')
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n')
    res = CliRunner().invoke(app, ["replay", str(EXAMPLE), "--out", str(out), "--config", str(cfg)], env=WIDE)
    assert res.exit_code == 2, res.output
    assert failing_runtime
    assert out.read_text() == '{"earlier": "run"}\n'  # was truncated before the runtime started
    assert "set [agents] dir in coach.toml" in res.output  # rich markup ate "[agents]"


def test_replay_bad_session_prefix_names_the_option() -> None:
    res = CliRunner().invoke(app, ["replay", str(EXAMPLE), "--session-prefix", "x/y"], env=WIDE)
    assert res.exit_code == 2, res.output
    assert "--session-prefix" in res.output and "--user" not in res.output


def test_replay_option_of_another_format_reads_well() -> None:
    res = CliRunner().invoke(app, ["replay", str(EXAMPLE), "--dialog", "1"], env=WIDE)
    assert res.exit_code == 2 and "is an AnnoMI file: address it with --transcript-id" in res.output


# ------------------------------------------------------------------------------------------ board, session


def _stored_turn(data: Path, user: str = "u1", session: str = "s1") -> None:
    from blackboard import Blackboard, profile_key

    board = Blackboard(data)
    try:
        board.begin_turn(user, session)
        board.store.write(
            profile_key(user),
            {"user": user, "goals": ["run [/x] 5k", "[bold]rest"]},
            expected_version=0,
            author="supervisor",
        )
    finally:
        board.close()


def test_board_show_prints_brackets_in_paths_and_profile_verbatim(tmp_path: Path) -> None:
    data = tmp_path / "a[" / "b]"  # "[/b]" in the path made rich raise MarkupError
    _stored_turn(data)
    res = CliRunner().invoke(app, ["board", "show", "-u", "u1"], env={"COACH_DATA_DIR": str(data), **WIDE})
    assert res.exit_code == 0, (res.output, res.exception)
    assert str(data / "blackboard.sqlite3") in res.output
    assert '"run [/x] 5k", "[bold]rest"' in res.output


def test_session_close_on_a_missing_data_dir_creates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "typo" / "data"
    res = CliRunner().invoke(
        app, ["session", "close", "-u", "u1", "-s", "s1"], env={"COACH_DATA_DIR": str(data), **WIDE}
    )
    assert res.exit_code == 2, res.output
    assert "no blackboard in" in res.output and "nothing was closed or created" in res.output
    assert not (tmp_path / "typo").exists()  # it used to create the folders and an empty store


def test_session_close_still_closes_a_stored_session(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _stored_turn(data)
    res = CliRunner().invoke(
        app, ["session", "close", "-u", "u1", "-s", "s1", "--json"], env={"COACH_DATA_DIR": str(data), **WIDE}
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["session"] == "s1"


# ------------------------------------------------------------------------------------------ config


def test_config_value_error_quotes_the_value_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(None, env={"COACH_UPSTREAM_URL": "ftp://x"})
    text = str(exc.value)
    assert text.count("'ftp://x'") == 1 and "Value error" not in text


def test_config_fix_hint_names_the_section(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[proxy]\nport = "abc"\n')
    with pytest.raises(ConfigError) as exc:
        load_config(cfg, env={})
    assert "see [proxy] in docs/configuration.md" in str(exc.value) and "[section]" not in str(exc.value)
    doc = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
    assert "[proxy]" in doc.read_text(), "the page the hint names documents the section"


def test_config_that_is_a_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder, not a TOML file"):
        load_config(tmp_path, env={})


# ------------------------------------------------------------------------------------------ --proxy-url / --mcp-url


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [["run", "hello", "-s", "s1"], ["chat"], ["replay", str(EXAMPLE)]])
def test_bad_or_dead_service_url_is_refused_before_any_agent(
    tmp_path: Path, failing_runtime: list[Any], command: list[str]
) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n')
    dead = f"http://127.0.0.1:{_free_port()}"
    for option, url, expected in (
        ("--proxy-url", "notaurl", "is not an http(s) URL"),
        ("--mcp-url", "ftp://x/mcp", "is not an http(s) URL"),
        ("--mcp-url", "http://127.0.0.1:99999/mcp", "is not an http(s) URL"),
        ("--proxy-url", dead, "nothing answers there"),
    ):
        res = CliRunner().invoke(app, [*command, "-u", "u1", "--config", str(cfg), option, url], env=WIDE)
        assert res.exit_code == 2, res.output
        _no_traceback(res)
        assert f"error: {option}" in res.output and expected in res.output
    assert not failing_runtime  # every agent used to fail ("Invalid URL", HTTP 529) and the turn exited 0


def test_a_listening_service_url_passes_the_check(tmp_path: Path, failing_runtime: list[Any]) -> None:
    import socket

    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "d"}"\n')
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        url = f"http://127.0.0.1:{srv.getsockname()[1]}"
        res = CliRunner().invoke(
            app,
            [
                "run",
                "hello",
                "-u",
                "u1",
                "-s",
                "s1",
                "--config",
                str(cfg),
                "--proxy-url",
                url,
                "--mcp-url",
                url + "/mcp",
            ],
            env=WIDE,
        )
    assert failing_runtime, res.output  # the check let it through to the runtime


def test_tilde_in_data_and_agents_dir_is_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = tmp_path / "c.toml"
    cfg.write_text('[agents]\ndir = "~/agents"\n')
    config = load_config(cfg, env={"COACH_DATA_DIR": "~/coach-data"})
    assert config.data.dir == tmp_path / "coach-data"  # was Path("~/coach-data"): a folder named "~"
    assert config.agents.dir == tmp_path / "agents"


def test_board_show_does_not_flag_a_crisis_turn_as_missing_every_agent(tmp_path: Path) -> None:
    from blackboard import Blackboard, turn_entry_key

    data = tmp_path / "data"
    board = Blackboard(data)
    try:
        turn = board.begin_turn("u1", "s1")
        board.store.write(
            turn_entry_key("u1", "s1", turn, "record"),
            {"crisis_tier": 3, "synthesis_source": "crisis", "missing": []},
            expected_version=0,
            author="supervisor",
        )
    finally:
        board.close()
    env = {"COACH_DATA_DIR": str(data), **WIDE}
    res = CliRunner().invoke(app, ["board", "show", "-u", "u1"], env=env)
    assert res.exit_code == 0, res.output
    assert f"turn {turn}: crisis response only (safety tier 3)" in res.output
    assert "has no entry from" not in res.output  # was red: "no entry from: coach, shadow, ... pineal"
    doc = json.loads(CliRunner().invoke(app, ["board", "show", "-u", "u1", "--json"], env=env).output)
    assert doc["sessions"][0]["turns"][0]["synthesis_source"] == "crisis"


def test_read_only_data_dir_is_explained_not_called_a_broken_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a read-only folder SQLite (WAL) cannot open even to read; the store said "not a usable
    blackboard database ... move it aside", wrong advice for an intact database. The test runs as any
    user (root ignores modes), so the read-only folder is os.access's answer: the boundary is faked."""
    import os

    data = tmp_path / "data"
    _stored_turn(data)
    before = (data / "blackboard.sqlite3").read_bytes()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: False if Path(p) == data else real_access(p, mode, **kw)
    )
    for command in (["board", "show", "-u", "u1"], ["serve", "--proxy-port", "0", "--mcp-port", "0"]):
        cfg = tmp_path / "coach.toml"
        cfg.write_text(f'[data]\ndir = "{data}"\n[agents]\ndir = "{ROOT / "agents"}"\n')
        res = CliRunner().invoke(app, [*command, "--config", str(cfg)], env=WIDE)
        assert res.exit_code == 2, res.output
        assert "is read-only" in res.output and "move it aside" not in res.output
    res = CliRunner().invoke(app, ["mcp", "--http", "--port", "0", "--data-dir", str(data)], env=WIDE)
    assert res.exit_code == 2 and "is read-only" in res.output, res.output
    assert (data / "blackboard.sqlite3").read_bytes() == before
