"""Test double for llama-server at the process boundary: serves GET /health on --host/--port and keeps
one child process (``sleep``) so tests can check that stopping kills the whole process group.

Usage: python fake_llama_server.py [llama-server args...] ; env FAKE_PIDFILE=path records "pid child".
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

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    child = subprocess.Popen(["sleep", "300"])

    def _term(signum: int, frame: object) -> None:  # like llama-server: exit on SIGTERM (here: with the child)
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
