"""Typed MCP tools whose advertised input schema is a pydantic model's JSON schema.

``MCPServer``'s decorator derives a tool's schema from the function signature, which would wrap an
agent's output model in an extra argument. :func:`build_tool` instead registers a ``Tool`` whose
``inputSchema`` is :func:`input_schema` (``model.model_json_schema()`` without the fields the server
computes, marked ``readOnly``: the model writes only what it must) and whose arguments reach us unvalidated; we validate
them with the model ourselves, so every failure becomes a plain-words ``is_error`` result (see
``_problems``) rather than pydantic's text, and nothing the model sends can crash the server.

Logging: tool name, agent, outcome code and duration only; never argument values (user text).
"""

from __future__ import annotations

import contextvars
import copy
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from mcp_server._problems import Problem, error_result, problems_from_validation
from mcp_server._scope import Scope, ScopeSource
from mcp_server.errors import McpServerError

__all__ = ["ProgressFn", "ToolSpec", "build_tool", "input_schema", "tool_progress"]

logger = logging.getLogger("mcp_server")

Handler = Callable[[Scope, Any, dict[str, Any]], Awaitable[CallToolResult]]
ErrorMapper = Callable[[str, Exception], CallToolResult | None]
#: ``await progress(n, message)``: one ``notifications/progress`` for the running tool call (``n``: a count
#: that rises with every call; ``message``: the text the client shows).
ProgressFn = Callable[[float, str], Awaitable[None]]

_CONTEXT: contextvars.ContextVar[Context | None] = contextvars.ContextVar("mcp_tool_context", default=None)


def tool_progress() -> ProgressFn | None:
    """The running tool call's progress sender, for a ``ToolSpec.handler`` (called in its task); None
    outside a tool call. Sending is mcp's ``Context.report_progress``: a no-op when the caller passed no
    ``progressToken`` (JSON-RPC) or no progress callback (an in-process client), so nothing reaches
    such a caller. MCP's progress notifications require ``progress`` to rise with every notification."""
    ctx = _CONTEXT.get()
    if ctx is None:
        return None

    async def send(progress: float, message: str) -> None:
        await ctx.report_progress(progress, None, message)

    return send


class _RawArguments(ArgModelBase):
    """Accepts any JSON object and hands it to the tool body unchanged (validated there)."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.__pydantic_extra__ or {})}


@dataclass(frozen=True)
class ToolSpec:
    """One tool: name, model-facing description, input model, handler and who may call it.

    Attributes:
        agents: agents allowed to call the tool; None = any connection (even one without an agent).
        validation_context: returns the pydantic validation context (e.g. the blackboard thresholds).
        read_only / idempotent: MCP annotations (``readOnlyHint`` / ``idempotentHint``).
    """

    name: str
    title: str
    description: str
    input_model: type[BaseModel]
    handler: Handler
    read_only: bool
    idempotent: bool
    agents: frozenset[str] | None = None
    validation_context: Callable[[], dict[str, Any] | None] | None = None

    def context(self) -> dict[str, Any] | None:
        return self.validation_context() if self.validation_context is not None else None

    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=False,
            idempotent_hint=self.idempotent,
            open_world_hint=False,
        )


def _expects_container(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    stack: list[Any] = [prop]
    seen = 0
    while stack and seen < 50:
        seen += 1
        s = stack.pop()
        if not isinstance(s, Mapping):
            continue
        ref = s.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            stack.append(defs.get(ref.removeprefix("#/$defs/")))
            continue
        if s.get("type") in ("object", "array") or "properties" in s:
            return True
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(s.get(key), list):
                stack.extend(s[key])
    return False


def _pre_parse(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Models sometimes send a nested object or list as a JSON string; parse those top-level values."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return arguments
    defs = schema.get("$defs", {})
    out = dict(arguments)
    for key, value in arguments.items():
        if isinstance(value, str) and key in props and _expects_container(props[key], defs):
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                continue
            if isinstance(parsed, dict | list):
                out[key] = parsed
    return out


def _argument_size(arguments: Any) -> int | None:
    try:
        return len(json.dumps(arguments, ensure_ascii=False, default=str).encode())
    except (TypeError, ValueError, RecursionError):
        return None


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()`` without its ``readOnly`` properties (at every level, ``$defs``
    included): fields such as ``coerced`` or a score's ``band`` are computed by validation and stored, so
    a tool's caller is not invited to fill them (the tool still accepts them: it validates with the model)."""
    schema = copy.deepcopy(model.model_json_schema())
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        props = node.get("properties")
        if isinstance(props, dict):
            computed = [k for k, v in props.items() if isinstance(v, dict) and v.get("readOnly")]
            for key in computed:
                del props[key]
            if computed and isinstance(node.get("required"), list):
                node["required"] = [k for k in node["required"] if k not in computed]
        stack.extend(node.values())
    return schema


