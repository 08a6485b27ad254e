"""``python -m launcher.cli``: the ``coach`` command (for a checkout without the console script)."""

from launcher.cli import app

app(prog_name="coach")
