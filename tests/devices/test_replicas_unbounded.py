"""Time-slicing replicas above 1024: accepted as the NVIDIA plugin accepts them, modelled in bounded memory.

Upstream facts pinned here:

* NVIDIA/k8s-device-plugin v0.17.4 ``api/config/v1/replicas.go`` ``ReplicatedResource.UnmarshalJSON``: the
  only bound on ``replicas`` is ``if s.Replicas < 2 { "number of replicas must be >= 2" }``; the field is a
  Go ``int``, so ``json.Unmarshal`` refuses a non-integer and a number beyond 2**63 - 1.
* the same tag's ``internal/lm/resource.go`` ``baseLabeler``: GFD writes ``nvidia.com/gpu.replicas`` as
  ``fmt.Sprintf("%v", replicas)``, the config's count as is, no upper bound.
* ``internal/rm/allocate.go`` ``distributedAlloc``: replicas are handed out from the GPU with the fewest in use.

The fixture ``cases/ts-rename-ignored.yaml`` (and ``.config.yaml``, the config as posted) is rebuilt from
https://github.com/NVIDIA/k8s-device-plugin/issues/1433: ``replicas: 16384``, the node advertising 16384
``nvidia.com/gpu`` (1 GPU), not renamed because ``renameByDefault`` sits under ``flags``. The 8-GPU node
below is that node with ``nvidia.com/gpu.count: 8`` (filled, not in the thread) to bound 16384 x 8 ids.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from kubegpu.devices.allocator import distributed_allocation
from kubegpu.devices.node_devices import node_devices
from kubegpu.devices.plugin_config import load_plugin_config, parse_plugin_config
from kubegpu.devices.sharing import MAX_MODELLED_REPLICA_IDS, ReplicatedDevices, strip_annotation
from kubegpu.errors import InputError
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.names import NVIDIA_GPU
from kubegpu.model.objects import Node
from kubegpu.sources import load_files

CASES = Path(__file__).parent / "cases"
THREAD_REPLICAS = 16384  # issue 1433's sharing.timeSlicing.resources[0].replicas


def _config(replicas: object) -> str:
    return f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: {replicas}\n"


def test_thread_config_with_16384_replicas_loads() -> None:
    """replicas.go (v0.17.4) refuses only replicas < 2: the posted config loads, with 16384 replicas, not
    renamed (renameByDefault under ``flags`` is not read), and no note (16384 is modelled one by one)."""
    cfg = load_plugin_config(CASES / "ts-rename-ignored.config.yaml")
    assert cfg.replicas_for(NVIDIA_GPU) == THREAD_REPLICAS
    assert not cfg.rename_by_default and not cfg.fail_requests_greater_than_one
    assert not any(".replicas" in w for w in cfg.warnings)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("1", "number of replicas must be >= 2"),  # replicas.go: s.Replicas < 2
        ("2.5", "expected an integer"),  # json.Unmarshal into int
        (str(2**63), "does not fit the plugin's integer"),  # beyond Go's int64
    ],
)
def test_values_the_plugin_refuses_stay_one_line_errors(value: str, said: str) -> None:
    """replicas.go (v0.17.4): what the plugin refuses is one line naming the file and the field."""
    with pytest.raises(InputError) as err:
        parse_plugin_config(_config(value), source="cm.yaml")
    line = err.value.one_line()
    assert "\n" not in line and line.startswith("cm.yaml: sharing.timeSlicing.resources[0].replicas: ")
    assert said in line


def test_thread_node_with_replicas_label_16384_loads_and_counts_every_replica() -> None:
    """GFD resource.go writes the replicas label as the config's count: a Node labelled 16384 loads (no
    input error), and the model advertises the node's capacity, 1 GPU x 16384 replicas."""
    snap = load_files(CASES / "ts-rename-ignored.yaml")
    assert not snap.errors, [e.one_line() for e in snap.errors]
    model = node_devices(snap.nodes[0])
    assert model is not None and not model.problems
    plan = model.plans[NVIDIA_GPU]
    assert (plan.replicas, plan.advertised, plan.modelled_replicas) == (16384, 16384, 16384)
    assert model.config.replicas_for(NVIDIA_GPU) == THREAD_REPLICAS


