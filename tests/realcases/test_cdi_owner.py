"""Who reports a GPU pod whose CDI device the runtime cannot resolve (NVIDIA/nvidia-container-toolkit#1239), when
something else is wrong on its node too or the pod is a DaemonSet's: one finding for one pod, never the pod
counted twice as two causes.

* cdi-unresolvable-node-notready.yaml: #1239's pod on a node that then stopped reporting (Ready Unknown, "Kubelet
  stopped posting node status.", the unreachable taints; NVIDIA/gpu-operator#716, kubernetes/kubernetes#53207).
  The pod's status is kubelet's last report, the runtime's refusal included; the node is what to fix first (no
  pod starts there until kubelet reports again), and the CDI refusal is evidence of that same finding.
* cdi-unresolvable-daemonset-pod.yaml: the refusal on a monitoring agent's DaemonSet pod (no part of the GPU
  stack) on a node whose nvidia.com/gpu reads 0 (rwlove/home-ops#12525). A DaemonSet pod tolerates the
  unreachable and not-ready NoExecute taints with no tolerationSeconds (the DaemonSet controller adds them:
  Kubernetes' DaemonSet docs, "Taints and tolerations"; OpenShift's remote-worker docs quote them), so it is never
  evicted from a node that stops reporting (kubernetes/kubernetes#44458).
* either pod on a node whose nvidia.com/gpu reads 0 (rwlove/home-ops#12525): the refusal's finding is the pod's one
  account and says what its node no longer advertises; no second finding says the pod holds its GPU and runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.realcases.cases import case
from tests.realcases.test_bound_pods import DRA_SLICE, edited_findings

# the runtime's refusal, verbatim from #1239
REFUSAL = (
    "failed to inject CDI devices: unresolvable CDI devices "
    "management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead"
)
STOPPED = "Kubelet stopped posting node status"  # the node lifecycle controller's message
MONITOR = "pod/monitoring/gpu-node-monitor-7xq2d"
# NVIDIA's DRA driver publishing the node's T4 (test_bound_pods.DRA_SLICE) makes another node findings_operands
# does not read; the node as it reads once kubelet stops posting (the fixture's own lines, for the edits below)
NOT_READY = (
    '    conditions: [{type: Ready, status: "True"}]\n    nodeInfo: {kubeletVersion: v1.33.3+rke2r1, '
    'containerRuntimeVersion: "containerd://2.0.5-k3s2"}',
    "    conditions: [{type: Ready, status: Unknown, reason: NodeStatusUnknown, message: Kubelet stopped posting "
    'node status.}]\n    nodeInfo: {kubeletVersion: v1.33.3+rke2r1, containerRuntimeVersion: "containerd://2.0.5-k3s2"}',
)
LIT = tuple(
    (f'{k}: {{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "0"}}',
     f'{k}: {{cpu: "16", memory: 64Gi, pods: "110", nvidia.com/gpu: "1"}}')
    for k in ("capacity", "allocatable")
)  # fmt: skip
RUNTIME_CLASS = "- apiVersion: node.k8s.io/v1\n  kind: RuntimeClass"


def naming(findings: list[dict[str, Any]], pod: str) -> list[dict[str, Any]]:
    return [f for f in findings if pod in f["objects"]]


def test_a_pod_on_a_node_that_stopped_reporting_is_one_finding_that_leads_with_the_node() -> None:
    """#1239's pod on a node kubelet no longer reports for: one finding names it, at the node's layer, the
    NotReady condition first and the runtime's last refusal after it (both facts, one cause to act on first);
    before, findings_operands reported the CDI refusal as a second finding about the same pod."""
    found = naming(case("cdi-unresolvable-node-notready")["findings"], "pod/default/cuda-test")
    assert len(found) == 1, [f["title"] for f in found]
    f = found[0]
    assert f["layer"] == "node" and f["severity"] == "critical"
    assert "node/rke2-gpu" in f["objects"]
    assert STOPPED in f["detail"] and REFUSAL in f["detail"]
    assert f["detail"].index(STOPPED) < f["detail"].index(REFUSAL)


def test_a_monitoring_daemonset_pod_refused_its_cdi_device_is_reported_once(tmp_path: Path) -> None:
    """A GPU pod of a DaemonSet that is no part of the GPU stack, refused its CDI device, on a node that
    findings_operands does not read (nvidia.com/gpu 0; a DRA driver's node; a node that stopped reporting): one
    finding names the refusal. Before, findings_bound skipped every DaemonSet pod and findings_operands read
    none of these nodes: nothing said it. On a node advertising the GPU it stays findings_operands' one."""
    for edits in ([], [(RUNTIME_CLASS, DRA_SLICE + RUNTIME_CLASS)], [NOT_READY], list(LIT)):
        cdi = [f for f in naming(edited_findings(tmp_path, "cdi-unresolvable-daemonset-pod", *edits), MONITOR)
               if REFUSAL in f["detail"]]  # fmt: skip
        assert len(cdi) == 1, (edits, [f["title"] for f in cdi])
        assert "node/rke2-gpu" in cdi[0]["objects"]


def test_a_daemonset_pod_on_a_node_that_stopped_reporting_is_not_said_to_be_evicted(tmp_path: Path) -> None:
    """The DaemonSet controller's unreachable/not-ready tolerations have no tolerationSeconds: its pod stays
    bound to the node that stopped reporting (kubernetes/kubernetes#44458), so the finding may not promise
    the 300 s eviction the DefaultTolerationSeconds plugin gives other pods."""
    found = naming(edited_findings(tmp_path, "cdi-unresolvable-daemonset-pod", NOT_READY), MONITOR)
    stranded = [f for f in found if STOPPED in f["detail"]]
    assert len(stranded) == 1, [f["title"] for f in found]
    # names cannot hold a space: "300 s" is only ever the toleration's seconds
    assert "300 s" not in stranded[0]["detail"] and "evicts the pod" not in stranded[0]["detail"]
    assert "not evicted" in stranded[0]["detail"]


def test_a_refused_pod_on_a_node_advertising_no_gpu_is_one_finding_never_said_to_run(tmp_path: Path) -> None:
    """rwlove/home-ops#12525: the node's nvidia.com/gpu read 0 while its GPU containers failed with the unresolvable
    CDI refusal. #1239's pod with its node's nvidia.com/gpu at 0 as there, and the monitoring DaemonSet's pod of
    cdi-unresolvable-daemonset-pod.yaml as it is: each pod's container waits in CrashLoopBackOff, never started
    (StartError), so one finding names the pod (the refusal) and none says it runs. Before, a second finding about
    the same pod said it "keeps running on the devices it was given". What the node no longer advertises is said
    in that one finding (a pod asking for it is not placed there); the node has its own finding besides."""
    zero = [(new, old) for old, new in LIT]  # the node's capacity and allocatable at nvidia.com/gpu 0
    for name, pod, edits in (
        ("cdi-device-unresolvable", "pod/default/cuda-test", zero),
        ("cdi-unresolvable-daemonset-pod", MONITOR, []),
    ):
        findings = edited_findings(tmp_path, name, *edits)
        found = naming(findings, pod)
        assert len(found) == 1, (name, [f["title"] for f in found])
        detail = found[0]["detail"]
        assert REFUSAL in detail and "keeps running" not in detail
        assert "rke2-gpu advertises no nvidia.com/gpu" in detail, detail
        assert [f["severity"] for f in findings if f["objects"] == ["node/rke2-gpu"]] == ["critical"]
