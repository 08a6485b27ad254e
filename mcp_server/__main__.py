"""``python -m mcp_server``: same options as ``coach mcp``."""

from __future__ import annotations

import typer

from mcp_server.cli import mcp_cmd


def main() -> None:
    typer.run(mcp_cmd)


if __name__ == "__main__":
    main()
