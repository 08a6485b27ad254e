"""Shared pytest fixtures (registered for every test by ``tests/conftest.py``).

* ``anyio_backend`` - ``"asyncio"`` (so ``@pytest.mark.anyio`` tests run once, on asyncio).
* ``repo_root`` / ``shared_data_dir`` - the repository root and ``../shared/data`` beside it.
* ``free_port`` - a TCP port free a moment ago on 127.0.0.1.
* ``tmp_data_dir`` - an empty per-test data directory (``tmp_path / "data"``).
* ``claude_home`` - an empty per-test ``HOME`` for ``claude`` processes (pass to ``plain_claude_env``).
* ``scripted_upstream`` - a started :class:`ScriptedUpstream` (instant latency, real loopback port);
  set scripts with ``scripted_upstream.set_script("coach", [Text("hi")])``; stopped after the test.
* ``scripted_upstream_factory`` - ``make(scripts, latency=..., time_scale=...)`` -> started upstream,
  all stopped after the test.
* ``pg_target`` - a PostgreSQL URL and a schema of the test's own, dropped afterwards (skips without a
  server, fails under ``CI=true``; ``testsupport/postgres.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .server import free_port as _free_port
from .upstream import ScriptedUpstream

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """``<repo>/../shared/data`` (real coaching data; never paste it into prompts or product code)."""
    return REPO_ROOT.parent / "shared" / "data"


@pytest.fixture
def free_port() -> int:
    return _free_port()


@pytest.fixture
def tmp_data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def claude_home(tmp_path: Path) -> Path:
    path = tmp_path / "claude-home"
    (path / ".claude").mkdir(parents=True)
    return path


@pytest.fixture
def scripted_upstream_factory() -> Iterator[Callable[..., ScriptedUpstream]]:
    started: list[ScriptedUpstream] = []

    def make(scripts: Any = None, **kwargs: Any) -> ScriptedUpstream:
        upstream = ScriptedUpstream(scripts, **kwargs)
        upstream.start()
        started.append(upstream)
        return upstream

    yield make
    for upstream in started:
        upstream.stop()


@pytest.fixture
def scripted_upstream() -> Iterator[ScriptedUpstream]:
    upstream = ScriptedUpstream()
    upstream.start()
    try:
        yield upstream
    finally:
        upstream.stop()


@pytest.fixture
def pg_target() -> Iterator[Any]:
    """A :class:`testsupport.postgres.PgTarget` (URL + a unique schema, dropped after the test); skips
    without a reachable PostgreSQL (fails under ``CI=true``)."""
    from .postgres import fresh_schema

    with fresh_schema() as target:
        yield target
