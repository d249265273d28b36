"""``plan dra-migration``: a pool moved between NVIDIA's device plugin and its DRA driver, either way.

The effect is the scheduling core's on the changed snapshot, so it follows the release: from 1.36 a
DeviceClass with ``extendedResourceName: nvidia.com/gpu`` (KEP-5004, DRAExtendedResource on by default,
pkg/features/kube_features.go) serves the moved ``nvidia.com/gpu`` pods from the new ResourceSlices;
before it, those pods need a ResourceClaim and land only where a device plugin still advertises GPUs.
Demo facts used (src/kubegpu/demo/cluster.yaml): pool ``inference`` = gpu-infer-01 (allocatable 3
nvidia.com/gpu, three 1-GPU vllm pods of ReplicaSet vllm-6b7c9d) and gpu-infer-02 (GFD says 4 L40S, no
plugin resource, no pods).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from click.testing import CliRunner
from tests.dra import objects as o

from kubegpu.cli.main import cli
from kubegpu.model.snapshot import build_snapshot
from kubegpu.plan.dra_migration import TO_DEVICE_PLUGIN, plan_dra_migration
from kubegpu.testing.builders import make_node

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
VLLM = ["ml-infer/vllm-6b7c9d-4kq2p", "ml-infer/vllm-6b7c9d-8xz1m", "ml-infer/vllm-6b7c9d-tt5w9"]


def run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        cli, ["plan", "dra-migration", "--pool", "inference", *args, "--demo", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


def test_to_dra_on_1_36_keeps_plain_gpu_pods_through_the_class() -> None:
    data = run("--to", "dra", "--kube-version", "1.36")
    d = data["details"]
    assert d["scope"]["gpu-infer-01"] == {"device_plugin_pods": VLLM, "dra_pods": [], "gpus": 3}
    assert d["scope"]["gpu-infer-02"]["gpus"] == 4  # the GFD count: no plugin advertises them
    # least disruption: gpu-infer-02 moves no pod
    assert d["canary"] == "gpu-infer-02"
    assert d["extended_resource"] is True
    assert d["manifests"]["deviceclass"]["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    # 3 + 4 DRA GPUs for 3 moved 1-GPU pods: every replacement lands on a pool node, through DRA
    lands = {r["pod"]: r["lands"] for r in d["effect"]["evicted"]}
    assert set(lands) == set(VLLM) and all(n in ("gpu-infer-01", "gpu-infer-02") for n in lands.values())
    assert all(p["returns"] for p in data["affected_pods"])


def test_to_dra_on_1_34_needs_claims_and_the_pods_find_no_device_plugin_room() -> None:
    data = run("--to", "dra", "--kube-version", "1.34")
    d = data["details"]
    assert d["extended_resource"] is False
    assert "extendedResourceName" not in d["manifests"]["deviceclass"]["spec"]
    assert [
        t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for t in d["manifests"]["claim_templates"]
    ] == [1]
    assert any("cannot serve nvidia.com/gpu from a DeviceClass" in w for w in data["warnings"])
    # the only other L40S capacity in the pool is gone: the replacements stay Pending
    assert all(r["lands"] is None for r in d["effect"]["evicted"])
    assert not any(p["returns"] for p in data["affected_pods"])


def test_rollback_restores_the_label_canary_first_with_namespace_and_dry_run() -> None:
    data = run("--to", "dra", "--kube-version", "1.36", "--namespace", "ops")
    (undo,) = data["rollback"]
    assert undo["commands"][:6] == [
        "kubectl -n ops cordon gpu-infer-02 --dry-run=server",
        "kubectl -n ops cordon gpu-infer-02",
        "kubectl -n ops label node gpu-infer-02 nvidia.com/gpu.deploy.device-plugin- --dry-run=server",
        "kubectl -n ops label node gpu-infer-02 nvidia.com/gpu.deploy.device-plugin-",
        "kubectl -n ops uncordon gpu-infer-02 --dry-run=server",
        "kubectl -n ops uncordon gpu-infer-02",
    ]


def test_to_device_plugin_moves_the_claim_pods_and_advertises_the_slice_gpus() -> None:
    # n1: 2 DRA GPUs, pod a (ReplicaSet, claim c allocated gpu-0, reserved by a); n2: 2 DRA GPUs, other pool.
    # Back to the device plugin on n1: n1 gets nvidia.com/gpu 2, its slices go, a moves; c is deallocated
    # (only a held it) and a's replacement can get a GPU only from n2's slice → lands on n2.
    n1 = make_node("n1").label("pool", "p").obj()
    a = o.pod("a", ("gpu", "c", ""), uid="uid-a")
    a["spec"]["nodeName"] = "n1"
    a["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "r", "controller": True}]
    c = o.claim("c", o.request("gpu"), status=o.allocated("n1", ("gpu", "gpu-0"), reserved=("uid-a",)))
    objs = [*o.gpu_classes(), n1, o.node_slice("n1", [o.gpu_device(i, "n1") for i in range(2)]),
            *o.gpu_node("n2", 2), a, c]  # fmt: skip
    snap = build_snapshot([("t", x) for x in objs])
    snap.kube_version = "1.34"
    change = plan_dra_migration(snap, [snap.node("n1")], TO_DEVICE_PLUGIN, NOW)
    d = change.details
    assert d["scope"] == {"n1": {"device_plugin_pods": [], "dra_pods": ["default/a"], "gpus": 2}}
    assert d["effect"]["nodes"]["n1"]["nvidia.com/gpu"] == {"capacity": {"before": 0, "after": 2},
                                                          "allocatable": {"before": 0, "after": 2}}  # fmt: skip
    assert [(r["pod"], r["lands"]) for r in d["effect"]["evicted"]] == [("default/a", "n2")]
    assert any(s.title == "n1: switch the stack" and "stop the DRA driver's kubelet plugin" in s.note
               for s in change.steps)  # fmt: skip
