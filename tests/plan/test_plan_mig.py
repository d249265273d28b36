"""``kubegpu plan mig`` / ``plan time-slicing``: capacity, pods to move, procedure and rollback (R6.2, R6.3, R15).

Pinned behaviour: the GPU Operator's MIG manager applies the mig-parted config named by the node label
``nvidia.com/mig.config`` and reports ``nvidia.com/mig.config.state``; the device plugin names MIG resources
``nvidia.com/mig-<profile>`` under ``migStrategy: mixed`` and refuses mixed profiles under ``single``;
the plugin's time-slicing config advertises GPUs × replicas (``.shared`` when renamed); every ``kubectl`` line
carries ``-n`` and every mutating one comes after its ``--dry-run=server`` form (requirements conventions).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.plan.mig_parted import BLACKWELL_AND_A30

from kubegpu.devices import parse_plugin_config, plan_resources
from kubegpu.devices.inventory import GpuDevice, GpuUuid, NodeInventory
from kubegpu.devices.mig import MigLayoutError
from kubegpu.devices.mig_parted import parse_mig_parted_config
from kubegpu.errors import ConfigError, InputError
from kubegpu.model.objects import Node, Pod
from kubegpu.plan import NodeChange, plan_mig, plan_time_slicing
from kubegpu.testing.builders import make_node, make_pod

LAYOUTS = """
version: v1
mig-configs:
  all-1g.18gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.18gb": 7}
  h200-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
  half:
    - devices: [0]
      mig-enabled: true
      mig-devices: {"3g.71gb": 2}
    - devices: [1]
      mig-enabled: false
  impossible:
    - devices: all
      mig-enabled: true
      mig-devices: {"2g.35gb": 3, "1g.18gb": 2}
