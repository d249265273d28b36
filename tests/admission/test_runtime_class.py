"""The RuntimeClass admission plugin on pods being created (plugin/pkg/admission/runtimeclass/admission.go
v1.37.2: setOverhead, setScheduling, validateOverhead), on the kubernetes.io "Pod Overhead" example
(RuntimeClass kata-fc, overhead cpu 250m / memory 120Mi; test-pod's containers 500m+1500m / 100Mi+100Mi:
"the sum of the container requests plus the overhead ... 2250m CPU and 320Mi of memory"), with the
RuntimeClass's scheduling.nodeSelector added. Every message was observed on a real kube-apiserver 1.37.2
(tools/kube/controlplane.py, the same objects).
"""

from __future__ import annotations

import copy
from typing import Any

from kubegpu.admission.admit import admit_pods
from kubegpu.admission.runtime_class import NOT_IN_SNAPSHOT
from kubegpu.model.snapshot import build_snapshot

KATA_FC = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata-fc"},
           "handler": "kata-fc", "overhead": {"podFixed": {"memory": "120Mi", "cpu": "250m"}},
           "scheduling": {"nodeSelector": {"katacontainers.io/kata-runtime": "true"}}}  # fmt: skip
TEST_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod", "namespace": "default"},
            "spec": {"runtimeClassName": "kata-fc", "containers": [
                {"name": "busybox-ctr", "image": "busybox:1.28", "resources": {"limits": {"cpu": "500m", "memory": "100Mi"}}},
                {"name": "nginx-ctr", "image": "nginx", "resources": {"limits": {"cpu": "1500m", "memory": "100Mi"}}}]}}  # fmt: skip


def _admit(pod: dict[str, Any], *objects: dict[str, Any]):  # type: ignore[no-untyped-def]
    snap = build_snapshot([("t", o) for o in objects])
    assert not snap.errors, snap.errors
    [adm] = admit_pods(snap, [("pods.yaml", pod)])
    return adm


def _variant(name: str, **spec: Any) -> dict[str, Any]:
    pod = copy.deepcopy(TEST_POD)
    pod["metadata"]["name"] = name
    pod["spec"].update(spec)
    return {**pod, "spec": {k: v for k, v in pod["spec"].items() if v is not None}}


def test_the_runtime_class_overhead_is_added_and_its_node_selector_merged() -> None:
    adm = _admit(TEST_POD, KATA_FC)
    assert adm.pod is not None
    assert adm.pod.requests == {"cpu": 2250, "memory": 320 * 2**20 * 1000}
    assert adm.pod.node_selector == {"katacontainers.io/kata-runtime": "true"}


def test_an_overhead_without_a_runtime_class_is_forbidden() -> None:
    adm = _admit(_variant("no-rc", runtimeClassName=None, overhead={"cpu": "250m"}), KATA_FC)
    assert adm.pod is None and adm.message == (
        'pods "no-rc" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead'
    )


def test_an_overhead_unlike_the_runtime_classes_is_forbidden() -> None:
    adm = _admit(_variant("mismatch", overhead={"cpu": "1"}), KATA_FC)
    assert adm.message == (
        "pods \"mismatch\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
    )


def test_a_node_selector_conflict_is_forbidden() -> None:
    adm = _admit(_variant("conflict", nodeSelector={"katacontainers.io/kata-runtime": "false"}), KATA_FC)
    assert adm.message == (
        'pods "conflict" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[katacontainers.io/kata-runtime] '
        "= true; pod.spec.nodeSelector[katacontainers.io/kata-runtime] = false"
    )


def test_a_runtime_class_the_snapshot_lacks_is_said_not_assumed() -> None:
    """The API server would refuse the pod if the class does not exist ('pod rejected: RuntimeClass "nvidia"
    not found'); a snapshot without it cannot tell, so kubegpu admits the pod as written and says so."""
    adm = _admit(_variant("missing", runtimeClassName="nvidia"), KATA_FC)
    assert adm.pod is not None and adm.pod.requests["cpu"] == 2000
    assert adm.warning == NOT_IN_SNAPSHOT.format(name="nvidia")


def test_an_empty_runtime_class_name_is_refused_as_the_api_server_answers_it() -> None:
    """``runtimeClassName: ""``: kube-apiserver 1.30.14, 1.33.13 and 1.37.2 (tools/kube) answered HTTP 500
    "resource name may not be empty" (the plugin looks up a class of an empty name); kubegpu admitted it."""
    adm = _admit(_variant("empty-rc", runtimeClassName=""), KATA_FC)
    assert adm.pod is None and adm.message == "resource name may not be empty"
