"""Who reports a GPU pod whose CDI device the runtime cannot resolve (NVIDIA/nvidia-container-toolkit#1239), when
something else is wrong on its node too: one finding for one pod, never the pod counted twice as two causes.

* cdi-unresolvable-node-notready.yaml: #1239's pod on a node that then stopped reporting (Ready Unknown, "Kubelet
  stopped posting node status.", the unreachable taints; NVIDIA/gpu-operator#716, kubernetes/kubernetes#53207).
  The pod's status is kubelet's last report, the runtime's refusal included; the node is what to fix first (no
  pod starts there until kubelet reports again), and the CDI refusal is evidence of that same finding.
"""

from __future__ import annotations

from typing import Any

from tests.realcases.cases import case

# the runtime's refusal, verbatim from #1239
REFUSAL = (
    "failed to inject CDI devices: unresolvable CDI devices "
    "management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-4223fe50aead"
)
STOPPED = "Kubelet stopped posting node status"  # the node lifecycle controller's message


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
