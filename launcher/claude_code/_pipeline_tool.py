"""``coach_turn`` and ``coach_synthesis``: one pipeline turn as two MCP tools, for the ``/coach`` command
inside Claude Code ("the Coach's reply in seconds, the full synthesis when the specialists are done").

``coach_turn(message)`` starts a turn of the same code as ``coach run`` (``launcher.pipeline._runtime.coach_runtime``
and :meth:`launcher.pipeline.supervisor.Supervisor.run_turn`, hosted by :class:`HostedPipeline`): the deterministic
safety screen, then the Coach and the four specialists, then Pineal's synthesis, all on the blackboard.
It returns as soon as the first reply exists (the supervisor's ``on_coach_reply``): the Coach's reply, or
the safety screen's support (tier 2) / crisis (tier 3) response, with the turn id. The turn goes on in
the server (:class:`launcher.claude_code._turn_jobs.TurnJobs`). ``coach_synthesis(turn, wait_s)`` then waits at most
``wait_s`` seconds for that turn and returns the synthesis and each agent's status, or a
``synthesis_pending`` result to call again. ``coach_turn(message, wait_for_synthesis=true)`` keeps the
old one-call behaviour (reply and synthesis together, when the turn is done).

The user and the session come from the session server's scope, never from the model.

``coach_turn`` result (``structured_content``, which Claude Code shows the model)::

    {"ok": true, "message": "<display text: the reply, then what comes next>", "turn": "t000003",
     "session": "claude-code", "coach_reply": "...", "crisis_tier": 0, "synthesis_ready": false,
     "next": "call coach_synthesis with turn=\"t000003\""}

(tier 2 / 3 add ``"safety": {"tier": n, "note": "..."}``). ``coach_synthesis`` result::

    {"ok": true, "message": "<display text: the synthesis, then a status line>", "turn": "t000003",
     "synthesis": "...", "synthesis_source": "model", "degraded": false, "missing": [], "crisis_tier": 0,
     "agents": {"coach": {"status": "ok", "finished_s": 4.1, "error": null}, ...}}

Errors (``is_error``): ``pipeline_failed`` (the pipeline could not run, or failed after the reply),
``unknown_turn`` (no such turn of this session), ``synthesis_pending`` (``retryable``: not done within
``wait_s``; the turn goes on). Logs never contain the message or the replies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from launcher.claude_code._hosted_pipeline import HostedPipeline
from launcher.claude_code._reply_progress import ReplyProgress
from launcher.claude_code._turn_jobs import EarlyReply, PipelineRun, TurnJob, TurnJobs, TurnSummary
from mcp_server import Scope, ToolSpec, error_result, ok_result, tool_progress

__all__ = [
    "COACH_SYNTHESIS_TOOL",
    "COACH_TURN_TOOL",
    "CoachSynthesisArgs",
    "CoachTurnArgs",
    "EarlyReply",
    "HostedPipeline",
    "PipelineRun",
    "TurnSummary",
    "coach_synthesis_spec",
    "coach_turn_spec",
    "display_text",
    "reply_text",
]

log = logging.getLogger(__name__)

COACH_TURN_TOOL = "coach_turn"
COACH_SYNTHESIS_TOOL = "coach_synthesis"

#: Longest message accepted (characters); a coaching message is a few sentences.
MAX_MESSAGE_CHARS = 8000
#: ``coach_synthesis``'s default and longest wait (seconds): a turn's specialists and Pineal finish within
#: their agent files' ``deadline_s`` (tens of seconds on a GPU server, minutes on CPU).
DEFAULT_WAIT_S = 300.0
MAX_WAIT_S = 600.0
#: How long ``coach_turn`` waits for a crisis turn (tier 3, no agent runs) to write its record.
_CRISIS_FINISH_S = 10.0

_TURN_DESCRIPTION = (
    "Start one turn of the coaching pipeline for this user and session with the user's message: a safety "
    "screen, the Coach's immediate reply, then the four specialists (Shadow, Persona, Plasticity, Stability) "
    "and Pineal's synthesis, all written to the blackboard. Pass the user's message exactly as written. "
    "Returns within seconds with the Coach's reply and the turn id while the specialists keep working: show "
    "the reply to the user unchanged, then call coach_synthesis with that turn for the synthesis."
)
_SYNTHESIS_DESCRIPTION = (
    "Wait for the synthesis of a turn started by coach_turn (at most wait_s seconds) and return it with "
    "each agent's status. Show the synthesis to the user unchanged. If the result says synthesis_pending, "
    "the turn is still running: call coach_synthesis again with the same turn."
)


class CoachTurnArgs(BaseModel):
    """``coach_turn``'s input: only the user's message (the scope fixes user and session)."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(
        min_length=1,
        max_length=MAX_MESSAGE_CHARS,
        description="The user's message to the coach, exactly as the user wrote it.",
    )
    wait_for_synthesis: bool = Field(
        default=False,
        description="Leave false (the /coach command does). True waits for the whole turn and returns the "
        "reply and the synthesis together.",
    )


