"""The in-process stack of one benchmark configuration: proxy, MCP server, runner (ours or the seed's
way) and the supervisors over them."""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from .inputs import OPTIONS


def seed_runner_class() -> type:
    """The runner's own seed's-way mode (``RunnerConfig(seed_way=True)``: Claude Code's default system
    prompt with the agent prompt appended, default tools, thinking on), minus the per-agent output-token
    cap: the seed did not cap its agents, and thinking tokens count against the cap."""
    from launcher.runner._agent_runner import ClaudeAgentRunner

    class SeedWayRunner(ClaudeAgentRunner):
        def options(self, inv: Any, *, one_shot: bool, stderr: Callable[[str], None]) -> Any:
            opts = super().options(inv, one_shot=one_shot, stderr=stderr)
            env = {k: v for k, v in opts.env.items() if k != "CLAUDE_CODE_MAX_OUTPUT_TOKENS"}
            return dataclasses.replace(opts, env=env)

    return SeedWayRunner


# ----- one stack, one turn ----------------------------------------------------------------------------


@dataclass
class Stack:
    supervisor: Any
    serial_supervisor: Any
    runner: Any


@contextlib.asynccontextmanager
async def stack(
    upstream_url: str, specs: dict[str, Any], work: Path, *, seed_way: bool
) -> AsyncIterator[Stack]:
    from blackboard import Blackboard
    from launcher.pipeline._turn_scope import TurnDirectory
    from launcher.pipeline.stack import running_stack
    from launcher.pipeline.supervisor import Supervisor, SupervisorSettings
    from launcher.runner._agent_runner import ClaudeAgentRunner, RunnerConfig
    from proxy import ModelPool, ProxyConfig

    home = work / "home"
    await anyio.to_thread.run_sync(lambda: (home / ".claude").mkdir(parents=True, exist_ok=True))
    board = Blackboard(work / "data")
    directory = TurnDirectory()
    pool = ModelPool(name="qwen3", aliases=["*"], kind="openai", replicas=[upstream_url])
    proxy_cfg = ProxyConfig(models=[pool], default_model="qwen3", max_attempts=1)
    secret = secrets.token_hex(16)
    try:
        async with running_stack(
            board=board,
            directory=directory,
            proxy_config=proxy_cfg,
            agents=None if seed_way else specs,
            mcp_secret=secret,
        ) as urls:
            cfg = RunnerConfig(
                proxy_url=urls.proxy_url,
                mcp_url=urls.mcp_url,
                max_warm=6,
                mcp_secret=secret,
                seed_way=seed_way,
                pool_size=0 if seed_way else 6,
                cwd=str(work),
                extra_env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
            )
            runner_cls = seed_runner_class() if seed_way else ClaudeAgentRunner
            from launcher.runner._process_pool import bindings_for

            async with runner_cls(cfg, bindings=bindings_for(directory)) as runner:
                sup = Supervisor(
                    board,
                    runner,
                    lambda: specs,
                    directory=directory,
                    settings=SupervisorSettings(pineal_prefill=OPTIONS["prefill"]),
                )
                serial = Supervisor(
                    board,
                    runner,
                    lambda: specs,
                    directory=directory,
                    settings=SupervisorSettings(sequential=True),
                )
                yield Stack(sup, serial, runner)
    finally:
        board.close()
