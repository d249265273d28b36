"""What kubegpu's HAMi notes read from every node and every pod, read once per snapshot, not once per Pending
HAMi pod: diagnose may explain 1,000 of them on 5,000 nodes, and each node's register annotation is a JSON
document to parse. Used by ``explain.grants`` (the vGPUs-over-physical-GPUs and stale-refusal notes) and
``explain.observed`` (the nodes hami-scheduler calls unregistered). Each read is made on its first use, so a
diagnosis that needs one does not pay for the others."""

from __future__ import annotations

from functools import cached_property

from kubegpu.admission.quota import quotas_in, resource_unit
from kubegpu.model.gpu_facts import hami_registered_gpus
from kubegpu.model.names import HAMI_NODE_REGISTER_ANNOTATION, HAMI_RESOURCES
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot


class HamiReads:
    """One snapshot's reads (``hami_reads`` keeps it on the snapshot), each made on its first use."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self._snapshot = snapshot

    @cached_property
    def _registered(self) -> tuple[bool, int | None]:
        """Whether a node's register annotation is unreadable, and the most physical GPUs one lists (None:
        no node has the annotation)."""
        listed = [
            hami_registered_gpus(n)
            for n in self._snapshot.nodes
            if HAMI_NODE_REGISTER_ANNOTATION in n.annotations
        ]
        return any(c is None for c in listed), max((c for c in listed if c is not None), default=None)

    def registered_below(self, vgpus: int) -> bool:
        """Every node HAMi registered (its register annotation, read) lists fewer physical GPUs than ``vgpus``:
        hami-scheduler refuses the container on all of them (a node without the annotation it calls
        unregistered; one whose annotation kubegpu cannot read might fit, so it is not counted as refusing)."""
        unreadable, most = self._registered
        return not unreadable and (most is None or most < vgpus)

    @cached_property
    def unregistered(self) -> list[str]:
        """The nodes without the register annotation, in the snapshot's order."""
        return [n.name for n in self._snapshot.nodes if HAMI_NODE_REGISTER_ANNOTATION not in n.annotations]

    @cached_property
    def _holders(self) -> dict[str, list[str]]:
        """Per node, the keys of the pods on it holding a GPU or a HAMi resource (Succeeded/Failed pods hold
        nothing)."""
        holders: dict[str, list[str]] = {}
        for p in self._snapshot.pods:
            if (
                p.node_name
                and not p.is_terminal
                and any(v and (is_gpu(r) or r in HAMI_RESOURCES) for r, v in p.requests.items())
            ):
                holders.setdefault(p.node_name, []).append(p.key)
        return holders

    def held_by_another(self, node_name: str, pod_key: str) -> bool:
        """A pod on ``node_name`` other than ``pod_key`` holds a GPU or a HAMi resource."""
        return any(k != pod_key for k in self._holders.get(node_name, ()))

    def quoted(self, namespace: str) -> bool:
        """A ResourceQuota in ``namespace`` names a HAMi resource (``requests.nvidia.com/gpumem`` or bare): the
        namespace's quotas by ``quotas_in``'s lookup, each key read as ``resource_unit`` reads quota keys."""
        return any(
            resource_unit(h) in HAMI_RESOURCES for q in quotas_in(self._snapshot, namespace) for h in q.hard
        )


def hami_reads(snapshot: ClusterSnapshot) -> HamiReads:
    """The snapshot's ``HamiReads``, kept while its pod and node lists are the ones it was read from."""
    return snapshot.derived("hami-reads", lambda: HamiReads(snapshot), over=(snapshot.nodes,))
