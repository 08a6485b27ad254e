"""Fixtures of the launcher tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from blackboard import Blackboard


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Blackboard]:
    """A real SQLite blackboard (and file-lock sequencer) in ``tmp_path/data``, closed after the test."""
    b = Blackboard(tmp_path / "data")
    yield b
    b.close()