def _eight_gpu_node(replicas: int) -> Node:
    snap = load_files(CASES / "ts-rename-ignored.yaml")
    node = snap.nodes[0]
    total = 8 * replicas * 1000  # status.capacity in milli-units, as Node objects are parsed
    labels = {**node.labels, "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": str(replicas)}
    capacity = {**node.capacity, NVIDIA_GPU: total}
    allocatable = {**node.allocatable, NVIDIA_GPU: total}
    return dataclasses.replace(node, labels=labels, capacity=capacity, allocatable=allocatable)


def test_16384_replicas_on_8_gpus_stay_one_record_per_gpu_and_spread_as_upstream() -> None:
    """16384 x 8 = 131072 replica ids: the model holds 8 device records (ids computed on demand), counts
    them all, and distributedAlloc (allocate.go) spreads 1024 replicas 128 per GPU."""
    node = _eight_gpu_node(THREAD_REPLICAS)
    model = node_devices(node)
    assert model is not None and not model.problems
    plan = model.plans[NVIDIA_GPU]
    assert isinstance(plan.devices, ReplicatedDevices) and len(plan.devices.base) == 8
    assert plan.advertised == len(plan.devices) == 8 * THREAD_REPLICAS
    assert plan.replicas_per_gpu() == {d.device: THREAD_REPLICAS for d in plan.devices.base}
    last = plan.devices[-1]
    assert last.id == f"{last.device}::{THREAD_REPLICAS - 1}" and plan.lookup(last.id) == last
    ids = [d.id for d in plan.devices]
    picked = distributed_allocation(ids, [], 1024, plan.replicas_per_gpu())
    assert sorted(Counter(strip_annotation(i) for i in picked).values()) == [128] * 8


def test_pod_of_1024_replicas_fits_the_8_gpu_node() -> None:
    """The scheduler's view of the 8-GPU node: a pod asking 1024 nvidia.com/gpu (not shared-renamed, as in
    the thread) fits 131072 advertised replicas, and nothing is refused as input."""
    snap = load_files(CASES / "ts-rename-ignored.yaml")
    snap.nodes[0] = _eight_gpu_node(THREAD_REPLICAS)
    pod = snap.pods[0]
    containers = tuple(
        dataclasses.replace(c, requests={NVIDIA_GPU: 1024 * 1000}, limits={NVIDIA_GPU: 1024 * 1000})
        for c in pod.containers
    )
    snap.pods[0] = dataclasses.replace(pod, containers=containers)
    data = diagnose(Engine(snap)).to_dict()
    assert data["inputErrors"] == []
    assert data["pending"][0]["schedulable"] is True
    assert data["nodes"][0]["gpu"][NVIDIA_GPU]["allocatable"] == str(8 * THREAD_REPLICAS)


def test_replicas_beyond_the_model_are_accepted_and_said() -> None:
    """Nothing upstream bounds replicas (replicas.go, resource.go): a config or label far above what kubegpu
    places one by one loads, the capacity is still counted whole, and the limit is said, not refused."""
    huge = 10**12
    cfg = parse_plugin_config(_config(huge), source="cm.yaml")
    assert cfg.replicas_for(NVIDIA_GPU) == huge
    assert any(
        "sharing.timeSlicing.resources[0].replicas" in w and "kubegpu places" in w for w in cfg.warnings
    )
    model = node_devices(_eight_gpu_node(huge))
    assert model is not None
    plan = model.plans[NVIDIA_GPU]
    assert plan.advertised == 8 * huge
    assert len(plan.devices) <= MAX_MODELLED_REPLICA_IDS
    assert [p for p in model.problems if "kubegpu places" in p]
    assert not [p for p in model.problems if "capacity" in p and "but the device model" in p]
