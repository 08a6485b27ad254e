"""``coach chat --broker``: each line a turn job, followed until a worker finishes it, the Coach's reply
first, then the synthesis; nothing typed lost when RabbitMQ goes away; clear errors at start.

The in-process tests use the real RabbitMQ and PostgreSQL with a stand-in worker (``fake_worker``: real
job rows, no agents); ``test_chat_broker_e2e.py`` runs the real ``coach worker``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from blackboard._pg_jobs import TurnJobs
from launcher.cli import app
from tests.scaleout.fake_worker import FakeWorker, reply_of, synthesis_of
from tests.scaleout.tcp_relay import TcpRelay
from testsupport.child_output import coach_argv
from testsupport.postgres import fresh_schema
from testsupport.rabbitmq import fresh_prefix

pytestmark = pytest.mark.timeout(120)


def _config(tmp: Path, pg: Any, broker_url: str, prefix: str) -> Path:
    cfg = tmp / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp / "data"}"\nurl = "{pg.url}"\nschema = "{pg.schema}"\n'
        f'[broker]\nurl = "{broker_url}"\nprefix = "{prefix}"\n'
    )
    return cfg


class _Lines:
    """The chat's stdin: each line after running the action given with it (None: end of input)."""

    script: ClassVar[list[tuple[Any, str | None]]] = []

    def __init__(self) -> None:
        self.items = list(type(self).script)

    async def read(self) -> str | None:
        action, line = self.items.pop(0)
        if action is not None:
            action()
        return line


def _chat(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, script: list[tuple[Any, str | None]], *extra: str
) -> Any:
    monkeypatch.setattr(_Lines, "script", script)
    monkeypatch.setattr("launcher.cli.chat._READER", _Lines)
    return CliRunner().invoke(
        app, ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg), *extra], env={"COLUMNS": "400"}
    )


def test_each_line_is_a_job_shown_reply_first_then_synthesis_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fresh_schema("cb") as pg, fresh_prefix("chat") as (url, prefix):
        cfg = _config(tmp_path, pg, url, prefix)
        with FakeWorker(pg, url, prefix) as worker:
            res = _chat(
                cfg, monkeypatch, [(None, "first line"), (None, ""), (None, "second line"), (None, None)]
            )
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
        finally:
            jobs.close()
    assert res.exit_code == 0, (res.output, res.exception)
    assert [(r.state, r.attempts, r.turn_id) for r in rows] == [
        ("done", 1, "t000001"),
        ("done", 1, "t000002"),
    ]
    assert worker.turns == 2
    out = res.output
    for r in rows:
        assert out.count(reply_of(r.job_id)) == 1 and out.count(synthesis_of(r.job_id)) == 1
        assert out.index(reply_of(r.job_id)) < out.index(synthesis_of(r.job_id))
        assert out.count(f"turn {r.turn_id} done") == 1
    assert out.index(synthesis_of(rows[0].job_id)) < out.index(reply_of(rows[1].job_id))


def test_a_line_the_broker_could_not_take_is_kept_and_sent_once_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        fresh_schema("cb") as pg,
        fresh_prefix("chat") as (url, prefix),
        TcpRelay("127.0.0.1", 5672) as relay,
    ):
        cfg = _config(tmp_path, pg, url, prefix)
        relayed = url.replace(":5672", f":{relay.port}")
        assert relayed != url
        with FakeWorker(pg, url, prefix) as worker:
            res = _chat(
                cfg,
                monkeypatch,
                [(relay.down, "while the broker is away"), (relay.up, "/retry"), (None, None)],
                "--broker",
                relayed,
            )
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
        finally:
            jobs.close()
    assert res.exit_code == 0, (res.output, res.exception)
    out = " ".join(res.output.split())
    assert (
        "this turn could not be sent (cannot reach RabbitMQ at" in out and "rabbitmq-server -detached" in out
    )
    assert "Nothing typed is lost" in out and f"kept as job {rows[0].job_id}" in out
    assert [(r.state, r.attempts) for r in rows] == [("done", 1)], "one job, run once, after /retry"
    assert worker.turns == 1 and out.count(synthesis_of(rows[0].job_id)) == 1


