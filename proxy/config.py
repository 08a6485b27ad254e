"""Typed proxy configuration (:class:`ProxyConfig`), loadable from TOML.

Shape (TOML, either at top level or under ``[proxy]`` of ``coach.toml``)::

    host = "127.0.0.1"            # bind address; 127.0.0.1 unless you mean to expose it
    port = 8082
    api_key = "secret"            # optional; clients send x-api-key or Authorization: Bearer
    default_model = "qwen3"       # pool used for model names nothing else matches (e.g. claude-*)
    usage_log = ".coachboard/usage.jsonl"
    session_token_budget = 200000 # input+output tokens per x-coach-session, all agents together

    [[models]]
    name = "qwen3"                # what clients send as "model"
    aliases = ["fast", "claude-*haiku*"]   # exact names or fnmatch patterns
    upstream_model = "Qwen/Qwen3-30B-A3B"
    kind = "openai"               # "openai" (/v1/chat/completions) or "anthropic" (/v1/messages)
    replicas = ["http://127.0.0.1:8000", "http://127.0.0.1:8001"]
    context_window = 32768

    [agents.shadow]               # AgentPolicy, keyed by agent name (x-coach-agent)
    force_tool = "mcp__coach__write_shadow"
    stop_after_tool = true
    max_tokens = 2048
    token_budget = 50000
    model_alias = "deep"

Raises :class:`proxy.errors.ConfigError` on a file that does not parse or validate.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError

__all__ = ["AgentPolicy", "ModelPool", "ProxyConfig", "load_config"]

#: Top-level tables of a coach.toml (launcher.config): a file with any of them is read as a coach.toml.
_COACH_TOML_SECTIONS = frozenset({"data", "upstream", "mcp", "thresholds", "safety", "agents", "embedded"})


class AgentPolicy(BaseModel):
    """Per-agent policy, keyed by agent name (the ``x-coach-agent`` header).

    - ``force_tool``: tool name forced (``tool_choice`` = that tool) on the agent's first model call of a
      turn, i.e. a request whose messages carry no tool_result yet, and again after that tool returned an
      error (so the model can repair it).
    - ``stop_after_tool``: once the latest user message carries a successful result of ``force_tool``,
      the proxy answers locally with a short ``end_turn`` message instead of calling the upstream.
    - ``max_tokens``: cap on a request's ``max_tokens`` (clamped, or refused if
      ``ProxyConfig.max_tokens_over_cap == "refuse"``).
    - ``token_budget``: input+output tokens this agent may use per session (per proxy lifetime when the
      request has no ``x-coach-session``).
    - ``model_alias``: route this agent's requests to this model/alias whatever model name it sends.
    - ``forced_tool_only``: a call that forces ``force_tool`` is sent with that tool alone (the model can
      call no other; the rest of the tool list would only be prompt tokens, prefilled before its first
      token).
    """

    model_config = ConfigDict(extra="forbid")

    force_tool: str | None = None
    stop_after_tool: bool = False
    forced_tool_only: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    token_budget: int | None = Field(default=None, ge=1)
    model_alias: str | None = None


class ModelPool(BaseModel):
    """One model served by a pool of interchangeable upstream replicas."""

    model_config = ConfigDict(extra="forbid")

    name: str
    aliases: list[str] = Field(default_factory=list)
    upstream_model: str | None = None
    """Model name sent upstream; defaults to ``name``."""
    kind: Literal["openai", "anthropic"] = "openai"
    replicas: list[str] = Field(min_length=1)
    """Base URLs, e.g. ``http://127.0.0.1:8000`` (a trailing ``/v1`` is accepted and stripped)."""
    api_key: str | None = None
    """Sent upstream as ``Authorization: Bearer`` (openai) or ``x-api-key`` (anthropic)."""
    context_window: int | None = Field(default=None, ge=16)
    """Tokens; max_tokens is clamped so estimated input + max_tokens fits."""
    max_output_tokens: int | None = Field(default=None, ge=1)
    thinking_default: bool = False
    """enable_thinking when the request has no ``thinking`` field (Anthropic's default is off)."""
    chat_template_kwargs: bool = True
    """Send ``chat_template_kwargs.enable_thinking`` (vLLM/llama.cpp understand it; OpenAI does not)."""
    system_in_messages: Literal["fold", "keep"] = "fold"
    """``fold``: system items inside messages are folded into the top system prompt (leading ones) or the
    nearest user turn (later ones); ``keep``: forwarded as ``system`` messages in place (Qwen3 allows)."""
    think_tags: bool = True
    """Parse inline ``<think>...</think>`` and hermes ``<tool_call>`` text from the upstream."""
    think_starts_open: bool = False
    """With thinking on, the output starts inside a think section (templates that put ``<think>`` in the
    prompt, e.g. Qwen3-*-Thinking-2507 without a reasoning parser): text up to ``</think>`` is thinking."""
    forced_tool_prefill: str | None = None
    """For upstreams that do not honour a *named* tool choice (llama.cpp's llama-server treats OpenAI's
    ``{"type": "function", ...}`` as "auto" and Anthropic's ``{"type": "tool"}`` as "any"): when a policy
    forces a tool, send only that tool, ``tool_choice`` "required"/"any", and append an assistant message
    with this text (``"<tool_call>\n"`` for a Hermes template) so the grammar admits only the call; numbers
    with integer bounds in that tool's schema are sent as integers (llama.cpp's grammar bounds only those),
    and a repair after a failed call is sent as a fresh attempt (see ``_policy.narrow_forced_tool``).
    None (default, right for vLLM): the named tool choice is sent as is."""
    omit_tool_properties: list[str] = Field(default_factory=list)
    """With ``forced_tool_prefill``: top-level properties removed from the forced tool's schema, so the
    grammar cannot produce them. ``coach demo`` omits ``risk`` (the agents' optional risk assessment): a
    135M model's judgement would only be noise that can raise the safety tier, and it costs output tokens
    under the tight caps."""
    max_string_length: int | None = Field(default=None, ge=1)
    """With ``forced_tool_prefill``: every string in the forced tool's schema gets at most this
    ``maxLength`` (characters), so the grammar closes each string in time. A very small model fills a
    string until its output cap; the cut call is then refused, never repaired (a cut string's meaning is
    unknown), so the cap must come from the grammar. ``coach demo`` sets 240. None: schemas unchanged."""

    @field_validator("replicas")
    @classmethod
    def _strip_urls(cls, v: list[str]) -> list[str]:
        out = []
        for url in v:
            u = url.rstrip("/")
            if u.endswith("/v1"):
                u = u[:-3]
            if not u.startswith(("http://", "https://")):
                raise ValueError(f"replica URL must start with http:// or https://, got {url!r}")
            out.append(u)
        return out

    @property
    def upstream_name(self) -> str:
        return self.upstream_model or self.name


