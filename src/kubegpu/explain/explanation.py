"""The explanation of one pod as data: per-node evidence, per-reason groups with advice, device grants.

``explain_pod`` (``explain.pending``) fills it; the CLI, the report and ``diagnose`` render it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from kubegpu.explain.kueue import KueueReading

if TYPE_CHECKING:  # (types only: the CLI imports this module at start)
    from kubegpu.scheduler.framework import Rows

# Where an evidence line turns to the node's own reading ("required term 0: zone In ['a']; node has zone=b"):
# the text before it is the pod's side, alike on every node the reason refuses; what follows is the
# node's. The cause modules write it; the table view merges nodes whose lines differ only after it.
NODE_HAS = "node has "


def node_part(line: str) -> tuple[str, str]:
    """``line`` as (the part alike on every node, through ``NODE_HAS``; the node's own reading after its
    last occurrence); a line without it is all alike: (line, "")."""
    head, sep, tail = line.rpartition(NODE_HAS)
    return (head + sep, tail) if sep else (line, "")


@dataclass(slots=True)  # (slots: thousands per Pending pod; explain.shared_evidence shares them, unchanged)
class NodeEvidence:
    name: str
    plugin: str
    reasons: list[str]
    code: str
    evidence: list[str] = field(default_factory=list)
    # the structured kinds behind ``reasons`` (``scheduler.reasons.Reason.kind``), for code that sorts nodes
    # by cause without reading the texts; not part of the output
    kinds: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "plugin": self.plugin,
            "reasons": self.reasons,
            "code": self.code,
            "evidence": self.evidence,
        }


class NodeList(Sequence[NodeEvidence]):
    """The refused nodes' ``NodeEvidence`` in node order (``Explanation.nodes``), built when first read.

    The table view of ``diagnose`` reads a few nodes' evidence per group of Pending pods (the nearest
    misses); ``--pod``, ``--node`` and ``-o json`` read all of it. Building all of it for every Pending pod
    cost most of ``diagnose`` where the evidence reads the pod (a hostname pin: 4,999 lines of its own per
    pod on 5,000 nodes), so it is built on first read, in full (``every``), or for a few nodes (``pick``).
    ``blocks``: the nodes as disjoint sets, each its cluster rows (ascending) and the structured kinds of
    the reasons that refused them (``NodeEvidence.kinds``), with what builds any of those rows' evidence
    (a node's evidence reads that node alone, so a part builds as it would in full). ``names``: every
    cluster row's node name."""

    __slots__ = ("_built", "_every", "_now", "_rows", "_stamp", "blocks", "names")

    def __init__(
        self,
        rows: Rows,
        blocks: list[tuple[Rows, tuple[str, ...], Callable[[Rows], list[NodeEvidence]]]],
        every: Callable[[], list[NodeEvidence]],
        names: npt.NDArray[np.object_],
        now: Callable[[], int],
    ) -> None:
        self._rows = rows  # every refused node's row, ascending (node order)
        self.blocks = blocks
        self.names = names
        self._every = every
        self._built: list[NodeEvidence] | None = None
        # the cluster state's stamp (``ClusterState.version``'s largest: it moves with every change and
        # never repeats): evidence read once it moved would be of another state than the verdicts'
        self._now = now
        self._stamp = now()

    def _check(self) -> None:
        if self._now() != self._stamp:
            raise RuntimeError("node evidence read after the cluster state it explains changed")

    def _all(self) -> list[NodeEvidence]:
        if self._built is None:
            self._check()
            self._built = self._every()
        return self._built

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> NodeEvidence: ...
    @overload
    def __getitem__(self, i: slice) -> list[NodeEvidence]: ...
    def __getitem__(self, i: int | slice) -> NodeEvidence | list[NodeEvidence]:
        return self._all()[i]

    def __iter__(self) -> Iterator[NodeEvidence]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # (as a list: compared by value, so not hashable)

    def pick(self, rows: list[int]) -> list[NodeEvidence]:
        """The evidence of the refused nodes at cluster ``rows``, in that order, building only theirs."""
        if self._built is not None:
            at = np.searchsorted(self._rows, rows)
            return [self._built[int(i)] for i in at]
        self._check()
        wanted = np.array(rows, dtype=np.intp)
        found: dict[int, NodeEvidence] = {}
        for block_rows, _, build in self.blocks:
            some = wanted[np.isin(wanted, block_rows)]
            if some.size:
                some.sort()
                found.update(zip(some.tolist(), build(some), strict=True))
        return [found[r] for r in rows]


@dataclass
class ReasonGroup:
    reason: str
    nodes: list[str]
    fix: str
    pitfall: str
    commands: list[str]
    # the nodes' rows in the engine's cluster (``nodes`` in the same order), for code that counts them
    # against a node mask without looking names up; not part of the output
    rows: npt.NDArray[np.intp] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "count": len(self.nodes),
            "nodes": self.nodes,
            "fix": self.fix,
            "pitfall": self.pitfall,
            "commands": self.commands,
        }


@dataclass
class DeviceGrant:
    """Devices one container gets: the IDs kubelet allocates and the physical GPUs behind them, in the
    order the container sees them (logical CUDA index 0, 1, …; not the host's indexes: R9.3)."""

    container: str
    resource: str
    device_ids: list[str]
    gpus: list[dict[str, Any]]  # {"logical": i, "host_index": n, "uuid": ...}
    env: dict[str, str]
    shared: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"container": self.container, "resource": self.resource, "device_ids": self.device_ids,
                "gpus": self.gpus, "env": self.env, "shared": self.shared}  # fmt: skip


