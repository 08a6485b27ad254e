"""A tiny stdio MCP server for the e2e test: one tool, ``record_note``, appending to a file.

Run: ``python note_mcp_server.py OUT_FILE``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("notes.txt")


@server.tool()
def record_note(note: str) -> str:
    """Record a short note. Returns a confirmation with the note's length."""
    with OUT.open("a", encoding="utf-8") as fh:
        fh.write(note + "\n")
    return f"recorded {len(note)} chars"


if __name__ == "__main__":
    server.run()
