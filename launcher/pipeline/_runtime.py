"""Everything one command needs to run turns, built from the :class:`~launcher.config.CoachConfig`:
the blackboard, the agent registry, the in-process stack (unless URLs are given), the agent runner and
the supervisor. An async context manager; everything it started is stopped on exit (Ctrl-C included).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from blackboard import Blackboard
from launcher.errors import StackError
from launcher.pipeline._data_dir import open_board, prepare_data_dir
from launcher.pipeline._screen import SafetyScreen
from launcher.pipeline._turn_scope import TurnDirectory
from launcher.pipeline.stack import StackUrls, running_stack
from launcher.pipeline.supervisor import Supervisor
from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig

__all__ = ["Runtime", "coach_runtime", "fill_pool"]

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    """The live objects of one command.

    Supervisors built on it take :meth:`current_agents` as their agents source, so an agent-file reload
    reaches the in-process proxy's per-agent policies (forced tool, max tokens, model alias) before the
    first request of the next turn, not only the prompts.
    """

    config: Any
    board: Blackboard
    registry: Any
    urls: StackUrls
    runner: ClaudeAgentRunner
    supervisor: Supervisor
    synced_version: int = 1

    def current_agents(self) -> dict[str, Any]:
        """The registry's current agent specs; when they are a newer version than the proxy was last
        given (a reload), the in-process proxy's policies are updated first (``StackUrls.set_agents``).
        An external proxy (``--proxy-url``) keeps the policies of its own config."""
        specs: dict[str, Any] = self.registry.current()
        version = self.registry.version
        if version != self.synced_version and self.urls.set_agents is not None:
            try:
                self.urls.set_agents(specs)
            except ValueError:  # pydantic ValidationError included; the previous policies stay
                log.exception(
                    "the reloaded agent files give invalid proxy policies; the proxy keeps the old ones"
                )
                return specs
        self.synced_version = version
        return specs


def _prepare_dirs(configured: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Create the data dir and the agents' private Claude config dir; returns (the data dir made absolute,
    the latter's parent). Absolute because the agents run with cwd = the data dir: a relative path in their
    environment (CLAUDE_CONFIG_DIR) would resolve to a second copy nested inside it.
    Raises DataDirError (``launcher.pipeline._data_dir``) when either cannot be created."""
    data_dir = prepare_data_dir(configured).resolve()
    return data_dir, prepare_data_dir(data_dir / "claude-home" / ".claude").parent


def _external_mcp_secret(data_dir: Path) -> str | None:
    from mcp_server import McpServerError, mcp_secret

    try:
        return mcp_secret(data_dir, create=False)
    except McpServerError as exc:
        raise StackError(exc.message) from None


