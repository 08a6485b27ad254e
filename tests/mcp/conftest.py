"""Fixtures for the MCP server tests: a real SQLite-backed blackboard in a temp dir and an open turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from blackboard import Blackboard
from tests.mcp.helpers import SESSION, USER


@pytest.fixture
def board(tmp_data_dir: Path) -> Iterator[Blackboard]:
    b = Blackboard(tmp_data_dir)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def turn(board: Blackboard) -> str:
    return board.begin_turn(USER, SESSION)
