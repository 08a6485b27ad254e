"""``coach demo``: a real multi-turn coaching session on the embedded local model (no GPU, no vLLM).

Starts llama.cpp's ``llama-server`` serving SmolLM2-135M-Instruct (``launcher.embedded``) on a free
loopback port, the proxy (upstream = that server, ``/v1/chat/completions`` or, with ``--upstream-kind
anthropic``, ``/v1/messages`` passed through) and the MCP HTTP server in-process on free loopback
ports, then replays the example transcript (``examples/annomi_24.csv``: real client utterances of a
public-domain AnnoMI transcript, two sessions) with ``coach replay``'s engine: six real Claude Code
agents per turn, every specialist writing one schema-valid entry through its MCP tool.

The model is tiny, so the chain is held by the proxy's per-agent policies generated from the agent
files (``launcher.agents.policies``): the output tool is forced on each agent's first model call (llama-server
ignores a *named* tool choice, so the pool sets ``forced_tool_prefill``: only that tool, "required",
and an assistant ``<tool_call>`` prefill), ``max_tokens`` is capped, and the turn ends after the write.
It proves the wiring, not coaching quality. CPU inference is slow, so every agent deadline is
multiplied by ``--deadline-scale``.

Everything started is stopped on exit, Ctrl-C and failure (llama-server's process group, the agent
processes, both servers); the blackboard stays in ``[data] dir`` and opens cleanly afterwards
(``coach board show --user annomi-24``). Exit codes: 0 done, 1 the embedded model failed to start,
2 not installed or bad input, 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from launcher.cli._common import fail

__all__ = [
    "EXAMPLE",
    "demo_cmd",
    "demo_embedded_config",
    "demo_supervisor_settings",
    "embedded_runtime_config",
    "scaled_agents",
]

_SLOW_UPSTREAM_S = 1800.0
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "annomi_24.csv"


def embedded_runtime_config(config: Any, base_url: str, kind: Literal["openai", "anthropic"]) -> Any:
    """``config`` (a ``CoachConfig``) with its proxy pointed at the embedded server at ``base_url``: one
    pool ``default`` serving every model name, ``forced_tool_prefill`` set (see the module docstring),
    the agents' optional ``risk`` assessment left out of the forced tools' schemas (too small a model to
    judge safety; the deterministic screen still runs), ``context_window`` = one llama-server slot. Agent
    policies written in ``[proxy.agents]`` still win."""
    from launcher.embedded import FORCED_TOOL_CALL_PREFILL
    from proxy.config import ModelPool

    pool = ModelPool(
        name="default",
        replicas=[base_url],
        kind=kind,
        forced_tool_prefill=FORCED_TOOL_CALL_PREFILL,
        context_window=config.embedded.ctx_per_slot,
        chat_template_kwargs=False,
        omit_tool_properties=["risk"],
        max_string_length=240,  # strings close before the agents' output caps (proxy.config.ModelPool)
    )
    proxy = config.proxy.model_copy(
        update={
            "models": [pool],
            "default_model": "default",
            # CPU prefill of six prompts queued on one server can take minutes under load: wait for it.
            "first_byte_timeout_s": max(config.proxy.first_byte_timeout_s, _SLOW_UPSTREAM_S),
            "read_timeout_s": max(config.proxy.read_timeout_s, _SLOW_UPSTREAM_S),
        }
    )
    return config.model_copy(update={"proxy": proxy})


def scaled_agents(current: Any, scale: float, output_caps: Mapping[str, int] | None = None) -> Any:
    """A callable returning ``current()``'s agent specs with ``deadline_s`` multiplied by ``scale`` and
    ``max_output_tokens`` lowered to ``output_caps[name]`` where that is lower (``[embedded]
    agent_output_caps``). Re-read every turn, so hot reload still works."""
    caps = dict(output_caps or {})

    def agents() -> dict[str, Any]:
        specs = current()
        out: dict[str, Any] = {}
        for name, spec in specs.items():
            update: dict[str, Any] = {}
            if scale != 1.0:
                update["deadline_s"] = float(spec.deadline_s) * scale
            if name in caps and caps[name] < spec.max_output_tokens:
                update["max_output_tokens"] = caps[name]
            out[name] = spec.model_copy(update=update) if update else spec
        return out

    return agents


def demo_supervisor_settings() -> Any:
    """Supervisor settings for the one-slot embedded server: the specialists wait (up to 60 s) for the
    Coach's first token, so the Coach's request is served first and its reply comes within seconds of its
    own prefill instead of behind the specialists' (measured: 137 s in a warm turn when all started
    together). The server serves one request at a time, so this costs the turn nothing.

    Pineal's prefill needs no setting here: the proxy sends it upstream only when the server has a free
    slot (``proxy._slots``), which a one-slot server serving a specialist has not, so it never queues
    behind them (the first demo with prefills, before that check: Pineal started 65 s after the last
    specialist ended)."""
    from launcher.pipeline.supervisor import SupervisorSettings

    return SupervisorSettings(coach_head_start_s=60.0, coach_head_start_until="first_token")


def demo_embedded_config(config: Any) -> Any:
    """``[embedded]`` for a replay: as configured, except ``parallel`` = 1 unless set explicitly. On a CPU
    every prompt token costs the same whoever asks, but with six slots llama-server interleaves six
    prefills in 2048-token batches (about a minute each on a busy 2-core machine) and the Coach, whose
    generation gets one token per batch, misses its deadline; with one slot requests are served in
    arrival order, the Coach (started first) replies after its own prefill, and llama-server's prompt
    cache (``--cache-ram``) still reuses each agent's unchanged prefix (prompt + tools) across turns."""
    emb = config.embedded
    if "parallel" not in emb.model_fields_set:
        emb = emb.model_copy(update={"parallel": 1})
    return emb


