"""Every ``coach`` command's ``--help`` renders without a traceback and shows each option's help text
in full: typer renders help as rich markup, so a literal ``[proxy]`` in a help string used to vanish
("default  port"). Help strings that mean a literal bracket escape it (``\\[proxy]``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from launcher.cli import app


def _commands() -> Iterator[tuple[list[str], Any]]:
    root = typer.main.get_command(app)

    def walk(path: list[str], cmd: Any) -> Iterator[tuple[list[str], Any]]:
        yield path, cmd
        for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
            yield from walk([*path, name], sub)

    yield from walk([], root)


def _plain(help_text: str) -> str:
    """What rich shows for a help string: escaped brackets as literal brackets, whitespace as one space."""
    return re.sub(r"\s+", " ", help_text.replace("\\[", "[")).strip()


COMMANDS = list(_commands())


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) or "coach" for p, _ in COMMANDS])
def test_help_shows_every_option_help_in_full(path: list[str], cmd: Any) -> None:
    res = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    shown = re.sub(r"\s+", " ", res.output)
    for param in cmd.params:
        text = getattr(param, "help", None)
        if text:
            assert _plain(text) in shown, f"{' '.join(path)} {param.name}: help text mangled: {text!r}"


def test_every_command_is_covered() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"serve", "agents check", "run", "mcp", "proxy", "board show", "session close", "worker"} <= names
