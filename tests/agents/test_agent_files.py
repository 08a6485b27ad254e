"""Agent files: the repo's six validate; each kind of bad file gives a precise file:line:fix error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launcher.agents import (
    AGENT_NAMES,
    EXPECTED_STAGE,
    AgentSpecError,
    load_agent_file,
    load_agents,
)
from launcher.cli import app

REPO = Path(__file__).resolve().parents[2]
AGENTS = REPO / "agents"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return i
    raise AssertionError(needle)


def one_problem(path: Path) -> str:
    with pytest.raises(AgentSpecError) as info:
        load_agent_file(path)
    assert len(info.value.problems) >= 1
    return str(info.value.problems[0])


def test_repo_agents_are_valid() -> None:
    specs = load_agents(AGENTS)
    assert set(specs) == set(AGENT_NAMES)
    for name, spec in specs.items():
        assert spec.stage == EXPECTED_STAGE[name]
        assert spec.output_tool in spec.tools
        assert spec.output_tool.startswith("mcp__coachboard__write_")
        assert "exactly once" in spec.prompt
    assert specs["coach"].model_alias == "fast" and specs["pineal"].model_alias == "deep"
    assert specs["pineal"].output_tool_bare == "write_synthesis"


def test_prompts_carry_no_shared_data() -> None:
    """Prompts are ours: no line of the shared corpora may appear in them (spot check on ESConv)."""
    esconv = REPO.parent / "shared" / "data" / "esconv" / "ESConv-test.jsonl"
    prompts = "\n".join(p.read_text(encoding="utf-8") for p in AGENTS.glob("*.md"))
    assert "speaker" not in prompts and "usr" not in prompts.split()
    if esconv.is_file():
        import json

        first = json.loads(esconv.read_text(encoding="utf-8").splitlines()[0])
        for turn in first["dialog"][:10]:
            assert turn["text"] not in prompts


def test_yaml_error_names_the_line(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    edit(f, "deadline_s: 20", "deadline_s: [20")
    msg = one_problem(f)
    assert msg.startswith(f"{f}:")
    assert "not valid YAML" in msg and "Fix:" in msg
    line = int(msg.split(":")[1])
    assert abs(line - line_of(f, "deadline_s: [20")) <= 1


def test_missing_front_matter(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    f.write_text("You are the coach.\n", encoding="utf-8")
    assert (
        one_problem(f)
        == f"{f}:1: the file does not start with a '---' front matter line. Fix: start the file with '---', the YAML fields, '---', then the prompt"
    )


def test_unclosed_front_matter(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    f.write_text("---\nname: coach\n", encoding="utf-8")
    assert "never closed" in one_problem(f)


def test_unknown_field_suggests_the_right_one(agents_dir: Path) -> None:
    f = agents_dir / "persona.md"
    edit(f, "deadline_s: 60", "deadline: 60")
    with pytest.raises(AgentSpecError) as info:
        load_agent_file(f)
    texts = [str(p) for p in info.value.problems]
    unknown = next(t for t in texts if "unknown field" in t)
    assert unknown.startswith(
        f"{f}:{line_of(f, 'deadline: 60')}: deadline: unknown field (did you mean 'deadline_s'?)"
    )
    missing = next(t for t in texts if "required field is missing" in t)
    assert "deadline_s" in missing and "Fix: add 'deadline_s: ...'" in missing


def test_wrong_type_names_field_line_and_fix(agents_dir: Path) -> None:
    f = agents_dir / "shadow.md"
    edit(f, "max_output_tokens: 900", "max_output_tokens: lots")
    msg = one_problem(f)
    assert msg.startswith(f"{f}:{line_of(f, 'max_output_tokens: lots')}: max_output_tokens:")
    assert "'lots'" in msg and "Fix: an integer from 16 to 32000" in msg


def test_string_number_is_a_wrong_type(agents_dir: Path) -> None:
    f = agents_dir / "shadow.md"
    edit(f, "deadline_s: 60", 'deadline_s: "60"')
    assert "deadline_s:" in one_problem(f)


@pytest.mark.parametrize(
    ("old", "new", "field", "fix"),
    [
        ("deadline_s: 45", "deadline_s: 0", "deadline_s", "greater than 0 and at most 600"),
        ("deadline_s: 45", "deadline_s: 4000", "deadline_s", "greater than 0 and at most 600"),
        ("max_output_tokens: 600", "max_output_tokens: 5", "max_output_tokens", "16 to 32000"),
        (
            "context_budget_tokens: 4000",
            "context_budget_tokens: 100",
            "context_budget_tokens",
            "512 to 200000",
        ),
        ("force_output_tool: true", "force_output_tool: maybe", "force_output_tool", "true or false"),
        ("stage: specialist", "stage: early", "stage", "early_reply, specialist, synthesis"),
        ("model: sonnet", "model: gpt-4", "model", "sonnet, opus, haiku, inherit"),
    ],
)
def test_budgets_and_enums_out_of_range(agents_dir: Path, old: str, new: str, field: str, fix: str) -> None:
    f = agents_dir / "plasticity.md"
    edit(f, old, new)
    msg = one_problem(f)
    assert msg.startswith(f"{f}:{line_of(f, new)}: {field}:"), msg
    assert fix in msg


def test_name_must_match_file_name(agents_dir: Path) -> None:
    f = agents_dir / "stability.md"
    edit(f, "name: stability", "name: persona")
    with pytest.raises(AgentSpecError) as info:
        load_agent_file(f)
    first = str(info.value.problems[0])
    assert first.startswith(f"{f}:2: name: name 'persona' does not match the file name 'stability.md'")
    assert "rename the file to persona.md or set name: stability" in first


def test_unknown_output_tool(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    edit(f, "output_tool: mcp__coachboard__write_coach", "output_tool: mcp__coachboard__write_coahc")
    msg = one_problem(f)
    assert f"{f}:{line_of(f, 'output_tool:')}: output_tool: unknown tool" in msg
    assert "did you mean 'mcp__coachboard__write_coach'" in msg


def test_output_tool_of_another_agent(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    edit(f, "output_tool: mcp__coachboard__write_coach", "output_tool: mcp__coachboard__write_synthesis")
    msg = one_problem(f)
    assert "coach must write through mcp__coachboard__write_coach" in msg


def test_builtin_or_foreign_tools_refused(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    edit(
        f,
        "tools: mcp__coachboard__write_coach",
        "tools: mcp__coachboard__write_coach, Bash, mcp__coachboard__write_shadow",
    )
    with pytest.raises(AgentSpecError) as info:
        load_agent_file(f)
    texts = " | ".join(str(p) for p in info.value.problems)
    assert "unknown tool 'Bash'" in texts
    assert "mcp__coachboard__write_shadow is another agent's write tool" in texts


def test_output_tool_must_be_listed(agents_dir: Path) -> None:
    f = agents_dir / "pineal.md"
    edit(f, ", mcp__coachboard__write_synthesis", "")
    assert "the output tool mcp__coachboard__write_synthesis is not listed" in one_problem(f)


def test_duplicate_field(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    edit(f, "model: haiku\n", "model: haiku\nmodel: opus\n")
    msg = one_problem(f)
    assert msg.startswith(f"{f}:{line_of(f, 'model: opus')}: model: duplicate field")


def test_empty_prompt(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    text = f.read_text(encoding="utf-8")
    f.write_text(text[: text.index("---", 4) + 4], encoding="utf-8")
    assert "the prompt body is empty" in one_problem(f)


def test_prompt_over_budget(agents_dir: Path) -> None:
    f = agents_dir / "coach.md"
    f.write_text(f.read_text(encoding="utf-8") + "\nBe kind. " * 2000, encoding="utf-8")
    assert "shorten the prompt or raise context_budget_tokens" in one_problem(f)


def test_load_agents_requires_all_six_and_reports_every_file(agents_dir: Path) -> None:
    (agents_dir / "stability.md").unlink()
    edit(agents_dir / "coach.md", "deadline_s: 20", "deadline_s: -1")
    (agents_dir / "extra.md").write_text("---\nname: extra\n---\nhi\n", encoding="utf-8")
    with pytest.raises(AgentSpecError) as info:
        load_agents(agents_dir)
    text = str(info.value)
    assert "stability.md: agent file is missing" in text
    assert "coach.md:" in text and "deadline_s" in text
    assert "'extra' is not one of the six agents" in text
    assert info.value.code == "invalid_agent_file"


def test_editor_lock_and_metadata_files_are_not_agent_files(agents_dir: Path) -> None:
    """Emacs keeps ``.#persona.md`` (a dangling symlink) while a buffer is modified; macOS copies leave
    ``._coach.md``; a README may sit beside the agents. None of them is an agent file."""
    (agents_dir / ".#persona.md").symlink_to("someone@host.1234:1700000000")
    (agents_dir / "._coach.md").write_bytes(b"\x00\x05\x16\x07 AppleDouble")
    (agents_dir / "README.md").write_text("# Our agents\n", encoding="utf-8")
    assert sorted(load_agents(agents_dir)) == sorted(AGENT_NAMES)


def test_cli_check_ok_and_failing(agents_dir: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["agents", "check", "--dir", str(agents_dir)])
    assert ok.exit_code == 0, ok.output
    assert ok.output.count(" ok ") >= 6 or ok.output.count("ok") >= 6
    edit(agents_dir / "persona.md", "context_budget_tokens: 6000", "context_budget_tokens: 10")
    bad = runner.invoke(app, ["agents", "check", "--dir", str(agents_dir)])
    assert bad.exit_code == 1
    assert re.search(
        r"persona\.md:\d+: context_budget_tokens: .*Fix: an integer from 512 to 200000", bad.output
    )
