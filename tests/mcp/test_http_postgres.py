"""``coach mcp --http`` (a real process) on a PostgreSQL ``[data] url``: the tools write to PostgreSQL and
``collect_turn`` blocks until Shadow writes from another process, woken through the PostgreSQL barrier."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from blackboard import Blackboard
from tests.mcp.helpers import data_of, text_of
from tests.mcp.payloads import payload
from tests.mcp.processes import ServerProcess, call_in_subprocess, http_client, http_server, scope_headers
from testsupport.postgres import PgTarget

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

U = "alice"
SECRET = "test-secret"


@pytest.fixture
def pg_http(tmp_path: Path, pg_target: PgTarget) -> Iterator[tuple[ServerProcess, Blackboard]]:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\nurl = "{pg_target.url}"\nschema = "{pg_target.schema}"\n', encoding="utf-8")
    board = Blackboard(database_url=pg_target.url, database_schema=pg_target.schema)
    try:
        with http_server(
            tmp_path / "data", args=("--config", str(cfg)), env={"COACH_MCP_SECRET": SECRET}
        ) as server:
            yield server, board
    finally:
        board.close()


async def test_collect_turn_over_http_waits_for_shadow_on_postgresql(
    pg_http: tuple[ServerProcess, Blackboard], tmp_path: Path
) -> None:
    server, board = pg_http
    turn = board.begin_turn(U, "s1")
    async with http_client(server.url, scope_headers(U, "s1", turn, "persona", secret=SECRET)) as persona:
        stored = await persona.call_tool("write_persona", payload("persona"))
        assert not stored.is_error, text_of(stored)
    assert board.read_turn(U, "s1", turn)["persona"].author == "persona"  # written to PostgreSQL
    for agent in ("plasticity", "stability", "coach"):
        board.write_output(U, "s1", turn, agent, payload(agent))
    collected: dict[str, object] = {}

    async def collect() -> None:
        async with http_client(server.url, scope_headers(U, "s1", turn, "pineal", secret=SECRET)) as pineal:
            result = await pineal.call_tool("collect_turn", {"deadline_s": 45})
        collected["at"] = time.time()
        collected["data"] = data_of(result)

    async with anyio.create_task_group() as tg:
        tg.start_soon(collect)
        written = await anyio.to_thread.run_sync(
            call_in_subprocess,
            server.url,
            scope_headers(U, "s1", turn, "shadow", secret=SECRET),
            "write_shadow",
            payload("shadow"),
        )
    assert written["is_error"] is False
    data = collected["data"]
    assert isinstance(data, dict) and data["timed_out"] is False and "shadow" in data["arrived"]
    write_at = float(written["result"]["updated_at"])
    returned_at = float(collected["at"])  # type: ignore[arg-type]
    assert returned_at - float(data["waited_s"]) < write_at <= returned_at
    assert not (tmp_path / "data" / "blackboard.sqlite3").exists()