def build_tool(
    spec: ToolSpec,
    scopes: ScopeSource,
    *,
    max_argument_bytes: int,
    map_error: ErrorMapper,
) -> Tool:
    """Build an ``MCPServer`` tool from ``spec``.

    The tool's call path: scope from the request (never from arguments) -> agent check -> size check
    -> validation against ``spec.input_model`` -> ``spec.handler(scope, model, raw_arguments)``. Every exception
    becomes an ``is_error`` result: ``McpServerError`` with its code, anything ``map_error`` recognises
    (the blackboard's errors), and anything else as ``internal_error`` (logged by type, not message).
    """
    schema = spec.input_model.model_json_schema()  # the whole model: arguments are parsed against it

    async def call(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        started = time.monotonic()
        agent = "-"
        outcome = "ok"
        try:
            headers = ctx.headers
        except ValueError:  # no request context (direct call)
            headers = None
        try:
            scope = scopes.scope_for(headers)
            agent = scope.agent or "-"
            if spec.agents is not None and scope.agent not in spec.agents:
                outcome = "tool_not_allowed"
                return _not_allowed(spec, scope)
            size = _argument_size(arguments)
            if size is None or size > max_argument_bytes:
                outcome = "too_large"
                return error_result(
                    spec.name,
                    "NOT DONE. The arguments are too large or not plain JSON.",
                    [
                        Problem(
                            "",
                            f"arguments are {size or 'unmeasurable'} bytes",
                            f"at most {max_argument_bytes} bytes of JSON",
                        )
                    ],
                    code="too_large",
                    advice="shorten the text fields and call again.",
                )
            raw = _pre_parse(arguments, schema)
            try:
                model = spec.input_model.model_validate(raw, context=spec.context())
            except ValidationError as exc:
                outcome = "invalid_arguments"
                problems = problems_from_validation(exc, schema)
                return error_result(
                    spec.name,
                    f"NOT DONE. {len(problems)} problem(s) with the arguments:",
                    problems,
                    code="invalid_arguments",
                    advice=f"fix exactly these fields and call {spec.name} again with the whole object.",
                )
            token = _CONTEXT.set(ctx)
            try:
                result = await spec.handler(scope, model, raw)
            finally:
                _CONTEXT.reset(token)
            if result.is_error:
                outcome = str((result.structured_content or {}).get("error", "error"))
            return result
        except McpServerError as exc:
            outcome = exc.code
            return error_result(
                spec.name,
                f"REFUSED. {exc.message}",
                code=exc.code,
                retryable=exc.retryable,
                advice=_ADVICE.get(exc.code, "do not retry this call unchanged."),
            )
        except Exception as exc:
            mapped = map_error(spec.name, exc)
            if mapped is not None:
                outcome = str((mapped.structured_content or {}).get("error", type(exc).__name__))
                return mapped
            outcome = "internal_error"
            logger.error("tool %s failed with %s", spec.name, type(exc).__name__)
            logger.debug("tool %s traceback", spec.name, exc_info=True)
            return error_result(
                spec.name,
                "FAILED because of a server error; nothing was changed by this call.",
                code="internal_error",
                retryable=True,
                advice="call the tool once more; if it fails again, finish without it.",
            )
        finally:
            logger.info(
                "tool=%s agent=%s outcome=%s ms=%.1f",
                spec.name,
                agent,
                outcome,
                (time.monotonic() - started) * 1000,
            )

    return Tool(
        fn=call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=input_schema(spec.input_model),
        fn_metadata=FuncMetadata(arg_model=cast(type[ArgModelBase], _RawArguments)),
        is_async=True,
        context_kwarg="ctx",
        annotations=spec.annotations(),
    )


_ADVICE: dict[str, str] = {
    "out_of_scope": "use only keys of your own session: an entry name like 'shadow', 'turns/<turn>/<entry>', "
    "'profile' or 'session'. Do not try other users or sessions.",
    "invalid_key": "pass an entry name like 'shadow', 'turns/<turn>/<entry>', 'profile' or 'session'.",
    "scope_missing": "this is a server setup problem the model cannot fix; finish without this tool.",
    "scope_forbidden": "this is a server setup problem the model cannot fix; finish without this tool.",
    "tool_not_allowed": "call only your own write tool.",
}


def _not_allowed(spec: ToolSpec, scope: Scope) -> CallToolResult:
    if scope.agent is None:
        why = f"this connection has no agent, and {spec.name} needs one of: {', '.join(sorted(spec.agents or ()))}"
    else:
        why = f"agent '{scope.agent}' may not call {spec.name}"
        if spec.name.startswith("write_"):
            why += " (an agent writes only its own entry)"
    return error_result(
        spec.name,
        f"REFUSED. {why}.",
        code="tool_not_allowed",
        advice=_ADVICE["tool_not_allowed"],
    )
