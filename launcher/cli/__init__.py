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


from launcher.cli.proxy import proxy_cmd  # noqa: E402  (typer only; the server is imported when the command runs)

app.command("proxy")(proxy_cmd)

from launcher.cli.agents import agents_app  # noqa: E402
from launcher.cli.eval import eval_app  # noqa: E402

app.add_typer(agents_app, name="agents")
app.add_typer(eval_app, name="eval")

from launcher.cli.mcp import mcp_cmd  # noqa: E402  (typer only; mcp and the blackboard load when it runs)

app.command("mcp")(mcp_cmd)

from launcher.cli.run import run_cmd  # noqa: E402  (typer only; the stack loads when it runs)
from launcher.cli.session import session_app  # noqa: E402  (typer only; the blackboard loads when it runs)

app.command("run")(run_cmd)
app.add_typer(session_app, name="session")

from launcher.cli.chat import chat_cmd  # noqa: E402  (typer only; the stack loads when it runs)

app.command("chat")(chat_cmd)

from launcher.cli.serve import serve_cmd  # noqa: E402  (typer only; the servers load when it runs)

app.command("serve")(serve_cmd)

from launcher.cli.board import board_app  # noqa: E402  (typer only; the blackboard loads when it runs)
from launcher.cli.demo import demo_cmd  # noqa: E402  (typer only; the stack loads when it runs)
from launcher.cli.replay import replay_cmd  # noqa: E402  (typer only; the stack loads when it runs)

app.command("replay")(replay_cmd)
app.command("demo")(demo_cmd)
app.add_typer(board_app, name="board")

from launcher.cli.db import db_app  # noqa: E402  (typer only; psycopg loads when it runs)

app.add_typer(db_app, name="db")
