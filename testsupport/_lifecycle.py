"""``with`` support for the servers that start and stop: one definition of ``__enter__``/``__exit__``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["StartStop"]


class StartStop(ABC):
    """Base for a resource with ``start()`` and an idempotent ``stop()``: ``with x:`` starts ``x``
    (``__enter__`` returns ``x`` itself, not what ``start`` returns) and stops it on exit, even on error."""

    @abstractmethod
    def start(self) -> object:
        """Start the resource (what it returns, e.g. a base URL, is up to the subclass)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the resource; calling it again does nothing."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
