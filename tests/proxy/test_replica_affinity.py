"""Replica affinity across workers: every proxy (each ``coach worker`` runs its own) sends a session to the
same model-server replica, because the choice is rendezvous hashing of the session id over the replica
set (``proxy._router``), not per-process memory; sessions spread over the replicas; when a replica is down
only its sessions move, each to the same fallback on every proxy."""

from __future__ import annotations

from collections import Counter

import pytest

from proxy._router import Router, rank_replicas

from .fakes import A, B, FakeUpstream, make_config, msg_body, proxy_client

pytestmark = pytest.mark.anyio

C = "http://replica-c"
SESSIONS = [f"s{i:03d}" for i in range(60)]


def _headers(session: str) -> dict[str, str]:
    return {"x-coach-agent": "shadow", "x-coach-user": "u1", "x-coach-session": session}


async def _route(up: FakeUpstream, replicas: list[str], sessions: list[str]) -> dict[str, str]:
    """Send one request per session through a fresh proxy (a new process: no memory of the others);
    returns session -> the replica that served it."""
    start = len(up.calls())
    async with proxy_client(up, make_config(replicas)) as c:
        for s in sessions:
            assert (await c.post("/v1/messages", json=msg_body(), headers=_headers(s))).status_code == 200
    served = up.calls()[start:]
    return {s: call.url for s, call in zip(sessions, served, strict=True)}


async def test_two_proxies_send_each_session_to_the_same_replica_and_spread_the_sessions() -> None:
    up = FakeUpstream()
    first = await _route(up, [A, B], SESSIONS)  # worker 1's proxy
    second = await _route(up, [A, B], list(reversed(SESSIONS)))  # worker 2's proxy, other order and load
    assert first == second, "the same session goes to the same replica whichever proxy routes it"
    spread = Counter(first.values())
    assert set(spread) == {A, B} and min(spread.values()) >= len(SESSIONS) // 4, spread


async def test_a_replica_down_moves_only_its_sessions_and_to_the_same_place_on_every_proxy() -> None:
    r1, r2 = Router(make_config([A, B, C])), Router(make_config([B, C, A]))  # replica order does not matter
    before = {s: r1.pick("qwen3", s).url for s in SESSIONS}
    assert before == {s: r2.pick("qwen3", s).url for s in SESSIONS}
    for r in (r1, r2):
        r.mark_down(next(x for x in r.replicas["qwen3"] if x.url == A))
    after1 = {s: r1.pick("qwen3", s).url for s in SESSIONS}
    assert after1 == {s: r2.pick("qwen3", s).url for s in SESSIONS}
    moved = {s for s in SESSIONS if before[s] != after1[s]}
    assert moved == {s for s in SESSIONS if before[s] == A}, "only the down replica's sessions move"
    assert all(after1[s] == rank_replicas(s, [A, B, C])[1] for s in moved), "each to its second choice"
    assert A not in after1.values()


async def test_a_failed_replica_is_retried_on_the_sessions_next_choice() -> None:
    from .fakes import ConnectFail

    session = next(s for s in SESSIONS if rank_replicas(s, [A, B])[0] == A)
    up = FakeUpstream()
    up.script(A, ConnectFail())
    async with proxy_client(up, make_config([A, B])) as c:
        resp = await c.post("/v1/messages", json=msg_body(), headers=_headers(session))
    assert resp.status_code == 200
    assert [call.url for call in up.calls()] == [A, B]
