"""The supervisor screens each message on its one screen thread, not on the event loop: the loop serves the
other sessions meanwhile, and the warm-up pays the screen's one-time costs on the thread the turns use.
Real blackboard, fake runner and screen at their boundaries."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from blackboard import Blackboard
from launcher.pipeline._screen import ScreenOutcome
from launcher.pipeline.supervisor import Supervisor
from tests.launcher.fakes import FakeRunner, fake_screen, specs

pytestmark = pytest.mark.anyio


async def test_warm_up_and_every_turn_screen_on_one_thread_off_the_event_loop(board: Blackboard) -> None:
    threads: list[int] = []

    def screen(text: str, state: Mapping[str, Any] | None) -> ScreenOutcome:
        threads.append(threading.get_ident())
        return fake_screen(text, state)

    s = specs()
    sup = Supervisor(board, FakeRunner(board), lambda: s, screen=screen)
    await sup.warm_up()
    await sup.run_turn("u1", "s1", "I want to run more")
    await sup.run_turn("u2", "s9", "another user, another session")
    assert len(threads) == 3 and len(set(threads)) == 1
    assert threads[0] != threading.get_ident()  # not the event loop's thread


async def test_the_event_loop_runs_on_while_a_message_is_screened(board: Blackboard) -> None:
    screening, loop_ran = threading.Event(), threading.Event()

    def slow_screen(text: str, state: Mapping[str, Any] | None) -> ScreenOutcome:
        # blocks (as the encoder's matrix products do) until the event loop has run another session's
        # step after this screening began; a screen on the loop's own thread would wait out the timeout
        screening.set()
        assert loop_ran.wait(timeout=3), "the event loop was blocked while the message was screened"
        return fake_screen(text, state)

    s = specs()
    sup = Supervisor(board, FakeRunner(board), lambda: s, screen=slow_screen)

    async def other_session() -> None:
        with anyio.fail_after(10):
            # a threading.Event, set on the screen thread (an anyio.Event cannot be set from there)
            while not screening.is_set():  # noqa: ASYNC110
                await anyio.sleep(0.001)
        loop_ran.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(sup.run_turn, "u1", "s1", "I want to run more")
        tg.start_soon(other_session)
    assert loop_ran.is_set()


async def test_a_screen_that_raises_fails_the_turn_with_its_error_and_warm_up_survives(
    board: Blackboard,
) -> None:
    def broken(text: str, state: Mapping[str, Any] | None) -> ScreenOutcome:
        raise RuntimeError("screen broke")

    s = specs()
    sup = Supervisor(board, FakeRunner(board), lambda: s, screen=broken)
    await sup.warm_up()  # logged, never raised
    with pytest.raises(RuntimeError, match="screen broke"):
        await sup.run_turn("u1", "s1", "hello")
