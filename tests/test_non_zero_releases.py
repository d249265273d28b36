"""A placed pod's non-zero cpu/memory (what LeastAllocated and the other scorers read on the node side),
per release: 1.30-1.31's ``calculateResource`` (pkg/scheduler/framework/types.go v1.30.14, v1.31.13) sums
only the app containers and takes sidecars in the init-container max; 1.32+ (types.go v1.32.13) use
``PodRequests`` with ``NonMissingContainerRequests``, sidecars summed.

Fixture tests/fixtures/accounting/nonzero-sidecar.yaml: myapp (1 CPU) with the kubernetes.io Sidecar
Containers example's logshipper (here 1.5 CPU) on n1, 2.2 CPU on n2, a 0.5 CPU pod to place. Real
kube-scheduler 1.30.14 bound it to n1, 1.33.13 and 1.37.2 to n2 (tools/kube/build.py, controlplane.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.explain.engine import Engine
from kubegpu.model.parse import parse_pod
from kubegpu.scheduler.assembly import SchedulerSpec
from kubegpu.sources import load_files

FIXTURE = Path(__file__).parent / "fixtures" / "accounting" / "nonzero-sidecar.yaml"
Mi = 2**20 * 1000


def test_the_1_30_rule_leaves_sidecars_out_of_the_sum() -> None:
    snap = load_files(FIXTURE)
    myapp = next(p for p in snap.pods if p.name == "myapp")
    # app 1 CPU (memory missing: 200Mi); the sidecar alone in the init max: 1.5 CPU, 200Mi
    assert myapp.non_zero_before_1_32 == (1500, 200 * Mi)
    assert (myapp.non_zero_requests["cpu"], myapp.non_zero_requests["memory"]) == (2500, 400 * Mi)


def test_a_plain_init_container_counts_with_the_sidecars_before_it() -> None:
    """types.go v1.30.14: the ContainerFn gets, for a plain init container, it plus the sidecars so far."""
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {
        "initContainers": [
            {"name": "proxy", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "migrate", "image": "x", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
        "containers": [{"name": "app", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}  # fmt: skip
    # init max: max(proxy 1 CPU / 200Mi, migrate 3 + proxy 1 = 4 CPU / 1Gi) vs app 1 CPU / 200Mi
    assert parse_pod(raw).non_zero_before_1_32 == (4000, 1024 * Mi)


@pytest.mark.parametrize(
    ("version", "node"), [("1.30", "n1"), ("1.31", "n1"), ("1.32", "n2"), ("1.37", "n2")]
)
def test_where_the_real_scheduler_puts_the_pod(version: str, node: str) -> None:
    snap = load_files(FIXTURE)
    engine = Engine(snap, SchedulerSpec("default", kube_version=version))
    incoming = next(p for p in snap.pods if p.name == "incoming")
    assert engine.scheduler.schedule_one(incoming).node == node
