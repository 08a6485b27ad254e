"""Reading one agent file: YAML front matter between ``---`` lines, then the prompt body.

Knows line numbers: every problem found here or by the schema is reported as
``file:line: field: what is wrong. Fix: what to do`` (:class:`AgentProblem`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["AgentProblem", "ParsedFile", "parse_agent_file"]


@dataclass(frozen=True)
class AgentProblem:
    """One problem in one agent file. ``line`` is 1-based (0 = the file as a whole)."""

    file: str
    line: int
    field: str | None
    message: str
    fix: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        what = f"{self.field}: " if self.field else ""
        return f"{where}: {what}{self.message}. Fix: {self.fix}"


@dataclass(frozen=True)
class ParsedFile:
    """Front matter (as loaded by YAML), the 1-based line of each key, the body and where it starts."""

    path: Path
    data: dict[str, Any]
    key_lines: dict[str, int]
    front_matter_end: int
    body: str
    body_line: int


def _yaml_problem(path: Path, exc: yaml.YAMLError, offset: int) -> AgentProblem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = (mark.line + 1 + offset) if mark is not None else offset
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if "'\\t'" in problem:  # PyYAML: "found character '\t' that cannot start any token"
        fix = "YAML allows no tab characters in the front matter: replace the tab on this line with spaces"
    else:
        fix = "write one 'key: value' per line; quote values that contain ': ' or start with a special character"
    return AgentProblem(str(path), line, None, f"front matter is not valid YAML ({problem})", fix)


def parse_agent_file(path: Path) -> ParsedFile | AgentProblem:
    """Split and parse ``path``. Returns the parsed file, or the first structural problem found
    (missing front matter, invalid YAML, duplicate key, not a mapping). Never raises on bad content;
    an unreadable file gives a problem too."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        if path.is_symlink() and not path.exists():
            what = f"the file is a symbolic link to {path.readlink()}, which does not exist"
        else:
            what = f"cannot read the file ({exc.__class__.__name__}: {exc.strerror or exc})"
        return AgentProblem(name, 0, None, what, "make it a readable UTF-8 text file")
    try:
        # "utf-8-sig": a byte order mark (Windows Notepad) is dropped, as Claude Code does
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return AgentProblem(
            name,
            line,
            None,
            f"the file is not UTF-8 text (byte 0x{raw[exc.start]:02x} cannot be decoded)",
            "save the file with the UTF-8 encoding (or retype the character on this line)",
        )
    lines = text.splitlines()
    if not text.strip():
        return AgentProblem(
            name,
            1,
            None,
            "the file is empty",
            "write the front matter ('---', the YAML fields, '---') and then the prompt, as in the other agent files",
        )
    if lines[0].strip() != "---":
        return AgentProblem(
            name,
            1,
            None,
            "the file does not start with a '---' front matter line",
            "start the file with '---', the YAML fields, '---', then the prompt",
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return AgentProblem(
            name,
            1,
            None,
            "the front matter is never closed",
            "add a line with only '---' after the last field",
        )
    fm_text = "\n".join(lines[1:end])
    try:
        node = yaml.compose(fm_text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        return _yaml_problem(path, exc, 1)
    if not isinstance(node, yaml.MappingNode):
        return AgentProblem(
            name,
            2,
            None,
            "the front matter is not a set of 'key: value' fields",
            "write one 'key: value' per line between the '---' lines",
        )
    key_lines: dict[str, int] = {}
    for key_node, _ in node.value:
        key = str(key_node.value)
        line = key_node.start_mark.line + 2
        if key in key_lines:
            return AgentProblem(
                name,
                line,
                key,
                f"duplicate field (first on line {key_lines[key]})",
                "keep one of the two lines",
            )
        key_lines[key] = line
    try:
        data = yaml.safe_load(fm_text)
    except yaml.YAMLError as exc:  # pragma: no cover - compose already succeeded
        return _yaml_problem(path, exc, 1)
    body = "\n".join(lines[end + 1 :]).strip()
    return ParsedFile(path, dict(data), key_lines, end + 1, body, end + 2)
