"""ClusterState: the scheduler's mutable, columnar view of nodes and the pods placed on them.

Upstream keeps a ``NodeInfo`` per node (requested, non-zero requested, pods, used ports, generation).
kubegpu keeps the same facts as numpy columns — ``allocatable[N, R]``, ``requested[N, R]`` in integer
milli-units — so filters and scores run over thousands of nodes in a few array operations, and keeps a
per-node ``generation`` so cached per-equivalence-class filter results recompute only the nodes that
changed. Every change goes through ``add_pod`` / ``remove_pod``, journalled, so dry runs (preemption,
gangs, plans) roll back exactly instead of copying the cluster.

Nominations (upstream's nominator in the scheduling queue): pending pods nominated to a node by
preemption (``status.nominatedNodeName``) are kept per node beside the placed pods, not in the columns;
the filter pass adds the ones that outrank the incoming pod for a what-if first pass
(``Scheduler.filter_with_nominated``).

Node order follows the scheduler cache's node tree: nodes interleaved round-robin across zones
(``topology.kubernetes.io/zone``), in the order zones and nodes were first seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from kubegpu.devices.node_devices import NodeDevices
from kubegpu.model.names import ZONE_LABEL
from kubegpu.model.objects import HostPort, Node, Pod, PodKey, Taint
from kubegpu.model.quantity import WHOLE_MAX, saturate, saturated_total
from kubegpu.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kubegpu.scheduler.device_ledger import Assignment, DeviceLedger
from kubegpu.scheduler.pod_groups import PodGroups

FIRST_COLUMNS = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
CPU_MEMORY_COLUMNS: Final = slice(0, 2)  # FIRST_COLUMNS' first two: the CPU and memory columns, together
# what one pod takes of ``ClusterState.free``'s pods column (pods are counted in thousandths there, as
# every column is in milli-units)
POD_UNITS: Final = 1000
# ``ClusterState.beyond``'s keys for the non-zero requested columns (``nonzero_cpu``, ``nonzero_memory``)
NON_ZERO: Final = "non-zero "
NON_ZERO_CPU: Final = NON_ZERO + CPU
NON_ZERO_MEMORY: Final = NON_ZERO + MEMORY

IntArray = npt.NDArray[np.int64]
NO_PODS = np.iinfo(np.int64).max
NO_NOMINATION = np.iinfo(np.int64).min
# fewer rows than this many per column wanted are picked row first (whole rows, then the columns), more
# column by column: measured (min of repeats) on 4 of 6 and of 20 columns, the two cost the same at ~200 rows
FEW_ROWS_PER_COLUMN = 50


def columns(matrix: IntArray, rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp]) -> IntArray:
    """``matrix[rows][:, cols]`` without copying every column of many rows: numpy's 2-D fancy indexing
    (``np.ix_``) costs ~80 ns an element, a column view then its rows ~20 ns."""
    if len(rows) < FEW_ROWS_PER_COLUMN * len(cols):
        return matrix.take(rows, axis=0).take(cols, axis=1)
    out = np.empty((len(rows), len(cols)), dtype=matrix.dtype)
    for j, c in enumerate(cols.tolist()):
        out[:, j] = matrix[:, c][rows]
    return out


def node_tree_order(nodes: Sequence[Node]) -> list[Node]:
    """Upstream ``nodeTree.list()``: one node from each zone in turn until every zone is exhausted."""
    zones: dict[str, list[Node]] = {}
    for n in nodes:
        zones.setdefault(n.labels.get(ZONE_LABEL, ""), []).append(n)
    if len(zones) <= 1:
        return list(nodes)
    ordered: list[Node] = []
    depth = 0
    while len(ordered) < len(nodes):
        for members in zones.values():
            if depth < len(members):
                ordered.append(members[depth])
        depth += 1
    return ordered


class PodListener(Protocol):
    """Told after every ``add_pod`` / ``remove_pod`` (journal rollbacks included), so a ledger kept beside
    the cluster state (the GpuShare ledger) stays equal to it through dry runs."""

    def pod_added(self, pod: Pod, idx: int, restored: bool = False) -> None:
        """``restored``: a journal rollback re-adding a pod this state had removed (not a new placement)."""
        ...

    def pod_removed(self, pod: Pod, idx: int) -> None: ...


@dataclass(frozen=True, slots=True)
class NodeView:
    """One row of the cluster state, read by scalar (reference) plugin methods and by ``explain``."""

    cluster: ClusterState
    idx: int

    @property
    def node(self) -> Node:
        return self.cluster.nodes[self.idx]

    @property
    def name(self) -> str:
        return self.cluster.nodes[self.idx].name

    def allocatable(self, resource: str) -> int:
        col = self.cluster.col.get(resource)
        return 0 if col is None else int(self.cluster.allocatable[self.idx, col])

    def requested(self, resource: str) -> int:
        col = self.cluster.col.get(resource)
        return 0 if col is None else int(self.cluster.requested[self.idx, col])

    def free(self, resource: str) -> int:
        """Allocatable minus requested ``resource`` (for ``pods``: the pods column's allocatable, as the
        node reports it; ``ClusterState.free`` keeps pods left in thousandths instead, for NodeResourcesFit)."""
        return self.allocatable(resource) - self.requested(resource)

    @property
    def pods(self) -> list[Pod]:
        return list(self.cluster.pods_on[self.idx].values())

    @property
    def pod_count(self) -> int:
        return int(self.cluster.pod_count[self.idx])

    @property
    def host_ports(self) -> list[HostPort]:
        return [hp for p in self.cluster.pods_on[self.idx].values() for hp in p.host_ports]


class ClusterState:
    """Nodes (fixed rows) and assigned pods (mutable), with a journal for exact rollback."""

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Iterable[Pod] = (),
        device_models: Mapping[str, NodeDevices] | None = None,
        namespace_labels: Mapping[str, dict[str, str]] | None = None,
        non_zero_before_1_32: bool = False,
    ) -> None:
        # 1.30-1.31 count a placed pod's non-zero requests by their own rule (``Pod.non_zero_before_1_32``)
        self.non_zero_before_1_32 = non_zero_before_1_32
        self.nodes: list[Node] = node_tree_order(nodes)
        self.index: dict[str, int] = {n.name: i for i, n in enumerate(self.nodes)}
        n = len(self.nodes)
        names = set(FIRST_COLUMNS)
        for node in self.nodes:
            names.update(node.allocatable)
        self.resources: list[str] = list(FIRST_COLUMNS) + sorted(names - set(FIRST_COLUMNS))
        self.col: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.allocatable: IntArray = np.zeros((n, len(self.resources)), dtype=np.int64)
        for i, node in enumerate(self.nodes):
            for r, amount in node.allocatable.items():
                self.allocatable[i, self.col[r]] = amount
        self.requested: IntArray = np.zeros_like(self.allocatable)
        # allocatable − requested, kept in step by every change, so NodeResourcesFit's Filter gathers one
        # matrix instead of two and a subtraction; its ``pods`` column is POD_UNITS × the pods the node can
        # still take (a pod "requests" POD_UNITS there), so ``Too many pods`` is one more column of the compare
        self.free: IntArray = self.allocatable.copy()
        self.nonzero_cpu: IntArray = np.zeros(n, dtype=np.int64)
        self.nonzero_memory: IntArray = np.zeros(n, dtype=np.int64)
        self.pod_count: IntArray = np.zeros(n, dtype=np.int64)
        # lowest pod priority per node (int64 max when empty): preemption skips nodes with nothing lower
        self.min_priority: IntArray = np.full(n, NO_PODS, dtype=np.int64)
        self.max_pods: IntArray = self.allocatable[:, self.col[PODS]] // 1000
        self._pods_col = self.col[PODS]
        self.free[:, self._pods_col] = self.max_pods * POD_UNITS
        self.unschedulable = np.array([node.unschedulable for node in self.nodes], dtype=bool)
        self.taint_sets: list[tuple[Taint, ...]] = []
        taint_ids: dict[tuple[Taint, ...], int] = {}
        self.taint_set_id = np.zeros(n, dtype=np.int32)
        for i, node in enumerate(self.nodes):
            self.taint_set_id[i] = taint_ids.setdefault(node.taints, len(taint_ids))
        self.taint_sets = list(taint_ids)
        self.pods_on: list[dict[PodKey, Pod]] = [{} for _ in range(n)]
        self.placement: dict[PodKey, int] = {}
        self.generation: IntArray = np.zeros(n, dtype=np.int64)
        self.clock = 0
        # per node, a stamp that changes with every change and never repeats: ``what_if`` restores
        # ``generation`` (so filter results cached before it stay valid), which lets a value cached during a
        # dry run meet a later real change with the same generation; ``node_cache.NodeCache`` keys on this
        self.version: IntArray = np.zeros(n, dtype=np.int64)
        self._versions = 0
        # per node, the clock when the Node object itself last changed (a cordon); pods coming and going
        # leave it: filters that read the node alone stay valid across them (``Framework.first_pod_reader``)
        self.node_generation: IntArray = np.zeros(n, dtype=np.int64)
        self.last_node_change = 0  # the largest of ``node_generation``
        # (op, pod, node, device assignment, whether that assignment was a stand-in nobody recorded)
        self.journal: list[tuple[str, Pod, int, Assignment | None, bool]] = []
        models = device_models or {}
        self.devices = DeviceLedger([models.get(node.name) for node in self.nodes])
        self._label_columns: dict[str, tuple[npt.NDArray[np.int32], list[str]]] = {}
        self._label_ids: dict[str, dict[str, int]] = {}
        self.orphans: list[Pod] = []  # assigned to a node the snapshot does not hold
        self.nominated: dict[int, dict[PodKey, Pod]] = {}  # node → pending pods nominated to it
        self.nominated_to: dict[PodKey, int] = {}
        # per node: the highest nominated priority (int64 min: none) and a counter bumped on every change
        self.nominated_top: IntArray = np.full(n, NO_NOMINATION, dtype=np.int64)
        self.nominated_version: IntArray = np.zeros(n, dtype=np.int64)
        self.listeners: list[PodListener] = []
        # (resource, node) → the exact total of a node's column at or beyond its bound (``_sum_beyond``); the
        # column itself holds it saturated. Empty unless the snapshot holds amounts beyond int64 milli-units.
        self.beyond: dict[tuple[str, int], int] = {}
        # placed pods by label group and affinity group (inter-pod affinity, topology spread)
        self.groups = PodGroups(n)
        # namespace → its labels (a pod affinity term's namespaceSelector reads them); absent: no labels
        self.namespace_labels: dict[str, dict[str, str]] = dict(namespace_labels or {})
        for pod in pods:
            if pod.node_name and not pod.is_terminal:
                idx = self.index.get(pod.node_name)
                if idx is None:
                    self.orphans.append(pod)
                else:  # counts now, device IDs when the node's devices are first used (DeviceLedger)
                    self._account(pod, idx)
                    self.devices.defer(pod, idx)
                    self._touch(idx)

    def __len__(self) -> int:
        return len(self.nodes)

    def view(self, idx: int) -> NodeView:
        return NodeView(self, idx)

    def column(self, resource: str) -> int:
        """The column of ``resource``, adding a zero column for a name no node advertises."""
        col = self.col.get(resource)
        if col is None:
            col = len(self.resources)
            self.resources.append(resource)
            self.col[resource] = col
            pad = np.zeros((len(self.nodes), 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad])
            self.free = np.hstack([self.free, pad])
        return col

    def request_vector(self, requests: Mapping[str, int]) -> tuple[npt.NDArray[np.intp], IntArray]:
        cols = np.array([self.column(r) for r in requests], dtype=np.intp)
        return cols, np.array(list(requests.values()), dtype=np.int64)

    def label_column(self, key: str) -> tuple[npt.NDArray[np.int32], list[str]]:
        """Node label ``key`` as value ids per node (-1 where absent) plus the id → value table."""
        cached = self._label_columns.get(key)
        if cached is None:
            values: dict[str, int] = {}
            ids = np.array(
                [
                    values.setdefault(node.labels[key], len(values)) if key in node.labels else -1
                    for node in self.nodes
                ],
                dtype=np.int32,
            )
            cached = (ids, list(values))
            self._label_columns[key] = cached
        return cached

    def label_ids(self, key: str) -> dict[str, int]:
        """``label_column``'s id → value table inverted: value → id."""
        cached = self._label_ids.get(key)
        if cached is None:
            cached = self._label_ids[key] = {v: i for i, v in enumerate(self.label_column(key)[1])}
        return cached

    def _touch(self, idx: int) -> None:
        self.clock += 1
        self.generation[idx] = self.clock
        self._versions += 1
        self.version[idx] = self._versions

    def moved(self, rows: npt.NDArray[np.intp], seen: IntArray) -> npt.NDArray[np.intp]:
        """Of ``rows``, those whose version differs from ``seen`` (a cache's per-node stamps), with
        ``seen`` brought up to date for them: the nodes a per-node cache must recompute now. The version,
        not the generation: a ``what_if`` rollback restores generations, so a value computed in a dry run
        would match a later real change of the same generation."""
        stale: npt.NDArray[np.intp] = rows[self.version[rows] != seen[rows]]
        seen[stale] = self.version[stale]
        return stale

    def moved_any(self, seen: IntArray) -> npt.NDArray[np.intp]:
        """``moved`` over every node (no gather of every row)."""
        # ``nonzero`` directly: flatnonzero's wrappers cost 1 µs
        stale: npt.NDArray[np.intp] = (self.version != seen).nonzero()[0]
        seen[stale] = self.version[stale]
        return stale

    def _charge(self, pod: Pod, idx: int, sign: int) -> None:
        """Add (``sign`` 1) or take back (-1) ``pod``'s requests, non-zero requests and pod count on node
        ``idx``, with ``free`` kept equal to allocatable − requested."""
        beyond = self.beyond  # empty unless some node's total is past its column's bound
        for r, amount in pod.requests.items():
            col = self.col.get(r)
            if col is None:
                col = self.column(r)  # widens the arrays: index them only afterwards
            change = sign * amount
            # checked in Python ints: numpy's int64 would wrap silently past the column (quantity.saturate)
            now = int(self.requested[idx, col]) + change
            if beyond or not -WHOLE_MAX < now < WHOLE_MAX:
                now = self._sum_beyond((r, idx), now, change)
                self.requested[idx, col] = now
                if col != self._pods_col:
                    self.free[idx, col] = saturate(r, int(self.allocatable[idx, col]) - now)
                continue
            self.requested[idx, col] = now
            if col != self._pods_col:  # that column counts pods (a request for ``pods`` is no request)
                self.free[idx, col] -= change  # within int64: allocatable and requested lie in [0, bound]
        if self.non_zero_before_1_32:
            nz_cpu, nz_memory = pod.non_zero_before_1_32
        else:
            nz = pod.non_zero_requests
            nz_cpu, nz_memory = nz.get(CPU, 0), nz.get(MEMORY, 0)
        now = int(self.nonzero_cpu[idx]) + sign * nz_cpu
        if beyond or not -WHOLE_MAX < now < WHOLE_MAX:
            now = self._sum_beyond((NON_ZERO_CPU, idx), now, sign * nz_cpu)
        self.nonzero_cpu[idx] = now
        now = int(self.nonzero_memory[idx]) + sign * nz_memory
        if beyond or not -WHOLE_MAX < now < WHOLE_MAX:
            now = self._sum_beyond((NON_ZERO_MEMORY, idx), now, sign * nz_memory)
        self.nonzero_memory[idx] = now
        self.pod_count[idx] += sign
        self.free[idx, self._pods_col] -= sign * POD_UNITS

    def _sum_beyond(self, key: tuple[str, int], stored: int, change: int) -> int:
        """A node's total that is or was beyond its column (``quantity.saturate``): kept exact in ``beyond``
        (so taking a pod back, and a rollback, restore it exactly), stored saturated."""
        resource = key[0].removeprefix(NON_ZERO)
        exact = self.beyond.pop(key, None)
        now = stored if exact is None else exact + change
        held = saturate(resource, now)
        if held != now:
            self.beyond[key] = now
        return held

    def saturated(self, resources: Iterable[str]) -> list[str]:
        """A note per node whose summed requests of one of ``resources`` are beyond the column bound
        (``beyond``), held there."""
        wanted = set(resources)
        return [
            saturated_total(resource, f"node {self.nodes[idx].name}: requested")
            for resource, idx in sorted(self.beyond, key=lambda key: (key[1], key[0]))
            if resource in wanted
        ]

    def _account(self, pod: Pod, idx: int) -> None:
        """The counts of ``add_pod``: requests, non-zero requests, pod count, lowest priority, placement."""
        self._charge(pod, idx, 1)
        if pod.priority < self.min_priority[idx]:
            self.min_priority[idx] = pod.priority
        self.pods_on[idx][pod.key] = pod
        self.placement[pod.key] = idx
        self.groups.add(pod, idx, 1)

    def add_pod(
        self,
        pod: Pod,
        idx: int,
        devices: Assignment | None = None,
        assumed: bool = False,
        restored: bool = False,
    ) -> None:
        """Account ``pod`` on node ``idx`` (upstream ``NodeInfo.AddPod``) and its device IDs; journalled.
        ``restored``: a rollback undoing this pod's removal (listeners give it back what it held)."""
        self._account(pod, idx)
        assigned = self.devices.assign(pod, idx, devices, assumed)
        self.journal.append(("add", pod, idx, assigned, self.devices.is_assumed(pod.key, idx)))
        self._touch(idx)
        for listener in self.listeners:
            listener.pod_added(pod, idx, restored)

    def remove_pod(self, pod: Pod) -> int:
        """Release ``pod`` from its node (upstream ``NodeInfo.RemovePod``); returns the node index."""
        idx = self.placement.pop(pod.key)
        pod = self.pods_on[idx].pop(pod.key)
        self._charge(pod, idx, -1)
        self.min_priority[idx] = min((p.priority for p in self.pods_on[idx].values()), default=NO_PODS)
        self.groups.add(pod, idx, -1)
        was_assumed = self.devices.is_assumed(pod.key, idx)
        released = self.devices.release(pod, idx)
        self.journal.append(("remove", pod, idx, released, was_assumed))
        self._touch(idx)
        for listener in self.listeners:
            listener.pod_removed(pod, idx)
        return idx

    def update_pod(self, pod: Pod) -> None:
        """Swap a placed pod's stored object for an updated copy with the same requests (a status change,
        such as ``metadata.deletionTimestamp`` set when it starts terminating); it stays where it is."""
        idx = self.placement[pod.key]
        self.groups.add(self.pods_on[idx][pod.key], idx, -1)
        self.pods_on[idx][pod.key] = pod
        self.groups.add(pod, idx, 1)
        self._touch(idx)

    def nominate(self, pod: Pod, node_name: str) -> None:
        """Record ``pod`` as nominated to ``node_name`` (upstream ``AddNominatedPod``); an empty or
        unknown node name only clears an earlier nomination."""
        self.unnominate(pod.key)
        idx = self.index.get(node_name) if node_name else None
        if idx is not None:
            self.nominated.setdefault(idx, {})[pod.key] = pod
            self.nominated_to[pod.key] = idx
            self._nominations_changed(idx)

    def unnominate(self, key: PodKey) -> None:
        """Forget ``key``'s nomination (upstream ``DeleteNominatedPodIfExists``)."""
        if not self.nominated_to:  # nothing nominated: every cycle of a run without preemption asks
            return
        idx = self.nominated_to.pop(key, None)
        if idx is not None:
            pods = self.nominated[idx]
            pods.pop(key, None)
            if not pods:
                del self.nominated[idx]
            self._nominations_changed(idx)

    def _nominations_changed(self, idx: int) -> None:
        pods = self.nominated.get(idx, {})
        self.nominated_top[idx] = max((p.priority for p in pods.values()), default=NO_NOMINATION)
        self.nominated_version[idx] += 1

    def nominated_node(self, pod: Pod) -> str:
        """The node ``pod`` is nominated to: this state's record, else its ``status.nominatedNodeName``."""
        if not self.nominated_to:  # (no record to look the pod's key up in)
            return pod.nominated_node_name
        idx = self.nominated_to.get(pod.key)
        return self.nodes[idx].name if idx is not None else pod.nominated_node_name

    def nominated_for(self, idx: int, pod: Pod) -> list[Pod]:
        """Upstream ``addGENominatedPods``' selection: the pods nominated to node ``idx`` whose priority is
        at least ``pod``'s, other than ``pod`` itself (and none already placed somewhere)."""
        pods = self.nominated.get(idx)
        if not pods:
            return []
        own = pod.key
        return [
            p for k, p in pods.items() if p.priority >= pod.priority and k != own and k not in self.placement
        ]

    @contextmanager
    def what_if(self) -> Iterator[None]:
        """Changes made inside are rolled back on exit, node generations and the clock included: the
        state is exactly as before, so filter results cached against generations stay valid."""
        mark, clock, generation = self.mark(), self.clock, self.generation.copy()
        try:
            yield
        finally:
            self.rollback(mark)
            self.clock, self.generation = clock, generation

    def set_unschedulable(self, idx: int, cordoned: bool) -> None:
        """Cordon or uncordon node ``idx`` (``spec.unschedulable``); pods already there stay."""
        self.nodes[idx] = replace(self.nodes[idx], unschedulable=cordoned)
        self.unschedulable[idx] = cordoned
        self._touch(idx)
        self.node_generation[idx] = self.last_node_change = self.clock

    def restore_order(self, idx: int, keys: list[PodKey]) -> None:
        """Put node ``idx``'s pods back in the order ``keys`` (the same pods, as listed before a dry run):
        a rollback adds a removed pod back at the end, and the order is the order victims of equal importance
        are considered in. Upstream's dry runs work on a copy of the node (``NodeInfo.Snapshot``), so they
        leave the cache's order as it was."""
        pods = self.pods_on[idx]
        if list(pods) != keys:
            kept = dict(pods)
            pods.clear()
            pods.update((k, kept[k]) for k in keys)

    def mark(self) -> int:
        """A point to roll back to (Volcano's ``Statement`` semantics, on the journal)."""
        return len(self.journal)

    def rollback(self, mark: int) -> None:
        """Undo every change after ``mark``, newest first; the arrays end bit-for-bit as they were."""
        while len(self.journal) > mark:
            op, pod, idx, assigned, assumed = self.journal.pop()
            if op == "add":
                self.remove_pod(pod)
            else:
                self.add_pod(pod, idx, assigned, assumed, restored=True)
            self.journal.pop()
