"""``[broker]`` in coach.toml and ``COACH_BROKER_URL``."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.config import ConfigError, load_config


def test_broker_url_from_the_file_and_the_environment_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text('[broker]\nurl = "amqp://a:b@mq:5672/x"\nsessions = 3\n')
    assert load_config(cfg, env={}).broker.url == "amqp://a:b@mq:5672/x"
    assert load_config(cfg, env={}).broker.sessions == 3
    got = load_config(cfg, env={"COACH_BROKER_URL": "amqp://guest:guest@127.0.0.1:5672/"}).broker
    assert (
        got.url == "amqp://guest:guest@127.0.0.1:5672/" and got.delivery_limit == 5 and got.prefix == "coach"
    )
    assert load_config(None, env={}).broker.url is None, "unset: turns run in-process"


def test_a_bad_broker_url_names_the_key_and_the_fix(tmp_path: Path) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text('[broker]\nurl = "http://mq:5672"\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env={})
    assert "[broker] url" in str(info.value) and "COACH_BROKER_URL" in str(info.value)
