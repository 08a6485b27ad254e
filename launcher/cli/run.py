"""``coach run MESSAGE --user U --session S [--json]``.

``coach run`` runs one turn headless: it prints the Coach's reply the moment it exists, then the
synthesis, then a per-agent timeline (rich table). ``--json`` prints exactly one JSON document (nothing
else on stdout): ``turn_id``, ``coach_reply``, ``synthesis``, ``degraded``, ``crisis_tier``, ``safety_raises`` /
``safety_refused`` (rule ids of agents' tier raises) and per agent
``status``, ``started_s``, ``first_token_s``, ``finished_s``, ``input_tokens``, ``output_tokens``, ``error``.
The proxy and the MCP HTTP server are started in-process for the command unless ``--proxy-url`` /
``--mcp-url`` point at running ones (``coach serve``). Exit codes: 0 done (possibly degraded), 2 bad
configuration, agent files or ids, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM; the same clean stop).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from launcher.cli._common import (
    ConfigOpt,
    SessionOpt,
    Terminated,
    UserOpt,
    agent_timeline,
    broker_url_or_exit,
    check_data_dir,
    check_ids,
    check_service_urls,
    check_session_open,
    fail,
    load_config_or_exit,
    run_async,
    store_error,
)

__all__ = ["run_cmd"]


def _stopped(broker_url: str | None, job_id: str | None, user: str, session: str) -> str:
    """What an interrupt left behind: in-process, nothing runs on; with a broker, the job does."""
    if not broker_url:
        return "the turn was cancelled and every agent process stopped"
    return (
        f"job {job_id} is not cancelled: once stored it runs on a worker all the same. Follow it (or send it, "
        f"if it was not stored yet) with: coach run MESSAGE -u {user} -s {session} --broker URL --job-id {job_id}"
    )


def _check_message(message: str) -> None:
    if not message.strip():
        fail(
            "error: MESSAGE is empty: pass the user's message for this turn, e.g. coach run \"I want to "
            'run more" -u U -s S'
        )


#: How Claude Code reports a server that refused the connection (the agent's ``error``).
_REFUSED = ("ECONNREFUSED", "Connection refused")


def _warn_if_service_lost(result: Any, proxy_url: str | None, mcp_url: str | None) -> None:
    """With ``--proxy-url``/``--mcp-url`` (checked to answer before the turn started): when agents
    failed because the connection was refused, the server stopped during the turn (``coach serve``
    killed or restarting); say so on stderr with the fix. Without it the turn ended degraded with exit 0
    and the cause was cut off in the timeline."""
    if proxy_url is None and mcp_url is None:
        return
    lost = [
        name
        for name, a in result.to_json()["agents"].items()
        if a["error"] and any(m in a["error"] for m in _REFUSED)
    ]
    if not lost:
        return
    where = " and ".join(u for u in (proxy_url, mcp_url) if u)
    typer.echo(
        f"warning: {', '.join(lost)} could not reach {where} (connection refused): the server stopped during the "
        "turn, so the turn is degraded (stored as shown). Fix: make sure `coach serve` is running on those ports "
        "(restart it), then run the next turn",
        err=True,
    )


def _warn_if_no_model(result: Any, config: Any, proxy_url: str | None) -> bool:
    """When no agent got a single token from the model (server down or wrong URL), say so on stderr:
    the reply and synthesis printed are then the deterministic fallbacks, which look like coaching.
    Returns whether it warned."""
    agents = result.to_json()["agents"].values()
    ran = [a for a in agents if a["status"] != "skipped"]
    if not ran or any(a["status"] == "ok" or a["output_tokens"] for a in ran):
        return False
    where = proxy_url or ", ".join(r for pool in config.proxy_config().models for r in pool.replicas)
    typer.echo(
        f"warning: no agent got an answer from the model ({where}): the reply and synthesis are the "
        "deterministic fallbacks. Fix: start the model server there, or set [upstream] url / COACH_UPSTREAM_URL "
        "(`coach demo` runs the embedded model)",
        err=True,
    )
    return True


def run_cmd(
    message: Annotated[str, typer.Argument(help="the user's message for this turn")],
    user: UserOpt,
    session: SessionOpt,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document only")] = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream", help="print the Coach's reply word by word as it is written (in-process proxy only)"
        ),
    ] = False,
    config_path: ConfigOpt = None,
    proxy_url: Annotated[str | None, typer.Option("--proxy-url", help="use a running proxy")] = None,
    mcp_url: Annotated[str | None, typer.Option("--mcp-url", help="use a running MCP HTTP server")] = None,
    broker: Annotated[
        str | None,
        typer.Option(
            "--broker",
            help="publish the turn as a job for `coach worker` (RabbitMQ URL; default \\[broker] url)",
        ),
    ] = None,
    job_id: Annotated[
        str | None,
        typer.Option(
            "--job-id",
            help="with --broker: the job's id (the same id again follows that job, never a second one)",
        ),
    ] = None,
) -> None:
    """Run one coaching turn through the six agents and print the result."""
    from rich.console import Console
    from rich.markup import escape

    from blackboard import BlackboardError
    from launcher.agents import AgentSpecError
    from launcher.errors import DataDirError, LauncherError

    check_ids(user=user, session=session)
    _check_message(message)
    config = load_config_or_exit(config_path)
    broker_url = broker_url_or_exit(broker, config)
    if broker_url and not job_id:  # named now, so that an interrupted front end can say what to follow
        from launcher.scaleout.frontend import new_job_id

        job_id = new_job_id()
    check_data_dir(config)
    check_session_open(config, user, session)
    check_service_urls(proxy_url, mcp_url)
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    err = Console(file=sys.stderr, highlight=False, soft_wrap=True)  # error lines are not cut at 80 columns

    live = stream and not as_json  # --stream: the reply's words as they come (launcher.pipeline._reply_view)

    def on_reply(text: str) -> None:
        if not as_json and not live:
            out.print("[bold]Coach:[/bold]", escape(text))  # model text is not rich markup
            out.file.flush()

    async def main() -> Any:
        from launcher.pipeline._reply_view import ReplyPrinter
        from launcher.pipeline._runtime import coach_runtime

        if broker_url:  # a front end: the turn runs on a `coach worker` (docs/scale-out.md)
            from launcher.scaleout.frontend import run_turn_via_broker

            return await run_turn_via_broker(
                config,
                broker_url,
                user,
                session,
                message,
                on_reply=on_reply,
                job_id=job_id,
                on_note=lambda line: err.print(line, markup=False),
            )

        async with coach_runtime(config, proxy_url=proxy_url, mcp_url=mcp_url) as rt:
            return await rt.supervisor.run_turn(
                user,
                session,
                message,
                on_coach_reply=on_reply,
                on_reply_stream=ReplyPrinter(sys.stdout) if live else None,
            )

    try:
        result = run_async(main, sigterm=True)
    except KeyboardInterrupt:
        err.print(f"interrupted: {_stopped(broker_url, job_id, user, session)}", markup=False)
        raise typer.Exit(130) from None
    except Terminated:
        err.print(f"terminated (SIGTERM): {_stopped(broker_url, job_id, user, session)}", markup=False)
        raise typer.Exit(143) from None
    except DataDirError as exc:  # the data dir or its store is unusable
        store_error(exc, config.data.dir)
    except (AgentSpecError, LauncherError) as exc:
        err.print(f"error: {exc}", markup=False)  # "[agents] dir" is text, not markup
        raise typer.Exit(2) from None
    except BlackboardError as exc:  # the store itself is unusable (agents' failures never raise)
        store_error(exc, config.data.dir)
    if not _warn_if_no_model(result, config, proxy_url):
        _warn_if_service_lost(result, proxy_url, mcp_url)
    if as_json:
        typer.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return
    if result.synthesis:
        label = (
            "Synthesis (degraded: missing " + ", ".join(result.missing) + ")"
            if result.degraded
            else "Synthesis"
        )
        if result.synthesis_source in ("crisis", "support"):  # an agent's risk assessment raised the tier
            label = "Crisis response" if result.synthesis_source == "crisis" else "Support"
        out.print(f"\n[bold]{escape(label)}:[/bold]", escape(result.synthesis))
    out.print()
    out.print(agent_timeline(result))