@dataclass
class Explanation:
    pod: str
    schedulable: bool
    node: str | None
    message: str
    # the refused nodes' evidence in node order (``NodeList`` from ``explain_pod``: built when read)
    nodes: Sequence[NodeEvidence] = field(default_factory=list)
    groups: list[ReasonGroup] = field(default_factory=list)
    nominated_node: str = ""
    victims: list[str] = field(default_factory=list)
    # the preemption already happened: ``nominated_node`` is the pod's own nomination and ``victims`` are the
    # lower-priority pods terminating there (``explain.preempting``), not a preemption kubegpu predicts
    preempting: bool = False
    notes: list[str] = field(default_factory=list)
    recorded_message: str = ""  # the PodScheduled condition the cluster itself reported, if any
    allocation: list[DeviceGrant] = field(default_factory=list)
    devices_synthesized: bool = False
    kubelet: dict[str, Any] | None = None  # admission outcome on the chosen node, when it fails
    queue: dict[str, Any] | None = None  # batch layer: queue, position, quota shortfall, gang members
    scheduler: str = "default-scheduler"  # spec.schedulerName
    handled_by: str = ""  # set when another scheduler takes the pod: the message is then not predicted
    # for such a pod, the cause kubegpu established from that scheduler's own rule and the snapshot's objects
    # (its events, node annotations): (cause, what to do). ``summary`` leads with it, not with who handles it
    established: tuple[str, str] | None = None
    # the established cause accounts for the refusals of the checks every scheduler makes too (their shortage is
    # its symptom: ``schedulers.establish_if_short``), so ``summary`` leads with it even though they fail; not
    # part of the output
    established_from_checks: bool = field(default=False, compare=False, repr=False)
    waiting: str = ""  # "waiting for admission by …" for a pod with scheduling gates (not tried at all)
    kueue: KueueReading | None = None  # what the Kueue objects say, for a pod Kueue gates (``explain.kueue``)
    binding: str = ""  # what its allocated claims' devices wait for in PreBind (explain.dra_binding)
    not_queued: str = ""  # why PreEnqueue keeps it out of the queue (explain.dra_queue): no cycle, no event
    observed: dict[str, Any] | None = None  # the cluster's own FailedScheduling event / PodScheduled message
    autoscaler: dict[str, Any] | None = (
        None  # what a node autoscaler said about the pod (explain.autoscalers)
    )
    # a pod already bound that does not run: why, from its node (``findings_bound.Stuck.to_dict``); the verdict
    # below it is then what the scheduler would do were the pod pending, not the pod's problem
    bound: dict[str, Any] | None = None
    # the pod's name for each of its DRA claims → the ResourceClaim ("ns/name"); the evidence says ``pod claim
    # <name>``, so pods whose claims ask alike share one text (``explain.diagnose.explain_many``)
    claims: dict[str, str] = field(default_factory=dict)
    # what the pod uses that kubegpu does not model (``explain.unverified``): non-empty = verdict unverified
    unverified: list[str] = field(default_factory=list)
    # how many of ``unverified`` (its last lines) may change only which node a pod that fits gets, not whether
    # it fits (``explain.unverified.unverified``); not part of the output
    ranking_only: int = field(default=0, compare=False, repr=False)

    def fit_doubts(self) -> list[str]:
        """The ``unverified`` lines that may turn the verdict's fit into a refusal (all but ranking-only)."""
        return self.unverified[: len(self.unverified) - self.ranking_only]

    def claims_line(self) -> str:
        """Which ResourceClaim each ``pod claim <name>`` of the evidence is; "" without evidence or claims."""
        if not (self.claims and self.nodes):
            return ""
        return "; ".join(f"pod claim {ref} is ResourceClaim {key}" for ref, key in self.claims.items())

    def to_dict(self, *, shallow: bool = False) -> dict[str, Any]:
        """``shallow``: ``nodes`` and ``groups`` stay the lists of objects, for a writer that encodes a list
        shared by the pods of one equivalence class once (``cli.json_stream``)."""
        return {
            "pod": self.pod,
            "schedulable": self.schedulable,
            "node": self.node,
            "message": self.message,
            "nominatedNode": self.nominated_node or None,
            "victims": self.victims,
            "preemptionUnderWay": self.preempting,
            "nodes": self.nodes if shallow else [n.to_dict() for n in self.nodes],
            "groups": self.groups if shallow else [g.to_dict() for g in self.groups],
            "notes": self.notes,
            "recordedMessage": self.recorded_message or None,
            "allocation": [g.to_dict() for g in self.allocation],
            "devicesSynthesized": self.devices_synthesized,
            "kubelet": self.kubelet,
            "queue": self.queue,
            "schedulerName": self.scheduler,
            "handledBy": self.handled_by or None,
            "establishedCause": (
                {"cause": self.established[0], "fix": self.established[1]} if self.established else None
            ),
            "waiting": self.waiting or None,
            "kueue": self.kueue.to_dict() if self.kueue else None,
            "bindingWait": self.binding or None,
            "notQueued": self.not_queued or None,
            "claims": self.claims,
            "observed": self.observed,
            "autoscaler": self.autoscaler,
            "bound": self.bound,
            "verified": not self.unverified,
            "unverified": self.unverified,
        }
