"""Token budgets shared by real proxy processes through PostgreSQL (``proxy._shared_budget``): three
instances, one session budget, 200 concurrent requests; and a proxy SIGKILLed with reservations open,
whose reservations stop counting within the lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from blackboard._budgets import SharedBudgets, session_scope
from testsupport.postgres import PgTarget
from testsupport.script import Hang, Text
from testsupport.server import free_port
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]
COACH = str(Path(sys.executable).parent / "coach")
BUDGET = 12_000


def _config(path: Path, upstream: str, target: PgTarget, *, lease_s: float, usage_log: Path) -> Path:
    path.write_text(
        f'session_token_budget = {BUDGET}\nshared_budgets_url = "{target.url}"\n'
        f'shared_budgets_schema = "{target.schema}"\nbudget_lease_s = {lease_s}\nusage_log = "{usage_log}"\n'
        f'default_model = "default"\n[[models]]\nname = "default"\nreplicas = ["{upstream}"]\nkind = "openai"\n',
        encoding="utf-8",
    )
    return path


class _Proxies:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.urls: list[str] = []

    def start(self, config: Path, log: Path) -> str:
        port = free_port()
        with log.open("wb") as out:
            self.procs.append(
                subprocess.Popen(
                    [COACH, "proxy", "--config", str(config), "--port", str(port), "--log-level", "warning"],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            assert self.procs[-1].poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"proxy on {port} did not start: {log.read_text()}"
            threading_wait(0.1)
        self.urls.append(url)
        return url

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


def threading_wait(seconds: float) -> None:
    import threading

    threading.Event().wait(seconds)


@pytest.fixture
def proxies() -> Iterator[_Proxies]:
    ps = _Proxies()
    yield ps
    ps.stop()


async def _until_no_open_reservations(budgets: SharedBudgets, timeout_s: float) -> Any:
    """The session's budget state once no live reservation is left (a database row: nothing to await but
    the next read); fails after ``timeout_s``."""
    with anyio.fail_after(timeout_s):
        for _ in range(int(timeout_s * 20) + 1):
            state = await budgets.state(session_scope("s1"))
            if not state.open_reservations:
                return state
            await anyio.sleep(0.05)
    raise AssertionError("reservations still open")


def _body(max_tokens: int = 300) -> dict[str, Any]:
    return {
        "model": "default",
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": "Say ok."}],
    }


def _headers(agent: str, session: str = "s1") -> dict[str, str]:
    return {
        "x-coach-agent": agent,
        "x-coach-session": session,
        "x-coach-user": "u1",
        "content-type": "application/json",
    }


async def test_three_proxies_never_grant_more_than_one_shared_session_budget(
    pg_target: PgTarget, proxies: _Proxies, tmp_path: Path
) -> None:
    with ScriptedUpstream({"coach": [Text("ok")]}) as up:
        logs = [tmp_path / f"usage{i}.jsonl" for i in range(3)]
        for i in range(3):
            proxies.start(
                _config(tmp_path / f"p{i}.toml", up.base_url, pg_target, lease_s=900, usage_log=logs[i]),
                tmp_path / f"p{i}.log",
            )
        statuses: list[int] = []
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=300)) as client:

            async def one(i: int) -> None:
                r = await client.post(
                    f"{proxies.urls[i % 3]}/v1/messages", json=_body(), headers=_headers("coach")
                )
                statuses.append(r.status_code)

            async with anyio.create_task_group() as tg:
                for i in range(200):
                    tg.start_soon(one, i)
        assert set(statuses) <= {200, 403} and statuses.count(200) >= 10 and statuses.count(403) >= 1, (
            statuses
        )
        budgets = SharedBudgets(pg_target.url, schema=pg_target.schema)
        try:  # settlements are written just after each response
            state = await _until_no_open_reservations(budgets, 30)
        finally:
            await budgets.close()
        assert state.spent == state.ledger <= BUDGET  # never overspent; spent is the ledger's sum
        logged = [json.loads(line) for log in logs if log.exists() for line in log.read_text().splitlines()]
        ok = [r for r in logged if r["status"] == "ok"]
        assert len(ok) == statuses.count(200)
        assert sum(r["input_tokens"] + r["cached_tokens"] + r["output_tokens"] for r in ok) == state.spent


async def test_a_killed_proxy_releases_its_reservations_within_the_lease(
    pg_target: PgTarget, proxies: _Proxies, tmp_path: Path
) -> None:
    lease_s = 4.0
    with ScriptedUpstream({"slow": [Hang()], "coach": [Text("ok")]}) as up:
        doomed = proxies.start(
            _config(
                tmp_path / "a.toml", up.base_url, pg_target, lease_s=lease_s, usage_log=tmp_path / "a.jsonl"
            ),
            tmp_path / "a.log",
        )
        other = proxies.start(
            _config(
                tmp_path / "b.toml", up.base_url, pg_target, lease_s=lease_s, usage_log=tmp_path / "b.jsonl"
            ),
            tmp_path / "b.log",
        )
        budgets = SharedBudgets(pg_target.url, schema=pg_target.schema)
        big = BUDGET // 4  # four hung requests reserve (about) the whole budget
        async with httpx.AsyncClient(timeout=60) as client, anyio.create_task_group() as tg:

            async def hung() -> None:
                try:
                    await client.post(f"{doomed}/v1/messages", json=_body(big), headers=_headers("slow"))
                except httpx.HTTPError:
                    pass  # the proxy is killed under it

            for _ in range(4):
                tg.start_soon(hung)
            assert await up.wait_for_async(
                lambda reqs: sum(r.agent == "slow" for r in reqs) >= 4, timeout_s=30
            )
            state = await budgets.state(session_scope("s1"))
            assert state.open_reservations == 4 and state.reserved > BUDGET - big
            refused = await client.post(f"{other}/v1/messages", json=_body(big), headers=_headers("coach"))
            assert refused.status_code == 403  # the reservations count on every instance
            os.kill(proxies.procs[0].pid, signal.SIGKILL)
            killed_at = time.monotonic()
            await _until_no_open_reservations(budgets, lease_s + 10)
            assert time.monotonic() - killed_at <= lease_s + 1.0
            r = await client.post(f"{other}/v1/messages", json=_body(big), headers=_headers("coach"))
            assert r.status_code == 200, r.text
            tg.cancel_scope.cancel()
        await budgets.close()
