"""Test-wide configuration: the repository root on sys.path and the shared fixtures of testsupport."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

pytest_plugins = ["testsupport.pytest_fixtures"]
