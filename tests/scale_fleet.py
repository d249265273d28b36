"""benchmarks/bench_scale.py loaded as a module: its generated fleets (plain, hostname-pinned) for the tests
of diagnose at scale (test_diagnose_scale.py, test_diagnose_shapes.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_scale.py"


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("bench_scale", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
