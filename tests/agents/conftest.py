"""Fixtures of the agent-file tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    """A writable copy of the repository's six agent files (``tmp_path/agents``)."""
    d = tmp_path / "agents"
    shutil.copytree(REPO / "agents", d)
    return d
