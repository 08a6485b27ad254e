"""CoachConfig: defaults, TOML file, env overrides, and clear errors naming the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.config import (
    ENV_CONFIG,
    ENV_DATA_DIR,
    ENV_UPSTREAM_URL,
    CoachConfig,
    ConfigError,
    load_config,
)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "coach.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_defaults_without_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load_config(env={})
    assert cfg.source is None
    assert cfg.data.dir == Path(".coachboard/data")
    assert cfg.agents.warm_process_limit == 6 and cfg.agents.retries == 1
    assert cfg.upstream.kind == "openai"
    assert cfg.safety.locale == "en-US"
    proxy = cfg.proxy_config()
    assert proxy.models[0].replicas == ["http://127.0.0.1:8000"] and proxy.default_model == "default"


def test_file_sections_are_typed_by_their_packages(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        """
[data]
dir = "/var/lib/coach"
[upstream]
url = "http://gpu-box:8000/"
kind = "openai"
model = "Qwen/Qwen3-30B-A3B"
[proxy]
port = 9000
[mcp]
port = 9100
[thresholds]
block_rpn = 180
[safety]
locale = "en-GB"
post_crisis_turns = 4
[safety.resources.DE]
emergency = "112"
lines = [{ name = "TelefonSeelsorge", contact = "call 0800 111 0 111" }]
[agents]
dir = "my-agents"
warm_process_limit = 2
retries = 0
[embedded]
parallel = 3
""",
    )
    cfg = load_config(p, env={})
    assert cfg.source == p
    assert cfg.data.dir == Path("/var/lib/coach")
    assert cfg.upstream.url == "http://gpu-box:8000"
    assert cfg.proxy.port == 9000 and cfg.mcp.port == 9100
    assert cfg.thresholds.block_rpn == 180
    assert cfg.safety.post_crisis_turns == 4
    assert "0800 111 0 111" in cfg.safety.resource_table()["DE"].lines[0].contact
    assert cfg.agents.dir == Path("my-agents") and cfg.agents.warm_process_limit == 2
    assert cfg.embedded.parallel == 3
    pool = cfg.proxy_config().models[0]
    assert pool.upstream_model == "Qwen/Qwen3-30B-A3B" and pool.replicas == ["http://gpu-box:8000"]


def test_env_overrides_win_over_the_file(tmp_path: Path) -> None:
    p = write(tmp_path, '[upstream]\nurl = "http://file:1"\n[data]\ndir = "from-file"\n')
    cfg = load_config(p, env={ENV_UPSTREAM_URL: "http://env:2", ENV_DATA_DIR: "from-env"})
    assert cfg.upstream.url == "http://env:2"
    assert cfg.data.dir == Path("from-env")


def test_config_file_from_env_and_default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path, "[agents]\nretries = 2\n")
    assert load_config(env={ENV_CONFIG: str(p)}).agents.retries == 2
    monkeypatch.chdir(tmp_path)
    assert load_config(env={}).agents.retries == 2  # ./coach.toml


def test_explicit_proxy_models_are_kept(tmp_path: Path) -> None:
    p = write(tmp_path, '[[proxy.models]]\nname = "qwen3"\nreplicas = ["http://a:1", "http://b:2"]\n')
    proxy = load_config(p, env={}).proxy_config()
    assert [m.name for m in proxy.models] == ["qwen3"]


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"does not exist\. Fix: pass an existing --config file"):
        load_config(tmp_path / "nope.toml", env={})
    with pytest.raises(ConfigError, match=ENV_CONFIG):
        load_config(env={ENV_CONFIG: str(tmp_path / "nope.toml")})


def test_bad_toml_names_line(tmp_path: Path) -> None:
    p = write(tmp_path, "[agents]\nretries = = 1\n")
    with pytest.raises(ConfigError, match=r"not valid TOML.*line 2"):
        load_config(p, env={})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[agents]\nwarm_process_limit = 100\n",
            "[agents] warm_process_limit: Input should be less than or equal to 64 (got 100). Fix: an integer 0-64",
        ),
        (
            '[upstream]\nkind = "grpc"\n',
            "[upstream] kind: Input should be 'openai' or 'anthropic' (got 'grpc')",
        ),
        ('[upstream]\nurl = "gpu-box:8000"\n', "[upstream] url: must start with http:// or https://"),
        (
            "[agents]\nwarm_proces_limit = 3\n",
            "[agents] warm_proces_limit: unknown key (did you mean 'warm_process_limit'?)",
        ),
        ("[agent]\nretries = 1\n", "agent: unknown key (did you mean 'agents'?)"),
        ('[safety]\ndisabled_rules = ["t9.nope"]\n', "[safety] disabled_rules: unknown rule ids ['t9.nope']"),
        ("[proxy]\nport = -1\n", "[proxy] port: Input should be greater than or equal to 0 (got -1)"),
        # a quoted word is not a TOML boolean (pydantic's lax mode would read "yes" as true)
        ('[agents]\nreuse_processes = "yes"\n', "[agents] reuse_processes: Input should be a valid boolean"),
        ('[agents]\nwatch = "false"\n', "[agents] watch: Input should be a valid boolean"),
    ],
)
def test_invalid_values_name_section_key_and_fix(tmp_path: Path, text: str, expected: str) -> None:
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(p, env={})
    assert any(expected in problem for problem in info.value.problems), info.value.problems
    assert str(p) in str(info.value)
    assert all("Fix:" in problem for problem in info.value.problems)
    assert info.value.code == "invalid_config"


def test_bad_env_override_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[upstream\] url.*COACH_UPSTREAM_URL"):
        load_config(write(tmp_path, ""), env={ENV_UPSTREAM_URL: "not-a-url"})


def test_model_is_constructible_in_code() -> None:
    assert CoachConfig().agents.warm_process_limit == 6


def test_agents_dir_falls_back_to_the_checkout_only_when_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher.config import CHECKOUT_AGENTS_DIR, AgentsConfig

    monkeypatch.chdir(tmp_path)  # no ./agents here
    assert (
        AgentsConfig().resolved_dir() == CHECKOUT_AGENTS_DIR and (CHECKOUT_AGENTS_DIR / "coach.md").is_file()
    )
    assert AgentsConfig(dir=Path("agents")).resolved_dir() == Path(
        "agents"
    )  # set explicitly: reported, not replaced
    (tmp_path / "agents").mkdir()
    assert AgentsConfig().resolved_dir() == Path("agents")  # the current folder's own agents win


def test_find_config_file_is_the_one_lookup_every_command_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher.config import ConfigError, find_config_file

    monkeypatch.chdir(tmp_path)
    assert find_config_file(env={}) is None
    (tmp_path / "coach.toml").write_text("")
    assert find_config_file(env={}) == Path("coach.toml")
    other = tmp_path / "other.toml"
    other.write_text("")
    assert find_config_file(env={"COACH_CONFIG": str(other)}) == other
    assert find_config_file(other, env={"COACH_CONFIG": "/nope.toml"}) == other  # --config wins
    with pytest.raises(ConfigError, match=r"COACH_CONFIG=.*does not exist"):
        find_config_file(env={"COACH_CONFIG": str(tmp_path / "missing.toml")})
    with pytest.raises(ConfigError, match="is a folder"):
        find_config_file(tmp_path, env={})
