"""End to end on PostgreSQL: the SQLite e2e turn checks (``test_turns.py``) run again, unchanged, with
the blackboard and the Shadow barrier in PostgreSQL (``Blackboard(database_url=...)``, what ``[data] url``
selects): real ``claude`` processes, the real proxy and MCP server, the scripted upstream."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from blackboard import Blackboard, PgBarrier, PostgresStore
from tests.e2e.harness import Harness, agent_script, harness
from tests.e2e.test_turns import (
    AGENTS,
    test_coach_reply_is_delivered_before_the_synthesis,
    test_crisis_message_gets_only_the_crisis_response,
    test_failing_hanging_and_killed_specialists_degrade_but_never_stop_the_turn,
    test_pineal_never_collects_before_shadow_writes_over_20_turns,
    test_second_session_agents_receive_the_compacted_profile,
)
from testsupport.postgres import fresh_schema

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

__all__ = [  # collected here too: the same checks, on PostgreSQL
    "test_coach_reply_is_delivered_before_the_synthesis",
    "test_crisis_message_gets_only_the_crisis_response",
    "test_failing_hanging_and_killed_specialists_degrade_but_never_stop_the_turn",
    "test_pineal_never_collects_before_shadow_writes_over_20_turns",
    "test_second_session_agents_receive_the_compacted_profile",
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingPortal, Harness]]:
    tmp = tmp_path_factory.mktemp("e2e-pg")
    with fresh_schema("e2e") as target:
        board = Blackboard(tmp / "data", database_url=target.url, database_schema=target.schema)
        assert isinstance(board.store, PostgresStore) and isinstance(board.sequencer, PgBarrier)
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(harness(tmp, board=board)) as h,
        ):
            yield portal, h


@pytest.fixture
def h(stack: tuple[BlockingPortal, Harness]) -> Iterator[Harness]:
    _, hh = stack
    saved = dict(hh.specs)
    yield hh
    hh.specs.update(saved)
    for a in AGENTS:
        hh.upstream.set_script(a, agent_script(a))
