"""benchmarks/bench_scale.py loaded as a module: its generated fleets (plain, hostname-pinned) for the tests
of diagnose at scale (test_diagnose_scale.py, test_diagnose_shapes.py, test_lazy_evidence.py)."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_scale.py"


@functools.cache
def script(path: Path) -> Any:
    """A benchmark script loaded as a module, once per test session (its generators are pure functions)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generator() -> Any:
    return script(BENCH)
