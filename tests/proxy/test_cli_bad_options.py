"""``coach proxy`` refuses bad command-line options with one plain line and exit 2 (a port it cannot
bind: exit 1), never a traceback or a raw pydantic dump (fresh-eyes pass; each failed before its fix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launcher.cli import app

UPSTREAM = ["--upstream", "http://127.0.0.1:9"]


def _plain(r: Any) -> None:
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert (
        "Traceback" not in r.output
        and "errors.pydantic.dev" not in r.output
        and "validation error" not in r.output
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--port", "99999"], "--port: Input should be less than or equal to 65535 (got 99999)"),
        (["--port", "-1"], "--port: Input should be greater than or equal to 0 (got -1)"),
        (
            ["--log-level", "chatty"],
            "--log-level 'chatty' is not a log level. Fix: one of critical, error, warning",
        ),
    ],
)
def test_bad_option_exits_2_with_one_plain_line(args: list[str], expected: str) -> None:
    r = CliRunner().invoke(app, ["proxy", *UPSTREAM, *args], env={"COLUMNS": "400"})
    assert r.exit_code == 2, r.output
    _plain(r)
    assert expected in r.output


def test_bad_upstream_url_names_the_option() -> None:
    r = CliRunner().invoke(app, ["proxy", "--upstream", "notaurl"], env={"COLUMNS": "400"})
    assert r.exit_code == 2, r.output
    _plain(r)
    assert "--upstream: replica URL must start with http:// or https://" in r.output


def test_host_it_cannot_bind_is_not_blamed_on_the_port() -> None:
    # 192.0.2.1 (TEST-NET-1) is never an address of this machine: EADDRNOTAVAIL, not "port in use"
    r = CliRunner().invoke(
        app, ["proxy", *UPSTREAM, "--host", "192.0.2.1", "--port", "0"], env={"COLUMNS": "400"}
    )
    assert r.exit_code == 1, r.output
    _plain(r)
    assert "cannot listen on 192.0.2.1:0" in r.output and "--host" in r.output
    assert "stop whatever uses port" not in r.output


def test_reads_coach_toml_of_the_current_directory_like_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README (Configuration): --config, $COACH_CONFIG or ./coach.toml. ``coach proxy`` read a file only
    with --config ("no upstream configured" beside a coach.toml with [upstream] url)."""
    import socket

    monkeypatch.delenv("COACH_UPSTREAM_URL", raising=False)
    monkeypatch.delenv("COACH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        (tmp_path / "coach.toml").write_text(
            f'[upstream]\nurl = "http://127.0.0.1:9"\n[proxy]\nport = {port}\n'
        )
        r = CliRunner().invoke(app, ["proxy"], env={"COLUMNS": "400"})
    assert r.exit_code == 1, r.output  # got as far as binding [proxy] port: the file was read
    assert f"cannot listen on 127.0.0.1:{port}" in r.output


def test_coach_config_naming_no_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COACH_CONFIG", str(tmp_path / "missing.toml"))
    r = CliRunner().invoke(app, ["proxy", *UPSTREAM], env={"COLUMNS": "400"})
    assert r.exit_code == 2 and "COACH_CONFIG=" in r.output and "does not exist" in r.output, r.output
