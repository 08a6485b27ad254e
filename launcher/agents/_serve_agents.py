"""``coach serve``: edited agent files reach the running proxy's per-agent policies.

The in-process proxy of ``coach run``/``coach chat`` gets the reloaded agent files' policies through
``StackUrls.set_agents`` (``launcher.pipeline._runtime.Runtime.current_agents``). ``coach serve`` runs its proxy
as a long-lived server, so it watches its own agents folder (``[agents] dir``; ``[agents] watch``) with
:meth:`launcher.agents.AgentRegistry.watch` and, after every valid reload, replaces the proxy's policy
table (``proxy.ProxyState.set_agent_policies``) with :func:`launcher.agents.policies.policies_from_agents` of
the new files, policies written in ``[proxy.agents.*]`` still winning. The next request of any agent
(so the next turn) sees the new forced tool, max tokens and model alias; a request in flight keeps the
table it started with. Invalid files keep the previous policies (the problem is printed to stderr).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from launcher.agents.policies import policies_from_agents

__all__ = ["RELOADED_PREFIX", "AgentPolicySync"]

log = logging.getLogger(__name__)

#: First words of the line printed after the proxy took a reload's policies (tests wait for it).
RELOADED_PREFIX = "coach serve: agents reloaded"


class AgentPolicySync:
    """The ``on_change`` callback of an ``AgentRegistry``: pushes each valid reload into the proxy.

    Build it first, pass it as the registry's ``on_change``, then set :attr:`registry` and call
    :meth:`attach` once the proxy app exists; reloads before that only print their status.

    Args:
        echo: ``echo(line, err=...)`` for the status lines (``typer.echo``-shaped).
    """

    def __init__(self, echo: Callable[..., None]) -> None:
        self._echo = echo
        self._set: Callable[[Mapping[str, Any]], None] | None = None
        self._written: dict[str, Any] = {}
        self.registry: Any = None

    def attach(self, set_policies: Callable[[Mapping[str, Any]], None], written: Mapping[str, Any]) -> None:
        """``set_policies``: ``proxy.ProxyState.set_agent_policies`` of the running app; ``written``: the
        policies written in the proxy config (they win over the agent files')."""
        self._set = set_policies
        self._written = dict(written)

    def __call__(self, version: int, error: Exception | None) -> None:
        if error is not None:
            self._echo(
                f"coach serve: the edited agent files are invalid; the proxy keeps the policies of "
                f"version {version}:\n{error}",
                err=True,
            )
            return
        if self.registry is None or self._set is None:
            return
        try:
            self._set({**policies_from_agents(self.registry.current()), **self._written})
        except ValueError as exc:  # pydantic ValidationError included: nothing changed
            self._echo(
                f"coach serve: agent files version {version} give invalid proxy policies ({exc}); "
                "the proxy keeps the previous ones",
                err=True,
            )
            return
        self._echo(f"{RELOADED_PREFIX}: version {version}; the proxy's per-agent policies are updated")
