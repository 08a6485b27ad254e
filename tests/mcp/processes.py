"""Real processes for the MCP e2e tests: the HTTP server (``coach mcp --http``, run as ``python -m launcher.cli mcp``), mcp clients
over streamable HTTP with scope headers, and a one-shot tool call from a separate process."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_server import Scope, scope_token
from mcp_server.cli import READY_PREFIX

REPO_ROOT = Path(__file__).resolve().parents[2]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child Python process that imports the repository's packages."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COACH_")}
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


@dataclass
class ServerProcess:
    proc: subprocess.Popen[str]
    url: str = ""
    stderr_lines: list[str] = field(default_factory=list)


@contextlib.contextmanager
def http_server(
    data_dir: Path,
    *,
    timeout_s: float = 30.0,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[ServerProcess]:
    """Start ``python -m launcher.cli mcp --http --port 0`` (``coach mcp``) and wait for its ready line (it names the port)."""
    cmd = [
        sys.executable,
        "-m",
        "launcher.cli",
        "mcp",
        "--http",
        "--port",
        "0",
        "--data-dir",
        str(data_dir),
        *args,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env=child_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = ServerProcess(proc)
    ready = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            server.stderr_lines.append(line)
            if line.startswith(READY_PREFIX):
                server.url = line[len(READY_PREFIX) :].strip()
                ready.set()
        ready.set()  # the process ended

    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(timeout_s) or not server.url:
            raise RuntimeError("MCP HTTP server did not start: " + "".join(server.stderr_lines[-20:]))
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def scope_headers(
    user: str, session: str, turn: str | None = None, agent: str | None = None, *, secret: str | None = None
) -> dict[str, str]:
    """The x-coach-* headers of a scope (plus x-coach-scope-token when ``secret`` is given)."""
    headers = {"x-coach-user": user, "x-coach-session": session}
    if turn is not None:
        headers["x-coach-turn"] = turn
    if agent is not None:
        headers["x-coach-agent"] = agent
    if secret is not None:
        headers["x-coach-scope-token"] = scope_token(secret, Scope.create(user, session, turn, agent))
    return headers


@contextlib.asynccontextmanager
async def http_client(url: str, headers: Mapping[str, str] | None) -> AsyncIterator[Client]:
    """An mcp ``Client`` over streamable HTTP that sends ``headers`` on every request."""
    async with (
        create_mcp_http_client(headers=dict(headers or {})) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


# A one-shot tool call from a separate process: prints {"at": unix time after the call, "result": {...}}.
_CALL_SCRIPT = """
import json, sys, time, anyio
from tests.mcp.processes import http_client
url, headers, tool, args = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
async def main():
    async with http_client(url, headers) as client:
        result = await client.call_tool(tool, args)
    print(json.dumps({"at": time.time(), "is_error": bool(result.is_error),
                      "result": result.structured_content}))
anyio.run(main)
"""


def call_in_subprocess(
    url: str, headers: Mapping[str, str], tool: str, args: Mapping[str, Any]
) -> dict[str, Any]:
    """Call one tool from a fresh Python process over HTTP; returns its printed JSON."""
    out = subprocess.run(
        [sys.executable, "-c", _CALL_SCRIPT, url, json.dumps(dict(headers)), tool, json.dumps(dict(args))],
        cwd=REPO_ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


_READ_SCRIPT = """
import json, sys
from blackboard import SQLiteStore
store = SQLiteStore(sys.argv[1])
print(json.dumps([{"version": e.version, "author": e.author, "value": e.value} for e in store.history(sys.argv[2])]))
store.close()
"""


def history_in_subprocess(sqlite_path: Path, key: str) -> list[dict[str, Any]]:
    """Every stored version of ``key``, read from the SQLite file by another process."""
    out = subprocess.run(
        [sys.executable, "-c", _READ_SCRIPT, str(sqlite_path), key],
        cwd=REPO_ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(out.stdout))