def demo_cmd(
    file: Annotated[
        Path, typer.Option("--file", help="transcript to replay (default: the AnnoMI example)")
    ] = EXAMPLE,
    user: Annotated[str, typer.Option("--user", "-u", help="user id on the blackboard")] = "annomi-24",
    turns_per_session: Annotated[
        int, typer.Option("--turns-per-session", min=1, help="utterances played per session (CPU is slow)")
    ] = 2,
    upstream_kind: Annotated[
        str, typer.Option("--upstream-kind", help="openai (/v1/chat/completions) or anthropic (/v1/messages)")
    ] = "openai",
    deadline_scale: Annotated[
        float, typer.Option("--deadline-scale", min=1.0, help="multiply every agent deadline (CPU inference)")
    ] = 12.0,
    out: Annotated[Path | None, typer.Option("--out", help="also write the turns as JSON lines here")] = None,
    config_path: Annotated[
        Path | None, typer.Option("--config", help="coach.toml (default ./coach.toml)")
    ] = None,
) -> None:
    """Run a real multi-turn session on the embedded model: six agents, proxy, MCP, blackboard."""
    import anyio
    from rich.console import Console

    from launcher.agents import AgentSpecError
    from launcher.cli._common import check_user, load_config_or_exit, plural
    from launcher.cli.replay import load_transcript, run_replay
    from launcher.embedded import EmbeddedError, EmbeddedModelServer, find_llama_server, find_model
    from launcher.errors import LauncherError
    from launcher.pipeline._replay import run_tag
    from launcher.transcripts import TranscriptError

    if upstream_kind not in ("openai", "anthropic"):
        fail(f"error: --upstream-kind must be openai or anthropic, got {upstream_kind!r}")
    kind: Literal["openai", "anthropic"] = "anthropic" if upstream_kind == "anthropic" else "openai"
    check_user(user)
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
    try:
        transcript = load_transcript(file)
        binary, model = find_llama_server(), find_model()
    except TranscriptError as exc:
        console.print(f"error ({exc.code}): {exc}")
        raise typer.Exit(2) from None
    except EmbeddedError as exc:
        console.print(f"error ({exc.code}): {exc}")
        raise typer.Exit(2) from None
    config = load_config_or_exit(config_path)
    prefix = run_tag()
    data_dir = Path(config.data.dir).resolve()
    console.rule("[bold]coachboard demo")
    console.print(
        "Six real Claude Code agents per turn, on a 135M-parameter model running on this CPU "
        f"([cyan]{model.name}[/cyan] via {binary.name}). The tiny model proves the wiring "
        "(real tokens, real tool calls, MCP writes validated on the blackboard, Shadow before Pineal), "
        "not coaching quality.\n"
        f"Input: {len(transcript.utterances)} real client utterances of AnnoMI transcript {transcript.id} "
        f"({file.name}); playing the first {turns_per_session} of each of its {len(transcript.sessions)} "
        f"sessions as user [bold]{user}[/bold]. Proxy upstream kind: {kind}."
    )
    # Claude Code aborts a model request after API_TIMEOUT_MS (default 10 min): requests queued behind
    # slow CPU prefills may wait longer than that under the scaled deadlines.
    os.environ.setdefault("API_TIMEOUT_MS", str(int(_SLOW_UPSTREAM_S * 1000)))
    t_start = time.monotonic()
    sink = out.open("w", encoding="utf-8") if out is not None else None

    def show_reply(text: str) -> None:
        from rich.markup import escape

        console.print(f"[bold]Coach[/bold] (delivered at once, while the specialists work): {escape(text)}")

    def show_turn(turn: Any) -> None:
        from rich.markup import escape

        from launcher.cli._common import agent_timeline

        r = turn.result
        console.rule(
            f"session {turn.session} ({turn.session_id}) turn {turn.turn}: {r.turn_id}, {turn.wall_s:.0f} s"
        )
        fallback = " (the deterministic fallback reply)" if r.coach_fallback else ""
        console.print(f"[bold]Coach reply[/bold]: shown above, after {_secs(r.coach_reply_s)}{fallback}")
        label = f"Synthesis ({r.synthesis_source}, after {_secs(r.synthesis_s)})"
        console.print(f"[bold]{label}:[/bold]", escape(r.synthesis or "(none)"))
        console.print(agent_timeline(r))

    async def main() -> list[Any]:
        from rich.markup import escape

        from launcher.pipeline._runtime import coach_runtime
        from launcher.pipeline._screen import SafetyScreen
        from launcher.pipeline.supervisor import Supervisor

        emb = demo_embedded_config(config)
        server = EmbeddedModelServer(
            emb,
            log_path=data_dir.parent / "llama-server.log",
            progress=lambda m: console.print(f"    [dim]model server:[/dim] {escape(m)}"),
        )
        console.print(
            f"[bold]1/3[/bold] starting the embedded model server ({plural(emb.parallel, 'slot')}, "
            f"{plural(emb.threads, 'thread')})"
        )
        async with server:
            console.print(
                "[bold]2/3[/bold] starting the proxy and the MCP HTTP server on free loopback ports"
            )
            rt_config = embedded_runtime_config(config, server.base_url, kind)
            async with coach_runtime(rt_config) as rt:
                console.print(
                    f"    proxy {rt.urls.proxy_url} -> {server.base_url} ({kind}); MCP {rt.urls.mcp_url}; "
                    f"blackboard {data_dir}"
                )
                sup = Supervisor(
                    rt.board,
                    rt.runner,
                    scaled_agents(rt.registry.current, deadline_scale, emb.agent_output_caps),
                    screen=SafetyScreen(config.safety),
                    directory=rt.supervisor.directory,
                    settings=demo_supervisor_settings(),
                )
                console.print(
                    f"[bold]3/3[/bold] replaying (agent deadlines x{deadline_scale:g} for CPU inference)"
                )
                return await run_replay(
                    dataclasses.replace(rt, supervisor=sup),
                    transcript,
                    user=user,
                    prefix=prefix,
                    console=console,
                    sink=sink,
                    turns_per_session=turns_per_session,
                    on_turn=show_turn,
                    on_coach_reply=show_reply,
                    stream_reply=True,
                )

    try:
        turns = anyio.run(main)
    except KeyboardInterrupt:
        console.print(
            "\n[yellow]interrupted[/yellow]: the running turn was cancelled; the model server, the "
            "agent processes and both servers were stopped. The blackboard keeps every finished turn: "
            f"coach board show --user {user}"
        )
        raise typer.Exit(130) from None
    except EmbeddedError as exc:
        console.print(f"error ({exc.code}): {exc}")
        raise typer.Exit(1) from None
    except (AgentSpecError, LauncherError) as exc:
        console.print(f"error: {exc}")
        raise typer.Exit(2) from None
    finally:
        if sink is not None:
            sink.close()
    _epilogue(console, turns, user, data_dir, time.monotonic() - t_start)


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} s"


