"""Watching a forced tool call's arguments while they stream in from the upstream.

The proxy buffers every tool call until the upstream's stream ends (``proxy._stream``: the arguments
are validated before Claude Code sees them), so an agent whose output *is* a tool call (the Coach's
``write_coach``) shows nothing until it is complete. An in-process caller can pass
``create_app(on_tool_delta=observer)``: for every request that forces a tool, a :class:`ToolTap` reads
that call's argument fragments as they arrive (:class:`proxy._partial_json.PartialObject`) and calls
``observer(ToolArgsEvent)`` on the call's first fragment (the model is writing it, so its prompt is
in: the supervisor sends Pineal's prefill once every agent is there) and whenever the decoded view
changed. Nothing about what the client receives
changes: the call is still delivered whole, after validation, or refused.

The event says who asked (the request's ``x-coach-*`` tags, the turn filled in as for metering), which
request (``request_id``: the message id; a retry or a repair is a new request), the tool's top-level
properties as sent upstream (so a reader knows whether, say, ``risk`` could be written at all), the
members complete so far in the order written, and the string member being written with its decoded
prefix. An observer must be quick and must not raise (an exception is logged and the tap stops).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._partial_json import PartialObject

__all__ = ["ToolArgsEvent", "ToolDeltaObserver", "ToolTap", "tool_tap"]

log = logging.getLogger("proxy.tap")


@dataclass(frozen=True)
class ToolArgsEvent:
    """One view of a forced tool call's arguments while they stream (see the module docstring)."""

    agent: str
    user: str
    session: str
    turn: str
    request_id: str
    tool: str
    properties: tuple[str, ...]
    members: Mapping[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    partial_key: str | None = None
    partial_text: str = ""
    complete: bool = False

    def text_of(self, key: str) -> str | None:
        """The decoded text of ``key`` so far (the whole string once complete), else None."""
        if self.partial_key == key:
            return self.partial_text
        value = self.members.get(key)
        return value if isinstance(value, str) else None


ToolDeltaObserver = Callable[[ToolArgsEvent], None]


class ToolTap:
    """Reads the first upstream tool call named ``tool`` (client spelling) of one response."""

    def __init__(
        self,
        observer: ToolDeltaObserver,
        who: Any,
        request_id: str,
        tool: str,
        properties: Sequence[str],
        client_name: Callable[[str], str],
    ) -> None:
        self._observer = observer
        self._who = who
        self._request_id = request_id
        self._tool = tool
        self._properties = tuple(properties)
        self._client_name = client_name
        self._index: Any = None
        self._reader = PartialObject()
        self._stopped = False
        self._announced = False

    def feed(self, index: Any, name: str | None, fragment: str | None) -> None:
        """One upstream fragment of tool call ``index`` (``name`` as known so far, upstream spelling)."""
        if self._stopped or not fragment:
            return
        if self._index is None:
            if not name or self._client_name(name) != self._tool:
                return
            self._index = index
        elif index != self._index:
            return
        # a view on the call's first fragment (the model is writing it: its prompt is in), then on
        # each change the reader reports
        if not self._reader.feed(fragment) and self._announced:
            return
        self._announced = True
        r = self._reader
        who = self._who
        event = ToolArgsEvent(
            agent=who.agent,
            user=who.user,
            session=who.session,
            turn=who.turn,
            request_id=self._request_id,
            tool=self._tool,
            properties=self._properties,
            members=dict(r.members),
            order=tuple(r.order),
            partial_key=r.partial_key,
            partial_text=r.partial_text,
            complete=r.complete,
        )
        if r.failed or r.complete:
            self._stopped = True
        try:
            self._observer(event)
        except Exception:
            self._stopped = True
            log.exception("on_tool_delta observer failed (agent=%s); tap stopped", who.agent or "-")


def tool_tap(
    observer: ToolDeltaObserver | None,
    who: Any,
    request_id: str,
    forced_tool: str | None,
    tools: Sequence[Mapping[str, Any]],
    client_name: Callable[[str], str],
) -> ToolTap | None:
    """The tap for a request that forces ``forced_tool`` (None without an observer or a forced tool).
    ``tools`` are the request's tools as they will be sent (their ``input_schema`` names the properties)."""
    if observer is None or not forced_tool:
        return None
    schema = next(
        (
            t.get("input_schema")
            for t in tools
            if forced_tool in (t.get("name"), client_name(str(t.get("name", ""))))
        ),
        None,
    )
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return ToolTap(
        observer,
        who,
        request_id,
        forced_tool,
        tuple(props) if isinstance(props, Mapping) else (),
        client_name,
    )