"""
MUTATING = ("cordon", "uncordon", "label", "delete", "run", "patch", "apply")


def _h200_node(**labels: str) -> Node:
    b = make_node("h200-a").gpus(0, product="NVIDIA-H200").label("nvidia.com/gpu.count", "2")
    b.capacity(**{"nvidia.com/mig-1g.18gb": 14})
    b.label("nvidia.com/mig.strategy", "mixed").label("nvidia.com/mig.config", "all-1g.18gb")
    for k, v in labels.items():
        b.label(k, v)
    return b.parsed()


def _pods() -> list[Pod]:
    return [
        make_pod("infer-1")
        .ns("ml")
        .gpu(1, "nvidia.com/mig-1g.18gb")
        .on("h200-a")
        .owner("ReplicaSet", "infer-7d")
        .parsed(),
        make_pod("notebook").ns("lab").gpu(1, "nvidia.com/mig-1g.18gb").on("h200-a").parsed(),
        make_pod("logger").ns("ops").on("h200-a").owner("DaemonSet", "logger").parsed(),
        make_pod("elsewhere").ns("ml").gpu(1, "nvidia.com/mig-1g.18gb").on("other").parsed(),
    ]


def _commands(change: NodeChange) -> list[str]:
    return [c for s in (*change.steps, *change.rollback) for c in s.commands]


def _assert_conventions(change: NodeChange) -> None:
    commands = _commands(change)
    for i, c in enumerate(commands):
        if not c.startswith("kubectl"):
            continue
        assert c.startswith("kubectl -n "), c
        verb = c.split()[3]
        if verb in MUTATING and not c.endswith("--dry-run=server"):
            assert commands[i - 1] == c + " --dry-run=server", c


def test_balanced_layout_on_a_mixed_h200_node() -> None:
    node = _h200_node()
    change = plan_mig(node, _pods(), parse_mig_parted_config(LAYOUTS, source="l.yaml"), "h200-balanced")
    assert change.capacity_before == {"nvidia.com/mig-1g.18gb": 14}
    assert change.capacity_after == {
        "nvidia.com/mig-1g.18gb": 4,
        "nvidia.com/mig-2g.35gb": 2,
        "nvidia.com/mig-3g.71gb": 2,
    }
    assert change.delta == {
        "nvidia.com/mig-1g.18gb": -10,
        "nvidia.com/mig-2g.35gb": 2,
        "nvidia.com/mig-3g.71gb": 2,
    }
    assert [(p.namespace, p.name, p.controller, p.returns) for p in change.affected] == [
        ("lab", "notebook", "", True),
        ("ml", "infer-1", "ReplicaSet/infer-7d", True),
    ]
    assert any("lab/notebook is a bare pod" in w for w in change.warnings)
    # 3g at 0 would leave one 1g start (6) for two 1g: the search puts 3g at 4 (its other start), as
    # nvidia-smi -lgipp allows, and the GPU Operator ships this layout as all-balanced.
    assert change.details["gpus"] == [
        {"index": i, "mig_enabled": True, "layout": {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
         "placements": ["2g.35gb@0:2", "1g.18gb@2:1", "1g.18gb@3:1", "3g.71gb@4:4"]}
        for i in range(2)
    ]  # fmt: skip
    commands = _commands(change)
    assert (
        "kubectl -n gpu-operator label node h200-a nvidia.com/mig.config=h200-balanced --overwrite"
        in commands
    )
    assert "kubectl -n gpu-operator label node h200-a nvidia.com/mig.config=all-1g.18gb --overwrite" in [
        c for s in change.rollback for c in s.commands
    ]
    assert "kubectl -n lab delete pod notebook --wait=true" in commands
    assert not any("logger" in c for c in commands)  # cordon moves nothing; non-GPU pods stay
    assert [s.title.split()[0] for s in change.steps] == [
        "Record", "Cordon", "Move", "Point", "Wait", "Verify", "Run", "Uncordon"
    ]  # fmt: skip
    _assert_conventions(change)


def test_per_gpu_entries_and_pods_that_cannot_return() -> None:
    change = plan_mig(_h200_node(), _pods(), parse_mig_parted_config(LAYOUTS), "half")
    assert change.capacity_after == {"nvidia.com/gpu": 1, "nvidia.com/mig-3g.71gb": 2}
    assert all(not p.returns for p in change.affected)


def test_impossible_layout_names_config_gpu_and_why() -> None:
    with pytest.raises(MigLayoutError) as err:
        plan_mig(_h200_node(), [], parse_mig_parted_config(LAYOUTS, source="l.yaml"), "impossible")
    assert err.value.reason == "placement-conflict"
    assert str(err.value).startswith("l.yaml: impossible: GPU 0: no placement fits")


def test_single_strategy_refuses_mixed_profiles_and_reads_the_mig_product_label() -> None:
    node = _h200_node(
        **{"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-H200-MIG-1g.18gb"}
    )
    config = parse_mig_parted_config(LAYOUTS)
    with pytest.raises(ConfigError, match="single needs every GPU MIG-enabled with one profile"):
        plan_mig(node, [], config, "h200-balanced")
    assert plan_mig(node, [], config, "all-1g.18gb").capacity_after == {"nvidia.com/gpu": 14}


def test_several_configs_need_a_name_and_unknown_products_are_refused() -> None:
    with pytest.raises(InputError, match="choose one with --config-name"):
        plan_mig(_h200_node(), [], parse_mig_parted_config(LAYOUTS))
    t4 = make_node("t4").gpus(1, product="Tesla-T4").parsed()
    with pytest.raises(InputError, match="no MIG profile catalog"):
        plan_mig(t4, [], parse_mig_parted_config(LAYOUTS), "all-1g.18gb")


def _inventory(n: int) -> NodeInventory:
    gpus = tuple(
        GpuDevice(index=i, uuid=GpuUuid(f"GPU-{i}"), name="NVIDIA H200", memory_total=1, memory_used=0,
                  pci_bus_id=f"0000:{i:02x}:00.0", arch=9, cuda_cc=(9, 0), mig_capable=True, mig_enabled=False,
                  mig_pending=False, numa_node=None)
        for i in range(n)
    )  # fmt: skip
    return NodeInventory(driver="580.0.0", nvml="13", cuda_driver=13000, devices=gpus)


def test_time_slicing_plan_config_round_trips_through_the_device_model() -> None:
    node = make_node("h200-b").gpus(8).parsed()
    pods = [make_pod("train").ns("ml").gpu(2).on("h200-b").owner("Job", "train").parsed()]
    change = plan_time_slicing(node, pods, 4, rename=True)
    assert change.capacity_after == {"nvidia.com/gpu.shared": 32}
    assert [(p.name, p.returns) for p in change.affected] == [("train", False)]
    text = change.details["plugin_config"]
    assert isinstance(text, str)
    config = parse_plugin_config(text)
    (plan,) = plan_resources(_inventory(8), config)
    assert (plan.name, len(plan.devices)) == ("nvidia.com/gpu.shared", 32)
    assert any("renameByDefault" in w for w in change.warnings)
    assert any("share its memory and faults" in w for w in change.warnings)
    _assert_conventions(change)
    labels = [c for c in _commands(change) if "nvidia.com/device-plugin.config=" in c]
    assert labels[:2] == [
        "kubectl -n gpu-operator label node h200-b nvidia.com/device-plugin.config=time-sliced-4 --overwrite "
        "--dry-run=server",
        "kubectl -n gpu-operator label node h200-b nvidia.com/device-plugin.config=time-sliced-4 --overwrite",
    ]
    rollback = [c for s in change.rollback for c in s.commands]
    assert "kubectl -n gpu-operator label node h200-b nvidia.com/device-plugin.config-" in rollback


def test_the_plan_package_is_pure() -> None:
    code = "import kubegpu.plan, sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = {m.split(".")[0] for m in json.loads(out)}
    assert loaded.isdisjoint({"click", "rich", "grpc", "kubernetes", "pynvml"})


def test_cli_plan_mig_and_time_slicing(tmp_path: Path) -> None:
    from kubegpu.cli.plan_cmd import plan

    snapshot = tmp_path / "snap.yaml"
    node = make_node("h200-a").gpus(0, product="NVIDIA-H200").label("nvidia.com/gpu.count", "2")
    node.capacity(**{"nvidia.com/mig-1g.18gb": 14}).label("nvidia.com/mig.strategy", "mixed")
    pod = make_pod("infer-1").ns("ml").gpu(1, "nvidia.com/mig-1g.18gb").on("h200-a").owner("ReplicaSet", "r")
    snapshot.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node.obj(), pod.obj()]})
    )
    layouts = tmp_path / "mig.yaml"
    layouts.write_text(LAYOUTS)
    runner = CliRunner()
    args = [
        "mig",
        "h200-a",
        "--config",
        str(layouts),
        "--config-name",
        "h200-balanced",
        "--snapshot",
        str(snapshot),
    ]
    result = runner.invoke(plan, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["capacity_after"]["nvidia.com/mig-3g.71gb"] == 2
    assert [p["name"] for p in data["affected_pods"]] == ["infer-1"]
    table = runner.invoke(plan, args)
    assert table.exit_code == 0, table.output
    assert "nvidia.com/mig-1g.18gb: 14 → 4  (-10)" in table.output
    assert "Rollback" in table.output and "--dry-run=server" in table.output
    ts = runner.invoke(
        plan, ["time-slicing", "h200-a", "--replicas", "2", "--snapshot", str(snapshot), "-o", "yaml"]
    )
    assert ts.exit_code == 0, ts.output
    ts_data = yaml.safe_load(ts.output)
    assert ts_data["capacity_after"] == {"nvidia.com/gpu": 4, "nvidia.com/mig-1g.18gb": 14}
    assert ts_data["affected_pods"] == []  # a time-slicing change moves only nvidia.com/gpu pods
    assert any("two sharing modes" in w for w in ts_data["warnings"])
    missing = runner.invoke(plan, ["mig", "nope", "--config", str(layouts), "--snapshot", str(snapshot)])
    assert isinstance(missing.exception, InputError) and "no node 'nope'" in str(missing.exception)


def _mig_node(name: str, product: str, gpus: int) -> Node:
    b = make_node(name).gpus(gpus, product=product).label("nvidia.com/gpu.count", str(gpus))
    b.label("nvidia.com/mig.strategy", "mixed").label("nvidia.com/mig.config", "all-disabled")
    return b.parsed()


def test_all_balanced_picks_the_entry_of_the_gpu_and_its_four_slices() -> None:
    config = parse_mig_parted_config(BLACKWELL_AND_A30, source="config-default.yaml")
    rtx = _mig_node("rtx-a", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", 4)
    change = plan_mig(rtx, [], config, "all-balanced")
    # 4 GPUs × (2 × 1g.24gb + 1 × 2g.48gb): 4 slices each, all used
    assert change.capacity_after == {"nvidia.com/mig-1g.24gb": 8, "nvidia.com/mig-2g.48gb": 4}
    assert change.details["gpus"][0]["placements"] == ["2g.48gb@0:2", "1g.24gb@2:1", "1g.24gb@3:1"]
    a30 = _mig_node("a30-a", "NVIDIA-A30", 2)
    assert plan_mig(a30, [], config, "all-balanced").capacity_after == {
        "nvidia.com/mig-1g.6gb": 4, "nvidia.com/mig-2g.12gb": 2,
    }  # fmt: skip
    # +me becomes .me in the resource name, as the device plugin names it
    assert plan_mig(a30, [], config, "all-1g.6gb.me").capacity_after == {"nvidia.com/mig-1g.6gb.me": 2}


def test_two_media_profiles_on_one_a30_are_refused() -> None:
    config = parse_mig_parted_config(BLACKWELL_AND_A30, source="config-default.yaml")
    with pytest.raises(ConfigError) as err:
        plan_mig(_mig_node("a30-a", "NVIDIA-A30", 1), [], config, "a30-two-media")
    assert "1g.6gb+me and 2g.12gb+me both need the GPU's only OFA / JPEG engines" in str(err.value)
