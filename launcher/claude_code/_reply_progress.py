"""The Coach's reply as MCP progress notifications of the running ``coach_turn`` call (the session mode's
streamed reply; Claude Code shows a progress notification's ``message`` while the tool runs).

:class:`ReplyProgress` is the turn's ``on_reply_stream`` callback
(``launcher.pipeline._reply_stream.ReplyEvent``); it sends only what that stream lets through while the
reply is being written:

* a ``delta`` streamed while the reply is written -> one notification whose message is that text;
* a ``retract`` -> one notification saying the words above are withdrawn (a client cannot take text
  back) and that the reply comes with the tool's result;
* the final decision's own ``delta`` (``final``: the validated reply's rest, or a fallback, support or
  crisis response) and ``end`` -> nothing: the tool's result carries the validated reply.

So a turn whose screen or Coach raises it to tier 2 or 3, or whose reply names a blocked move, sends
none of the Coach's words (the stream holds them back; see ``launcher.pipeline._reply_stream``). Events
arrive on the event loop that runs the turn; the sending runs in :meth:`pump` on the tool call's task,
in order, and stops at :meth:`close` (what comes after the call returned is dropped).
Nothing here logs the reply's text.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcp_server import ProgressFn

__all__ = ["RETRACTED", "ReplyProgress"]

log = logging.getLogger(__name__)

#: The progress message sent for a retraction.
RETRACTED = "\n(the words above are withdrawn: the Coach's reply follows with the result)\n"


class ReplyProgress:
    """Forwards a turn's streamed reply to ``send`` (``mcp_server.tool_progress()``; see the module
    docstring). Call it with each ``ReplyEvent``; run :meth:`pump` in a task; :meth:`close` when the
    tool returns. ``sent``: the messages sent, in order."""

    def __init__(self, send: ProgressFn) -> None:
        self._send_fn = send
        self._tx: MemoryObjectSendStream[str]
        self._rx: MemoryObjectReceiveStream[str]
        self._tx, self._rx = anyio.create_memory_object_stream[str](math.inf)
        self.sent: list[str] = []

    def __call__(self, event: Any) -> None:
        """``on_reply_stream``: queue what may be sent (never raises into the turn)."""
        if event.kind == "delta" and event.text and not event.final:
            self._put(event.text)
        elif event.kind == "retract":
            self._put(RETRACTED)

    def _put(self, text: str) -> None:
        try:
            self._tx.send_nowait(text)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the call has returned: the result has the reply

    def close(self) -> None:
        """No more events are sent; :meth:`pump` sends what is queued and returns."""
        self._tx.close()

    async def pump(self) -> None:
        """Send the queued messages as progress notifications until :meth:`close`; a failed send (the
        client went away) stops the sending, never the turn."""
        async with self._rx:
            async for text in self._rx:
                try:
                    await self._send_fn(float(len(self.sent) + 1), text)
                except Exception as exc:
                    log.warning(
                        "coach_turn progress not sent (%s); the reply comes with the result",
                        type(exc).__name__,
                    )
                    return
                self.sent.append(text)
