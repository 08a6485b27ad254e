"""``coach proxy --config coach.toml`` reads the same file as ``coach run`` / ``coach serve``: a coach.toml
without ``[proxy]`` used to fail ("data: Extra inputs are not permitted"), and one with ``[proxy]`` but
no ``[[proxy.models]]`` ignored ``[upstream]`` ("no upstream configured")."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from launcher.cli import app
from launcher.config import load_config as load_coach_config
from proxy import load_config
from proxy.errors import ConfigError

COACH_TOML = """
[data]
dir = "/tmp/somewhere"
[upstream]
url = "http://127.0.0.1:8000/"
kind = "anthropic"
model = "qwen3"
"""


@pytest.mark.parametrize("proxy_table", ["", "[proxy]\nport = 9100\nsession_token_budget = 5000\n"])
def test_coach_toml_gives_the_same_proxy_config_as_coach_run(
    tmp_path: Path, proxy_table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COACH_UPSTREAM_URL", raising=False)
    monkeypatch.delenv("COACH_DATA_DIR", raising=False)
    path = tmp_path / "coach.toml"
    path.write_text(COACH_TOML + proxy_table, encoding="utf-8")
    cfg = load_config(path)
    assert cfg == load_coach_config(path).proxy_config()
    (pool,) = cfg.models
    assert (
        pool.replicas == ["http://127.0.0.1:8000"]
        and pool.kind == "anthropic"
        and pool.upstream_model == "qwen3"
    )
    if proxy_table:
        assert cfg.port == 9100 and cfg.session_token_budget == 5000


def test_proxy_only_file_still_reads_the_top_level(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(
        'port = 9200\n[[models]]\nname = "m"\nreplicas = ["http://127.0.0.1:1"]\n', encoding="utf-8"
    )
    cfg = load_config(path)
    assert cfg.port == 9200 and cfg.models[0].name == "m"


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "coach.toml"
    path.write_bytes(b"\xff\xfe[proxy]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and "UTF-8" in str(info.value)
    res = CliRunner().invoke(app, ["proxy", "--config", str(path)])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit)


def test_coach_upstream_url_overrides_the_upstream_section_as_for_coach_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COACH_UPSTREAM_URL", "http://10.0.0.9:9000")
    monkeypatch.delenv("COACH_DATA_DIR", raising=False)
    path = tmp_path / "coach.toml"
    path.write_text(COACH_TOML, encoding="utf-8")
    cfg = load_config(path)
    assert cfg.models[0].replicas == ["http://10.0.0.9:9000"] and cfg.models[0].kind == "anthropic"
    assert cfg == load_coach_config(path).proxy_config()


def test_port_in_use_is_a_plain_error_naming_the_port(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "coach.toml"
    path.write_text(COACH_TOML, encoding="utf-8")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        res = CliRunner().invoke(
            app, ["proxy", "--config", str(path), "--port", str(port)], env={"COLUMNS": "300"}
        )
    assert res.exit_code == 1, res.output
    assert isinstance(res.exception, SystemExit)
    assert f"cannot listen on 127.0.0.1:{port}" in res.output and "--port 0" in res.output
