"""A snapshot of built objects (no load errors), the fixed clock and the GPU taint the node operation
planning tests share."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubegpu.model.objects import Taint
from kubegpu.model.snapshot import build_snapshot

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")


def snap(*objs: dict[str, Any]) -> Any:
    s = build_snapshot([("t", o) for o in objs])
    assert not s.errors
    return s
