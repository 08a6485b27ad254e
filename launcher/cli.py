"""The `coach` command line (typer). Subcommands are registered by their packages."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="coach",
    help="coachboard: a six-agent coaching pipeline on self-hosted models.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main() -> None:
    """coachboard: a six-agent coaching pipeline on self-hosted models."""
