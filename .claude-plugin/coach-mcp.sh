#!/bin/sh
# Start the coachboard MCP server for Claude Code (stdio): `coach mcp` in session mode.
# Used by .mcp.json both when the repository is opened as a project and when it is loaded as a plugin.
# Finds coach in this order: the repository's .venv (made by `make install`), then `coach` on PATH.
root="$(cd "$(dirname "$0")/.." && pwd)"
export COACH_MCP_SESSION=1
export COACH_REPO_ROOT="$root"
if [ -x "$root/.venv/bin/coach" ]; then
    exec "$root/.venv/bin/coach" mcp "$@"
fi
if [ -x "$root/.venv/bin/python" ]; then
    PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" exec "$root/.venv/bin/python" -m launcher.cli mcp "$@"
fi
if command -v coach >/dev/null 2>&1; then
    exec coach mcp "$@"
fi
echo "coachboard: no 'coach' executable found. Run 'make install' in $root (creates .venv) or 'pip install $root'." >&2
exit 127