class CoachSynthesisArgs(BaseModel):
    """``coach_synthesis``'s input: the turn id ``coach_turn`` returned, and how long to wait."""

    model_config = ConfigDict(extra="forbid")

    turn: str = Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$", description="The `turn` returned by coach_turn, e.g. t000003."
    )
    wait_s: float = Field(
        default=DEFAULT_WAIT_S,
        ge=0,
        le=MAX_WAIT_S,
        description="Longest wait in seconds for the specialists and the synthesis (default 300).",
    )


def _safety_note(tier: int) -> str:
    if tier >= 3:
        return (
            "crisis response from the safety screen: no coaching agent runs this turn and there is no "
            "synthesis. Show it unchanged and add nothing."
        )
    if tier == 2:
        return (
            "the safety screen paused coaching: this support response replaces the Coach's reply. Show it "
            "unchanged; the synthesis that follows stays in pause mode."
        )
    return ""


def reply_text(reply: EarlyReply) -> str:
    """The text shown at the first reply: the reply (labelled by tier), then what comes next."""
    head = {3: "Crisis response", 2: "Support"}.get(min(reply.crisis_tier, 3), "Coach")
    parts = [f"{head}:\n{reply.coach_reply.strip()}"]
    if reply.crisis_tier >= 3:
        parts.append(f"(turn {reply.turn}: crisis response only; no synthesis this turn)")
    else:
        parts.append(
            f"(turn {reply.turn}: the specialists are still working; the synthesis follows from "
            f'coach_synthesis with turn="{reply.turn}")'
        )
    return "\n\n".join(parts)


def display_text(summary: TurnSummary) -> str:
    """The text of a finished turn: the first reply, then the synthesis, then one status line."""
    parts = [f"Coach:\n{summary.coach_reply.strip()}", _synthesis_text(summary)]
    return "\n\n".join(parts)


def _synthesis_text(summary: TurnSummary) -> str:
    parts = []
    if summary.synthesis.strip():
        parts.append(f"Synthesis:\n{summary.synthesis.strip()}")
    status = f"(turn {summary.turn}; synthesis: {summary.synthesis_source}"
    if summary.crisis_tier >= 3:
        status += "; crisis turn: the crisis response is the whole answer"
    if summary.degraded and summary.missing:
        status += f"; missing: {', '.join(summary.missing)}"
    parts.append(status + ")")
    return "\n\n".join(parts)


def _agents(summary: TurnSummary) -> dict[str, Any]:
    keep = ("status", "finished_s", "error")
    return {name: {k: st.get(k) for k in keep} for name, st in summary.agents.items() if isinstance(st, dict)}


def _summary_payload(summary: TurnSummary) -> dict[str, Any]:
    return {
        "turn": summary.turn,
        "synthesis": summary.synthesis,
        "synthesis_source": summary.synthesis_source,
        "degraded": summary.degraded,
        "missing": list(summary.missing),
        "crisis_tier": summary.crisis_tier,
        "agents": _agents(summary),
    }


def _failed(tool: str, exc: BaseException, *, after_reply: bool) -> CallToolResult:
    what = "the turn failed after the first reply" if after_reply else "FAILED to run the pipeline"
    return error_result(
        tool,
        f"{what}: {type(exc).__name__}: {_first_line(exc)}",
        code="pipeline_failed",
        retryable=False,
        advice="show this error to the user. Check coach.toml ([upstream] url: the model server must be "
        "running) and the agent files (`coach agents check`), then try /coach again.",
    )


