"""KAI's GPU-share ask is read from the exact annotation keys ``gpu-fraction`` / ``gpu-memory``
(kai-scheduler/KAI-Scheduler @d5bc503a pkg/common/constants/constants.go GpuFraction, GpuMemory;
pkg/common/resources/gpu_sharing.go RequestsGPUFraction), a gpu-memory value as a positive integer of MiB
(pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go validateMemoryAnnotation, also run by
KAI's admission webhook). The fixture's header cites KAI-Scheduler#257."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.realcases.cases import HERE


def explain(path: Path, pod: str) -> str:
    res = CliRunner().invoke(cli, ["explain", pod, "--snapshot", str(path)], terminal_width=400)
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_node_label_key_as_annotation_asks_for_no_gpu_kai_257() -> None:
    """KAI#257: pods annotated nvidia.com/gpu.memory: "8000Mi" (GFD's node label key) all ran on a 16 GiB GPU:
    they asked KAI for no GPU at all. kubegpu said only "checks every scheduler makes: pass"."""
    out = explain(HERE / "kai-node-label-as-annotation.yaml", "default/gpu-memory-3")
    assert (
        "annotation nvidia.com/gpu.memory=8000Mi is GPU Feature Discovery's node label nvidia.com/gpu.memory, "
        "not a KAI annotation: kai-scheduler reads only gpu-memory" in out
    )
    assert "asks for no GPU and gets none" in out


def test_gpu_memory_with_a_unit_is_refused_kai_257(tmp_path: Path) -> None:
    """The right key with the issue's value "8000Mi": KAI parses an integer of MiB and refuses it."""
    text = (HERE / "kai-node-label-as-annotation.yaml").read_text(encoding="utf-8")
    (tmp_path / "c.yaml").write_text(
        text.replace("{nvidia.com/gpu.memory: ", "{gpu-memory: "), encoding="utf-8"
    )
    out = explain(tmp_path / "c.yaml", "default/gpu-memory-3")
    assert "gpu-memory=8000Mi: KAI takes a positive integer of MiB without a unit" in out
    assert "not a KAI annotation" not in out


def test_no_node_has_mig_profile_while_a_node_advertises_it_kai_1876(tmp_path: Path) -> None:
    """KAI-Scheduler#1876: under the mixed MIG strategy kai-scheduler refused a pod asking nvidia.com/mig-1g.5gb
    with "No node in the default node-pool has nvidia.com/mig-1g.5gb resources" (KAI
    pkg/scheduler/k8s_internal/predicates/maxNodeResources.go buildUnschedulableMessage) while the node advertised
    the profile: KAI's MaxNodeResources maximum read 0 for a resource on only some nodes, fixed by KAI PR #1852
    (ResourceVector.SetMax grows the receiver). kubegpu said only "the message was written by kai-scheduler"."""
    fixture = HERE / "kai-mig-mixed-max-node.yaml"
    pod = "dynamo/qwen3-embedding-0-vllmdecodeworker-4p8dk"
    out = explain(fixture, pod)
    assert (
        'kai-scheduler said "No node in the default node-pool has nvidia.com/mig-1g.5gb resources", yet r7525-gpu1 '
        "advertise(s) nvidia.com/mig-1g.5gb in allocatable" in out
    )
    assert "KAI-Scheduler PR #1852" in out
    # the node really has none of the profile: KAI's refusal is the nodes' state, and no miscount is claimed
    bare = tmp_path / "bare.yaml"
    bare.write_text(
        fixture.read_text(encoding="utf-8").replace(
            'nvidia.com/mig-1g.5gb: "14"', 'nvidia.com/mig-1g.5gb: "0"'
        ),
        encoding="utf-8",
    )
    out = explain(bare, pod)
    assert "miscount" not in out


def test_mig_resources_left_at_zero_under_mixed_kai_1120(tmp_path: Path) -> None:
    """KAI-Scheduler#1120: after mig.config all-disabled the node kept nvidia.com/mig-1g.24gb: 0 and
    nvidia.com/mig-2g.48gb: 0 (kubelet keeps them, kubernetes/kubernetes#92396) under mig.strategy mixed, and
    KAI 0.12.15 would not place non-MIG jobs there: node_info.go IsMIGEnabled counted any nvidia.com/mig-* key
    in allocatable without node-role.kubernetes.io/mig-enabled, and PredicateByNodeResourcesType refuses
    "non MIG jobs ... on a node with MigStrategy='mixed'". kubegpu said only "checks ... pass"."""
    fixture = HERE / "kai-mig-zero-leftover.yaml"
    out = explain(fixture, "default/gpu-sharing")
    assert "gpu-node-01: nvidia.com/mig.strategy=mixed and nvidia.com/mig-* resources left at 0" in out
    assert (
        "kubectl -n default label node gpu-node-01 node-role.kubernetes.io/mig-enabled=false --dry-run=server"
        in out
    )
    assert "kubectl -n default label node gpu-node-01 node-role.kubernetes.io/mig-enabled-" in out
    # the node labelled node-role.kubernetes.io/mig-enabled: KAI reads the label, not the resources
    labelled = tmp_path / "labelled.yaml"
    labelled.write_text(
        fixture.read_text(encoding="utf-8").replace(
            "nvidia.com/mig.config: all-disabled",
            'nvidia.com/mig.config: all-disabled\n    node-role.kubernetes.io/mig-enabled: "false"',
        ),
        encoding="utf-8",
    )
    assert "resources left at 0" not in explain(labelled, "default/gpu-sharing")
