"""The one typed configuration, :class:`CoachConfig`, read once at the entry point and passed down.

Sources, later wins:

1. defaults (every field has one; ``CoachConfig()`` is a working local configuration);
2. a TOML file: ``--config PATH``, else ``$COACH_CONFIG``, else ``./coach.toml`` if it exists;
3. environment overrides: ``COACH_UPSTREAM_URL`` -> ``[upstream] url``, ``COACH_DATA_DIR`` ->
   ``[data] dir``, ``COACH_DATABASE_URL`` -> ``[data] url``, ``COACH_BROKER_URL`` -> ``[broker] url``.

Sections (each package owns its own model)::

    [data]        dir = ".coachboard/data"                      # blackboard.sqlite3, locks, logs
                  url = "postgresql://..."  schema = "coachboard"   # optional: PostgreSQL instead
    [upstream]    url = "http://127.0.0.1:8000"  kind = "openai"   # vLLM / llama.cpp / Anthropic
    [proxy]       proxy.config.ProxyConfig (host, port, [[proxy.models]], [proxy.agents.<name>] ...)
    [mcp]         mcp_server.config.McpConfig (host, port, path, ...)
    [thresholds]  blackboard.config.Thresholds (docs/coaching.md defaults)
    [safety]      launcher.safety.SafetyConfig (locale, [safety.resources.<REGION>], windows)
    [agents]      dir = "agents"  warm_process_limit = 6  retries = 1  watch = true  idle_close_s = 1800
                  keep_claude_transcripts = false
    [embedded]    launcher.embedded.EmbeddedConfig (llama-server for the no-GPU default)
    [broker]      launcher.config.BrokerConfig (url = "amqp://...": turns as jobs for `coach worker`)

Relative paths are relative to the current directory. Errors: :class:`ConfigError` naming the file,
the field (``[agents] warm_process_limit``), what was wrong and the fix.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from blackboard.config import Thresholds
from launcher.embedded import EmbeddedConfig
from launcher.errors import LauncherError
from launcher.safety import SafetyConfig
from mcp_server.config import McpConfig
from proxy.config import ModelPool, ProxyConfig

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "ENV_BROKER_URL",
    "ENV_CONFIG",
    "ENV_DATABASE_URL",
    "ENV_DATA_DIR",
    "ENV_UPSTREAM_URL",
    "AgentsConfig",
    "BrokerConfig",
    "CoachConfig",
    "ConfigError",
    "DataConfig",
    "UpstreamConfig",
    "check_amqp_url",
    "load_config",
]

ENV_CONFIG = "COACH_CONFIG"
ENV_UPSTREAM_URL = "COACH_UPSTREAM_URL"
ENV_DATA_DIR = "COACH_DATA_DIR"
ENV_DATABASE_URL = "COACH_DATABASE_URL"
ENV_BROKER_URL = "COACH_BROKER_URL"
DEFAULT_CONFIG_FILE = Path("coach.toml")


class ConfigError(LauncherError):
    """The configuration file or an override is invalid. ``problems``: one line per problem."""

    code = "invalid_config"

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.problems = problems or [message]
        super().__init__(message)


def _expand_home(value: Path) -> Path:
    """``~`` / ``~user`` at the start of a path is the home folder (TOML and a quoted env value do not
    expand it, so ``dir = "~/coach"`` made a folder named ``~`` in the current directory)."""
    try:
        return value.expanduser()
    except RuntimeError:  # no home folder known: keep the path as written
        return value


class DataConfig(BaseModel):
    """Where the blackboard lives: ``dir`` holds ``blackboard.sqlite3`` and the sequencer's locks (and
    the agents' files, logs and secrets whatever the backend); ``url`` (``postgresql://...``, or
    ``COACH_DATABASE_URL``) puts the blackboard, the Shadow barrier and the proxy's token budgets in
    PostgreSQL instead, in ``schema`` (docs/postgresql.md)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    dir: Path = Path(".coachboard/data")
    url: str | None = None
    db_schema: str = Field(default="coachboard", alias="schema")

    @field_validator("url")
    @classmethod
    def _pg_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        from blackboard._pg_conn import check_url

        return check_url(value)

    @field_validator("db_schema")
    @classmethod
    def _schema_name(cls, value: str) -> str:
        from blackboard._pg_schema import check_schema_name

        return check_schema_name(value)

    def board_options(self) -> dict[str, Any]:
        """Keyword arguments of ``Blackboard`` that pick the backend (``database_url``, ``database_schema``)."""
        return {"database_url": self.url, "database_schema": self.db_schema}

    @field_validator("dir")
    @classmethod
    def _home(cls, value: Path) -> Path:
        return _expand_home(value)


