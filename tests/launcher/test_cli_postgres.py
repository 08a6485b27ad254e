"""The commands on a PostgreSQL ``[data] url``: ``coach db upgrade`` (creates, then nothing to do; a newer
schema refused), ``coach board show`` reading the entries a turn wrote there, and plain errors for an
unreachable server."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from blackboard import Blackboard
from blackboard._pg_conn import connect
from blackboard._pg_schema import LATEST_VERSION
from launcher.cli import app
from testsupport.postgres import PgTarget

from ..blackboard._workers import SHADOW_PAYLOAD

WIDE = {"COLUMNS": "400"}


def _cfg(tmp_path: Path, target: PgTarget) -> Path:
    p = tmp_path / "coach.toml"
    p.write_text(f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{target.url}"\nschema = "{target.schema}"\n')
    return p


def test_db_upgrade_creates_the_schema_then_has_nothing_to_do(tmp_path: Path, pg_target: PgTarget) -> None:
    cfg = _cfg(tmp_path, pg_target)
    first = CliRunner().invoke(app, ["db", "upgrade", "--config", str(cfg)], env=WIDE)
    assert first.exit_code == 0 and f"from version 0 to {LATEST_VERSION}" in first.output
    again = CliRunner().invoke(app, ["db", "upgrade", "--config", str(cfg)], env=WIDE)
    assert again.exit_code == 0 and "nothing to do" in again.output


def test_db_upgrade_refuses_a_newer_schema(tmp_path: Path, pg_target: PgTarget) -> None:
    cfg = _cfg(tmp_path, pg_target)
    assert CliRunner().invoke(app, ["db", "upgrade", "--config", str(cfg)], env=WIDE).exit_code == 0
    conn = connect(pg_target.url)
    try:
        conn.execute(f'UPDATE "{pg_target.schema}".schema_version SET version = 99')
    finally:
        conn.close()
    res = CliRunner().invoke(app, ["db", "upgrade", "--config", str(cfg)], env=WIDE)
    assert res.exit_code == 2 and "schema_too_new" in res.output and "Nothing was changed" in res.output


def test_db_upgrade_without_a_url_says_sqlite_needs_none(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["db", "upgrade"], env={**WIDE, "COACH_DATA_DIR": str(tmp_path)})
    assert res.exit_code == 2 and "needs no upgrade" in res.output


def test_board_show_reads_postgresql(tmp_path: Path, pg_target: PgTarget) -> None:
    board = Blackboard(database_url=pg_target.url, database_schema=pg_target.schema)
    try:
        turn = board.begin_turn("u1", "s1")
        board.write_output("u1", "s1", turn, "shadow", SHADOW_PAYLOAD)
    finally:
        board.close()
    cfg = _cfg(tmp_path, pg_target)
    res = CliRunner().invoke(app, ["board", "show", "-u", "u1", "--config", str(cfg)], env=WIDE)
    assert res.exit_code == 0, res.output
    assert "PostgreSQL 127.0.0.1" in res.output and "shadow" in res.output
    doc = json.loads(
        CliRunner()
        .invoke(app, ["board", "show", "-u", "u1", "--json", "--config", str(cfg)], env=WIDE)
        .output
    )
    kinds = {e["kind"] for s in doc["sessions"] for t in s["turns"] for e in t["entries"]}
    assert {"shadow", "meta"} <= kinds
    assert not (tmp_path / "data" / "blackboard.sqlite3").exists()  # nothing went to SQLite


def test_an_unreachable_server_is_a_plain_error(tmp_path: Path, free_port: int) -> None:
    env = {
        **WIDE,
        "COACH_DATA_DIR": str(tmp_path),
        "COACH_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port}/x",
    }
    for args in (["db", "upgrade"], ["board", "show", "-u", "u1"]):
        res = CliRunner().invoke(app, args, env=env)
        assert res.exit_code == 2, res.output
        assert f"127.0.0.1:{free_port}" in res.output and "pg_ctlcluster" in res.output
        assert "Traceback" not in res.output
