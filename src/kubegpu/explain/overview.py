"""The cluster's GPU overview: per node, its pool, product, taints, GPU capacity/allocatable/requested and
who holds what (R2.1, R11.3, R13.4, R16). Requested means the pods' requests, not utilisation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubegpu.explain.dra_inventory import NodeDevices, node_devices, partitionable
from kubegpu.explain.engine import Engine
from kubegpu.explain.findings import gpu_resources, has_gpu_labels
from kubegpu.explain.schedulers import is_scheduler_resource
from kubegpu.explain.shared_evidence import store_for
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL, GPU_PRODUCT_LABEL, node_pool
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu


@dataclass
class NodeRow:
    name: str
    pool: str
    product: str
    ready: bool
    unschedulable: bool
    taints: list[str]
    gpu: dict[str, dict[str, str]]  # resource -> capacity / allocatable / requested / free
    holders: list[str] = field(default_factory=list)  # "namespace: pod, pod (2)" — pods holding GPUs

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "pool": self.pool, "product": self.product, "ready": self.ready,
            "unschedulable": self.unschedulable, "taints": self.taints, "gpu": self.gpu, "holders": self.holders,
        }  # fmt: skip


def node_rows(engine: Engine, pool_label: str = DEFAULT_POOL_LABEL, gpu_only: bool = True) -> list[NodeRow]:
    rows = []
    snap = engine.snapshot
    dra = dra_nodes(engine)
    for node in snap.nodes:
        published = dra.get(node.name)
        if gpu_only and not (gpu_resources(node) or has_gpu_labels(node) or published):
            continue
        idx = engine.cluster.index[node.name]
        view = engine.cluster.view(idx)
        # a resource a GPU scheduler counts itself (HAMi's gpucores, gpumem) has no node total to compare: a
        # row of capacity 0 would read as a shortage, so only a node that lists it shows it
        names = sorted(
            {
                *gpu_resources(node),
                *(r for p in view.pods for r in p.requests if is_gpu(r) and not is_scheduler_resource(r)),
            }
        )
        if published:  # a GPU resource the node does not list is served by its DRA devices (KEP-5004)
            names = [r for r in names if r in node.capacity]
        gpu = {
            r: {
                "capacity": format_milli(r, node.capacity.get(r, 0)),
                "allocatable": format_milli(r, node.allocatable.get(r, 0)),
                "requested": format_milli(r, view.requested(r)),
                "free": format_milli(r, max(view.free(r), 0)),
            }
            for r in names
        }
        for row, (total, taken) in published.rows.items() if published else ():
            gpu[row] = {"capacity": str(total), "allocatable": str(total), "requested": str(taken),
                        "free": str(total - taken)}  # fmt: skip
        by_ns: dict[str, list[str]] = {}
        listed: set[str] = set()
        for p in sorted(view.pods, key=lambda p: p.key):
            held = {r: v for r, v in p.requests.items() if is_gpu(r) and v}
            if held:
                amounts = [
                    format_milli(r, v) + ("" if r == "nvidia.com/gpu" else f" {r}") for r, v in held.items()
                ]
                shown = p.name if amounts == ["1"] else f"{p.name} ({', '.join(amounts)})"
                by_ns.setdefault(p.namespace, []).append(shown)
                listed.add(p.key)
        # pods holding the node's DRA devices through their claims (one served through a special claim for
        # its nvidia.com/gpu request is listed above by that request)
        for key, held_rows in sorted(published.holders.items()) if published else ():
            if key not in listed:
                ns, _, name = key.partition("/")
                by_ns.setdefault(ns, []).append(
                    f"{name} ({', '.join(f'{n} {r}' for r, n in held_rows.items())})"
                )
        holders = [f"{ns}: {', '.join(names)}" for ns, names in sorted(by_ns.items())]
        rows.append(NodeRow(
            node.name, node_pool(node.labels, pool_label),
            node.labels.get(GPU_PRODUCT_LABEL, "") or (published.product if published else ""), node.ready,
            node.unschedulable, [str(t) for t in node.taints], gpu, holders,
        ))  # fmt: skip
    return rows


def dra_nodes(engine: Engine) -> dict[str, NodeDevices]:
    """Per node, the NVIDIA DRA devices it publishes (``dra_inventory.node_devices``); empty without
    ResourceSlices. Kept per engine (the node rows and the totals both read it: 0.3 s each at 5,000 DRA
    nodes): it reads the snapshot's slices and claims only, which scheduling never changes (a preemption
    dry run between the two readings moves the cluster's version, not them)."""
    if not engine.snapshot.dra.slices:
        return {}
    return store_for(engine).fact((dra_nodes,), lambda: node_devices(engine.snapshot, partitionable(engine)))
