"""Import rules of the design (§8.2) for the exporter: only it loads prometheus_client; it loads no API
client, no CLI library and no NVML until a reading is taken."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from exporter_helpers import REPO


def _modules_after(statement: str) -> set[str]:
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(json.loads(out))


def test_the_exporter_loads_no_api_client_cli_library_or_nvml_at_import() -> None:
    loaded = _modules_after(
        "import kubegpu.exporter.collector, kubegpu.exporter.server, kubegpu.exporter.nvml_counters"
    )
    tops = {name.split(".")[0] for name in loaded}
    assert tops.isdisjoint({"kubernetes", "click", "rich", "pynvml"})
    assert not any(name.startswith(("kubegpu.kube", "kubegpu.cli", "kubegpu.scheduler")) for name in loaded)


def test_only_the_exporter_loads_prometheus_client() -> None:
    loaded = _modules_after(
        "import kubegpu.node.discovery, kubegpu.node.plugin, kubegpu.node.health, kubegpu.devices"
    )
    assert "prometheus_client" not in {name.split(".")[0] for name in loaded}
