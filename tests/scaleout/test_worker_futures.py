"""A coach reply recorded in a thread while the turn fails (a stale lease refuses both) must not leave
asyncio logging "Future exception was never retrieved" with a traceback in the worker's log (CI of stop 26:
the lease was lost mid-turn, the turn was resumed correctly, and the log held an ERROR traceback)."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

from blackboard._pg_lease import StaleLeaseError
from launcher.scaleout.worker import _retrieve


def _refused() -> None:
    raise StaleLeaseError("coach_reply refused")


def _record_then_drop(retrieve: bool) -> None:
    async def main() -> None:
        fut = asyncio.get_running_loop().run_in_executor(None, _refused)
        if retrieve:
            fut.add_done_callback(_retrieve)
        await asyncio.sleep(0.2)  # finished, never awaited: the turn failed first

    asyncio.run(main())
    gc.collect()


@pytest.mark.parametrize("retrieve", [False, True])
def test_a_dropped_reply_record_is_logged_only_without_the_callback(
    caplog: pytest.LogCaptureFixture, retrieve: bool
) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        _record_then_drop(retrieve)
    logged = any("never retrieved" in r.getMessage() for r in caplog.records)
    assert logged is not retrieve


def test_another_error_of_a_dropped_reply_record_is_logged_by_its_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> None:
        raise OSError("secret reply text")

    async def main() -> None:
        fut = asyncio.get_running_loop().run_in_executor(None, broken)
        fut.add_done_callback(_retrieve)
        await asyncio.sleep(0.2)

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
        gc.collect()
    texts = [r.getMessage() for r in caplog.records]
    assert any("OSError" in t for t in texts) and not any("secret" in t for t in texts)
    assert not any("never retrieved" in t for t in texts)
