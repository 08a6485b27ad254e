"""``bench/embedded_prompt.py`` without a model server: the full-schema variant it compares against is the
shipped template with only its tools block changed, and the two render the same messages around it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from launcher.embedded import template_path

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_embedded_prompt", REPO / "bench" / "embedded_prompt.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_embedded_prompt"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_full_variant_differs_from_the_shipped_template_only_in_its_tools_block(bench: ModuleType) -> None:
    shipped = template_path().read_text(encoding="utf-8")
    full = bench.full_schema_template(shipped)
    assert "(tool | tojson)" in full and "(tool | tojson)" not in shipped
    assert "fn['parameters']['properties']" in shipped and "fn['parameters']['properties']" not in full
    head, tail = shipped.split("{%- if tools -%}", 1)[0], shipped.split("{{- '<|im_end|>\\n' -}}", 1)[1]
    assert full.startswith(head) and full.endswith(tail)  # the messages are rendered the same way
    assert full.count("{%- if tools -%}") == 1
