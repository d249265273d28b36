"""``kubegpu scheduler`` spreads pods without their own constraints as kube-scheduler does: PodTopologySpread's
system default constraints (``podtopologyspread/plugin.go`` systemDefaultConstraints: hostname maxSkew 3, zone
maxSkew 5, ScheduleAnyway) with the selector ``helper/spread.go`` DefaultSelector deduces from the Services it
watches. The same decision on kube-scheduler 1.30.14–1.37.2: ``tests/realkube`` ``default-spread-service`` (its
goldens).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.live.apiserver import RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod


@pytest.mark.parametrize(("selector", "expected"), [({"app": "web"}, "gpu-2"), ({"app": "db"}, "gpu-1")])
def test_a_service_selecting_the_pod_spreads_it(
    api: RunningApiServer, start_scheduler: Callable[..., Component], selector: dict[str, str], expected: str
) -> None:
    """Two app=web pods (1 CPU each) run on gpu-1, a non-matching 8-CPU pod on gpu-2 (63.5 CPUs each), so
    LeastAllocated prefers gpu-1 by a few points. With a Service selecting app=web the default hostname
    constraint scores (hostname size 2 → ln 4): gpu-1 2·1.386 + 2 = 4.77 → 5, gpu-2 2; normalized 40 and 100,
    ×2 → 80 vs 200, which outweighs it: the pod binds to gpu-2. A Service selecting app=db leaves no default
    selector (no spread): gpu-1."""
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("nodes", gpu_node("gpu-2"))
    service = {
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"selector": selector, "ports": [{"port": 80}]},
    }
    api.emulator.create("services", service)
    for i in range(2):
        api.emulator.create("pods", gpu_pod(f"web-{i}", 0, labels={"app": "web"}, node="gpu-1"))
    big = gpu_pod("batch", 0, labels={"app": "batch"}, node="gpu-2")
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8"
    api.emulator.create("pods", big)
    api.emulator.create("pods", gpu_pod("p", 1, labels={"app": "web"}))
    start_scheduler()
    node = wait_until(lambda: (api.emulator.get("pods", "ml", "p") or {}).get("spec", {}).get("nodeName"),
                      what="p bound")  # fmt: skip
    assert node == expected
