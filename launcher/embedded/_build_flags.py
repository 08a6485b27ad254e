"""Which CPU flags the embedded llama.cpp build uses, and the cache key of a build made with them.

Two builds (measured side by side in the README, "The demo and the embedded model"):

- **dispatch** (the default): ``-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON``.
  ggml builds its CPU backend once per x86-64 feature level (x64, SSE4.2, AVX, AVX2, AVX-512 flavours,
  AVX-VNNI, AMX) as ``libggml-cpu-<variant>.so`` and loads the best one the CPU reports at start-up, so
  one wheel runs on every x86-64 CPU and still uses its fastest kernels. On aarch64 ggml's variant list
  needs compiler support for SVE/SME that not every toolchain has, so there the default is the
  portable ARMv8.0 baseline (``-DGGML_NATIVE=OFF``).
- **portable** (the fallback, when the dispatch build cannot run a kernel on this CPU): one CPU backend
  compiled for the SIMD extensions this CPU reports *and* every x86-64 CPU since 2013 has (AVX, AVX2,
  FMA, F16C, BMI2 when all present, else SSE4.2 only); never AVX-512 or AMX, whose presence in cpuid
  does not mean the OS or hypervisor grants them (an Intel VM advertising AMX without granting tile
  state traps with SIGILL at ggml's first AMX matmul).

``-march=native`` (ggml's default ``GGML_NATIVE=ON``) is never used: a wheel built that way carries
the build machine's instruction set to whichever machine installs it from a cache.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "DISPATCH_FLAGS",
    "OWN_FLAG_PREFIXES",
    "build_key",
    "cpu_flags",
    "dispatch_flags",
    "portable_flags",
    "user_sets_cpu_flags",
]

#: The runtime-dispatch build for x86-64 (see the module docstring).
DISPATCH_FLAGS: tuple[str, ...] = ("-DGGML_NATIVE=OFF", "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON")
_ARM_FLAGS: tuple[str, ...] = ("-DGGML_NATIVE=OFF",)
#: CMake options that decide the CPU code; when CMAKE_ARGS already sets one, the user's choice is kept.
OWN_FLAG_PREFIXES: tuple[str, ...] = (
    "-DGGML_NATIVE",
    "-DGGML_BACKEND_DL",
    "-DGGML_CPU_ALL_VARIANTS",
    "-DGGML_AVX",
    "-DGGML_AVX2",
    "-DGGML_AVX512",
    "-DGGML_FMA",
    "-DGGML_F16C",
    "-DGGML_BMI2",
    "-DGGML_SSE42",
    "-DGGML_AMX",
    "-DGGML_CPU_ARM_ARCH",
)
# Extensions of the portable x86-64 build, all or none (Intel Haswell 2013, AMD Excavator 2015 and later).
_HASWELL = ("avx", "avx2", "fma", "f16c", "bmi2")


def _is_x86(machine: str) -> bool:
    return machine.lower() in ("x86_64", "amd64", "i686", "i386")


def dispatch_flags(machine: str | None = None) -> tuple[str, ...]:
    """The default CPU flags for ``machine`` (``platform.machine()`` when None)."""
    return DISPATCH_FLAGS if _is_x86(machine or platform.machine()) else _ARM_FLAGS


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The feature flags the first CPU lists in ``cpuinfo`` (``flags`` on x86, ``Features`` on Arm);
    empty when the file is missing or has neither line."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def portable_flags(flags: Iterable[str], machine: str | None = None) -> tuple[str, ...]:
    """The fallback build's CPU flags for a CPU listing ``flags`` (see the module docstring)."""
    if not _is_x86(machine or platform.machine()):
        return _ARM_FLAGS
    have = set(flags)
    base = [
        "-DGGML_NATIVE=OFF",
        "-DGGML_BACKEND_DL=OFF",
        "-DGGML_AVX512=OFF",
        "-DGGML_AMX_TILE=OFF",
        "-DGGML_AMX_INT8=OFF",
        "-DGGML_AMX_BF16=OFF",
        "-DGGML_AVX_VNNI=OFF",
    ]
    if all(f in have for f in _HASWELL):
        return (
            *base,
            "-DGGML_SSE42=ON",
            "-DGGML_AVX=ON",
            "-DGGML_AVX2=ON",
            "-DGGML_FMA=ON",
            "-DGGML_F16C=ON",
            "-DGGML_BMI2=ON",
        )
    return (
        *base,
        "-DGGML_SSE42=ON",
        "-DGGML_AVX=OFF",
        "-DGGML_AVX2=OFF",
        "-DGGML_FMA=OFF",
        "-DGGML_F16C=OFF",
    )


def user_sets_cpu_flags(cmake_args: str) -> bool:
    """Whether ``CMAKE_ARGS`` already chooses the CPU code (then it is used as given)."""
    return any(arg.startswith(OWN_FLAG_PREFIXES) for arg in shlex.split(cmake_args))


def _compiler_version() -> str:
    for cc in ("c++", "g++", "clang++"):
        try:
            out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout:
            return out.stdout.splitlines()[0].strip()
    return "unknown"


def build_key(spec: str, cmake_args: str, *, compiler: str | None = None, machine: str | None = None) -> str:
    """A 16-hex-digit key over what a wheel built from ``spec`` depends on: the pinned spec, the whole
    ``CMAKE_ARGS`` (CPU flags included), the machine architecture, the C library and the compiler.
    Wheels are cached under this key, never under pip's own cache (which keys an sdist by its URL
    alone and would hand a natively built wheel to any CPU)."""
    parts = {
        "spec": spec,
        "cmake_args": shlex.split(cmake_args),
        "machine": machine or platform.machine(),
        "libc": "-".join(platform.libc_ver()),
        "compiler": compiler if compiler is not None else _compiler_version(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
