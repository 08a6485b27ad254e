"""Test-wide configuration: the repository root on sys.path and the shared fixtures of testsupport."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from testsupport.upstream import ScriptedUpstream  # noqa: E402 (needs the repository root on sys.path)

pytest_plugins = ["testsupport.pytest_fixtures"]


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    """The scripted model server answering every agent with a valid write (``tests.e2e.harness.agent_script``),
    on a loopback port for the test's duration. A test module may define its own ``upstream``."""
    from tests.e2e.harness import agent_script
    from tests.launcher.fakes import OUTPUT_TOOLS

    up = ScriptedUpstream({a: agent_script(a) for a in OUTPUT_TOOLS})
    up.start()
    try:
        yield up
    finally:
        up.stop()
