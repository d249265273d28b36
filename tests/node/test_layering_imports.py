"""Import rules of the design (§8.2): ``devices`` stays pure; ``node`` loads pynvml only when NVML is read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[2] / "src"


def _modules_after(statement: str) -> set[str]:
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {name.split(".")[0] for name in json.loads(out)}


def test_the_device_model_imports_no_edge_library() -> None:
    loaded = _modules_after("import kubegpu.devices")
    assert loaded.isdisjoint({"grpc", "pynvml", "kubernetes", "click", "rich", "prometheus_client"})


def test_the_node_agent_imports_without_pynvml_so_ci_needs_no_driver() -> None:
    loaded = _modules_after("import kubegpu.node.discovery, kubegpu.node.plugin, kubegpu.node.health")
    assert "pynvml" not in loaded
    assert "grpc" in loaded  # the plugin does need grpc; only NVML is deferred


def test_node_cli_reads_recordings_without_grpc() -> None:
    assert "grpc" not in _modules_after("import kubegpu.cli.node_cmd")
