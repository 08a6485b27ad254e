"""A closed session's six warm processes, reset with ``/clear`` (``RunnerConfig.reuse_processes``), run the
next session's turn: no new process starts, the new session's entries land in its own namespace, the old
session's namespace is untouched, and nothing of the old user's message reaches any model request of the
new turn. While reset the pool identities act for nobody; once rebound, the old session's identity is
never theirs again, even while that session has a turn open.

Real ``claude`` processes, real in-process proxy and MCP server, SQLite, the scripted upstream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launcher.pipeline._turn_scope import DirectoryScope
from launcher.runner._process_pool import POOL_USER
from tests.e2e.harness import harness

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300), pytest.mark.anyio]

TOKEN = "PLANTED-b71d04"
AGENTS = ("coach", "shadow", "persona", "plasticity", "stability", "pineal")


def _headers(agent: str, pool_session: str) -> dict[str, str]:
    return {"x-coach-user": POOL_USER, "x-coach-session": pool_session, "x-coach-agent": agent}


async def test_a_closed_sessions_processes_serve_the_next_session_in_its_own_namespace(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, reuse_processes=True) as h:
        a = await h.supervisor.run_turn("alice", "sA", f"My code word is {TOKEN}. I keep skipping my runs.")
        assert a.synthesis_source == "model", a.to_json()
        pids = {g: h.runner.pid_of("alice", "sA", g) for g in AGENTS}
        pool = {g: h.runner._warm[("alice", "sA", g)].pool_session for g in AGENTS}
        assert None not in pids.values() and None not in pool.values()
        started = h.runner.started_processes
        a_entries = {k: e.seq for k, e in h.board.read_turn("alice", "sA", a.turn_id).items()}

        await h.runner.close_session("alice", "sA")
        assert h.runner.reset_processes == 6 and h.runner.reset_failures == 0
        scopes = DirectoryScope(h.supervisor.directory)
        for g, ps in pool.items():  # reset, not yet bound: the pool user, who owns nothing
            assert ps is not None
            s = scopes.scope_for(_headers(g, ps))
            assert (s.user, s.session, s.turn) == (POOL_USER, ps, None)

        before = len(h.upstream.model_calls())
        b = await h.supervisor.run_turn("bob", "sB", "I ran once this week, on Sunday.")
        assert b.synthesis_source == "model", b.to_json()
        assert h.runner.started_processes == started, "a new process started instead of a reset one"
        assert {g: h.runner.pid_of("bob", "sB", g) for g in AGENTS} == pids
        b_entries = h.board.read_turn("bob", "sB", b.turn_id)
        assert set(AGENTS) <= set(b_entries), sorted(b_entries)
        assert {k: e.seq for k, e in h.board.read_turn("alice", "sA", a.turn_id).items()} == a_entries
        calls = h.upstream.model_calls()[before:]
        assert calls and not [r.agent for r in calls if TOKEN in json.dumps(r.body)]

        h.supervisor.directory.open("alice", "sA", "t000099", list(AGENTS))  # the old session, open again
        for g, ps in pool.items():
            assert ps is not None
            s = scopes.scope_for(_headers(g, ps))
            assert (s.user, s.session) == ("bob", "sB"), "a reused process acts for its old session"


async def test_a_reset_that_did_not_clear_is_caught_by_the_proxy_and_the_processes_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher.runner import _reset

    async def claims_but_keeps(client: object, **_: float) -> bool:
        return True  # a Claude Code whose reset reports success but keeps the conversation

    async with harness(tmp_path, reuse_processes=True) as h:
        a = await h.supervisor.run_turn("alice", "sA", f"My code word is {TOKEN}. I keep skipping my runs.")
        assert a.synthesis_source == "model", a.to_json()
        started = h.runner.started_processes
        monkeypatch.setattr(_reset, "reset_conversation", claims_but_keeps)
        await h.runner.close_session("alice", "sA")
        assert h.runner.reset_processes == 6
        before = len(h.upstream.model_calls())
        b = await h.supervisor.run_turn("bob", "sB", "I ran once this week, on Sunday.")
        calls = h.upstream.model_calls()[before:]
        assert calls and not [r.agent for r in calls if TOKEN in json.dumps(r.body)], (
            "A's turns reached the model"
        )
        assert h.runner.started_processes > started, "no process was replaced"
        assert b.agents["coach"].status == "ok", b.to_json()
