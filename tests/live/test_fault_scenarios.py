"""Fault scenarios against the emulated API server, invariants checked after each (issue 22): lost binding
answers, binding conflicts, watch restarts (dropped streams and a compacted history, so the reflectors
relist after ``410 Gone``), duplicate replicas (a standby, a ``--no-leader-elect`` replica beside the
holder, the holder killed mid-run). Seeded: each seed picks the pods' sizes and which bindings fail, so a
failure replays.

After each scenario (``check_invariants``), from the API server's objects alone:
* no node over allocatable: per node, the bound non-terminal pods' ``nvidia.com/gpu`` and ``cpu`` requests
  sum to at most the node's allocatable (the tests' nodes: 8 GPUs, 63500m CPU, ``conftest.gpu_node``);
* no device given twice: per node, the ``kubegpu.io/allocated-devices`` records of its pods name each
  device ID at most once, and each pod's record names as many IDs as it requests;
* every pod bound once or explained: each pod has at most one accepted Binding; a bound pod exactly one;
  an unbound pod of ours carries ``PodScheduled=False`` with a ``0/3 nodes are available`` message.
Upstream facts pinned: the API server accepts one Binding per pod (409 ``already assigned`` after),
kube-apiserver's finisher answers 504 Timeout while a write may still land, client-go's Lease election
(one holder binds; a standby takes over after ``leaseDurationSeconds``).
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from tests.live.apiserver import Fault, RunningApiServer, wait_until
from tests.live.conftest import Component, gpu_node, gpu_pod
from tests.live.observe import node_of

NODES = ("gpu-1", "gpu-2", "gpu-3")
GPUS_PER_NODE = 8
CPU_MILLI_PER_NODE = 63_500  # conftest.gpu_node's allocatable cpu "63500m"
CPU_MILLI_PER_POD = 1_000  # conftest.gpu_pod requests cpu "1"
TIMEOUT_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"


def pods_of(api: RunningApiServer) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in api.emulator.objects("pods")}


def gpus(pod: dict[str, Any]) -> int:
    return sum(int(c["resources"]["requests"].get("nvidia.com/gpu", 0)) for c in pod["spec"]["containers"])


def explained(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", [])
    return any(
        c["type"] == "PodScheduled"
        and c["status"] == "False"
        and c.get("message", "").startswith("0/3 nodes")
        for c in conditions
    )


def settled(api: RunningApiServer, names: list[str]) -> bool:
    pods = pods_of(api)
    return all(n in pods and (pods[n]["spec"].get("nodeName") or explained(pods[n])) for n in names)


def check_invariants(api: RunningApiServer, names: list[str]) -> None:
    pods = pods_of(api)
    bindings = Counter(key for key, _, _ in api.emulator.bindings)
    gpu_used: Counter[str] = Counter()
    cpu_used: Counter[str] = Counter()
    devices: dict[str, list[str]] = defaultdict(list)
    for name in names:
        pod = pods[name]
        node = pod["spec"].get("nodeName") or ""
        if not node:
            assert bindings[f"ml/{name}"] == 0, f"{name}: a Binding was accepted, yet it is unbound"
            assert explained(pod), f"{name}: pending with no PodScheduled=False explanation"
            continue
        assert bindings[f"ml/{name}"] == 1, f"{name}: {bindings[f'ml/{name}']} bindings accepted"
        gpu_used[node] += gpus(pod)
        cpu_used[node] += CPU_MILLI_PER_POD
        record = json.loads(pod["metadata"]["annotations"]["kubegpu.io/allocated-devices"])
        ids = record["main"]["nvidia.com/gpu"]
        assert len(ids) == gpus(pod), f"{name}: record {ids} for {gpus(pod)} GPUs"
        devices[node] += ids
    for node in NODES:
        assert gpu_used[node] <= GPUS_PER_NODE, f"{node}: {gpu_used[node]} GPUs bound of {GPUS_PER_NODE}"
        assert cpu_used[node] <= CPU_MILLI_PER_NODE
        twice = [i for i, n in Counter(devices[node]).items() if n > 1]
        assert not twice, f"{node}: devices given twice: {twice}"


def plan(seed: int, count: int) -> tuple[list[tuple[str, int]], list[Fault]]:
    """The seed's pods (name, GPUs) and one-shot binding faults: three lost answers (504 after the write),
    two dropped connections after the write, two conflicts refused before it."""
    rng = random.Random(seed)
    pods = [(f"p{i:02d}", rng.choice((1, 2, 4))) for i in range(count)]
    chosen = rng.sample([name for name, _ in pods], 7)
    faults = [
        Fault("POST", rf".*/pods/{n}/binding", 504, "Timeout", TIMEOUT_MESSAGE, after=True)
        for n in chosen[:3]
    ]
    faults += [Fault("POST", rf".*/pods/{n}/binding", 0, after=True) for n in chosen[3:5]]
    conflict = 'Operation cannot be fulfilled on pods/binding "{}": the object has been modified'
    faults += [
        Fault("POST", rf".*/pods/{n}/binding", 409, "Conflict", conflict.format(n)) for n in chosen[5:]
    ]
    return pods, faults


@pytest.mark.parametrize("seed", [7, 23])
def test_faults_leave_no_node_over_allocatable_no_device_twice_and_every_pod_bound_once_or_explained(
    api: RunningApiServer, start_scheduler: Callable[..., Component], seed: int
) -> None:
    pods, faults = plan(seed, 16)
    # more GPUs asked than the 3 × 8 there are, so some pods stay pending and must be explained
    assert sum(g for _, g in pods) > len(NODES) * GPUS_PER_NODE
    for node in NODES:
        api.emulator.create("nodes", gpu_node(node, GPUS_PER_NODE))
    api.emulator.faults += faults
    first = start_scheduler("replica-a", "--profile", "kubegpu")
    wait_until(lambda: api.emulator.get("leases", "kube-system", "kubegpu-scheduler"), what="lease created")
    second = start_scheduler("replica-b", "--profile", "kubegpu")
    # a third replica without election beside the holder: refused, exit 1, binds nothing
    third = start_scheduler("replica-c", "--profile", "kubegpu", leader_elect=False)
    assert third.proc.wait(30) == 1, third.output()

    half = len(pods) // 2
    for name, g in pods[:half]:
        api.emulator.create("pods", gpu_pod(name, g))
    wait_until(lambda: settled(api, [n for n, _ in pods[:half]]), what="first half settled")
    check_invariants(api, [n for n, _ in pods[:half]])

    # watch restart: history compacted and every stream cut, so the reflectors relist (410 Gone)
    api.emulator.compact()
    api.emulator.drop_watches()
    for name, g in pods[half:]:
        api.emulator.create("pods", gpu_pod(name, g))
    first.kill()  # the holder dies mid-run; the standby waits out the 3 s lease, then binds the rest
    names = [n for n, _ in pods]
    wait_until(lambda: settled(api, names), timeout=40, what="every pod bound or explained")
    check_invariants(api, names)
    agents = {agent.rsplit("/", 1)[1] for _, _, agent in api.emulator.bindings}
    assert agents <= {"replica-a", "replica-b"}  # only the two electing replicas ever bound
    assert second.proc.poll() is None, second.output()
    # every bound pod that had a fault went through it (its first Binding POST met the fault)
    faulted = {f.path.removeprefix(".*/pods/").removesuffix("/binding"): f for f in faults}
    served = [n for n, f in faulted.items() if node_of(api, n)]
    assert served and all(faulted[n].times == 0 for n in served)
    assert any(not node_of(api, n) for n in names)  # the oversubscription left pods explained
