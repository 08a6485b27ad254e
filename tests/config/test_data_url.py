"""``[data] url`` / ``schema`` and ``COACH_DATABASE_URL``: PostgreSQL chosen by one setting, checked when
the config is read, and handed to the proxy's shared budgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.config import ConfigError, load_config

URL = "postgresql://postgres@127.0.0.1:5432/coachboard"


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "coach.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_sqlite_stays_the_default(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, ""), env={})
    assert cfg.data.url is None and cfg.data.board_options() == {
        "database_url": None,
        "database_schema": "coachboard",
    }
    assert cfg.proxy_config().shared_budgets_url is None


def test_url_and_schema_from_the_file_reach_the_board_and_the_proxy(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, f'[data]\nurl = "{URL}"\nschema = "prod_1"\n'), env={})
    assert cfg.data.board_options() == {"database_url": URL, "database_schema": "prod_1"}
    proxy = cfg.proxy_config()
    assert (proxy.shared_budgets_url, proxy.shared_budgets_schema) == (URL, "prod_1")


def test_the_environment_wins(tmp_path: Path) -> None:
    other = "postgresql://root@db.internal:5433/coach"
    cfg = load_config(_write(tmp_path, f'[data]\nurl = "{URL}"\n'), env={"COACH_DATABASE_URL": other})
    assert cfg.data.url == other


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[data]\nurl = "mysql://x"\n', "not a PostgreSQL URL"),
        ('[data]\nurl = "postgresql://x/y"\nschema = "Bad-Name"\n', "schema name"),
    ],
)
def test_bad_values_name_the_key_and_the_fix(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text), env={})
    assert needle in str(info.value) and "[data]" in str(info.value)
