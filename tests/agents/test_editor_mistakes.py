"""What a prompt editor really does to an agent file: Windows encodings and line endings, tabs, an
empty save, a capitalised or copied file, a broken link. A file Claude Code reads loads here too; each
mistake gives one problem that names the file, the line and the fix (and no wrong fix)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from launcher.agents import AGENT_NAMES, AgentSpecError, check_agents, load_agent_file, load_agents

REPO = Path(__file__).resolve().parents[2]


def problems_of(directory: Path) -> list[str]:
    _specs, problems = check_agents(directory)
    return [str(p) for p in problems]


def test_byte_order_mark_and_crlf_load_like_claude_code(agents_dir: Path) -> None:
    """Windows Notepad saves UTF-8 with a byte order mark and CRLF; Claude Code drops the mark."""
    f = agents_dir / "persona.md"
    plain = load_agent_file(f)
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes().replace(b"\n", b"\r\n"))
    spec = load_agent_file(f)
    assert spec.model_dump(exclude={"path"}) == plain.model_dump(exclude={"path"})
    assert "\r" not in spec.prompt and "\ufeff" not in spec.prompt
    assert sorted(load_agents(agents_dir)) == sorted(AGENT_NAMES)


def test_non_utf8_byte_names_its_line(agents_dir: Path) -> None:
    f = agents_dir / "persona.md"
    text = f.read_bytes()
    line = text.count(b"\n") + 1
    f.write_bytes(text + "Caf\u00e9 au lait.\n".encode("latin-1"))
    (p,) = problems_of(agents_dir)
    assert p.startswith(f"{f}:{line}: the file is not UTF-8 text (byte 0xe9")
    assert "Fix: save the file with the UTF-8 encoding" in p


def test_tab_in_front_matter_says_tabs(agents_dir: Path) -> None:
    f = agents_dir / "persona.md"
    f.write_text(f.read_text(encoding="utf-8").replace("deadline_s: 60", "deadline_s:\t60"), encoding="utf-8")
    (p,) = problems_of(agents_dir)
    assert p.startswith(f"{f}:8: front matter is not valid YAML")
    assert "replace the tab on this line with spaces" in p


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf"])
def test_empty_file_is_called_empty(agents_dir: Path, content: bytes) -> None:
    f = agents_dir / "coach.md"
    f.write_bytes(content)
    (p,) = problems_of(agents_dir)
    assert p.startswith(f"{f}:1: the file is empty. Fix: write the front matter")


def test_capitalised_file_name_is_one_problem_saying_rename(agents_dir: Path) -> None:
    (agents_dir / "persona.md").rename(agents_dir / "Persona.md")
    assert problems_of(agents_dir) == [
        f"{agents_dir / 'Persona.md'}: agent file names are lowercase; this file is not read. "
        "Fix: rename it to persona.md"
    ]
    shutil.copy(REPO / "agents" / "persona.md", agents_dir / "persona.md")
    (p,) = problems_of(agents_dir)
    assert p.endswith("Fix: remove it (persona.md is the agent file)")


def test_copy_of_an_agent_file_is_one_problem_without_a_wrong_fix(agents_dir: Path) -> None:
    shutil.copy(agents_dir / "persona.md", agents_dir / "persona copy.md")
    (agents_dir / "notes.md").write_text("my notes\n", encoding="utf-8")
    problems = problems_of(agents_dir)
    assert len(problems) == 2, problems
    notes, copy = sorted(problems)
    assert copy.startswith(
        f"{agents_dir / 'persona copy.md'}: 'persona copy' is not one of the six agents "
        "(a copy of persona.md?). Fix: move it out of the agents folder"
    )
    assert notes.startswith(
        f"{agents_dir / 'notes.md'}: 'notes' is not one of the six agents. Fix: move it out"
    )
    assert "set name:" not in " ".join(problems) and "front matter" not in " ".join(problems)


def test_wrong_name_is_reported_alone(agents_dir: Path) -> None:
    """``name: shadow`` in persona.md: the tools and output tool are persona's and right; checking them
    against shadow would tell the user to break them."""
    f = agents_dir / "persona.md"
    f.write_text(f.read_text(encoding="utf-8").replace("name: persona", "name: shadow"), encoding="utf-8")
    with pytest.raises(AgentSpecError) as info:
        load_agent_file(f)
    assert [str(p) for p in info.value.problems] == [
        f"{f}:2: name: name 'shadow' does not match the file name 'persona.md'. "
        "Fix: rename the file to shadow.md or set name: persona"
    ]


def test_broken_symlink_says_so(agents_dir: Path, tmp_path: Path) -> None:
    f = agents_dir / "persona.md"
    f.unlink()
    f.symlink_to(tmp_path / "moved" / "persona.md")
    (p,) = problems_of(agents_dir)
    assert p.startswith(
        f"{f}: the file is a symbolic link to {tmp_path / 'moved' / 'persona.md'}, which does not exist"
    )


@pytest.mark.parametrize("saved_as", ["persona.MD", "persona.md.txt", "persona.txt"])
def test_missing_agent_file_names_the_file_saved_under_another_name(agents_dir: Path, saved_as: str) -> None:
    (agents_dir / "persona.md").rename(agents_dir / saved_as)
    assert problems_of(agents_dir) == [
        f"{agents_dir / 'persona.md'}: agent file is missing (found {saved_as}; only persona.md is read). "
        "Fix: rename it to persona.md"
    ]


def test_check_finds_a_claude_code_subagent_split_from_its_agent_file(tmp_path: Path) -> None:
    """``sed -i`` on ``.claude/agents/persona.md`` replaces the link with a file: Claude Code and the
    pipeline would run different prompts. ``coach agents check`` says so (exit 1)."""
    from typer.testing import CliRunner

    from launcher.cli import app

    agents = tmp_path / "agents"
    shutil.copytree(REPO / "agents", agents)
    links = tmp_path / ".claude" / "agents"
    links.mkdir(parents=True)
    for name in AGENT_NAMES:
        (links / f"{name}.md").symlink_to(Path("..", "..", "agents", f"{name}.md"))
    runner = CliRunner()
    ok = runner.invoke(app, ["agents", "check", "--dir", str(agents)])
    assert ok.exit_code == 0, ok.output
    link = links / "persona.md"
    text = link.read_text(encoding="utf-8")
    link.unlink()
    link.write_text(text.replace("deadline_s: 60", "deadline_s: 61"), encoding="utf-8")
    bad = runner.invoke(app, ["agents", "check", "--dir", str(agents)])
    assert bad.exit_code == 1
    assert (
        f"{link}: Claude Code's persona subagent is a separate file, not a link to {agents / 'persona.md'}"
        in (bad.output.replace("\n", ""))
    )
    assert f"ln -sf ../../agents/persona.md {link}" in bad.output.replace("\n", "")


def test_check_leaves_an_unrelated_claude_agents_folder_alone(tmp_path: Path) -> None:
    """`coach agents check --dir ~/myagents` sits beside the user's own ~/.claude/agents: personal
    subagents there that share a name (coach.md) are not this project's links and are not judged."""
    from typer.testing import CliRunner

    from launcher.cli import app

    agents = tmp_path / "myagents"
    shutil.copytree(REPO / "agents", agents)
    personal = tmp_path / ".claude" / "agents"
    personal.mkdir(parents=True)
    (personal / "coach.md").write_text(
        "---\nname: coach\ndescription: my own\n---\nBe brief.\n", encoding="utf-8"
    )
    result = CliRunner().invoke(app, ["agents", "check", "--dir", str(agents)])
    assert result.exit_code == 0, result.output
