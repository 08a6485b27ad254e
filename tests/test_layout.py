"""The import contracts of pyproject.toml ([tool.importlinter], docs/layout.md) hold for the repository,
and fail on an upward import: a copy of the packages with one module importing a higher layer breaks
the contract that forbids it, naming the import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("blackboard", "mcp_server", "proxy", "launcher", "testsupport")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [
        sys.executable,
        "-c",
        "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
        "--config",
        str(root / "pyproject.toml"),
        "--no-cache",
    ]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=240)


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    for package in PACKAGES:
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__", "data"))
    return root


def test_the_repository_keeps_every_import_contract() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "upward", "contract"),
    [
        ("blackboard/_upward.py", "mcp_server", "packages:"),
        ("mcp_server/_upward.py", "launcher.config", "packages:"),
        ("proxy/_upward.py", "launcher", "packages:"),
        ("launcher/pipeline/_upward.py", "launcher.cli", "launcher:"),
        ("launcher/agents/_upward.py", "launcher.pipeline.supervisor", "launcher:"),
    ],
)
def test_an_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, upward: str, contract: str
) -> None:
    root = _copy(tmp_path)
    (root / module).write_text(f"import {upward}  # an upward import\n", encoding="utf-8")
    result = _lint_imports(root)
    assert result.returncode != 0, result.stdout
    assert "1 broken" in result.stdout
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken
    assert module.removesuffix(".py").replace("/", ".") in broken and upward in broken
