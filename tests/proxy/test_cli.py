"""`coach proxy` argument and config handling (the serving path is covered by test_e2e_claude.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from launcher.cli import app


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--config", "/nonexistent/coach.toml"], "does not exist"),
        (["--upstream", "ftp://x"], "http://"),
        (["--upstream", "http://127.0.0.1:1", "--kind", "grpc"], "openai or anthropic"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(args: list[str], expected: str) -> None:
    r = CliRunner().invoke(app, ["proxy", *args])
    assert r.exit_code == 2 and expected in r.output


def test_no_upstream_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COACH_UPSTREAM_URL", raising=False)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[proxy]\nport = 9999\n")
    r = CliRunner().invoke(app, ["proxy", "--config", str(cfg)])
    assert r.exit_code == 2 and "COACH_UPSTREAM_URL" in r.output