@contextlib.asynccontextmanager
async def coach_runtime(
    config: Any,
    *,
    proxy_url: str | None = None,
    mcp_url: str | None = None,
    agents_dir: Path | None = None,
    pool: bool = False,
) -> AsyncIterator[Runtime]:
    """Build and start everything for ``config`` (a ``CoachConfig``).

    ``pool``: for a command that serves new sessions as they come (``coach worker``, the Claude Code
    session mode): keep started, idle agent processes for them (:func:`fill_pool`, in the background
    from the start; ``launcher.runner._process_pool``). Only with the in-process proxy and MCP server,
    which translate a pooled process's identity; ignored with ``proxy_url`` or ``mcp_url``.

    Raises:
        launcher.agents.AgentSpecError: invalid agent files (each problem with file, line and fix).
        launcher.errors.StackError: the proxy or MCP server could not start.
        launcher.errors.DataDirError: the data dir is unusable (a file, not writable) or its blackboard
            is corrupt (code ``store_unavailable``); the message says what to fix.
    """
    from launcher.agents import AgentRegistry

    data_dir, home = _prepare_dirs(config.data.dir)
    registry = AgentRegistry(agents_dir or config.agents.resolved_dir())
    board = open_board(data_dir, thresholds=config.thresholds, **config.data.board_options())
    directory = TurnDirectory()
    # A fresh secret per run signs the agents' MCP scope headers (x-coach-scope-token): another local
    # process that can reach the port cannot act for a user without it. A running server (--mcp-url:
    # coach serve, coach mcp --http) is signed for with its secret: COACH_MCP_SECRET, else the data dir's
    # mcp_secret file that server created.
    secret = secrets.token_hex(16) if mcp_url is None else _external_mcp_secret(data_dir)
    try:
        async with running_stack(
            board=board,
            directory=directory,
            proxy_config=config.proxy_config(),
            mcp_config=config.mcp,
            agents=registry.current(),
            proxy_url=proxy_url,
            mcp_url=mcp_url,
            mcp_secret=secret,
            data_dir=data_dir,
        ) as urls:
            pooled = pool and proxy_url is None and urls.in_process_mcp
            runner_cfg = RunnerConfig(
                proxy_url=urls.proxy_url,
                mcp_url=urls.mcp_url,
                max_warm=config.agents.warm_process_limit,
                mcp_turn_header=not urls.in_process_mcp,
                mcp_secret=secret,
                cwd=str(data_dir),
                # Claude Code's config, and its MCP debug logs (under $XDG_CACHE_HOME), stay in the data dir.
                extra_env={
                    "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                    "XDG_CACHE_HOME": str(home / ".cache"),
                },
                keep_claude_transcripts=config.agents.keep_claude_transcripts,
                pool_size=config.agents.warm_process_limit if pooled else 0,
            )
            runner_cfg = _reuse_settings(config, runner_cfg, in_process=proxy_url is None)
            from launcher.runner._process_pool import bindings_for

            # One set of identity bindings for the pool's processes, fresh or reset (launcher.runner._reset).
            bindings = bindings_for(directory) if runner_cfg.pool_size else None
            async with (
                ClaudeAgentRunner(runner_cfg, bindings=bindings) as runner,
                anyio.create_task_group() as tg,
            ):
                holder: list[Runtime] = []
                supervisor = Supervisor(
                    board,
                    runner,
                    lambda: holder[0].current_agents(),
                    screen=SafetyScreen(config.safety),
                    directory=directory,
                )
                holder.append(Runtime(config, board, registry, urls, runner, supervisor, registry.version))
                if pooled:
                    tg.start_soon(fill_pool, holder[0])
                try:
                    yield holder[0]
                finally:
                    tg.cancel_scope.cancel()
    finally:
        board.close()


def _reuse_settings(config: Any, cfg: RunnerConfig, *, in_process: bool) -> RunnerConfig:
    """``[agents] reuse_processes``: the runner's pool (for reset processes) and process reuse (the caller binds
    the pool's identities: ``launcher.runner._reset``). Only with the in-process proxy and MCP
    server, which translate a pooled process's identity; otherwise reuse stays off, with a warning. The
    pool holds at least one process per agent (six) then; a larger pool (``coach worker``) is kept."""
    if not config.agents.reuse_processes:
        return cfg
    if not (in_process and not cfg.mcp_turn_header):
        log.warning(
            "[agents] reuse_processes is off: it needs the in-process proxy and MCP server (drop "
            "--proxy-url/--mcp-url to reuse processes, or set reuse_processes = false to silence this)"
        )
        return cfg
    import dataclasses

    return dataclasses.replace(cfg, pool_size=max(cfg.pool_size, 6), reuse_processes=True)


async def fill_pool(rt: Runtime) -> int:
    """Pay the safety screen's one-time cost, then start the runner's pool of idle processes, one per
    agent (at most the free warm slots and what the memory allows; one at a time, only while no agent
    runs: ``launcher.runner._process_pool``), each warmed up (its prompt head cached on the model server):
    what a new session's first turn would otherwise pay on its critical path. Returns how many processes
    were started. Never raises for agent processes (a failed start is logged; that agent's first turn
    starts its own process)."""
    from launcher.pipeline.supervisor import pool_invocations

    await rt.supervisor.warm_up()
    try:
        started = await rt.runner.pool.fill_when_idle(pool_invocations(rt.current_agents()))
    except Exception:  # agent files unreadable now: the turns report that themselves
        log.exception("the process pool could not be filled")
        return 0
    log.info("process pool: %d idle agent processes started", started)
    return started
