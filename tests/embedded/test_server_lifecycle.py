"""EmbeddedModelServer process handling against a fake llama-server (a real process serving /health):
port selection and conflicts, startup failures and timeouts, and that stopping leaves no process,
also on Ctrl-C inside the block and when the parent is killed. No model needed (fast)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from launcher.embedded import EmbeddedConfig, EmbeddedError, EmbeddedModelServer
from tests.embedded._support import gone

pytestmark = pytest.mark.e2e  # starts real (fake llama-server) processes

FAKE = Path(__file__).with_name("fake_llama_server.py")


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "llama-server"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_config(tmp_path: Path) -> EmbeddedConfig:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    binary = _script(tmp_path, f'exec "{sys.executable}" "{FAKE}" "$@"')
    return EmbeddedConfig(binary=binary, model=model, startup_timeout_s=20)


def _pids(pidfile: Path) -> tuple[int, int]:
    server, child = pidfile.read_text().split()
    return int(server), int(child)


def test_start_free_port_then_stop_kills_the_group(
    fake_config: EmbeddedConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("FAKE_PIDFILE", str(pidfile))
    notes: list[str] = []
    with EmbeddedModelServer(fake_config, progress=notes.append) as server:
        assert server.running and server.base_url == f"http://127.0.0.1:{server.port}"
        server_pid, child_pid = _pids(pidfile)
        assert server_pid == server.pid
    assert not server.running
    assert gone(server_pid) and gone(child_pid)
    assert any("ready at" in n for n in notes) and any("stopped" in n for n in notes)
    server.stop()  # idempotent


def test_ctrl_c_inside_the_block_stops_the_server(
    fake_config: EmbeddedConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("FAKE_PIDFILE", str(pidfile))
    with pytest.raises(KeyboardInterrupt), EmbeddedModelServer(fake_config, progress=None):
        raise KeyboardInterrupt
    assert all(gone(p) for p in _pids(pidfile))


def test_given_port_in_use_is_a_clear_error(fake_config: EmbeddedConfig) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = fake_config.model_copy(update={"port": port})
        with pytest.raises(EmbeddedError, match=f"port {port} on 127.0.0.1 is already in use") as e:
            EmbeddedModelServer(config, progress=None).start()
    assert e.value.code == "port_in_use" and not e.value.retryable


def test_given_free_port_is_used(fake_config: EmbeddedConfig) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with EmbeddedModelServer(fake_config.model_copy(update={"port": port}), progress=None) as server:
        assert server.port == port


def test_server_exiting_at_startup_reports_its_log(fake_config: EmbeddedConfig, tmp_path: Path) -> None:
    binary = _script(tmp_path, 'echo "error: unknown argument: $1" >&2; exit 3')
    server = EmbeddedModelServer(fake_config.model_copy(update={"binary": binary}), progress=None)
    with pytest.raises(EmbeddedError, match="exited with status 3") as e:
        server.start()
    assert e.value.code == "start_failed" and "unknown argument: --model" in str(e.value)
    assert not server.running


def test_server_that_traps_at_its_first_completion_never_counts_as_started(
    fake_config: EmbeddedConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /health answers (it runs no kernel); the first generated token kills the process by SIGILL, as a
    # build with instructions this CPU cannot run does. start() must fail and name the signal and the fix.
    monkeypatch.setenv("FAKE_TRAP", "1")
    server = EmbeddedModelServer(fake_config, progress=None)
    with pytest.raises(EmbeddedError, match="killed by SIGILL") as e:
        server.start()
    assert e.value.code == "start_failed"
    assert "instructions this CPU cannot run" in str(e.value) and "--portable" in str(e.value)
    assert not server.running


@pytest.mark.anyio
async def test_async_start_also_refuses_a_server_that_traps(
    fake_config: EmbeddedConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_TRAP", "1")
    server = EmbeddedModelServer(fake_config, progress=None)
    with pytest.raises(EmbeddedError, match="killed by SIGILL"):
        await server.astart()
    assert not server.running


def test_startup_timeout_stops_the_process(fake_config: EmbeddedConfig, tmp_path: Path) -> None:
    binary = _script(tmp_path, "exec sleep 300")
    config = fake_config.model_copy(update={"binary": binary, "startup_timeout_s": 0.5})
    server = EmbeddedModelServer(config, progress=None)
    with pytest.raises(EmbeddedError, match="did not become healthy") as e:
        server.start()
    assert e.value.code == "start_timeout" and e.value.retryable
    assert server.pid is None


def test_server_dies_with_a_killed_parent(fake_config: EmbeddedConfig, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    parent_code = textwrap.dedent(
        f"""
        import sys, threading
        from pathlib import Path
        from launcher.embedded import EmbeddedConfig, EmbeddedModelServer
        config = EmbeddedConfig.model_validate_json({fake_config.model_dump_json()!r})
        EmbeddedModelServer(config, progress=None).start()
        print("ready", flush=True)
        threading.Event().wait()
        """
    )
    env = {**os.environ, "FAKE_PIDFILE": str(pidfile)}
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        server_pid, child_pid = _pids(pidfile)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert gone(server_pid) and gone(child_pid)
    finally:
        parent.kill()
        parent.wait(timeout=10)


@pytest.mark.anyio
async def test_async_start_and_stop(fake_config: EmbeddedConfig, tmp_path: Path) -> None:
    async with EmbeddedModelServer(fake_config, progress=None) as server:
        pid = server.pid
        assert pid is not None and server.running
    assert gone(pid)
