"""End to end: ``coach chat`` as a real subprocess (stdin/stdout pipes) with the real proxy, MCP HTTP
server, ``claude`` processes and SQLite, against the scripted upstream (in this process, so the test
sees every request). The agents folder is a temp copy that the test edits while the chat runs:

* a valid edit of ``persona.md`` is used from the next turn (the new prompt text reaches the model in
  Persona's system prompt; earlier turns never had it);
* an invalid edit is reported (file, line, fix) and the previous version keeps working;
* ``/quit`` closes the session (compaction) and the process exits 0.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import agent_script
from tests.launcher.fakes import OUTPUT_TOOLS
from testsupport.upstream import ScriptedUpstream

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
MARK_V2 = "EDIT-V2: mention one concrete strength of the user."
MARK_V3 = "EDIT-V3: this text must never reach the model."
TURN_S = 120.0


class Chat:
    """A running ``coach chat`` with line-by-line access to its stdout."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def expect(self, pattern: str, timeout_s: float = TURN_S) -> list[str]:
        """Lines read until one matches ``pattern`` (regex), inclusive; fails at EOF or the deadline."""
        deadline = time.monotonic() + timeout_s
        got: list[str] = []
        rx = re.compile(pattern)
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                line = ""
                if time.monotonic() >= deadline:
                    pytest.fail(
                        f"no line matching {pattern!r} within {timeout_s}s; output so far:\n"
                        + "\n".join(self.seen)
                    )
                continue
            if line is None:
                pytest.fail(f"chat exited before {pattern!r}; output:\n" + "\n".join(self.seen))
            self.seen.append(line)
            got.append(line)
            if rx.search(line):
                return got


def system_of(record: Any) -> str:
    system = record.body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


def persona_systems(upstream: ScriptedUpstream, start: int) -> list[str]:
    return [system_of(r) for r in upstream.requests[start:] if r.is_model_call and r.agent == "persona"]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[ScriptedUpstream, Path, Path]]:
    agents = tmp_path / "agents"
    shutil.copytree(REPO / "agents", agents)
    for f in agents.glob("*.md"):  # a shared 2-core box starts six cold claude processes at once
        f.write_text(re.sub(r"(?m)^deadline_s: .*$", "deadline_s: 90", f.read_text()))
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    upstream = ScriptedUpstream({a: agent_script(a) for a in OUTPUT_TOOLS})
    upstream.start()
    cfg = tmp_path / "coach.toml"
    cfg.write_text(
        f'[data]\ndir = "{tmp_path / "data"}"\n\n[agents]\ndir = "{agents}"\n\n'
        f'[upstream]\nurl = "{upstream.base_url}"\nkind = "anthropic"\n'
    )
    try:
        yield upstream, agents, cfg
    finally:
        upstream.stop()


def start_chat(cfg: Path, home: Path) -> Chat:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COACH_", "ANTHROPIC_", "CLAUDE"))}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", COLUMNS="200")
    cmd = [
        sys.executable,
        "-c",
        "from launcher.cli import app; app()",
        "chat",
        "--user",
        "chat-user",
        "--session",
        "s1",
        "--config",
        str(cfg),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    return Chat(proc)


def test_agent_edits_during_chat_apply_next_turn_and_invalid_edit_keeps_old(
    setup: tuple[ScriptedUpstream, Path, Path], tmp_path: Path
) -> None:
    upstream, agents, cfg = setup
    chat = start_chat(cfg, tmp_path / "home")
    try:
        chat.expect(r"coach chat .*session s1")
        persona = agents / "persona.md"
        original = persona.read_text()

        n0 = len(upstream.requests)
        chat.send("I keep planning to run three times a week and then skipping it.")
        turn1 = chat.expect(r"turn t000001 done")
        assert any(line.startswith("Coach:") for line in turn1), turn1
        assert any(line.startswith("Synthesis") for line in turn1), turn1
        sys1 = persona_systems(upstream, n0)
        assert sys1 and not any(MARK_V2 in s for s in sys1)

        # A valid edit: a new sentence in Persona's prompt, used from the next turn.
        persona.write_text(original.rstrip("\n") + "\n" + MARK_V2 + "\n")
        chat.expect(r"reloaded agent files \(version 2\)", 30)
        n1 = len(upstream.requests)
        chat.send("This week I ran once, on Sunday.")
        turn2 = chat.expect(r"turn t000002 done")
        sys2 = persona_systems(upstream, n1)
        assert sys2 and all(MARK_V2 in s for s in sys2), (
            "the edited prompt must reach the model on the next turn"
        )
        assert any(line.startswith("Synthesis:") for line in turn2), turn2  # not degraded

        # An invalid edit: reported with file and line; version 2 keeps working.
        bad = re.sub(r"(?m)^deadline_s: .*$", "deadline_s: -5", persona.read_text()) + MARK_V3 + "\n"
        persona.write_text(bad)
        report = chat.expect(r"still using version 2", 30)
        details = "\n".join([*report, chat.expect(r"deadline_s", 5)[-1]])
        assert "persona.md" in details and "deadline_s" in details, details
        n2 = len(upstream.requests)
        chat.send("I want to try again next week.")
        turn3 = chat.expect(r"turn t000003 done")
        sys3 = persona_systems(upstream, n2)
        assert sys3 and all(MARK_V2 in s and MARK_V3 not in s for s in sys3)
        assert any(line.startswith("Synthesis:") for line in turn3), turn3
        assert not any("persona: error" in line or "persona: timeout" in line for line in turn3), turn3

        chat.send("/quit")
        chat.expect(r"session s1 closed \(3 turns\)", 60)
        assert chat.proc.wait(60) == 0
    finally:
        if chat.proc.poll() is None:
            chat.proc.kill()
            chat.proc.wait(10)