class UpstreamConfig(BaseModel):
    """The model server the proxy forwards to when ``[[proxy.models]]`` is not given.

    ``kind``: ``openai`` (``/v1/chat/completions``: vLLM, llama.cpp) or ``anthropic`` (``/v1/messages``).
    ``model``: the model name sent upstream (None: whatever the server serves by default).
    """

    model_config = ConfigDict(extra="forbid")

    url: str = "http://127.0.0.1:8000"
    kind: Literal["openai", "anthropic"] = "openai"
    model: str | None = None
    api_key: str | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https:// (got {value!r})")
        return value.rstrip("/")


#: The agent files beside the installed packages (a source checkout or an editable install).
CHECKOUT_AGENTS_DIR = Path(__file__).resolve().parent.parent / "agents"


class AgentsConfig(BaseModel):
    """The agent files and their processes.

    ``warm_process_limit``: Claude Code processes kept warm across turns (about 235 MiB each; docs/claude-code.md);
    beyond it agents start cold. ``retries``: retries of an agent after a transient failure (issue 5:
    one). ``watch``: reload edited agent files in long-running modes. ``idle_close_s``: seconds without a
    turn after which a long-running mode (``coach chat``, ``coach serve``) closes a session (compacts it
    into the profile; issue 5's idle timeout); 0 turns it off. ``keep_claude_transcripts``: let the
    agents' Claude Code processes save their conversations (the user's messages) under
    ``<data dir>/claude-home/.claude/projects/``, never pruned: for debugging only (default off:
    ``--no-session-persistence``; see ``launcher.runner._agent_runner.RunnerConfig``). ``reuse_processes``:
    when a session closes (``coach worker`` evicting it, ``coach chat`` ending it), reset each of its warm
    processes with Claude Code's ``/clear`` and hand it to the next session instead of stopping it
    (``launcher.runner._reset``; a reset that is not confirmed stops the process; needs the in-process
    proxy and MCP server; docs/scale-out.md, "Capacity per node"). ``dir`` defaults to
    ``./agents``, or, when the current folder has none, to the checkout's ``agents/`` (:meth:`resolved_dir`).
    """

    model_config = ConfigDict(extra="forbid")

    dir: Path = Path("agents")

    @field_validator("dir")
    @classmethod
    def _home(cls, value: Path) -> Path:
        return _expand_home(value)

    warm_process_limit: int = Field(default=6, ge=0, le=64)
    retries: int = Field(default=1, ge=0, le=5)
    # TOML has true/false: a string such as "yes" or "false" is a mistake, never read as a boolean
    watch: StrictBool = True
    idle_close_s: float = Field(default=1800.0, ge=0, le=7 * 86400)
    keep_claude_transcripts: StrictBool = False
    reuse_processes: StrictBool = False

    def resolved_dir(self) -> Path:
        """``dir``, except when it was not set and the current folder has no ``agents/``: then the agent files
        of the checkout this package runs from (``make install`` installs it editable), so ``coach run`` works
        from any folder. An explicitly set ``dir`` is returned as is (a missing one is reported by the loader)."""
        if "dir" not in self.model_fields_set and not self.dir.is_dir() and CHECKOUT_AGENTS_DIR.is_dir():
            return CHECKOUT_AGENTS_DIR
        return self.dir


_BROKER_PREFIX = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")


def check_amqp_url(value: str) -> str:
    """``value`` when it is an ``amqp://`` or ``amqps://`` URL with a host and a port of 1-65535 (or none:
    5672); else ValueError saying what is wrong (the URL shown without its password) and the form to use.
    Checked for ``[broker] url``, ``COACH_BROKER_URL`` and ``--broker`` alike."""
    from yarl import URL

    form = "use amqp://user:password@host:5672/vhost"
    try:
        u = URL(value)
        port = u.port
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a URL ({exc}): {form}") from None
    shown = str(u.with_password(None)) if u.password else value
    if u.scheme not in ("amqp", "amqps"):
        raise ValueError(f"not an AMQP URL (got {shown[:80]!r}): {form}")
    if not u.host:
        raise ValueError(f"no host in {shown[:80]!r}: {form}")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"port {port} is not 1-65535 in {shown[:80]!r}: {form}")
    return value


