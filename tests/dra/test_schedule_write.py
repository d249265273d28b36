"""``kubegpu schedule --write`` writes what kube-scheduler's DynamicResources PreBind writes for the claims
it allocated (kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go ``bindClaim``:
``status.allocation`` with the device results and the node selector, ``status.reservedFor`` the pod), so a
second pass over the written file sees the device taken. QA: on NVIDIA/k8s-dra-driver-gpu's DynamicMIG demo
the written claim stayed ``status: {}`` and the next pass gave the same MIG device to another pod.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.dra import objects as o


def _write(path: Path, *objs: dict[str, object]) -> None:
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(objs)}))


def test_written_claims_carry_the_allocation_and_a_second_pass_sees_the_device_taken(tmp_path: Path) -> None:
    """n1 publishes one GPU (gpu-0); pod a's claim c1 gets it; pod b's claim c2 then finds none."""
    first, after, more = tmp_path / "first.yaml", tmp_path / "after.yaml", tmp_path / "more.yaml"
    _write(first, *o.gpu_classes(), *o.gpu_node("n1", 1), o.claim("c1", o.request("gpu", count=1)),
           o.pod("a", ("gpu", "c1", "")))  # fmt: skip
    run = CliRunner().invoke(
        cli,
        ["schedule", "--snapshot", str(first), "--kube-version", "1.34", "-o", "yaml", "--write", str(after)],
    )
    assert run.exit_code == 0, run.output
    items = yaml.safe_load(after.read_text())["items"]
    claim = next(x for x in items if x["kind"] == "ResourceClaim")
    pod = next(x for x in items if x["kind"] == "Pod")
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "a", "uid": pod["metadata"]["uid"]}
    ]
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["request"], result["driver"], result["pool"], result["device"]) == (
        "gpu", "gpu.nvidia.com", "n1", "gpu-0",
    )  # fmt: skip
    assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    ]
    _write(more, o.claim("c2", o.request("gpu", count=1)), o.pod("b", ("gpu", "c2", "")))
    again = CliRunner().invoke(
        cli,
        [
            "schedule",
            "--snapshot",
            str(after),
            "--snapshot",
            str(more),
            "--kube-version",
            "1.34",
            "-o",
            "yaml",
        ],
    )
    assert again.exit_code == 0, again.output
    results = {r["pod"]: r for r in yaml.safe_load(again.stdout)["results"]}
    assert results["default/b"]["node"] is None
    assert "cannot allocate all claims" in results["default/b"]["message"]
