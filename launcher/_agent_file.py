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
    return AgentProblem(
        str(path), line, None, f"front matter is not valid YAML ({problem})",
        "write one 'key: value' per line; quote values that contain ': ' or start with a special character",
    )  # fmt: skip


def parse_agent_file(path: Path) -> ParsedFile | AgentProblem:
    """Split and parse ``path``. Returns the parsed file, or the first structural problem found
    (missing front matter, invalid YAML, duplicate key, not a mapping). Never raises on bad content;
    an unreadable file gives a problem too."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return AgentProblem(
            name,
            0,
            None,
            f"cannot read the file ({exc.__class__.__name__})",
            "make it a readable UTF-8 text file",
        )
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
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
