"""The Coach's reply on screen while it is being written, and taken back when the final one differs.

The Coach's reply is its ``write_coach`` tool call. The in-process proxy reads that call's arguments
as they stream in from the model server (``proxy._tool_tap``; ``create_app(on_tool_delta=...)``) and
:class:`ReplyTaps` (one per :class:`~launcher.pipeline._turn_scope.TurnDirectory`: :func:`taps_for`) hands each
view to the turn's :class:`ReplyStream`, keyed by the request's user, session, turn and agent. The
stream decides what may be shown and tells the front end through ``on_reply_stream(ReplyEvent)``:

* ``delta``: append ``text`` to what is shown;
* ``retract``: erase everything shown of the reply so far (the final reply differs from it);
* ``end``: the reply shown is now the final, validated one (``text``: all of it).

What is shown, and why it is safe:

* nothing on a turn whose screen tier is 2 or 3 (the Coach does not run; the support or crisis
  response is the first reply) -- the tier is known before the turn starts;
* nothing of a call until its ``risk`` assessment is complete, written BEFORE the reply (the schema
  requires it and lists it first: grammar-constrained decoders, llama.cpp's and vLLM's, write required
  properties in schema order), and then only if that assessment could not raise the turn to tier 2 or
  3 (``launcher.safety.judge_raise``); a tool schema without ``risk`` (``omit_tool_properties``, the
  embedded demo) cannot raise, so it streams at once;
* of the reply, only the prefix :func:`blackboard.shown_prefix` allows: never text that names a move
  blocked earlier in the session or by this turn's Stability entry (added when Stability finishes),
  and a tail long enough that later words cannot complete a blocked move with words already shown;
* the final reply is decided exactly as without streaming (the supervisor's ``deliver``): when it does
  not start with what was shown (a fallback, a crisis or support response after an accepted raise, a
  repaired call, Stability blocking a move mid-stream), ``retract`` comes first, then the final text.

Every event sequence ends with ``end``, once per turn, also on turns where nothing streamed (the crisis
response, a fallback): a front end that uses the stream needs nothing else.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from blackboard import Brief, shown_prefix

__all__ = [
    "ReplyEvent",
    "ReplyStream",
    "ReplyTaps",
    "add_stability_blocks",
    "close_stream",
    "open_stream",
    "taps_for",
]

log = logging.getLogger(__name__)

REPLY_FIELD = "reply"
RISK_FIELD = "risk"


@dataclass(frozen=True)
class ReplyEvent:
    """One change of what the front end shows of the Coach's reply (see the module docstring).

    ``final``: a ``delta`` sent by the final decision (the validated reply's rest, or the fallback /
    support / crisis response after nothing or a retraction), not words streamed while being written."""

    kind: Literal["delta", "retract", "end"]
    text: str = ""
    final: bool = False


class ReplyTaps:
    """The proxy's ``on_tool_delta`` observer: routes each view to the stream registered for its
    (user, session, turn, agent). Thread-safe registration; events arrive on the proxy's event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[tuple[str, str, str, str], Callable[[Any], None]] = {}
        self._watched: dict[tuple[str, str, str], set[str]] = {}

    def watch(self, user: str, session: str, turn: str) -> set[str]:
        """Start recording which agents of this turn the model is writing a tool call for (their prompt is
        in: its first argument text has arrived at the proxy). Returns the live set of their names,
        filled from the proxy's event loop; :meth:`unwatch` ends it."""
        with self._lock:
            return self._watched.setdefault((user, session, turn), set())

    def unwatch(self, user: str, session: str, turn: str) -> None:
        with self._lock:
            self._watched.pop((user, session, turn), None)

    def register(
        self, user: str, session: str, turn: str, agent: str, listener: Callable[[Any], None]
    ) -> None:
        with self._lock:
            self._streams[(user, session, turn, agent)] = listener

    def unregister(self, user: str, session: str, turn: str, agent: str) -> None:
        with self._lock:
            self._streams.pop((user, session, turn, agent), None)

    def observe(self, event: Any) -> None:
        """``proxy.ToolArgsEvent`` -> the registered listener (none: ignored); its agent is recorded
        in a watched turn's set (:meth:`watch`)."""
        with self._lock:
            listener = self._streams.get((event.user, event.session, event.turn, event.agent))
            watched = self._watched.get((event.user, event.session, event.turn))
            if watched is not None:
                watched.add(event.agent)
        if listener is not None:
            listener(event)


_TAPS: weakref.WeakKeyDictionary[Any, ReplyTaps] = weakref.WeakKeyDictionary()
_TAPS_LOCK = threading.Lock()


def taps_for(directory: Any) -> ReplyTaps:
    """The :class:`ReplyTaps` of a turn directory (the object the supervisor and the in-process stack
    share), created on first use."""
    with _TAPS_LOCK:
        taps = _TAPS.get(directory)
        if taps is None:
            taps = _TAPS[directory] = ReplyTaps()
        return taps


