"""``coach agents check [--dir D]``: validate the six agent files and print a table; exit 1 if any is
invalid (every problem printed as ``file:line: field: what. Fix: how``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from launcher.cli._common import fail

if TYPE_CHECKING:
    from launcher.agents import AgentProblem

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

    from launcher.agents import AGENT_NAMES, check_agents

    if directory is None:
        from launcher.config import ConfigError, load_config

        try:
            directory = load_config(config_path).agents.resolved_dir()
        except ConfigError as exc:
            fail(f"error: {exc}")
    specs, problems = check_agents(directory)
    problems.extend(_project_link_problems(directory))
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
            name,
            spec.stage,
            spec.output_tool_bare,
            f"{spec.deadline_s:g}",
            str(spec.max_output_tokens),
            str(spec.context_budget_tokens),
            spec.model_alias,
            "yes" if spec.force_output_tool else "no",
            "[green]ok[/green]",
        )
    console = Console()
    if not console.is_terminal:
        console = Console(width=140)
    console.print(table)
    for problem in problems:
        typer.echo(str(problem))
    if problems:
        raise typer.Exit(1)


def _project_link_problems(directory: Path) -> list[AgentProblem]:
    """The project's Claude Code subagents (``.claude/agents/<name>.md`` beside the agents folder) are
    links to the agent files, the only copy. An edit through a tool that replaces the link with a file
    (``sed -i``, some editors' safe write) splits them: Claude Code would run one prompt, coach
    run/chat the other. Each such file is a problem, when at least one of the six is still linked here
    (the project's layout); otherwise that folder is not this project's and nothing is reported."""
    from launcher.agents import AGENT_NAMES, AgentProblem

    links = directory.parent / ".claude" / "agents"
    # Only where the project links its subagents to this folder: `--dir ~/myagents` must not judge the
    # user's own ~/.claude/agents (personal subagents that merely share a name).
    if not any(
        (links / f"{n}.md").is_symlink()
        and (links / f"{n}.md").resolve() == (directory / f"{n}.md").resolve()
        for n in AGENT_NAMES
    ):
        return []
    problems: list[AgentProblem] = []
    for name in AGENT_NAMES:
        link, target = links / f"{name}.md", directory / f"{name}.md"
        if not (link.is_symlink() or link.exists()) or link.resolve() == target.resolve():
            continue
        what = "a separate file" if not link.is_symlink() else f"a link to {link.readlink()}"
        problems.append(
            AgentProblem(
                str(link),
                0,
                None,
                f"Claude Code's {name} subagent is {what}, not a link to {target}: the two can differ",
                f"put the text you want in {target}, then link it again: ln -sf ../../{directory.name}/{name}.md {link}",
            )
        )
    return problems