def test_a_line_the_store_can_never_take_is_refused_at_once_not_kept_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    too_long = "a" * 64_001
    not_utf8 = b"caf\xe9 run".decode("utf-8", "surrogateescape")  # what stdin makes of latin-1 bytes
    with fresh_schema("cb") as pg, fresh_prefix("chat") as (url, prefix):
        cfg = _config(tmp_path, pg, url, prefix)
        with FakeWorker(pg, url, prefix) as worker:
            res = _chat(
                cfg,
                monkeypatch,
                [
                    (None, too_long),
                    (None, not_utf8),
                    (None, "nul\x00here"),
                    (None, "a fine line"),
                    (None, None),
                ],
            )
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            rows = jobs.all()
        finally:
            jobs.close()
    assert res.exit_code == 0, (res.output, res.exception)
    out = " ".join(res.output.split())
    assert "this line was not sent: a turn message is at most 64000 characters (this one has 64001)" in out
    assert "this line was not sent: a turn message must be UTF-8 text" in out and "LANG=C.UTF-8" in out
    assert "this line was not sent: a turn message cannot hold a NUL character" in out
    assert "Nothing typed is lost" not in out and "not shown yet" not in out
    assert "café" not in out and "aaaa" not in out, "the refused text is not echoed"
    assert [(r.state, r.turn_id) for r in rows] == [("done", "t000001")], "only the fine line became a job"
    assert worker.turns == 1 and out.count(synthesis_of(rows[0].job_id)) == 1
    assert "closing the session" in out, "nothing owed: the chat ends normally"


def test_an_unreachable_broker_at_start_says_which_and_how_to_start_it(tmp_path: Path) -> None:
    with fresh_schema("cb") as pg:
        cfg = _config(tmp_path, pg, "amqp://guest:guest@127.0.0.1:1/", "coach")
        res = CliRunner().invoke(
            app, ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg)], env={"COLUMNS": "400"}, input=""
        )
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "cannot reach RabbitMQ at amqp://guest@127.0.0.1:1/" in out and "rabbitmq-server -detached" in out


def test_an_unreachable_database_at_start_says_which_and_how_to_start_it(tmp_path: Path) -> None:
    class _Pg:
        url = "postgresql://postgres@127.0.0.1:1/coachboard"
        schema = "coachboard"

    cfg = _config(tmp_path, _Pg(), "amqp://guest:guest@127.0.0.1:5672/", "coach")
    res = CliRunner().invoke(
        app, ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg)], env={"COLUMNS": "400"}
    )
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "cannot reach PostgreSQL at 127.0.0.1:1/coachboard" in out and "pg_ctlcluster" in out


def test_proxy_urls_with_broker_are_refused_with_the_fix(tmp_path: Path) -> None:
    cfg = tmp_path / "coach.toml"
    cfg.write_text('[broker]\nurl = "amqp://guest:guest@127.0.0.1:5672/"\n')
    res = CliRunner().invoke(
        app,
        ["chat", "-u", "u1", "-s", "s1", "--config", str(cfg), "--proxy-url", "http://127.0.0.1:1"],
        env={"COLUMNS": "400"},
    )
    assert (
        res.exit_code == 2 and "with --broker (or [broker] url) the turns run on `coach worker`" in res.output
    )


@pytest.mark.parametrize(
    ("sig", "code", "said"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]
)
def test_a_chat_stopped_while_it_follows_a_turn_names_the_job_and_how_to_follow_it(
    tmp_path: Path, sig: str, code: int, said: str
) -> None:
    """No worker consumes this prefix, so the turn is still owed when the signal comes: the chat names its
    job id (the turn stays queued for a worker), says the session is open, and exits 130 / 143 (SIGTERM
    killed it silently with -15; Ctrl-C said "agent processes stopped", in a chat that runs none)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    with fresh_schema("cb") as pg, fresh_prefix("chat") as (url, prefix):
        cfg = _config(tmp_path, pg, url, prefix)
        proc = subprocess.Popen(
            coach_argv("chat", "-u", "u1", "-s", "s1", "--config", str(cfg)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "400"},
        )
        assert proc.stdin is not None
        proc.stdin.write("a line no worker takes\n")
        proc.stdin.flush()
        jobs = TurnJobs(pg.url, schema=pg.schema)
        try:
            end = time.monotonic() + 60
            while not jobs.all() and time.monotonic() < end and proc.poll() is None:
                pass  # the row follows the line within moments; a deadline, no sleep
            rows = jobs.all()
            assert rows, "the line became a job"
            proc.send_signal(getattr(signal, sig))
            out, _ = proc.communicate(timeout=60)
        finally:
            jobs.close()
            if proc.poll() is None:
                proc.kill()
    flat = " ".join(out.split())
    assert proc.returncode == code, out
    assert f"not shown yet: 1 turn ({rows[0].job_id})" in flat and "--job-id ID" in flat
    assert f"{said}" in flat and "session s1 is still open" in flat
    assert "agent processes stopped" not in flat and "Traceback" not in out
    assert rows[0].state == "queued", "the job is left for a worker"
