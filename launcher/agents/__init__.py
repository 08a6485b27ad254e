"""The six agent files: parsing, validation into :class:`AgentSpec`, and hot reload.

An agent file is a Claude Code subagent definition (``agents/<name>.md``): YAML front matter with
``name``, ``description``, ``tools`` (comma-separated MCP tool names), ``model`` (sonnet | opus | haiku |
inherit), plus this pipeline's fields ``stage`` (early_reply | specialist | synthesis), ``output_tool``,
``deadline_s``, ``max_output_tokens``, ``context_budget_tokens``, ``model_alias`` and
``force_output_tool``; then the prompt body.

Every problem names the file, the line and the fix (:class:`AgentSpecError`, ``problems``). The MCP
server is named ``coachboard``; tools are ``mcp__coachboard__<tool>`` (``blackboard.WRITE_TOOL_NAMES``,
:data:`READ_TOOLS`).

Hot reload: :class:`AgentRegistry` keeps the last valid set; ``await registry.watch()`` (watchfiles)
reloads on change. A valid edit is returned by the next ``registry.current()``; an invalid edit is
logged, kept in ``registry.last_error``, and the previous version stays in use. The watcher reloads a
change only once the files have stopped changing (``settle_ms``): an editor that saves in place
(truncate, then write, possibly in several writes) is never read half-written, so one save gives one
new version and never a spurious "invalid" report. Invalid files are reported only once they have
stayed so for 1.5 s (``invalid_settle_ms``): a file deleted and written again is one new version.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from blackboard import AGENT_NAMES, ROSTER, WRITE_TOOL_NAMES, AgentName
from launcher.agents._agent_file import AgentProblem, ParsedFile, parse_agent_file
from launcher.errors import LauncherError

__all__ = [
    "AGENT_NAMES",
    "EXPECTED_STAGE",
    "KNOWN_TOOLS",
    "MCP_SERVER",
    "READ_TOOLS",
    "AgentProblem",
    "AgentRegistry",
    "AgentSpec",
    "AgentSpecError",
    "load_agent_file",
    "load_agents",
]

log = logging.getLogger(__name__)

MCP_SERVER = "coachboard"
_PREFIX = f"mcp__{MCP_SERVER}__"
READ_TOOLS: tuple[str, ...] = (
    "read_entry",
    "list_entries",
    "get_profile",
    "get_session_history",
    "collect_turn",
)
KNOWN_TOOLS: frozenset[str] = frozenset(_PREFIX + t for t in (*WRITE_TOOL_NAMES.values(), *READ_TOOLS))
#: The same tools when the repository is loaded as a Claude Code plugin: Claude Code names a plugin's
#: server ``plugin_<plugin>_<server>``. Agent files list both names so their ``tools:`` resolve as
#: project subagents and in the plugin (unresolved names are ignored by Claude Code).
PLUGIN_PREFIX = f"mcp__plugin_{MCP_SERVER}_{MCP_SERVER}__"


def canonical_tool(tool: str) -> str:
    """``mcp__plugin_coachboard_coachboard__X`` -> ``mcp__coachboard__X``; other names unchanged."""
    return _PREFIX + tool.removeprefix(PLUGIN_PREFIX) if tool.startswith(PLUGIN_PREFIX) else tool


EXPECTED_STAGE: dict[str, str] = {a.name: a.stage.value for a in ROSTER}
CLAUDE_MODELS = ("sonnet", "opus", "haiku", "inherit")
#: The prompt may use at most this share of the agent's context budget (the rest is the context
#: pack). Tokens are estimated as characters / 4 (a common rule of thumb for English BPE tokenisers).
PROMPT_BUDGET_SHARE = 0.25
CHARS_PER_TOKEN = 4

_FIX: dict[str, str] = {
    "name": "set it to the file name without .md, one of " + " ".join(AGENT_NAMES),
    "description": "one line saying what the agent does",
    "tools": "a comma-separated list of MCP tools, e.g. 'mcp__coachboard__write_persona, "
    "mcp__coachboard__read_entry'",
    "model": "one of " + ", ".join(CLAUDE_MODELS) + " (Claude Code's model field)",
    "stage": "one of early_reply, specialist, synthesis",
    "output_tool": "the agent's write tool, e.g. mcp__coachboard__write_persona",
    "deadline_s": "a number of seconds greater than 0 and at most 600",
    "max_output_tokens": "an integer from 16 to 32000",
    "context_budget_tokens": "an integer from 512 to 200000",
    "model_alias": "a proxy model alias such as fast, default or deep (letters, digits, '-', '_', '.')",
    "force_output_tool": "true or false",
}


class AgentSpecError(LauncherError):
    """One or more agent files are invalid. ``problems``: every :class:`AgentProblem` found."""

    code = "invalid_agent_file"

    def __init__(self, problems: list[AgentProblem]) -> None:
        self.problems = problems
        super().__init__("invalid agent files:\n" + "\n".join(f"  {p}" for p in problems))


class AgentSpec(BaseModel):
    """One validated agent file. Times in seconds, sizes in tokens; ``tools`` are full MCP names."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: AgentName
    description: str = Field(min_length=1, max_length=1000)
    tools: tuple[str, ...] = Field(min_length=1)
    model: str
    stage: Literal["early_reply", "specialist", "synthesis"]
    output_tool: str
    deadline_s: float = Field(gt=0, le=600)
    max_output_tokens: int = Field(ge=16, le=32000)
    context_budget_tokens: int = Field(ge=512, le=200000)
    model_alias: str = Field(pattern=r"^[A-Za-z0-9_.\-]{1,64}$")
    force_output_tool: bool
    prompt: str = Field(min_length=1)
    path: Path

    @field_validator("tools", mode="before")
    @classmethod
    def _split_tools(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(t.strip() for t in value.split(",") if t.strip())
        if isinstance(value, list):
            return tuple(value)
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if value not in CLAUDE_MODELS and not value.startswith("claude-"):
            raise ValueError(f"unknown model {value!r}")
        return value

    @property
    def output_tool_bare(self) -> str:
        """The output tool without the ``mcp__coachboard__`` prefix (``write_persona``)."""
        return self.output_tool.removeprefix(_PREFIX)


def _suggest(word: str, options: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _field_problems(parsed: ParsedFile, exc: ValidationError) -> list[AgentProblem]:
    problems = []
    fields = list(AgentSpec.model_fields)
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else None
        line = parsed.key_lines.get(field or "", parsed.front_matter_end)
        if field == "prompt":
            problems.append(
                AgentProblem(
                    str(parsed.path),
                    parsed.body_line,
                    None,
                    "the prompt body is empty",
                    "write the agent's instructions after the closing '---'",
                )
            )
            continue
        if err["type"] == "extra_forbidden":
            msg = f"unknown field{_suggest(field or '', fields)}"
            fix = "remove it or correct its name; known fields: " + ", ".join(
                f for f in fields if f not in ("prompt", "path")
            )
        elif err["type"] == "missing":
            msg = "required field is missing"
            fix = f"add '{field}: ...' to the front matter: {_FIX.get(field or '', '')}"
        else:
            got = err.get("input")
            msg = f"{err['msg']} (got {got!r})" if not isinstance(got, dict) else err["msg"]
            fix = _FIX.get(field or "", "see the agent file reference")
        problems.append(AgentProblem(str(parsed.path), line, field, msg, fix))
    return problems


def _semantic_problems(spec: AgentSpec, parsed: ParsedFile) -> list[AgentProblem]:
    f, ln = str(spec.path), parsed.key_lines
    out: list[AgentProblem] = []
    if spec.path.stem != spec.name:
        stem = spec.path.stem
        fix = f"rename the file to {spec.name}.md" + (f" or set name: {stem}" if stem in AGENT_NAMES else "")
        # The checks below depend on which agent this is; against a wrong name they would only
        # suggest wrong fixes (another agent's tools and stage), so they wait for the name.
        return [
            AgentProblem(
                f,
                ln.get("name", 1),
                "name",
                f"name {spec.name!r} does not match the file name {spec.path.name!r}",
                fix,
            )
        ]
    for tool in spec.tools:
        if canonical_tool(tool) not in KNOWN_TOOLS:
            out.append(
                AgentProblem(
                    f,
                    ln.get("tools", 1),
                    "tools",
                    f"unknown tool {tool!r}{_suggest(tool, sorted(KNOWN_TOOLS))}",
                    "use only the coachboard MCP tools: " + ", ".join(sorted(KNOWN_TOOLS)),
                )
            )
    others = {_PREFIX + w for n, w in WRITE_TOOL_NAMES.items() if n != spec.name}
    for tool in spec.tools:
        if canonical_tool(tool) in others:
            out.append(
                AgentProblem(
                    f,
                    ln.get("tools", 1),
                    "tools",
                    f"{tool} is another agent's write tool",
                    f"remove it; {spec.name} writes only through {_PREFIX}{WRITE_TOOL_NAMES[spec.name]}",
                )
            )
    expected = _PREFIX + WRITE_TOOL_NAMES[spec.name]
    if spec.output_tool not in KNOWN_TOOLS:
        out.append(
            AgentProblem(
                f,
                ln.get("output_tool", 1),
                "output_tool",
                f"unknown tool {spec.output_tool!r}{_suggest(spec.output_tool, sorted(KNOWN_TOOLS))}",
                f"set output_tool: {expected}",
            )
        )
    elif spec.output_tool != expected:
        out.append(
            AgentProblem(
                f,
                ln.get("output_tool", 1),
                "output_tool",
                f"{spec.name} must write through {expected}, not {spec.output_tool}",
                f"set output_tool: {expected}",
            )
        )
    elif spec.output_tool not in spec.tools:
        out.append(
            AgentProblem(
                f,
                ln.get("tools", 1),
                "tools",
                f"the output tool {spec.output_tool} is not listed",
                f"add {spec.output_tool} to tools",
            )
        )
    if spec.stage != EXPECTED_STAGE[spec.name]:
        out.append(
            AgentProblem(
                f,
                ln.get("stage", 1),
                "stage",
                f"{spec.name} runs as {EXPECTED_STAGE[spec.name]}, not {spec.stage}",
                f"set stage: {EXPECTED_STAGE[spec.name]}",
            )
        )
    if spec.max_output_tokens >= spec.context_budget_tokens:
        out.append(
            AgentProblem(
                f,
                ln.get("max_output_tokens", 1),
                "max_output_tokens",
                f"{spec.max_output_tokens} is not below context_budget_tokens ({spec.context_budget_tokens})",
                "lower max_output_tokens or raise the budget",
            )
        )
    prompt_tokens = len(spec.prompt) // CHARS_PER_TOKEN
    limit = int(spec.context_budget_tokens * PROMPT_BUDGET_SHARE)
    if prompt_tokens > limit:
        out.append(
            AgentProblem(
                f,
                parsed.body_line,
                "prompt",
                f"the prompt is about {prompt_tokens} tokens, more "
                f"than {PROMPT_BUDGET_SHARE:.0%} of context_budget_tokens ({limit})",
                "shorten the prompt or raise context_budget_tokens",
            )
        )
    return out


def check_agent_file(path: Path) -> tuple[AgentSpec | None, list[AgentProblem]]:
    """Validate one file. Returns ``(spec, [])`` or ``(None | spec, problems)``; never raises."""
    parsed = parse_agent_file(path)
    if isinstance(parsed, AgentProblem):
        return None, [parsed]
    try:
        spec = AgentSpec.model_validate({**parsed.data, "prompt": parsed.body, "path": path})
    except ValidationError as exc:
        return None, _field_problems(parsed, exc)
    problems = _semantic_problems(spec, parsed)
    return (None if problems else spec), problems


def load_agent_file(path: str | Path) -> AgentSpec:
    """Load and validate one agent file. Raises :class:`AgentSpecError` listing every problem."""
    spec, problems = check_agent_file(Path(path))
    if problems or spec is None:
        raise AgentSpecError(problems)
    return spec


def check_agents(directory: str | Path) -> tuple[dict[str, AgentSpec], list[AgentProblem]]:
    """Validate every ``*.md`` of ``directory`` and require the six agents. Never raises."""
    d = Path(directory)
    specs: dict[str, AgentSpec] = {}
    problems: list[AgentProblem] = []
    if not d.is_dir():
        where = d if d.is_absolute() else f"{d} (from the current directory {Path.cwd()})"
        return {}, [
            AgentProblem(
                str(d),
                0,
                None,
                f"the agents directory {where} "
                + ("is not a directory (it is a file)" if d.exists() else "does not exist"),
                "set [agents] dir in coach.toml (or `coach agents check --dir`) to the folder with the six "
                "agent files, or run the command from the coachboard repository root",
            )
        ]
    files = _agent_files(d)
    for path in files:
        if path.stem not in AGENT_NAMES:
            continue  # not read: one problem below says what to do with it
        spec, found = check_agent_file(path)
        problems.extend(found)
        if spec is not None:
            specs[spec.name] = spec
    present = {p.stem for p in files}
    for name in AGENT_NAMES:
        if name not in present and f"{name}.md" not in {p.name.lower() for p in files}:
            problems.append(_missing_problem(d, name))
    problems.extend(_stray_problem(path, present) for path in files if path.stem not in AGENT_NAMES)
    return specs, problems


def _missing_problem(directory: Path, name: str) -> AgentProblem:
    """``name``.md is missing; names a file that looks like it (``persona.MD``, ``persona.txt``,
    ``persona.md.txt`` from an editor that adds an extension)."""
    try:
        near = sorted(p.name for p in directory.iterdir() if p.name.lower().startswith(f"{name}."))
    except OSError:
        near = []
    if near:
        return AgentProblem(
            str(directory / f"{name}.md"),
            0,
            None,
            f"agent file is missing (found {', '.join(near)}; only {name}.md is read)",
            f"rename {'it' if len(near) == 1 else 'the right one'} to {name}.md",
        )
    return AgentProblem(
        str(directory / f"{name}.md"),
        0,
        None,
        "agent file is missing",
        f"create {name}.md (all six agents are required)",
    )


def _stray_problem(path: Path, present: set[str]) -> AgentProblem:
    """The one problem of a ``*.md`` in the agents folder that is not one of the six agent files."""
    lower = path.stem.lower()
    if lower in AGENT_NAMES:  # Persona.md: agent file names are lowercase, as the agent names
        fix = f"remove it ({lower}.md is the agent file)" if lower in present else f"rename it to {lower}.md"
        return AgentProblem(str(path), 0, None, "agent file names are lowercase; this file is not read", fix)
    close = difflib.get_close_matches(lower, AGENT_NAMES, n=1)
    hint = f" (a copy of {close[0]}.md?)" if close and close[0] in present else ""
    return AgentProblem(
        str(path),
        0,
        None,
        f"{path.stem!r} is not one of the six agents{hint}",
        "move it out of the agents folder (it may hold only "
        + ", ".join(f"{n}.md" for n in AGENT_NAMES)
        + ", a README.md and hidden files), or rename it to the agent file it replaces",
    )


def load_agents(directory: str | Path) -> dict[str, AgentSpec]:
    """Load all six agents from ``directory``: ``{name: AgentSpec}``.

    Raises:
        AgentSpecError: listing every problem of every file (and each missing agent).
    """
    specs, problems = check_agents(directory)
    if problems:
        raise AgentSpecError(problems)
    return specs


def _agent_files(directory: Path) -> list[Path]:
    """The folder's ``*.md`` files that are agent files, sorted: not README.md, and not hidden files
    (editors' lock and swap files such as Emacs's ``.#persona.md``, macOS's ``._persona.md``)."""
    return sorted(
        p for p in directory.glob("*.md") if not p.name.startswith(".") and p.name.lower() != "readme.md"
    )


def _fingerprint(directory: Path) -> str:
    h = hashlib.sha256()
    for path in _agent_files(directory):
        h.update(path.name.encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()


class AgentRegistry:
    """The current agent set, reloaded when the files change.

    Args:
        directory: the agents folder.
        on_change: called with ``(version, error)`` after every reload attempt (``error`` is None on
            success); for status lines and tests.

    Raises:
        AgentSpecError: at construction, when the files are invalid (there is no previous version).
    """

    def __init__(
        self, directory: str | Path, *, on_change: Callable[[int, AgentSpecError | None], None] | None = None
    ):
        self.directory = Path(directory)
        self._specs = load_agents(self.directory)
        self._fingerprint = _fingerprint(self.directory)
        self.version = 1
        self.last_error: AgentSpecError | None = None
        self._on_change = on_change
        self._changed = anyio.Event()

    def current(self) -> dict[str, AgentSpec]:
        """The agent set to use for the next turn (the last valid version)."""
        return dict(self._specs)

    def reload(self, *, report_invalid: bool = True) -> bool:
        """Re-read the folder now. Returns True if a new valid version was installed; False when nothing
        changed, when the files changed while they were being read (nothing is installed or reported;
        the next call sees them), or when the new files are invalid (then ``last_error`` says why; the
        old version stays). With ``report_invalid=False`` invalid files are neither recorded nor
        reported: the next call reads them again (the watcher waits this way for a file being
        replaced)."""
        fingerprint = _fingerprint(self.directory)
        if fingerprint == self._fingerprint:
            return False
        specs: dict[str, AgentSpec] = {}
        error: AgentSpecError | None = None
        try:
            specs = load_agents(self.directory)
        except AgentSpecError as exc:
            error = exc
        if _fingerprint(self.directory) != fingerprint:
            return False  # a write is in progress: what was parsed may mix old and new bytes
        if error is not None and not report_invalid:
            return False
        self._fingerprint = fingerprint
        if error is not None:
            self.last_error = error
            log.warning("agent files changed but are invalid; keeping version %d:\n%s", self.version, error)
            self._notify(error)
            return False
        self._specs = specs
        self.version += 1
        self.last_error = None
        log.info("agent files reloaded: version %d", self.version)
        self._notify(None)
        return True

    def _notify(self, error: AgentSpecError | None) -> None:
        if self._on_change is not None:
            try:
                self._on_change(self.version, error)
            except Exception:  # a failing listener must not end the watcher (and with it hot reload)
                log.exception(
                    "the agent-reload listener failed; the watcher goes on (version %d)", self.version
                )
        self._changed.set()
        self._changed = anyio.Event()

    def next_change(self) -> anyio.Event:
        """An event set by the next reload attempt (valid or not). Take it before the edit you wait for."""
        return self._changed

    async def watch(
        self,
        *,
        stop_event: anyio.Event | None = None,
        ready: anyio.Event | None = None,
        debounce_ms: int = 200,
        force_polling: bool | None = None,
        settle_ms: int = 250,
        invalid_settle_ms: int = 1500,
    ) -> None:
        """Watch the folder with watchfiles until ``stop_event`` is set (run it in a task group).

        A change is reloaded once the folder's content has stayed the same for at least ``settle_ms``
        milliseconds (checked on every watchfiles batch and every 100 ms tick), so a file saved in place
        in several writes gives one reload of the finished file, not one per write. Files that are
        invalid are reported only once they have stayed the same for ``invalid_settle_ms``: a file
        deleted and written again (``rm`` then ``cp``, a slow save, a scratch ``notes.md`` removed at
        once) is one new version, without an "invalid" report in between. ``ready`` is set
        once the watcher is running (after its first batch or timeout tick); anything changed since
        construction is then picked up like any other change.
        """
        from watchfiles import awatch

        pending: str | None = None  # a changed fingerprint waiting to settle
        pending_since = 0.0

        def tick() -> None:
            nonlocal pending, pending_since
            fingerprint = _fingerprint(self.directory)
            now = time.monotonic()
            if fingerprint == self._fingerprint:
                pending = None
            elif fingerprint != pending:
                pending, pending_since = fingerprint, now
            elif now - pending_since >= settle_ms / 1000:
                self.reload(report_invalid=now - pending_since >= invalid_settle_ms / 1000)
                if self._fingerprint == pending:  # installed or reported; else read again next tick
                    pending = None
            if ready is not None and not ready.is_set():
                ready.set()

        while stop_event is None or not stop_event.is_set():
            if not self.directory.is_dir():  # moved away before watching began: report it, wait for it
                tick()
                await anyio.sleep(0.1)
                continue
            try:
                async for _changes in awatch(
                    self.directory,
                    stop_event=stop_event,
                    debounce=debounce_ms,
                    step=20,
                    rust_timeout=100,
                    yield_on_timeout=True,
                    force_polling=force_polling,
                ):
                    tick()
                return
            except FileNotFoundError:  # gone between the check and watchfiles' start
                continue
