"""Front-end helpers for the streamed Coach reply (``Supervisor.run_turn(on_reply_stream=...)``; the
events are :class:`launcher.pipeline._reply_stream.ReplyEvent`: ``delta`` / ``retract`` / ``end``).

* :class:`ReplyText` keeps what is on screen now (a live region re-renders it: ``coach chat`` on a
  terminal, the demo's progress line); a retraction simply empties it.
* :class:`ReplyPrinter` writes the words to a plain text stream as they come (``coach run --stream``);
  text cannot be taken back there, so a retraction prints a line saying the words above were
  withdrawn, and the final reply follows on a new ``Coach:`` line.
"""

from __future__ import annotations

from typing import Any, TextIO

__all__ = ["ReplyPrinter", "ReplyText"]


class ReplyText:
    """What is shown of the reply now (``text``); ``ended`` once the final reply is complete."""

    def __init__(self) -> None:
        self.text = ""
        self.ended = False
        self.retractions = 0

    def __call__(self, event: Any) -> None:
        if event.kind == "delta":
            self.text += event.text
        elif event.kind == "retract":
            self.text = ""
            self.retractions += 1
        elif event.kind == "end":
            self.ended = True

    def tail(self, width: int) -> str:
        """The last ``width`` characters of the text on one line (for a status line)."""
        flat = " ".join(self.text.split())
        return flat if len(flat) <= width else "…" + flat[-(width - 1) :]


class ReplyPrinter:
    """Prints the reply's words to ``out`` as they are written (see the module docstring)."""

    def __init__(self, out: TextIO, label: str = "Coach: ") -> None:
        self.out = out
        self.label = label
        self._open = False

    def __call__(self, event: Any) -> None:
        if event.kind == "delta" and event.text:
            if not self._open:
                self.out.write(self.label)
                self._open = True
            self.out.write(event.text)
        elif event.kind == "retract" and self._open:
            self.out.write("\n(the words above were withdrawn: the reply is below)\n")
            self._open = False
        elif event.kind == "end":
            if self._open:
                self.out.write("\n")
            self._open = False
        self.out.flush()