class ProxyConfig(BaseModel):
    """The whole proxy configuration. Times in seconds, sizes in bytes, budgets in tokens."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8082, ge=0, le=65535)
    api_key: str | None = None
    models: list[ModelPool] = Field(default_factory=list)
    default_model: str | None = None
    agents: dict[str, AgentPolicy] = Field(default_factory=dict)

    max_body_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    session_token_budget: int | None = Field(default=None, ge=1)
    max_tokens_over_cap: Literal["clamp", "refuse"] = "clamp"
    usage_log: str | None = None
    """Append-only JSONL usage log path; budgets are restored from it at start-up."""
    shared_budgets_url: str | None = None
    """PostgreSQL URL of the token budgets shared by every proxy instance (``proxy._shared_budget``; the
    blackboard's ``[data] url``); None: budgets are this process's own."""
    shared_budgets_schema: str = "coachboard"
    budget_lease_s: float = Field(default=900.0, gt=0)
    """A shared-budget reservation never settled (its proxy was killed) stops counting after this long."""

    connect_timeout_s: float = Field(default=5.0, gt=0)
    first_byte_timeout_s: float = Field(default=300.0, gt=0)
    """Upper bound on waiting for the first upstream chunk (prefill of a long prompt can take minutes)."""
    read_timeout_s: float = Field(default=300.0, gt=0)
    """Upper bound on the gap between two upstream chunks after the first."""
    ping_interval_s: float = Field(default=5.0, gt=0)
    """While waiting for the first token, a ``ping`` SSE event is sent this often."""
    max_attempts: int = Field(default=3, ge=1)
    """Upstream attempts per request (connect errors, 429, 5xx, timeouts before the first byte)."""
    backoff_base_s: float = Field(default=0.2, ge=0)
    backoff_max_s: float = Field(default=5.0, ge=0)
    max_retry_after_s: float = Field(default=30.0, ge=0)
    """A 429 ``Retry-After`` longer than this is passed to the client instead of waited out."""
    health_interval_s: float = Field(default=10.0, gt=0)
    unhealthy_cooldown_s: float = Field(default=5.0, ge=0)
    """After a connect failure a replica is skipped this long (unless no healthy one is left)."""
    local_stop_text: str = "Done."

    @model_validator(mode="after")
    def _check(self) -> ProxyConfig:
        names: set[str] = set()
        for pool in self.models:
            if pool.name in names:
                raise ValueError(f"model {pool.name!r} is defined twice")
            names.add(pool.name)
        if self.default_model is not None and self.default_model not in names:
            raise ValueError(f"default_model {self.default_model!r} is not one of the models {sorted(names)}")
        return self

    @classmethod
    def single_upstream(
        cls, url: str, *, model: str = "default", kind: Literal["openai", "anthropic"] = "openai", **kw: Any
    ) -> ProxyConfig:
        """A config with one pool (one replica) that serves every model name."""
        pool = ModelPool(name=model, replicas=[url], kind=kind)
        return cls(models=[pool], default_model=model, **kw)


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> ProxyConfig:
    """Load a :class:`ProxyConfig` from a TOML file: a ``coach.toml`` (its ``[proxy]`` table, with one pool
    from ``[upstream]`` when it defines no ``[[proxy.models]]``), else a proxy-only file (the top level).
    In a coach.toml, ``COACH_UPSTREAM_URL`` in ``env`` (default ``os.environ``) overrides ``[upstream] url``,
    as for every other command (``launcher.config``).

    Raises ConfigError naming the file and each invalid field.
    """
    env = os.environ if env is None else env
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"proxy config file {p} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"proxy config file {p} is not valid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read proxy config file {p} ({type(exc).__name__}); pass a readable UTF-8 TOML file"
        ) from exc
    is_coach_toml = "proxy" in data or bool(_COACH_TOML_SECTIONS & data.keys())
    section = data.get("proxy", {}) if is_coach_toml else data
    upstream = data.get("upstream") if is_coach_toml else None
    if is_coach_toml and env.get("COACH_UPSTREAM_URL"):
        upstream = {**(upstream if isinstance(upstream, dict) else {}), "url": env["COACH_UPSTREAM_URL"]}
    if (
        isinstance(section, dict)
        and not section.get("models")
        and isinstance(upstream, dict)
        and upstream.get("url")
    ):
        # A coach.toml without [[proxy.models]]: one pool serving every model name from [upstream], as
        # launcher.config.CoachConfig.proxy_config does for coach run / coach serve.
        pool = {
            "name": "default",
            "replicas": [str(upstream["url"]).rstrip("/")],
            "kind": upstream.get("kind", "openai"),
            "upstream_model": upstream.get("model"),
            "api_key": upstream.get("api_key"),
        }
        section = {**section, "models": [pool], "default_model": section.get("default_model", "default")}
    try:
        return ProxyConfig.model_validate(section)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"proxy config file {p} is invalid: {problems}") from exc
