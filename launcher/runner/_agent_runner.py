"""The runner boundary: one agent's model turn, run by a real headless Claude Code process.

:class:`AgentRunner` is the protocol the supervisor calls (a test double replaces it at this boundary);
:class:`ClaudeAgentRunner` is the real implementation over claude-agent-sdk. Each agent process gets:

* ``system_prompt`` = the agent file's prompt body (Claude Code's default prompt replaced),
  ``tools=[]`` (no built-in tools) and only its own MCP tools allowed (``mcp__coachboard__<tool>``);
* ``permission_mode="bypassPermissions"`` (``IS_SANDBOX=1``: we run as root);
* env: ``ANTHROPIC_BASE_URL`` = the proxy, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_CUSTOM_HEADERS`` naming
  agent/user/session (and the turn for one-shot processes), the settings docs/claude-code.md lists ("Verified facts") that make the
  request plain, ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` from the agent file, ``CLAUDE_CODE_MAX_RETRIES=0``
  (the supervisor retries once itself, within the deadline);
* a strict MCP config (``--strict-mcp-config``) naming only the shared streamable-HTTP MCP server, with
  the ``x-coach-*`` headers fixed by us: the model can never choose another user or session;
* ``--no-session-persistence``: Claude Code writes no transcript of the conversation (the user's
  messages) under ``$CLAUDE_CONFIG_DIR/projects/`` (``RunnerConfig.keep_claude_transcripts`` keeps them).

Processes are kept warm per (user, session, agent) through the session (a persistent
``ClaudeSDKClient`` whose conversation holds that agent's session history), at most ``max_warm`` at a
time (about 235 MiB RSS each, docs/claude-code.md); beyond the limit a one-shot process is used. A warm process
whose conversation outgrew the agent's context budget, or whose agent file changed, is replaced.
:meth:`ClaudeAgentRunner.prestart` starts (connects) a warm process ahead of its first run, off the
critical path (a session opening, Pineal while the specialists work): the run then only sends its query
(and waits for a prestart still connecting instead of starting a second process).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from launcher.errors import AgentFailedError
from launcher.runner._claude_process import disconnect, kill_process, mcp_ready
from launcher.runner._protocol import (
    AgentEvents,
    AgentInvocation,
    AgentOutcome,
    AgentRunner,
    RunnerConfig,
    ToolCallRecord,
)
from launcher.runner.claude_env import PLAIN_REQUEST_ENV

__all__ = [
    "PLAIN_REQUEST_ENV",
    "AgentEvents",
    "AgentInvocation",
    "AgentOutcome",
    "AgentRunner",
    "ClaudeAgentRunner",
    "RunnerConfig",
    "ToolCallRecord",
]

log = logging.getLogger(__name__)

_API_ERROR = re.compile(r"API Error: (\d{3})")

#: Environment variable carrying the agent's MCP scope token (``x-coach-scope-token``) to its process.
MCP_TOKEN_ENV = "COACH_MCP_SCOPE_TOKEN"


@dataclass
class _Warm:
    client: Any
    fingerprint: str
    busy: bool = False
    primed: bool = False  # its conversation holds the session (a run succeeded): send the follow-up
    starting: anyio.Event | None = None  # set when a prestart's connect ended (ok or not)
    pool_session: str | None = None  # a pooled process's own session id, bound to this entry's session
    last_input_tokens: int = 0
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=20))


def _fingerprint(inv: AgentInvocation) -> str:
    h = hashlib.sha256()
    for part in (inv.system_prompt, inv.model, ",".join(inv.tools), str(inv.max_output_tokens)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _take_result(out: AgentOutcome, msg: Any, agent: str) -> None:
    """The token counts of Claude Code's closing ``ResultMessage`` into ``out``; ``max_turns`` marks the
    run stopped (the tool calls made so far decide, see ``_agent_task``); an error result raises."""
    usage = msg.usage or {}
    out.input_tokens = (
        int(usage.get("input_tokens") or 0)
        + int(usage.get("cache_read_input_tokens") or 0)
        + int(usage.get("cache_creation_input_tokens") or 0)
    )
    out.output_tokens = int(usage.get("output_tokens") or 0)
    result_text = msg.result or ""
    if msg.subtype == "error_max_turns":
        out.stopped = "max_turns"
    elif msg.is_error or _API_ERROR.search(result_text):
        raise _result_error(agent, msg.subtype, result_text)


class ClaudeAgentRunner:
    """:class:`AgentRunner` over real ``claude`` processes (claude-agent-sdk). Use as an async context
    manager or call :meth:`aclose`: every process it started is stopped."""

    def __init__(self, config: RunnerConfig, *, bindings: Any = None) -> None:
        self.config = config
        self._warm: OrderedDict[tuple[str, str, str], _Warm] = OrderedDict()
        self._lock = anyio.Lock()
        self._background: set[asyncio.Task[None]] = set()
        self.started_processes = 0
        self.reset_processes = 0  # warm processes reset and returned to the pool (launcher.runner._reset)
        self.reset_failures = 0  # resets not confirmed (those processes were stopped)
        from launcher.runner._process_pool import ProcessPool

        self.pool = ProcessPool(self, bindings)

    async def __aenter__(self) -> ClaudeAgentRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- options -------------------------------------------------------------------------------

    def _headers(self, inv: AgentInvocation, *, with_turn: bool) -> dict[str, str]:
        h = {"x-coach-agent": inv.agent, "x-coach-user": inv.user, "x-coach-session": inv.session}
        if with_turn:
            h["x-coach-turn"] = inv.turn
        return h

    def options(self, inv: AgentInvocation, *, one_shot: bool, stderr: Callable[[str], None]) -> Any:
        """The ``ClaudeAgentOptions`` for this agent (public for tests and for ``coach agents show``)."""
        from claude_agent_sdk import ClaudeAgentOptions

        cfg = self.config
        proxy_headers = self._headers(inv, with_turn=one_shot)
        # The SDK starts from this process's environment: blank every inherited Claude Code /
        # Anthropic setting we do not set ourselves (a user's ANTHROPIC_MODEL, CLAUDE_CODE_USE_BEDROCK,
        # ANTHROPIC_AUTH_TOKEN... would otherwise redirect or alter the agents' requests).
        inherited = {
            k: ""
            for k in os.environ
            if k.startswith(("ANTHROPIC_", "CLAUDE_CODE_")) and k != "CLAUDE_CODE_ENTRYPOINT"
        }
        env = {
            **inherited,
            # Seed's way: defaults, but MCP tools advertised up front (no tool search), as the seed had.
            **({"ENABLE_TOOL_SEARCH": "false"} if cfg.seed_way else PLAIN_REQUEST_ENV),
            "ANTHROPIC_BASE_URL": cfg.proxy_url,
            "ANTHROPIC_API_KEY": cfg.api_key,
            "ANTHROPIC_CUSTOM_HEADERS": "\n".join(f"{k}: {v}" for k, v in proxy_headers.items()),
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(inv.max_output_tokens),
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "MCP_TOOL_TIMEOUT": str(int(inv.tool_timeout_s * 1000)),
            "IS_SANDBOX": "1",
            **cfg.extra_env,
        }
        name = cfg.mcp_server_name
        allowed = [f"mcp__{name}__{t}" for t in inv.tools]
        mcp_headers = self._headers(inv, with_turn=one_shot or cfg.mcp_turn_header)
        if cfg.mcp_secret is not None:
            from mcp_server import SCOPE_TOKEN_HEADER, Scope, scope_token

            scope = Scope.create(inv.user, inv.session, mcp_headers.get("x-coach-turn"), inv.agent)
            # The token travels in the environment (readable only by this user), not in the
            # --mcp-config argument, which any local user can read with ps; Claude Code expands
            # ${VAR} in MCP header values.
            env[MCP_TOKEN_ENV] = scope_token(cfg.mcp_secret, scope)
            mcp_headers[SCOPE_TOKEN_HEADER] = "${" + MCP_TOKEN_ENV + "}"
        common: dict[str, Any] = {
            "allowed_tools": allowed,
            "permission_mode": "bypassPermissions",
            "model": inv.model,
            "max_turns": inv.max_turns,
            "env": env,
            "mcp_servers": {name: {"type": "http", "url": cfg.mcp_url, "headers": mcp_headers}},
            "strict_mcp_config": True,
            "setting_sources": [],
            "include_partial_messages": True,
            "cli_path": cfg.cli_path,
            "cwd": cfg.cwd,
            "stderr": stderr,
            "extra_args": {} if cfg.keep_claude_transcripts else {"no-session-persistence": None},
        }
        if cfg.seed_way:
            # Claude Code's default system prompt (the agent prompt appended) and its built-in tools.
            return ClaudeAgentOptions(
                system_prompt={"type": "preset", "preset": "claude_code", "append": inv.system_prompt},
                **common,
            )
        return ClaudeAgentOptions(system_prompt=inv.system_prompt, tools=[], **common)

    # -- pool ----------------------------------------------------------------------------------

    def _stale(self, entry: _Warm, inv: AgentInvocation) -> bool:
        return entry.fingerprint != _fingerprint(inv) or entry.last_input_tokens > inv.context_budget_tokens

    def _pooled_extra(self, inv: AgentInvocation | None) -> int:
        """The pool's idle processes that take a ``max_warm`` slot besides the warm ones: all of them,
        but the one that would be handed to ``inv`` (it becomes ``inv``'s warm process)."""
        return self.pool.idle() - (1 if inv is not None and self.pool.has_idle(inv) else 0)

    def _make_room(self, to_close: list[_Warm], inv: AgentInvocation | None = None) -> bool:
        """Under the lock: make room for one more warm process within ``max_warm``, which counts the
        pool's idle processes too (the one that will be handed to ``inv`` is not extra). An idle pooled
        process of another agent goes first (it holds no one's conversation), then the least recently
        used idle warm process. False when every process is busy."""
        pooled = self._pooled_extra(inv)
        keep = _fingerprint(inv) if inv is not None else None
        while len(self._warm) + pooled >= self.config.max_warm:
            if pooled > 0 and (proc := self.pool.evict_one(keep)) is not None:
                to_close.append(_Warm(client=proc.client, fingerprint=proc.fingerprint))
                pooled -= 1
                continue
            victim = next((k for k, w in self._warm.items() if not w.busy), None)
            if victim is None:
                return False
            to_close.append(self._warm.pop(victim))
        return True

    async def _checkout(self, inv: AgentInvocation) -> _Warm | None:
        """The warm entry to run in (busy; ``client`` None when a process must be started), or None for a
        one-shot process. Waits for a prestart of the same agent that is still connecting."""
        key = (inv.user, inv.session, inv.agent)
        to_close: list[_Warm] = []
        while True:
            async with self._lock:
                if self.config.max_warm <= 0 or self.config.mcp_turn_header:
                    return None
                entry = self._warm.get(key)
                starting = entry.starting if entry is not None else None
                if starting is None:
                    entry = self._take(key, entry, inv, to_close)
                    break
            await starting.wait()
        for old in to_close:
            self._stop_in_background(old.client, kill=False)
        return entry

    def _take(
        self, key: tuple[str, str, str], entry: _Warm | None, inv: AgentInvocation, to_close: list[_Warm]
    ) -> _Warm | None:
        """Under the lock: mark the key's idle, current entry busy, or make a new busy one (None: the key
        is busy in another run, or the pool is full of busy processes)."""
        if entry is not None and entry.busy:
            return None
        if entry is not None and self._stale(entry, inv):
            del self._warm[key]
            to_close.append(entry)
            entry = None
        if entry is not None:
            entry.busy = True
            self._warm.move_to_end(key)
            return entry
        if not self._make_room(to_close, inv):
            return None
        entry = _Warm(client=None, fingerprint=_fingerprint(inv), busy=True)
        self._warm[key] = entry
        return entry

    async def prestart(self, invocation: AgentInvocation, *, evict: bool = True) -> bool:
        """Start (connect) the warm process of the invocation's (user, session, agent) now, so that its
        next :meth:`run` only sends the query. Only the invocation's agent settings are used (prompt,
        model, tools, limits); its prompt texts are not sent.

        Returns True when a process was started; False when one is already up (and current) or starting,
        processes are one-shot (``max_warm`` 0 or ``mcp_turn_header``), or the pool is full and
        ``evict`` is False (or every process is busy). A failed start is logged and discarded (the run
        then starts its own process); cancellation stops the process and propagates.
        """

        inv = invocation
        key = (inv.user, inv.session, inv.agent)
        to_close: list[_Warm] = []
        async with self._lock:
            if self.config.max_warm <= 0 or self.config.mcp_turn_header:
                return False
            entry = self._warm.get(key)
            if entry is not None:
                if entry.busy or not self._stale(entry, inv):
                    return False
                del self._warm[key]
                to_close.append(entry)
            if not evict and len(self._warm) + self._pooled_extra(inv) >= self.config.max_warm:
                return False
            if not self._make_room(to_close, inv):
                return False
            entry = _Warm(client=None, fingerprint=_fingerprint(inv), busy=True, starting=anyio.Event())
            self._warm[key] = entry
        for old in to_close:
            self._stop_in_background(old.client, kill=False)
        ok = False
        try:
            if self.pool.hand_out(inv, entry):  # a started, never-used process of the pool
                ok = True
                return True
            client = self._new_warm_client(inv, entry)
            entry.client = client
            self.started_processes += 1
            await client.connect()
            ok = True
            await mcp_ready(client)
        except Exception as exc:  # the SDK's ProcessError / CLIConnectionError
            tail = " | ".join(list(entry.stderr)[-3:])
            log.warning(
                "prestart of agent %s failed (%s: %s)%s",
                inv.agent,
                type(exc).__name__,
                exc,
                f" stderr: {tail}" if tail else "",
            )
        finally:
            await self._release_held(inv, entry, ok=ok)
        return ok

    async def _release_held(self, inv: AgentInvocation, entry: _Warm, *, ok: bool) -> None:
        """End a hold on a warm entry taken with ``busy`` and ``starting`` (a prestart, a prefill): a
        failed one discards (kills) the process; either way the entry is free again and a run waiting on
        ``starting`` goes on. Shielded, so a cancelled hold still releases."""
        with anyio.CancelScope(shield=True):
            if not ok:
                await self._discard(inv, entry, kill=True)
            entry.busy = False
            if entry.starting is not None:
                entry.starting.set()
                entry.starting = None

    def _new_warm_client(self, inv: AgentInvocation, entry: _Warm) -> Any:
        """A new client for a warm entry: under a pool identity bound to the session when processes are
        started for reuse (``launcher.runner._reset.start_bound``), else under the session's own."""
        from claude_agent_sdk import ClaudeSDKClient

        from launcher.runner._reset import reusable, start_bound

        if reusable(self):
            return start_bound(self, inv, entry)
        return ClaudeSDKClient(self.options(inv, one_shot=False, stderr=entry.stderr.append))

    async def prefill(self, invocation: AgentInvocation, text: str) -> bool:
        """Send ``text`` as the first message of the idle, never-used warm process of the invocation's
        (user, session, agent): ``launcher.runner._warm_prefill.send_context``."""
        from launcher.runner._warm_prefill import send_context

        return await send_context(self, invocation, text)

    async def _discard(self, inv: AgentInvocation, entry: _Warm, *, kill: bool) -> None:
        key = (inv.user, inv.session, inv.agent)
        async with self._lock:
            if self._warm.get(key) is entry:
                del self._warm[key]
        self._stop_in_background(entry.client, kill=kill)

    def _stop_in_background(self, client: Any, *, kill: bool) -> None:
        """Stop a process without holding up the turn: SIGKILL first when it failed or hung (a hung
        process would otherwise make a graceful disconnect wait for its in-flight request), then the
        SDK's disconnect in a background task that :meth:`aclose` awaits."""
        if client is None:
            return
        self.pool.revoke(client)
        if kill:
            kill_process(client)
        task = asyncio.get_running_loop().create_task(disconnect(client))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- run -------------------------------------------------------------------------------------

    async def run(self, invocation: AgentInvocation, events: AgentEvents) -> AgentOutcome:
        """Run one agent turn; see :class:`AgentRunner`."""
        from claude_agent_sdk import ClaudeSDKClient

        inv = invocation
        entry = await self._checkout(inv)
        one_shot = entry is None
        stderr_lines: deque[str] = entry.stderr if entry is not None else deque(maxlen=20)
        client: Any = entry.client if entry is not None else None
        warm = client is not None
        reuse = entry is not None and entry.primed
        ok = False
        try:
            if client is None and entry is not None and self.pool.hand_out(inv, entry):
                client = entry.client
            if client is None:
                if entry is not None:
                    client = entry.client = self._new_warm_client(inv, entry)
                else:
                    client = ClaudeSDKClient(self.options(inv, one_shot=True, stderr=stderr_lines.append))
                self.started_processes += 1
                await client.connect()
            prompt = inv.followup if reuse else inv.prompt
            outcome, last_input = await self._converse(client, inv, prompt, events, stderr_lines)
            outcome.warm = warm
            ok = True
            if entry is not None:
                entry.last_input_tokens = last_input
                entry.primed = True
            return outcome
        except AgentFailedError:
            raise
        except Exception as exc:  # the SDK's ProcessError / CLIConnectionError / JSON decode errors
            tail = " | ".join(list(stderr_lines)[-3:])
            raise AgentFailedError(
                inv.agent,
                f"process failed ({type(exc).__name__}: {exc}){' stderr: ' + tail if tail else ''}",
                status="crashed",
                code="agent_crashed",
                retryable=True,
            ) from exc
        finally:
            with anyio.CancelScope(shield=True):
                if one_shot or not ok:
                    if entry is not None:
                        await self._discard(inv, entry, kill=not ok)
                    else:
                        self._stop_in_background(client, kill=not ok)
                elif entry is not None:
                    entry.busy = False

    async def _converse(
        self, client: Any, inv: AgentInvocation, prompt: str, events: AgentEvents, stderr: deque[str]
    ) -> tuple[AgentOutcome, int]:
        from claude_agent_sdk.types import (
            AssistantMessage,
            ResultMessage,
            StreamEvent,
            TextBlock,
            ToolResultBlock,
            ToolUseBlock,
            UserMessage,
        )

        out = AgentOutcome()
        pending: dict[str, tuple[str, dict[str, Any]]] = {}
        prefix = f"mcp__{self.config.mcp_server_name}__"
        first = False
        last_input = 0
        texts: list[str] = []
        await client.query(prompt)
        events.on_started()
        async for msg in client.receive_response():
            if isinstance(msg, StreamEvent):
                ev = msg.event
                if not first and ev.get("type") in ("content_block_start", "content_block_delta"):
                    first = True
                    events.on_first_token()
                elif ev.get("type") == "message_start":
                    usage = ev.get("message", {}).get("usage") or {}
                    last_input = int(usage.get("input_tokens") or 0) + int(
                        usage.get("cache_read_input_tokens") or 0
                    )
            elif isinstance(msg, AssistantMessage):
                # Claude Code reports a failed request as a synthetic assistant message ("API Error: ..."):
                # that is not a token from the model.
                synthetic = msg.error is not None or msg.model == "<synthetic>"
                if not first and not synthetic:
                    first = True
                    events.on_first_token()
                for block in msg.content:
                    if isinstance(block, ToolUseBlock):
                        pending[block.id] = (block.name.removeprefix(prefix), dict(block.input or {}))
                    elif isinstance(block, TextBlock) and block.text:
                        texts.append(block.text)
            elif isinstance(msg, UserMessage) and isinstance(msg.content, list):
                for block in msg.content:
                    if isinstance(block, ToolResultBlock) and block.tool_use_id in pending:
                        name, args = pending.pop(block.tool_use_id)
                        rec = ToolCallRecord(
                            name, args, ok=not block.is_error, result=_text_of(block.content)
                        )
                        out.tool_calls.append(rec)
                        events.on_tool_result(rec)
            elif isinstance(msg, ResultMessage):
                _take_result(out, msg, inv.agent)
        out.text = "\n".join(texts).strip()
        return out, last_input

    async def close_session(self, user: str, session: str) -> None:
        """End the warm processes of one session (its conversations end): each is stopped, or, with
        ``RunnerConfig.reuse_processes``, a pooled one is reset and returned to the pool
        (``launcher.runner._reset.recycle``; stopped when that is not confirmed)."""
        from launcher.runner._reset import recycle

        async with self._lock:
            keys = [k for k, w in self._warm.items() if k[0] == user and k[1] == session and not w.busy]
            entries = [self._warm.pop(k) for k in keys]

        async def end(e: _Warm) -> None:
            if self.config.reuse_processes and e.pool_session is not None and await recycle(self, e):
                return
            self.pool.revoke(e.client)
            await disconnect(e.client)

        async with anyio.create_task_group() as tg:  # each reset or stop on its own (about 0.05 s / 1 s)
            for e in entries:
                tg.start_soon(end, e)

    def pid_of(self, user: str, session: str, agent: str) -> int | None:
        """The OS pid of the warm process of (user, session, agent), if one is running."""
        entry = self._warm.get((user, session, agent))
        transport = getattr(getattr(entry, "client", None), "_transport", None)
        proc = getattr(transport, "_process", None)
        pid = getattr(proc, "pid", None)
        return int(pid) if pid is not None else None

    def warm_count(self) -> int:
        """How many warm processes are held now."""
        return len(self._warm)

    def busy_count(self) -> int:
        """How many warm processes are running an agent (or starting) now."""
        return sum(1 for w in self._warm.values() if w.busy)

    async def fill_pool(self, invocations: list[AgentInvocation]) -> int:
        """Start the pool's idle processes now (``launcher.runner._process_pool``; ``pool_invocations``)."""
        return await self.pool.fill(invocations)  # each warmed up (its prompt head cached upstream)

    async def aclose(self) -> None:
        """Stop every warm process and wait for the background stops."""
        async with self._lock:
            entries = list(self._warm.values())
            self._warm.clear()
        with anyio.CancelScope(shield=True):
            await self.pool.aclose()
            for e in entries:
                self.pool.revoke(e.client)
                await disconnect(e.client)
            if self._background:
                await asyncio.wait(list(self._background), timeout=10)


#: What the proxy's own error statuses mean (proxy/errors.py), said from the user's side.
_PROXY_STATUS: dict[int, str] = {
    502: "the model server failed or sent an unusable answer (the proxy answered HTTP 502; see its warnings)",
    504: "the model server did not answer in time (the proxy answered HTTP 504)",
    529: "no model server could be reached (the proxy answered HTTP 529: every replica down or refusing; "
    "check [upstream] url / COACH_UPSTREAM_URL)",
    429: "the model server is rate limiting (the proxy answered HTTP 429)",
}


def _result_error(agent: str, subtype: str, text: str) -> AgentFailedError:
    m = _API_ERROR.search(text)
    if m:
        status = int(m.group(1))
        retryable = status >= 500 or status in (408, 409, 429)
        return AgentFailedError(
            agent,
            _PROXY_STATUS.get(status, f"the proxy answered HTTP {status}"),
            status="error",
            code="upstream_error",
            retryable=retryable,
        )
    short = text[:200] if text else subtype
    transient = bool(re.search(r"connection|timed? ?out|ECONN|socket|overloaded", text, re.I))
    return AgentFailedError(
        agent,
        f"Claude Code ended with an error ({subtype}): {short}",
        status="error",
        code="upstream_error" if transient else "agent_error",
        retryable=transient,
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""
