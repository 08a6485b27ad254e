"""``coach demo``'s pure pieces: agent specs for CPU inference (deadlines scaled, output caps lowered),
the embedded server's config, the proxy pointed at it, and the command's bad-input exits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from launcher.agents import AgentRegistry
from launcher.cli import app
from launcher.cli.demo import EXAMPLE, demo_embedded_config, embedded_runtime_config, scaled_agents
from launcher.config import CoachConfig
from launcher.embedded import FORCED_TOOL_CALL_PREFILL, EmbeddedConfig

REPO = Path(__file__).resolve().parents[2]


def test_scaled_agents_scale_deadlines_and_lower_output_caps_only() -> None:
    registry = AgentRegistry(REPO / "agents")
    base = registry.current()
    caps = {"coach": 160, "pineal": 100_000, "nobody": 5}
    specs = scaled_agents(registry.current, 12.0, caps)()
    assert set(specs) == set(base)
    for name, spec in specs.items():
        assert spec.deadline_s == base[name].deadline_s * 12.0
    assert specs["coach"].max_output_tokens == 160 < base["coach"].max_output_tokens
    assert specs["pineal"].max_output_tokens == base["pineal"].max_output_tokens  # a cap never raises
    assert specs["shadow"].max_output_tokens == base["shadow"].max_output_tokens  # no cap given
    unchanged = scaled_agents(registry.current, 1.0)()
    assert all(unchanged[n] is base[n] for n in base)


def test_default_output_caps_are_below_every_agent_file() -> None:
    base = AgentRegistry(REPO / "agents").current()
    caps = EmbeddedConfig().agent_output_caps
    assert set(caps) == set(base)
    assert all(caps[n] <= base[n].max_output_tokens for n in base)


def test_demo_uses_one_slot_unless_set() -> None:
    assert demo_embedded_config(CoachConfig()).parallel == 1
    config = CoachConfig.model_validate({"embedded": {"parallel": 3}})
    assert demo_embedded_config(config).parallel == 3


def test_runtime_config_points_one_pool_at_the_embedded_server() -> None:
    config = embedded_runtime_config(CoachConfig(), "http://127.0.0.1:5555", "anthropic")
    (pool,) = config.proxy.models
    assert pool.replicas == ["http://127.0.0.1:5555"] and pool.kind == "anthropic"
    assert pool.forced_tool_prefill == FORCED_TOOL_CALL_PREFILL
    assert pool.omit_tool_properties == ["risk"]  # a 135M model does not judge safety (the screen still runs)
    assert pool.context_window == CoachConfig().embedded.ctx_per_slot
    assert config.proxy.default_model == "default"


def test_bad_upstream_kind_and_missing_file_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["demo", "--upstream-kind", "vllm"])
    assert bad.exit_code == 2 and "--upstream-kind must be openai or anthropic" in bad.output
    missing = runner.invoke(app, ["demo", "--file", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2 and "nope.csv" in missing.output


def test_closing_summary_counts_what_each_turn_delivered(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from rich.console import Console

    from launcher.cli.demo import _epilogue

    def turn(session: str, source: str, failed: tuple[str, ...] = ()) -> Any:
        agents = {
            n: SimpleNamespace(status="error" if n in failed else "ok")
            for n in ("coach", "shadow", "persona", "plasticity", "stability", "pineal")
        }
        result = SimpleNamespace(agents=agents, synthesis_source=source, coach_reply="hi", synthesis="s")
        return SimpleNamespace(session_id=session, result=result)

    turns = [
        turn("s1", "model"),
        turn("s1", "fallback", ("shadow",)),
        turn("s2", "fallback"),
        turn("s2", "repaired"),
    ]
    console = Console(record=True, width=400)
    _epilogue(console, turns, "annomi-24", tmp_path, 12.0)
    out = " ".join(console.export_text().split())
    assert "4 turns over 2 sessions in 12 s. 4 of 4 turns delivered a Coach reply and a synthesis" in out
    assert "in 3 of 4 turns the model wrote all five entries" in out
    assert "Pineal's synthesis: 2 by the model, 2 by the deterministic fallback" in out
    assert "board show --user annomi-24" in out and str(tmp_path / "blackboard.sqlite3") in out


def test_the_demo_replays_the_example_transcript_of_the_checkout() -> None:
    # `make demo` failed after the layout moved the command a folder deeper: the path pointed into launcher/
    assert EXAMPLE == Path(__file__).resolve().parents[2] / "examples" / "annomi_24.csv"
    assert EXAMPLE.is_file()


def test_the_demo_leaves_pineal_prefill_to_the_proxys_free_slot_check() -> None:
    # no setting turns it off: on the one-slot server the proxy finds no free slot and sends nothing
    # upstream (tests/proxy/test_prefill_slots.py); the embedded server answers /slots and /metrics
    from launcher.cli.demo import demo_supervisor_settings
    from launcher.embedded import EmbeddedModelServer

    settings = demo_supervisor_settings()
    assert settings.pineal_prefill is True
    assert settings.coach_head_start_s > 0
    emb = demo_embedded_config(CoachConfig()).model_copy(
        update={"binary": Path("/x/llama-server"), "model": Path("/x/model.gguf")}
    )
    assert emb.parallel == 1
    command = EmbeddedModelServer(emb).command(8080)
    assert "--metrics" in command and "--no-slots" not in command
