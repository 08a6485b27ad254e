"""``coach agents check [--dir D]``: validate the six agent files and print a table; exit 1 if any is
invalid (every problem printed as ``file:line: field: what. Fix: how``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["agents_app"]

agents_app = typer.Typer(help="The six agent files.", no_args_is_help=True)


@agents_app.command("check")
def agents_check_cmd(
    directory: Annotated[
        Path | None, typer.Option("--dir", help="agents folder (default: \\[agents] dir)")
    ] = None,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
) -> None:
    """Parse and validate every agent file; exit 1 on any invalid file."""
    from rich.console import Console
    from rich.table import Table

    from .agents import AGENT_NAMES, check_agents

    if directory is None:
        from .config import ConfigError, load_config

        try:
            directory = load_config(config_path).agents.resolved_dir()
        except ConfigError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
    specs, problems = check_agents(directory)
    table = Table(title=f"agents in {directory}")
    for col in (
        "agent",
        "stage",
        "output tool",
        "deadline s",
        "max out",
        "budget",
        "alias",
        "forced",
        "status",
    ):
        table.add_column(col)
    for name in AGENT_NAMES:
        spec = specs.get(name)
        if spec is None:
            table.add_row(name, "", "", "", "", "", "", "", "[red]invalid[/red]")
            continue
        table.add_row(
            name, spec.stage, spec.output_tool_bare, f"{spec.deadline_s:g}", str(spec.max_output_tokens),
            str(spec.context_budget_tokens), spec.model_alias, "yes" if spec.force_output_tool else "no",
            "[green]ok[/green]",
        )  # fmt: skip
    console = Console()
    if not console.is_terminal:
        console = Console(width=140)
    console.print(table)
    for problem in problems:
        typer.echo(str(problem))
    if problems:
        raise typer.Exit(1)
