"""Test double for llama-server at the process boundary: serves GET /health and POST /completion on
--host/--port and keeps one child process (``sleep``) so tests can check that stopping kills the whole
process group. ``--version`` prints a version and exits 0, as the real binary does.

Usage: python fake_llama_server.py [llama-server args...] ; env FAKE_PIDFILE=path records "pid child";
env FAKE_TRAP=1 makes the first completion end the process by SIGILL, like a build for another CPU
(``--version`` and /health still work, as they run no kernel); env FAKE_TRAP_VARIANT=path does so only
while that CPU-variant library exists, logging ggml's "loaded CPU backend from" line for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def _arg(name: str, default: str) -> str:
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"status":"ok"}'
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/completion":
            self.send_response(404)
            self.end_headers()
            return
        trap_variant = os.environ.get("FAKE_TRAP_VARIANT")  # traps while this CPU library exists
        if os.environ.get("FAKE_TRAP") == "1" or (trap_variant and os.path.exists(trap_variant)):
            signal.signal(signal.SIGILL, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGILL)
        body = b'{"content":" hi","tokens_predicted":2}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    if "--version" in sys.argv[1:]:
        print("version: 1 (fake)\nbuilt with fake for x86_64")
        return
    trap_variant = os.environ.get("FAKE_TRAP_VARIANT")
    if trap_variant:  # like ggml's backend loader: the best variant present is loaded and logged
        loaded = (
            trap_variant
            if os.path.exists(trap_variant)
            else os.path.join(os.path.dirname(trap_variant), "libggml-cpu-haswell.so")
        )
        print(f"load_backend: loaded CPU backend from {loaded}", flush=True)
    child = subprocess.Popen(["sleep", "300"])

    def _term(
        signum: int, frame: object
    ) -> None:  # like llama-server: exit on SIGTERM (here: with the child)
        child.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, _term)
    pidfile = os.environ.get("FAKE_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as f:
            f.write(f"{os.getpid()} {child.pid}")
    HTTPServer((_arg("--host", "127.0.0.1"), int(_arg("--port", "8080"))), _Health).serve_forever()


if __name__ == "__main__":
    main()
