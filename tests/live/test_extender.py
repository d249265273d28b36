"""``kubegpu extender`` as a real process, called over HTTP with the JSON kube-scheduler sends.

Pins ``k8s.io/kube-scheduler/extender/v1``: its structs have no json tags, so the keys are the Go field
names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``,
``Host``, ``Score``, ``PodName``/``PodNamespace``/``PodUID``/``Node``, ``NodeNameToVictims``,
``NodeNameToMetaVictims``, ``Pods``/``UID``/``NumPDBViolations``), nil pointers travel as ``null``, and
prioritize scores are in ``0..MaxExtenderPriority`` (10).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kmock._internal import parsing

from tests.live.apiserver import RunningApiServer, parse_path_with_namespace_list, serve_in_thread, wait_until
from tests.live.conftest import extender_process, free_port, gpu_node, gpu_pod, write_kubeconfig

TAINT = "node(s) had untolerated taint(s)"


@pytest.fixture(scope="module")
def api() -> Iterator[RunningApiServer]:
    """One API server for the module: the calls below do not depend on each other's writes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parsing, "parse_path", parse_path_with_namespace_list)
        yield from serve_in_thread()


@pytest.fixture(scope="module")
def extender(api: RunningApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp_path = tmp_path_factory.mktemp("extender")
    kubeconfig = write_kubeconfig(api, tmp_path)
    api.emulator.create("nodes", gpu_node("gpu-1"))
    api.emulator.create("nodes", gpu_node("gpu-2", taint=True))
    api.emulator.create("nodes", gpu_node("gpu-3"))
    api.emulator.create("pods", gpu_pod("resident", 6, node="gpu-1"))
    port = free_port()
    component = extender_process(kubeconfig, port, tmp_path / "extender.log")

    def synced() -> bool:
        assert component.proc.poll() is None, component.output()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, ConnectionError):
            return False

    wait_until(synced, what="extender informers synced")
    yield port
    component.stop()


def call(port: int, verb: str, args: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/kubegpu/{verb}", data=json.dumps(args).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def incoming(gpus: int = 4) -> dict[str, Any]:
    pod = gpu_pod("incoming", gpus)
    pod["metadata"]["uid"] = "3d2c1b0a-0000-4000-8000-000000000001"
    return pod


def test_filter_with_node_names_splits_resolvable_and_unresolvable_failures(extender: int) -> None:
    """gpu-1 has 2 of 8 GPUs free (Unschedulable: preemption may help), gpu-2's taint is not tolerated
    (UnschedulableAndUnresolvable), gpu-3 fits; with nodeCacheCapable the answer is by name."""
    result = call(
        extender, "filter", {"Pod": incoming(), "Nodes": None, "NodeNames": ["gpu-1", "gpu-2", "gpu-3"]}
    )
    assert result == {
        "Nodes": None,
        "NodeNames": ["gpu-3"],
        "FailedNodes": {"gpu-1": "Insufficient nvidia.com/gpu"},
        "FailedAndUnresolvableNodes": {"gpu-2": TAINT},
        "Error": "",
    }


def test_filter_with_a_node_list_echoes_the_passing_node_objects(extender: int) -> None:
    node_list = {"metadata": {}, "items": [gpu_node("gpu-2", taint=True), gpu_node("gpu-3")]}
    result = call(extender, "filter", {"Pod": incoming(), "Nodes": node_list, "NodeNames": None})
    assert result["NodeNames"] is None
    assert result["Nodes"] == {"metadata": {}, "items": [gpu_node("gpu-3")]}
    assert result["FailedAndUnresolvableNodes"] == {"gpu-2": TAINT}


def test_prioritize_scales_the_core_score_to_max_extender_priority(extender: int) -> None:
    """Default weights (1.37) TaintToleration 3 + NodeAffinity 2 + NodeResourcesFit 1 + PodTopologySpread 2 +
    InterPodAffinity 2 + DynamicResources 2 + BalancedAllocation 1 + ImageLocality 1 = 14, so the top is 1400
    (spread, pod affinity and DRA skip this pod; ImageLocality scores 0: the nodes list no images). gpu-3
    (only the incoming pod: cpu 1/63.5, memory 1Gi/500Gi): 3×100 + 2×0 + LeastAllocated (98 + 99) / 2 = 98
    + Balanced int((1 − |0.01575 − 0.002| / 2) × 100) = 99 → 497; gpu-1 (with the resident pod): 300 + 0 +
    (96 + 99) / 2 = 97 + 98 → 495. Both × 10 // 1400 = 3."""
    scores = call(
        extender, "prioritize", {"Pod": incoming(1), "Nodes": None, "NodeNames": ["gpu-1", "gpu-3"]}
    )
    assert scores == [{"Host": "gpu-1", "Score": 3}, {"Host": "gpu-3", "Score": 3}]


def test_bind_posts_the_binding_and_reports_the_api_server_refusal(
    extender: int, api: RunningApiServer
) -> None:
    pod = api.emulator.create("pods", gpu_pod("to-bind", 1, scheduler="default-scheduler"))
    args = {"PodName": "to-bind", "PodNamespace": "ml", "PodUID": pod["metadata"]["uid"], "Node": "gpu-3"}
    assert call(extender, "bind", args) == {"Error": ""}
    assert api.emulator.get("pods", "ml", "to-bind")["spec"]["nodeName"] == "gpu-3"  # type: ignore[index]
    assert call(extender, "bind", args) == {
        "Error": 'Operation cannot be fulfilled on pods/binding "to-bind": pod to-bind is already assigned to node "gpu-3"'
    }


def test_preempt_returns_the_candidates_as_meta_victims(extender: int) -> None:
    victim = gpu_pod("resident", 6, node="gpu-1")
    victim["metadata"]["uid"] = "victim-uid"
    args = {"Pod": incoming(), "NodeNameToVictims": {"gpu-1": {"Pods": [victim], "NumPDBViolations": 0}},
            "NodeNameToMetaVictims": None}  # fmt: skip
    assert call(extender, "preempt", args) == {
        "NodeNameToMetaVictims": {"gpu-1": {"Pods": [{"UID": "victim-uid"}], "NumPDBViolations": 0}}
    }
    meta = {"gpu-1": {"Pods": [{"UID": "victim-uid"}], "NumPDBViolations": 1}}
    assert call(
        extender, "preempt", {"Pod": incoming(), "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
    ) == {"NodeNameToMetaVictims": meta}


def test_a_malformed_pod_is_an_error_in_the_result_not_an_http_failure(extender: int) -> None:
    result = call(
        extender,
        "filter",
        {"Pod": {"metadata": {"name": "x", "namespace": "ml"}, "spec": {}}, "NodeNames": ["gpu-3"]},
    )
    assert result == {
        "Error": "kubegpu extender: ExtenderArgs.Pod: Pod ml/x: spec.containers: Required value"
    }