class BrokerConfig(BaseModel):
    """``[broker]``: RabbitMQ for turn jobs (docs/scale-out.md). ``url`` (or ``COACH_BROKER_URL``, which
    wins; or ``--broker``) turns ``coach run``, ``coach chat``, the Claude Code session mode and ``coach
    serve``'s turn endpoint into front ends that publish jobs for ``coach worker`` processes; unset,
    turns run in-process.

    ``url``: ``amqp://user:password@host:port/vhost``; ``prefix``: the exchanges' and queues' names
    start with it (one per deployment); ``delivery_limit``: the broker's ``x-delivery-limit``, and how
    often a job may be started again after its first start before it is marked failed (starts counted
    in PostgreSQL; a job dead-lettered with fewer, e.g. after dropped connections while it waited, is
    queued again); ``lease_ttl_s``: how long a
    session stays with a worker that stopped renewing (a dead worker's sessions move after it);
    ``sessions``: warm sessions per worker (six ``claude`` processes each; also the broker prefetch);
    ``metrics_port``: ``coach worker``'s ``/metrics`` (0 = any free port); ``turns_port``: ``coach
    serve``'s ``POST /v1/turns`` (server-sent events)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    prefix: str = "coach"
    delivery_limit: int = Field(default=5, ge=1, le=100)
    lease_ttl_s: float = Field(default=15.0, gt=0.5, le=3600)
    sessions: int = Field(default=2, ge=1, le=64)
    metrics_port: int = Field(default=9464, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    turns_port: int = Field(default=8090, ge=0, le=65535)

    @field_validator("url")
    @classmethod
    def _amqp(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        return check_amqp_url(value)

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not _BROKER_PREFIX.fullmatch(value):
            raise ValueError("use 1-64 characters from A-Z a-z 0-9 _ . -")
        return value


class CoachConfig(BaseModel):
    """The whole configuration (see the module docstring). ``source``: the file it came from, if any."""

    model_config = ConfigDict(extra="forbid")

    data: DataConfig = Field(default_factory=DataConfig)
    upstream: UpstreamConfig = Field(default_factory=UpstreamConfig)
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    safety: SafetyConfig = Field(default_factory=SafetyConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    embedded: EmbeddedConfig = Field(default_factory=EmbeddedConfig)
    broker: BrokerConfig = Field(default_factory=BrokerConfig)
    source: Path | None = None

    def proxy_config(self) -> ProxyConfig:
        """The proxy's configuration: ``[proxy]`` as given, plus, when it defines no models, one pool
        named ``default`` serving every model name from ``[upstream]``."""
        proxy = self.proxy
        if self.data.url and proxy.shared_budgets_url is None:  # budgets shared by every instance
            proxy = proxy.model_copy(
                update={"shared_budgets_url": self.data.url, "shared_budgets_schema": self.data.db_schema}
            )
        if proxy.models:
            return proxy
        pool = ModelPool(
            name="default",
            replicas=[self.upstream.url],
            kind=self.upstream.kind,
            upstream_model=self.upstream.model,
            api_key=self.upstream.api_key,
        )
        return proxy.model_copy(update={"models": [pool], "default_model": "default"})


_FIX_HINTS: dict[str, str] = {
    "upstream.url": f"an http(s) URL of the model server, e.g. http://127.0.0.1:8000 (or set {ENV_UPSTREAM_URL})",
    "upstream.kind": "openai (vLLM, llama.cpp /v1/chat/completions) or anthropic (/v1/messages)",
    "data.dir": f"a folder path (or set {ENV_DATA_DIR})",
    "data.url": f"a postgresql://user@host:port/dbname URL (or set {ENV_DATABASE_URL}); unset for SQLite",
    "data.schema": "a PostgreSQL schema name: 1-63 characters from a-z 0-9 _",
    "agents.warm_process_limit": "an integer 0-64 (each warm Claude Code process holds about 235 MiB)",
    "agents.retries": "an integer 0-5",
    "agents.idle_close_s": "seconds 0-604800 (0: never close idle sessions)",
    "safety.locale": 'a locale such as "en-US" or "en-GB"',
    "safety.encoder_threads": "an integer 1-8 (BLAS threads of the safety screen's encoder; 1 on a busy 2-core machine)",
    "broker.url": f"an amqp://user:password@host:5672/vhost URL (or set {ENV_BROKER_URL}); unset: turns run in-process",
}


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if len(parts) == 1:
        return f"[{parts[0]}]" if parts[0] in CoachConfig.model_fields else parts[0]
    return f"[{parts[0]}] " + ".".join(parts[1:])


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    model: Any = CoachConfig
    for part in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(str(part))
        if field is None:
            return []
        model = field.annotation
    return list(getattr(model, "model_fields", {}))


def _problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        where = _where(loc)
        dotted = ".".join(str(p) for p in loc)
        if err["type"] == "extra_forbidden":
            known = [k for k in _known_keys(loc) if k != "source"]
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            out.append(f"{where}: unknown key{hint}. Fix: remove it or use one of: {', '.join(known)}")
            continue
        got = err.get("input")
        msg = str(err["msg"]).removeprefix("Value error, ")
        # a validator's own message may already quote the value ("... (got 'ftp://x')")
        shown = "" if isinstance(got, dict | list) or f"got {got!r}" in msg else f" (got {got!r})"
        section = str(loc[0]) if loc else ""
        fix = _FIX_HINTS.get(dotted, f"see [{section}] in docs/configuration.md")
        out.append(f"{where}: {msg}{shown}. Fix: {fix}")
    return out


def _not_a_file(p: Path) -> str:
    return "is a folder, not a TOML file" if p.is_dir() else "does not exist"


def _config_path(path: str | Path | None, env: Mapping[str, str]) -> Path | None:
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(
                f"config file {p} {_not_a_file(p)}. Fix: pass an existing --config file or omit it"
            )
        return p
    if env.get(ENV_CONFIG):
        p = Path(env[ENV_CONFIG])
        if not p.is_file():
            raise ConfigError(
                f"{ENV_CONFIG}={p} {_not_a_file(p)}. Fix: point {ENV_CONFIG} at a TOML file or unset it"
            )
        return p
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def find_config_file(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """The config file every ``coach`` command reads: ``path`` (``--config``), else ``$COACH_CONFIG``, else
    ``./coach.toml`` when there is one, else None (defaults only). ``env`` defaults to ``os.environ``.

    Raises:
        ConfigError: ``path`` or ``$COACH_CONFIG`` names no file (or a folder); the message says the fix.
    """
    return _config_path(path, os.environ if env is None else env)


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> CoachConfig:
    """Read the configuration once (see the module docstring for the sources and their order).

    Args:
        path: the ``--config`` file; None looks at ``$COACH_CONFIG`` then ``./coach.toml``.
        env: environment to read overrides from (default ``os.environ``).

    Raises:
        ConfigError: the file is missing, not TOML (with line and column), or a field is invalid
            (each problem names the section, the key, what was wrong and the fix).
    """
    env = os.environ if env is None else env
    p = _config_path(path, env)
    data: dict[str, Any] = {}
    if p is not None:
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p} is not valid TOML: {exc}. Fix: correct the syntax at that line") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"cannot read {p}: {exc.__class__.__name__}. Fix: make it a readable UTF-8 file"
            ) from None
    if "source" in data:
        raise ConfigError(f"{p}: 'source' is not a configuration key. Fix: remove it")
    for var, (section, key) in {
        ENV_UPSTREAM_URL: ("upstream", "url"),
        ENV_DATA_DIR: ("data", "dir"),
        ENV_DATABASE_URL: ("data", "url"),
        ENV_BROKER_URL: ("broker", "url"),
    }.items():
        value = env.get(var)
        if value:
            sect = data.setdefault(section, {})
            if not isinstance(sect, dict):
                raise ConfigError(f"{p}: [{section}] must be a table. Fix: write it as a [{section}] section")
            sect[key] = value
    try:
        config = CoachConfig.model_validate({**data, "source": p})
    except ValidationError as exc:
        problems = _problems(exc)
        origin = str(p) if p is not None else "configuration"
        raise ConfigError(
            f"{origin} is invalid:\n" + "\n".join(f"  {x}" for x in problems), problems
        ) from None
    return config