def coach_turn_spec(
    jobs: TurnJobs,
    *,
    open_session: Callable[[], str] | None = None,
    on_started: Callable[[], None] | None = None,
) -> ToolSpec:
    """The ``coach_turn`` tool over ``jobs`` (see the module docstring).

    ``open_session()`` (called in a thread) returns the session the turn runs in (the session server
    starts a new one after its session was closed); without it the scope's session is used.
    ``on_started()`` is called once the turn began (the session server then opens a new manual turn for
    the next standalone subagent write). Errors: ``pipeline_failed`` naming the exception type and what
    to check; nothing stored is changed by a failed start.
    """

    async def handler(scope: Scope, args: CoachTurnArgs, raw: dict[str, Any]) -> CallToolResult:
        session = await anyio.to_thread.run_sync(open_session) if open_session is not None else scope.session
        assert session is not None
        try:
            job = await _start(jobs, scope.user, session, args.message)
        except Exception as exc:  # any failure to run the pipeline becomes a plain tool error
            log.error("coach_turn failed: %s", type(exc).__name__)
            log.debug("coach_turn traceback", exc_info=True)
            return _failed(COACH_TURN_TOOL, exc, after_reply=False)
        if on_started is not None:
            on_started()
        assert job.reply is not None
        if args.wait_for_synthesis:
            await job.done.wait()
            return _finished(COACH_TURN_TOOL, job, with_reply=True)
        reply = job.reply
        if reply.crisis_tier >= 3:  # no agent runs: the turn's record is written at once; let it land
            await jobs.wait(job, _CRISIS_FINISH_S)
        log.info("coach_turn turn=%s first reply (tier %d)", reply.turn, reply.crisis_tier)
        payload: dict[str, Any] = {
            "turn": reply.turn,
            "session": session,
            "coach_reply": reply.coach_reply,
            "crisis_tier": reply.crisis_tier,
            "synthesis_ready": job.done.is_set(),
        }
        if reply.crisis_tier >= 2:
            payload["safety"] = {"tier": reply.crisis_tier, "note": _safety_note(reply.crisis_tier)}
        if reply.crisis_tier < 3:
            payload["next"] = f'call {COACH_SYNTHESIS_TOOL} with turn="{reply.turn}"'
        return ok_result(payload, note=reply_text(reply))

    return ToolSpec(
        name=COACH_TURN_TOOL,
        title="Start one coaching turn",
        description=_TURN_DESCRIPTION,
        input_model=CoachTurnArgs,
        handler=handler,
        read_only=False,
        idempotent=False,
    )


async def _start(jobs: TurnJobs, user: str, session: str, message: str) -> TurnJob:
    """``jobs.start``, with the reply streamed as this call's progress when the caller asked for
    progress (``mcp_server.tool_progress``); the streaming stops when the first reply exists."""
    send = tool_progress()
    if send is None:
        return await jobs.start(user, session, message)
    progress = ReplyProgress(send)
    job: TurnJob | None = None
    failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(progress.pump)
        try:
            job = await jobs.start(user, session, message, on_stream=progress)
        except Exception as exc:  # raised below, not as an exception group of this task group
            failed = exc
        finally:
            progress.close()
    if failed is not None:
        raise failed
    assert job is not None
    return job


def _finished(tool: str, job: TurnJob, *, with_reply: bool) -> CallToolResult:
    if job.summary is None:
        assert job.error is not None
        return _failed(tool, job.error, after_reply=True)
    summary = job.summary
    payload = _summary_payload(summary)
    if with_reply:
        payload["coach_reply"] = summary.coach_reply
        return ok_result(payload, note=display_text(summary))
    return ok_result(payload, note=_synthesis_text(summary))


def coach_synthesis_spec(
    jobs: TurnJobs, stored: Callable[[str, str, str], TurnSummary | None] | None = None
) -> ToolSpec:
    """The ``coach_synthesis`` tool over ``jobs`` (see the module docstring).

    ``stored(user, session, turn)`` (called in a thread) reads a finished turn from the blackboard when
    this server holds no job for it (started before a restart, or evicted); None: no such finished turn.
    Errors: ``unknown_turn``, ``synthesis_pending`` (retryable), ``pipeline_failed``.
    """

    async def handler(scope: Scope, args: CoachSynthesisArgs, raw: dict[str, Any]) -> CallToolResult:
        job = jobs.get(args.turn)
        if job is not None and job.user == scope.user:
            if not await jobs.wait(job, args.wait_s):
                return error_result(
                    COACH_SYNTHESIS_TOOL,
                    f"synthesis of turn {args.turn} NOT READY after {args.wait_s:g} s: the specialists are "
                    "still working.",
                    code="synthesis_pending",
                    retryable=True,
                    extra={"turn": args.turn, "waited_s": args.wait_s},
                    advice=f'call {COACH_SYNTHESIS_TOOL} again with turn="{args.turn}" to keep waiting (the '
                    "turn goes on; nothing is lost).",
                )
            return _finished(COACH_SYNTHESIS_TOOL, job, with_reply=False)
        summary = None
        if stored is not None and scope.session is not None:
            summary = await anyio.to_thread.run_sync(stored, scope.user, scope.session, args.turn)
        if summary is None:
            return error_result(
                COACH_SYNTHESIS_TOOL,
                f"NO TURN {args.turn} in this session: it was not started by coach_turn here, or it has no "
                "stored synthesis.",
                code="unknown_turn",
                retryable=False,
                advice="pass the `turn` that coach_turn returned. To coach on a new message, call coach_turn.",
            )
        return ok_result(_summary_payload(summary), note=_synthesis_text(summary))

    return ToolSpec(
        name=COACH_SYNTHESIS_TOOL,
        title="Get a coaching turn's synthesis",
        description=_SYNTHESIS_DESCRIPTION,
        input_model=CoachSynthesisArgs,
        handler=handler,
        read_only=True,
        idempotent=True,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "(no message)"
