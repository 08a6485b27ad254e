"""``coach serve`` that cannot listen: the message names the address and the fix for the actual cause.
Before the fix every bind failure said "stop whatever uses that port or pass another --proxy-port",
also for a ``[proxy] host`` that is not an address of this machine ("Cannot assign requested address")
or does not resolve, where no port change helps. Real sockets, real binds; exit code 1 (README)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from launcher.cli import app


def _serve(tmp_path: Path, extra: str, *args: str) -> Any:
    cfg = tmp_path / "coach.toml"
    cfg.write_text(f'[data]\ndir = "{tmp_path / "data"}"\n[agents]\nwatch = false\n{extra}')
    return CliRunner().invoke(app, ["serve", "--config", str(cfg), *args], env={"COLUMNS": "400"})


def test_port_in_use_says_which_and_how_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = _serve(tmp_path, "", "--proxy-port", "0", "--mcp-port", str(port))
    assert res.exit_code == 1, (res.output, res.exception)
    assert f"cannot listen on 127.0.0.1:{port} for the mcp server: Address already in use" in res.output
    assert "stop whatever uses that port" in res.output and "--mcp-port" in res.output and "[mcp] port" in res.output


def test_host_that_is_not_this_machine_says_to_fix_the_host_not_the_port(tmp_path: Path) -> None:
    res = _serve(tmp_path, '[proxy]\nhost = "192.0.2.1"\n', "--proxy-port", "0", "--mcp-port", "0")  # TEST-NET-1
    assert res.exit_code == 1, (res.output, res.exception)
    assert "cannot listen on 192.0.2.1:0 for the proxy" in res.output
    assert "set [proxy] host to an address of this machine" in res.output
    assert "stop whatever uses that port" not in res.output