def _epilogue(console: Any, turns: list[Any], user: str, data_dir: Path, elapsed: float) -> None:
    from blackboard import SYNTHESIS_INPUTS as writers

    written = sum(
        1
        for t in turns
        if all((a := t.result.agents.get(n)) is not None and a.status == "ok" for n in writers)
    )
    model_synth = sum(1 for t in turns if t.result.synthesis_source in ("model", "repaired"))
    delivered = sum(1 for t in turns if t.result.coach_reply and t.result.synthesis)
    sessions = sorted({t.session_id for t in turns})
    script = Path(sys.executable).parent / "coach"
    coach = _relative(script) if script.exists() else "coach"
    console.rule("[bold]done")
    console.print(
        f"{len(turns)} turns over {len(sessions)} sessions in {elapsed:.0f} s. {delivered} of {len(turns)} turns "
        f"delivered a Coach reply and a synthesis; in {written} of {len(turns)} turns the model wrote all five entries (Coach, Shadow, "
        f"Persona, Plasticity, Stability) through their MCP tools. Pineal's synthesis: {model_synth} by the model, "
        f"{len(turns) - model_synth} by the deterministic fallback (a 135M model's synthesis often breaks a "
        "rule - citations, length, blocked moves - and after two rejected attempts the MCP server stores the "
        "fallback as Pineal's entry).\n"
        f"The blackboard lives in [bold]{data_dir / 'blackboard.sqlite3'}[/bold] (SQLite; \\[data] dir).\n"
        f"Inspect it:  {coach} board show --user {user}            (every turn's entries and the profile)\n"
        f"             {coach} board show --user {user} --session {sessions[0] if sessions else '<S>'} --json"
    )
    if data_dir != Path(".coachboard/data").resolve():
        console.print(f"             (add COACH_DATA_DIR={data_dir} if you ran the demo with another config)")
    sys.stdout.flush()
