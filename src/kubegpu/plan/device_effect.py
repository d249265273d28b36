"""What a node's device change (time-slicing, MIG re-partition) does, by the one scheduling core (R6.2, R6.3, R15).

``with_effect`` takes a ``plan_time_slicing`` / ``plan_mig`` result and the node it leaves behind
(``time_sliced_after`` / ``mig_partitioned_node``, on ``time_sliced_node`` and the layout: the same nodes
``kubegpu simulate --time-slicing`` / ``--mig-layout`` schedule on) and adds the effect ``plan.effect`` computes on the snapshot: the pods the
runbook moves are evicted (their controllers' replacements placed one after another, or refused by quota
admission), pending pods that gain or lose a node, capacity and allocatable before → after, the pending
pods kubelet would then refuse on the node, GPU-hours at risk, and the PDB and checkpoint warnings.

Which running pods lose their devices follows from how the NVIDIA components apply the change:

- time-slicing: the device plugin's config-manager sidecar sees ``nvidia.com/device-plugin.config``
  change, writes the selected config and sends the plugin SIGHUP; the plugin stops every gRPC server and
  registers again with kubelet. Kubelet keeps running containers and their device nodes (re-registration
  kills nothing), but a replica's device ID is ``<UUID>::<n>`` and a whole GPU's is the UUID, so the
  allocations kubelet checkpointed name devices the plugin no longer lists: kubelet would hand the same
  GPUs out again beside the pods still using them, and under a rename the old resource name is gone. So
  the pods of the changed resource move first (the runbook deletes them): they are the evicted ones.
  Pods holding MIG devices keep them: the plugin lists the same IDs again.
- MIG: the MIG manager pauses the GPU clients it manages (``nvidia.com/gpu.deploy.*`` set to
  ``paused-for-mig-change``: device plugin, GFD, DCGM exporter), re-partitions with mig-parted, which
  destroys every GPU instance of the GPU (one still in use cannot be destroyed: the state stays
  ``pending`` or turns ``failed``), and restarts the clients, whose plugin registers the new resources.
  Every pod holding a device of the node loses it: the runbook moves all of them.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from kubegpu.model.names import GPU_MEMORY_LABEL as MEMORY_LABEL
from kubegpu.model.names import NVIDIA_PREFIX
from kubegpu.model.objects import Node
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import Effect, simulate
from kubegpu.plan.node_ops import checkpoint_warnings, gpu_pods, pdb_warnings
from kubegpu.plan.pitfalls import Pitfall, flagged, scattered_pods
from kubegpu.plan.procedure import NodeChange

DEVICE_PLUGIN = {
    "time-slicing": "the device plugin restarts on SIGHUP and registers again; running containers keep their "
    "device nodes, but the device IDs of the changed resource change, so its pods move first (kubelet would "
    "otherwise hand their GPUs out again); pods holding MIG devices keep them",
    "mig": "the MIG manager stops the GPU clients, destroys every GPU instance and recreates the layout (an "
    "instance in use cannot be destroyed), then the device plugin registers the new resources: every pod "
    "holding a device of the node loses it, so all of them move first",
}


def with_effect(snapshot: ClusterSnapshot, change: NodeChange, after: Node, now: datetime) -> NodeChange:
    """``change`` with ``details.effect``: the runbook's end state (``after`` in place of the node, the pods
    it moves evicted) scheduled by the core against the snapshot as it is."""
    moved = {f"{a.namespace}/{a.name}" for a in change.affected}
    evicted = [p for p in snapshot.pods if p.key in moved]
    effect = simulate(snapshot, {after.name: after}, moved, now, kubelet_on={after.name})
    kept: list[dict[str, Any]] = [
        {"pod": p.key, "resources": {r: v // 1000 for r, v in p.requests.items() if r.startswith(NVIDIA_PREFIX) and v}}
        for p in gpu_pods(snapshot, after.name)
        if p.key not in moved
    ]  # fmt: skip
    details = {
        **change.details,
        "effect": {**effect.as_dict(), "devices_kept": kept},
        "device_plugin": DEVICE_PLUGIN[change.kind],
    }
    warnings = (
        *change.warnings,
        *pdb_warnings(snapshot, evicted, deleted=True),
        *checkpoint_warnings(evicted),
    )
    shared = _replica_memory(change, after, effect) if change.kind == "time-slicing" else []
    return flagged(replace(change, warnings=warnings, details=details), [*shared, *scattered_pods(effect)])


def _replica_memory(change: NodeChange, after: Node, effect: Effect) -> list[Pitfall]:
    """R17.3: the pods that will hold replicas of the node's GPUs once the change is done share each GPU's
    memory — the moved pods that come back there and the pending ones that land there, less those kubelet
    fails at admission."""
    replicas = int(str(change.details.get("replicas", 1)))
    refused = {r["pod"] for r in effect.kubelet_rejections if r["reason"]}
    landing = [r["pod"] for r in effect.evicted if r["lands"] == after.name] + [
        r["pod"] for r in effect.newly_schedulable if r["node"] == after.name
    ]
    sharing = [p for p in landing if p not in refused]
    if replicas < 2 or not sharing:
        return []
    mib = after.labels.get(MEMORY_LABEL, "")
    memory = f"{mib} MiB" if mib.isdigit() else "memory"
    return [
        Pitfall(
            "R17.3",
            (f"node/{after.name}", *(f"pod/{p}" for p in sharing)),
            f"{', '.join(sharing)} will hold replicas on {after.name}: a replica is a turn on a GPU, not 1/{replicas} "
            f"of it — each sees the GPU's whole {memory} and up to {replicas} pods allocate from it, nothing caps one. "
            "Fix: cap memory in each application (and watch the memory-near-full finding of `kubegpu inspect "
            "--prometheus`), or give pods that need a memory bound MIG instances or whole GPUs.",
        )
    ]