class ReplyStream:
    """One turn's streamed Coach reply (see the module docstring).

    Args:
        on_event: the front end's callback (exceptions are logged, never raised into the turn).
        message: the user's message (the risk gate judges the Coach's assessment against it).
        tier: the screen's tier for the message; 2 or 3 => nothing streams.
        judge: ``(message, assessment, tier) -> bool``: True when the assessment would raise the turn
            to tier 2 or more (the supervisor passes ``launcher.safety.judge_raise``).
        t0: the turn's start (``time.monotonic``), for :attr:`first_words_s`.
    """

    def __init__(
        self,
        on_event: Callable[[ReplyEvent], None],
        *,
        message: str,
        tier: int,
        judge: Callable[[str, Any, int], bool],
        t0: float,
    ) -> None:
        self._on_event = on_event
        self._message = message
        self._tier = tier
        self._judge = judge
        self._t0 = t0
        self._blocks: list[Brief] = []
        self._request: str | None = None
        self._allowed = False
        self._frozen = False  # this call's text named a blocked move: show no more of it
        self._last: Any = None
        self.shown = ""
        self.ended = False
        self.first_words_s: float | None = None
        self.retracted = 0

    @property
    def enabled(self) -> bool:
        return self._tier < 2

    def add_blocks(self, *briefs: Brief | None) -> None:
        """Moves blocked from now on (earlier turns' at the start; this turn's Stability when it ends).
        What was already shown is re-checked; naming a now-blocked move stops the stream (the final
        check then replaces the reply, and the front end is told to retract it)."""
        self._blocks.extend(b for b in briefs if b is not None and b.blocked_moves)
        if self._last is not None and not self.ended:
            self.on_tool_args(self._last)

    # ---------------------------------------------------------------------------------- streaming
    def _emit(self, kind: Literal["delta", "retract", "end"], text: str = "", *, final: bool = False) -> None:
        try:
            self._on_event(ReplyEvent(kind, text, final))
        except Exception:
            log.exception("on_reply_stream callback failed")

    def _gate(self, event: Any) -> bool:
        """Whether this call's reply may be shown at all (the risk assessment first, and harmless)."""
        if RISK_FIELD not in event.properties and event.properties:
            return True  # the schema sent has no risk: this call cannot raise the tier
        if RISK_FIELD not in event.members:
            return False  # not written yet, or written after the reply started: decided at the end
        order: Sequence[str] = event.order
        if REPLY_FIELD in order and order.index(RISK_FIELD) > order.index(REPLY_FIELD):
            return False
        try:
            return not self._judge(self._message, event.members[RISK_FIELD], self._tier)
        except Exception:
            log.exception("risk gate failed; the reply is not streamed")
            return False

    def on_tool_args(self, event: Any) -> None:
        """A view of the Coach's ``write_coach`` arguments (``proxy.ToolArgsEvent``)."""
        if self.ended or not self.enabled:
            return
        self._last = event
        if event.request_id != self._request:  # a new request: a retry or a repair
            self._request, self._allowed, self._frozen = event.request_id, False, False
        if self._frozen:
            return
        if not self._allowed:
            if REPLY_FIELD not in event.order:
                return
            self._allowed = self._gate(event)
            if not self._allowed:
                self._frozen = True
                return
        text = event.text_of(REPLY_FIELD)
        if text is None:
            return
        text = text.lstrip()
        complete = REPLY_FIELD in event.members
        safe = shown_prefix(text, *self._blocks, complete=complete)
        if safe is None:
            self._frozen = True
            return
        self._show(safe)

    def _show(self, text: str) -> None:
        if text.startswith(self.shown):
            delta = text[len(self.shown) :]
            if not delta:
                return
            if self.first_words_s is None:
                self.first_words_s = time.monotonic() - self._t0
            self.shown = text
            self._emit("delta", delta)
        elif self.shown.startswith(text):
            return  # a new request has not caught up with what is shown yet
        else:
            self._retract()
            self._show(text)

    def _retract(self) -> None:
        if self.shown:
            self.shown = ""
            self.retracted += 1
            self._emit("retract")

    def final(self, reply: str) -> None:
        """The reply the user gets (validated, or the fallback / safety response): complete what is
        shown, or retract it first; then ``end``. Idempotent."""
        if self.ended:
            return
        self.ended = True
        if not reply.startswith(self.shown):
            self._retract()
        rest = reply[len(self.shown) :]
        if rest:
            if self.first_words_s is None:
                self.first_words_s = time.monotonic() - self._t0
            self.shown = reply
            self._emit("delta", rest, final=True)
        self._emit("end", reply)


def _raises_to_support(message: str, risk: Any, tier: int) -> bool:
    from launcher.safety import judge_raise

    decision = judge_raise(message, risk, tier, agent="coach")
    return decision.accepted and decision.tier >= 2


def open_stream(
    directory: Any,
    user: str,
    session: str,
    turn: str,
    message: str,
    tier: int,
    t0: float,
    on_event: Callable[[ReplyEvent], None] | None,
) -> ReplyStream | None:
    """The turn's :class:`ReplyStream`, registered for the Coach's requests (None without a callback).
    Close it with :func:`close_stream`."""
    if on_event is None:
        return None
    stream = ReplyStream(on_event, message=message, tier=tier, judge=_raises_to_support, t0=t0)
    if stream.enabled:
        taps_for(directory).register(user, session, turn, "coach", stream.on_tool_args)
    return stream


def close_stream(directory: Any, user: str, session: str, turn: str, stream: ReplyStream | None) -> None:
    if stream is not None:
        taps_for(directory).unregister(user, session, turn, "coach")


async def add_stability_blocks(stream: ReplyStream | None, store: Any, key: str) -> None:
    """Add the blocked moves of this turn's Stability entry (once it is written) to ``stream``."""
    if stream is None or stream.ended:
        return
    import anyio.to_thread

    from blackboard import build_brief

    entry = await anyio.to_thread.run_sync(store.read, key)
    if entry is not None:
        stream.add_blocks(build_brief({"stability": entry}))
