"""What an operator sees when the broker or database settings are wrong at start: what is wrong and what
to do, exit 2 for a malformed URL, and no traceback (``coach chat --broker``, ``coach run --broker``,
``coach worker``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from yarl import URL

from launcher.cli import app
from launcher.config import ConfigError, load_config
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix, require_rabbitmq

pytestmark = pytest.mark.timeout(120)


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("url", "what"),
    [
        ("notaurl", "not an AMQP URL (got 'notaurl')"),
        ("http://127.0.0.1:5672/", "not an AMQP URL (got 'http://127.0.0.1:5672/')"),
        ("amqp://guest:secret@127.0.0.1:notaport/", "not a URL"),
        ("amqp:///", "no host in"),
    ],
)
@pytest.mark.parametrize("command", ["chat", "run", "worker"])
def test_a_broker_flag_that_is_not_an_amqp_url_exits_2_saying_what_is_wrong_and_the_form(
    tmp_path: Path, command: str, url: str, what: str
) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\nurl = "postgresql://postgres@127.0.0.1:1/x"\n')
    args = {"chat": ["chat", "-u", "u1", "-s", "s1"], "run": ["run", "hi", "-u", "u1", "-s", "s1"]}
    res = CliRunner().invoke(
        app, [*args.get(command, ["worker"]), "--config", str(cfg), "--broker", url], env={"COLUMNS": "400"}
    )
    out = _flat(res.output)
    assert res.exit_code == 2, (res.output, res.exception)
    assert f"error: --broker: {what}" in out and "use amqp://user:password@host:5672/vhost" in out
    assert "secret" not in out, "the password is never shown"
    assert "Traceback" not in out


def test_a_config_broker_url_with_a_bad_port_names_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text('[broker]\nurl = "amqp://guest:guest@mq:notaport/"\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg, env={})
    assert "[broker] url: not a URL" in str(info.value) and "amqp://user:password@host:5672/vhost" in str(
        info.value
    )


def _chat_with(tmp_path: Path, pg: Any, broker_url: str) -> Any:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
        f'[broker]\nurl = "{broker_url}"\n'
    )
    return CliRunner().invoke(
        app, ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg)], env={"COLUMNS": "400"}, input=""
    )


def test_a_wrong_rabbitmq_password_says_the_login_was_refused_not_to_start_rabbitmq(tmp_path: Path) -> None:
    good = URL(require_rabbitmq())
    bad = str(good.with_password("not-the-password-16"))
    with fresh_schema("se") as pg:
        res = _chat_with(tmp_path, pg, bad)
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "refused the login (ACCESS_REFUSED" in out and "correct the user and password" in out
    assert "start it" not in out and "not-the-password-16" not in out


def test_an_unknown_vhost_says_which_and_how_to_create_it(tmp_path: Path) -> None:
    good = URL(require_rabbitmq())
    bad = str(good.with_path("/no-such-vhost-16"))
    with fresh_schema("se") as pg:
        res = _chat_with(tmp_path, pg, bad)
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert "refused the virtual host 'no-such-vhost-16'" in out and "rabbitmqctl add_vhost" in out
    assert "Connection.Close" not in out


def test_a_worker_whose_database_is_unreachable_exits_1_with_the_fix_and_no_traceback(tmp_path: Path) -> None:
    with fresh_prefix("start") as (url, prefix):
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            f'[data]\ndir = "{tmp_path / "data"}"\nurl = "postgresql://postgres@127.0.0.1:1/coachboard"\n'
            f'[broker]\nurl = "{url}"\nprefix = "{prefix}"\nmetrics_port = 0\n'
        )
        proc = subprocess.run(
            [sys.executable, "-c", "from launcher.cli import app; app()", "worker", "--config", str(cfg)],
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    assert proc.returncode == 1, proc.stderr
    err = _flat(proc.stderr)
    assert "cannot reach PostgreSQL at 127.0.0.1:1/coachboard" in err and "pg_ctlcluster" in err
    assert "Traceback" not in proc.stderr and "Event loop is closed" not in proc.stderr, proc.stderr
    assert "Task was destroyed" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["--lease-ttl", "0"], "--lease-ttl must be seconds > 0.5 and at most 3600, got 0"),
        (["--lease-ttl", "-5"], "--lease-ttl must be seconds > 0.5 and at most 3600, got -5"),
        (["--metrics-port", "70000"], "--metrics-port must be 0-65535 (0 = any free port), got 70000"),
        (["--worker-id", "a b/c"], "--worker-id 'a b/c' is not a usable id"),
        (["--worker-id", "-x"], "--worker-id '-x' is not a usable id"),
    ],
)
def test_a_worker_option_out_of_range_exits_2_naming_it_before_any_connection(
    tmp_path: Path, args: list[str], what: str
) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        '[data]\nurl = "postgresql://postgres@127.0.0.1:1/x"\n[broker]\nurl = "amqp://guest:guest@127.0.0.1:1/"\n'
    )
    res = CliRunner().invoke(app, ["worker", "--config", str(cfg), *args], env={"COLUMNS": "400"})
    assert res.exit_code == 2, (res.output, res.exception)
    assert f"error: {what}" in _flat(res.output) and "RabbitMQ" not in res.output


def test_serve_with_the_turns_port_taken_names_the_key_and_no_option_it_does_not_have(tmp_path: Path) -> None:
    import socket

    with fresh_schema("se") as pg, fresh_prefix("start") as (url, prefix), socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
            f'[agents]\nwatch = false\n[broker]\nurl = "{url}"\nprefix = "{prefix}"\nturns_port = {port}\n'
        )
        res = CliRunner().invoke(
            app,
            ["serve", "--config", str(cfg), "--proxy-port", "0", "--mcp-port", "0"],
            env={"COLUMNS": "400"},
        )
    out = _flat(res.output)
    assert res.exit_code == 1, (res.output, res.exception)
    assert f"cannot listen on 127.0.0.1:{port} for the turns endpoint: Address already in use" in out
    assert "or set [broker] turns_port (0 = any free port)" in out
    assert "pass another [broker]" not in out, "coach serve has no option for it: only the key is named"


def test_a_delivery_limit_other_than_the_existing_queues_says_so_with_the_fix_not_a_traceback(
    tmp_path: Path,
) -> None:
    import asyncio

    from launcher.scaleout.broker import AmqpBroker, BrokerTopology

    with fresh_schema("se") as pg, fresh_prefix("start") as (url, prefix):

        async def declare_with_limit_5() -> None:
            amqp = AmqpBroker(url, BrokerTopology(prefix=prefix, delivery_limit=5))
            await amqp.check()
            await amqp.close()

        asyncio.run(declare_with_limit_5())
        cfg = tmp_path / "coach.toml"
        cfg.write_text(
            f'[data]\ndir = "{tmp_path / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
            f'[broker]\nurl = "{url}"\nprefix = "{prefix}"\ndelivery_limit = 7\n'
        )
        res = CliRunner().invoke(
            app, ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg)], env={"COLUMNS": "400"}, input=""
        )
    out = _flat(res.output)
    assert res.exit_code == 2, (res.output, res.exception)
    assert f"has {prefix}.turns (or its exchanges) with other settings than this configuration" in out
    assert "inequivalent arg 'x-delivery-limit'" in out and "use the same [broker] delivery_limit" in out
    assert "Traceback" not in res.output
