"""A Pending GPU pod on a fleet whose device plugin crash-loops on some nodes: those nodes keep their GPUs in
capacity with none allocatable, and the pod's evidence and advice say so the way the node's finding does.

Upstream facts pinned: kubelet's device manager marks every device of a plugin whose endpoint stopped unhealthy
(kubernetes pkg/kubelet/cm/devicemanager manager.go markResourceUnhealthy) and GetCapacity keeps them in
capacity, out of allocatable, until endpointStopGracePeriod, 5 minutes (types.go); GetCapacity's comment: "new
pods requiring device plugin resources will not be scheduled till device plugin re-registers". The nodes are
NVIDIA/k8s-device-plugin#58's (capacity 16, allocatable 0), the plugin pod in CrashLoopBackOff and the Pending
pod ml/train asking 2 GPUs are NVIDIA/gpu-operator#35's; kube-scheduler's NodeResourcesFit reports such a node
as "Insufficient nvidia.com/gpu". The fixture's header says what is filled in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.realcases.cases import HERE, case, diagnosed, finding, pending

FLEET = "plugin-crashloop-two-of-three"
CRASHING = {
    "ocio-gpu01": "nvidia-device-plugin-daemonset-csjxw",
    "ocio-gpu02": "nvidia-device-plugin-daemonset-5crlk",
}
# the GPU-health reading kubegpu gives for devices a running plugin reports unhealthy
DEVICE_HEALTH = "Check the GPUs (XID errors"


def _explained(path: Path) -> dict[str, Any]:
    """``kubegpu explain ml/train --snapshot PATH -o json``."""
    res = CliRunner().invoke(cli, ["explain", "ml/train", "--snapshot", str(path), "-o", "json"])
    assert res.exit_code in (0, 1), res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _evidence(exp: dict[str, Any], node: str) -> str:
    return " ".join(next(n["evidence"] for n in exp["nodes"] if n["name"] == node))


def test_pending_pod_names_the_crash_looping_plugin_on_each_node_it_stopped() -> None:
    exp = _explained(HERE / f"{FLEET}.yaml")
    for node, pod in CRASHING.items():
        evidence = _evidence(exp, node)
        # the plugin's state on that node, as kubelet reports the container
        assert f"kube-system/{pod}" in evidence and "CrashLoopBackOff" in evidence
        assert "capacity 16" in evidence and "no device plugin serves them now" in evidence
        # the devices are in capacity: the plugin did register them; it is what stopped, not what never came
        assert "has not registered them" not in evidence
    # the node whose plugin runs is read on its numbers alone
    assert "device plugin" not in _evidence(exp, "ocio-gpu03")


def test_pending_pod_and_node_finding_give_one_account_of_the_plugin() -> None:
    """The pod's evidence on a node and the node's finding quote the same chain reading (one rule, two faces)."""
    data = case(FLEET)
    p = pending(data, "ml/train")
    for node in CRASHING:
        evidence = next(n["evidence"] for n in p["nodes"] if n["name"] == node)
        why = next(line for line in evidence if line.startswith("Why the plugin does not run:"))
        f = next(
            f
            for f in data["findings"]
            if f["title"] == "GPU node has no allocatable GPU" and f["objects"] == [f"node/{node}"]
        )
        assert why in f["detail"]


def test_insufficient_group_of_the_fleet_points_at_the_plugin_not_the_devices() -> None:
    data = diagnosed(HERE / f"{FLEET}.yaml")
    # kube-scheduler's reason, over all three nodes: the grouping keeps the scheduler's word
    assert data["summary"]["causes"] == [{"cause": "Insufficient nvidia.com/gpu", "pods": 1}]
    group = pending(data, "ml/train")["groups"]
    assert [(g["reason"], g["nodes"]) for g in group] == [
        ("Insufficient nvidia.com/gpu", ["ocio-gpu01", "ocio-gpu02", "ocio-gpu03"])
    ]
    fix = group[0]["fix"]
    assert DEVICE_HEALTH not in fix
    for pod in CRASHING.values():
        assert pod in fix
    assert "5 minutes" in fix and "Fix the plugin first" in fix
    # the first command reads why the plugin's container exits (its previous instance's log)
    assert group[0]["commands"][0] == (
        "kubectl -n kube-system logs nvidia-device-plugin-daemonset-csjxw -c nvidia-device-plugin-ctr --previous"
    )
    first = data["summary"]["firstStep"]
    assert "nvidia-device-plugin-daemonset-csjxw" in first and "CrashLoopBackOff" in first
    assert DEVICE_HEALTH not in first
    # each crash-looping node keeps its own finding, pointing at the plugin
    assert (
        "Fix the device health (Xid, ECC)" not in finding(data, "GPU node has no allocatable GPU")["detail"]
    )


def test_plugin_ready_on_every_node_keeps_the_device_health_reading(tmp_path: Path) -> None:
    """The same fleet with the plugin Ready everywhere (k8s-device-plugin#58's maintainer: "Allocatable: Number
    of GPUs in a 'Healthy' state"): the plugin reports the devices unhealthy, so their health is what to read."""
    src = (HERE / f"{FLEET}.yaml").read_text(encoding="utf-8")
    ready = (
        '    conditions: [{type: Ready, status: "True"}]\n'
        "    containerStatuses: [{name: nvidia-device-plugin-ctr, ready: true, restartCount: 0, "
        'state: {running: {startedAt: "2018-06-26T20:00:00Z"}}}]\n'
    )
    crash = re.compile(
        r'    conditions: \[\{type: Ready, status: "False"\}\]\n.*?lastState: [^\n]*\n', re.DOTALL
    )
    text, n = crash.subn(lambda _: ready, src)
    assert n == len(CRASHING)
    path = tmp_path / "ready.yaml"
    path.write_text(text, encoding="utf-8")
    data = diagnosed(path)
    p = pending(data, "ml/train")
    assert DEVICE_HEALTH in p["groups"][0]["fix"]
    assert not any("no device plugin serves them" in " ".join(n["evidence"]) for n in p["nodes"])
    assert "no device plugin serves them" not in data["summary"]["firstStep"]


def test_node_with_no_plugin_pod_reads_as_the_plugin_not_the_devices(tmp_path: Path) -> None:
    """ocio-gpu02 without its plugin pod (a DaemonSet's pod deleted, not yet made again): kubelet keeps the
    stopped plugin's devices in capacity for endpointStopGracePeriod, so the node reads as capacity 16,
    allocatable 0; the pod's evidence names the DaemonSet that should run there, not the devices' health."""
    src = (HERE / f"{FLEET}.yaml").read_text(encoding="utf-8")
    items = src.split("\n- ")
    kept = [x for x in items if f"name: {CRASHING['ocio-gpu02']}\n" not in x]
    assert len(kept) == len(items) - 1
    path = tmp_path / "no-pod.yaml"
    path.write_text("\n- ".join(kept), encoding="utf-8")
    exp = _explained(path)
    evidence = _evidence(exp, "ocio-gpu02")
    assert "kube-system/nvidia-device-plugin-daemonset" in evidence and "capacity 16" in evidence
    assert "has not registered them" not in evidence
    assert DEVICE_HEALTH not in exp["groups"][0]["fix"]


UNRECOGNISED = "plugin-unrecognised-all-unhealthy"


def test_node_no_known_plugin_selects_is_not_told_no_plugin_serves_it() -> None:
    """NVIDIA/k8s-device-plugin#33: the node `gpu` keeps its one GPU in capacity with none allocatable, its
    plugin having marked the GPU unhealthy ("too old to support healtchecking ... Marking it unhealthy"); here
    that plugin runs by hand (k8s-device-plugin README, "Run locally") and the one known plugin DaemonSet, NVIDIA's
    chart with #607's required node affinity, does not select the node (filled in: the fixture's header). The
    snapshot does not show that no plugin serves the node, so neither the node's finding nor the Pending pod's
    reading says so: the finding says no known plugin is meant to run there, why, and where to read the rest."""
    data = diagnosed(HERE / f"{UNRECOGNISED}.yaml")
    f = finding(data, "allocatable GPUs below capacity")
    assert f["objects"] == ["node/gpu"]
    assert "no device plugin serves them" not in f["detail"] and "Fix the plugin first" not in f["detail"]
    assert "no known device plugin is meant to run on gpu" in f["detail"]
    assert "DaemonSet nvidia-device-plugin/nvdp-nvidia-device-plugin does not select gpu" in f["detail"]
    # what kubegpu cannot see: a plugin it does not recognise, reporting every device unhealthy or stopped
    assert "does not recognise" in f["detail"] and "every device unhealthy" in f["detail"]
    p = pending(data, "default/cuda-vector-add")
    assert not any("no device plugin serves them" in " ".join(n["evidence"]) for n in p["nodes"])
    assert "no device plugin serves them" not in p["groups"][0]["fix"]
    assert "no device plugin serves them" not in data["summary"]["firstStep"]


def test_plugin_selected_but_absent_stays_the_plugin_reading(tmp_path: Path) -> None:
    """The same node labelled nvidia.com/gpu.present=true, which the chart's affinity accepts (#607's fix): the
    DaemonSet now selects `gpu` and no pod of it is there, so what the snapshot shows is the plugin meant to run
    there not running: the node's finding says no device plugin serves the GPUs now."""
    src = (HERE / f"{UNRECOGNISED}.yaml").read_text(encoding="utf-8")
    text = src.replace(
        "labels: {kubernetes.io/hostname: gpu}",
        'labels: {kubernetes.io/hostname: gpu, nvidia.com/gpu.present: "true"}',
    )
    assert text != src
    path = tmp_path / "selected.yaml"
    path.write_text(text, encoding="utf-8")
    f = finding(diagnosed(path), "GPU node has no allocatable GPU")
    assert "no device plugin serves them now" in f["detail"] and "Fix the plugin first" in f["detail"]
    assert "selects gpu but no pod of it is there" in f["detail"]
