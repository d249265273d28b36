"""The parts every node change plan shares: affected pods, capacity diffs and kubectl steps (R6, R15).

A change procedure is a list of ``Step``; each mutating ``kubectl`` line comes as its ``--dry-run=server``
form first and every ``kubectl`` line carries ``-n <namespace>`` explicitly (for cluster-scoped objects
such as a Node it changes nothing, which the seed notes). ``NodeChange`` is what ``kubegpu plan`` prints.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import NVIDIA_PREFIX
from kubegpu.model.objects import Node, Pod


@dataclass(frozen=True, slots=True)
class AffectedPod:
    """A pod on the node that uses GPU resources the change takes away."""

    namespace: str
    name: str
    resources: Mapping[str, int]  # nvidia.com/* requests (whole units)
    controller: str  # "ReplicaSet/web-7d9", or "" for a bare pod
    returns: bool  # whether the new capacity can hold its resources again

    @property
    def why(self) -> str:
        used = ", ".join(f"{r}: {n}" for r, n in sorted(self.resources.items()))
        where = (
            "can return after the change"
            if self.returns
            else "cannot return: the new layout lacks its resources"
        )
        owner = f"owned by {self.controller}" if self.controller else "a bare pod: nothing recreates it"
        return f"{self.namespace}/{self.name} ({used}; {owner}; {where})"


@dataclass(frozen=True, slots=True)
class Step:
    title: str
    commands: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, slots=True)
class NodeChange:
    """A planned change of one node's GPU resource model, with its procedure and rollback."""

    kind: str  # "mig" | "time-slicing"
    node: str
    summary: str
    capacity_before: Mapping[str, int]
    capacity_after: Mapping[str, int]
    affected: tuple[AffectedPod, ...]
    steps: tuple[Step, ...]
    rollback: tuple[Step, ...]
    warnings: tuple[str, ...] = ()
    details: Mapping[str, object] = field(default_factory=dict)

    @property
    def delta(self) -> dict[str, int]:
        names = sorted(set(self.capacity_before) | set(self.capacity_after))
        return {
            n: self.capacity_after.get(n, 0) - self.capacity_before.get(n, 0)
            for n in names
            if self.capacity_after.get(n, 0) != self.capacity_before.get(n, 0)
        }

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "node": self.node,
            "summary": self.summary,
            "capacity_before": dict(self.capacity_before),
            "capacity_after": dict(self.capacity_after),
            "delta": self.delta,
            "affected_pods": [
                {
                    "namespace": p.namespace,
                    "name": p.name,
                    "resources": dict(p.resources),
                    "controller": p.controller,
                    "returns": p.returns,
                }
                for p in self.affected
            ],
            "steps": [{"title": s.title, "commands": list(s.commands), "note": s.note} for s in self.steps],
            "rollback": [
                {"title": s.title, "commands": list(s.commands), "note": s.note} for s in self.rollback
            ],
            "warnings": list(self.warnings),
            "details": dict(self.details),
        }


def gpu_capacity(node: Node) -> dict[str, int]:
    """The node's ``nvidia.com/*`` capacity in whole units."""
    return {r: v // 1000 for r, v in sorted(node.capacity.items()) if r.startswith(NVIDIA_PREFIX) and v}


def affected_pods(
    node: Node, pods: Sequence[Pod], after: Mapping[str, int], only: Collection[str] | None = None
) -> tuple[AffectedPod, ...]:
    """Running pods on ``node`` holding GPU resources (of ``only``, when given): they must move.

    Re-partitioning needs the GPUs idle (the MIG manager stops every GPU client on the node), so for MIG
    every GPU pod moves; a sharing change moves the pods of the resource it changes. ``returns`` says
    whether the new capacity could take the pod back.
    """
    out = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        if pod.node_name != node.name or pod.is_terminal:
            continue
        used = {r: v // 1000 for r, v in pod.requests.items() if r.startswith(NVIDIA_PREFIX) and v}
        if not used or (only is not None and not set(used) & set(only)):
            continue
        owner = f"{pod.owner.kind}/{pod.owner.name}" if pod.owner else ""
        out.append(
            AffectedPod(
                pod.namespace, pod.name, used, owner, all(after.get(r, 0) >= n for r, n in used.items())
            )
        )
    return tuple(out)


# metadata the API server sets: a manifest that carries them conflicts (a stale resourceVersion) or is refused
SERVER_SET_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink",
                     "deletionTimestamp", "deletionGracePeriodSeconds")  # fmt: skip


def applyable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` as ``kubectl apply -f`` takes it back: no ``status`` and none of ``SERVER_SET_FIELDS``, so it
    applies over whatever changed since it was read (a ``get -o yaml`` backup would conflict)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_SET_FIELDS}
    return {**{k: v for k, v in obj.items() if k not in ("status", "metadata")}, "metadata": meta}


def label_node(node: str, key: str, value: str | None) -> str:
    """The ``kubectl label node`` command that sets ``key=value``, or removes ``key`` when value is None."""
    return f"label node {node} {key}-" if value is None else f"label node {node} {key}={value} --overwrite"


def record_steps(node: Node, affected: Sequence[AffectedPod], ns: str, label_keys: Sequence[str]) -> Step:
    columns = ",".join(label_keys)
    commands = [
        f"kubectl -n {ns} get node {node.name} -o yaml > {node.name}-before.yaml",
        f"kubectl -n {ns} get node {node.name} -L {columns}",
    ]
    for namespace in sorted({p.namespace for p in affected}):
        commands.append(f"kubectl -n {namespace} get pods --field-selector spec.nodeName={node.name} -o wide")
        commands.append(f"kubectl -n {namespace} get pdb")
    return Step(
        "Record the node, its labels and the GPU pods (the Node YAML is for comparison, not to re-apply)",
        tuple(commands),
    )


def cordon_step(node: Node, ns: str) -> Step:
    return Step(
        "Cordon the node (moves nothing; stops new pods landing while the GPUs change)",
        mutate(ns, f"cordon {node.name}"),
    )


def move_steps(affected: Sequence[AffectedPod]) -> Step:
    """Evict the GPU pods only; the cordon keeps them from coming back until the change is verified."""
    commands: list[str] = []
    for p in affected:
        commands.extend(mutate(p.namespace, f"delete pod {p.name} --wait=true"))
    bare = [f"{p.namespace}/{p.name}" for p in affected if not p.controller]
    note = (
        "Check each namespace's PDBs and checkpoints first; pods with a controller are recreated elsewhere. "
        "`kubectl drain` (PDB-aware, never --force blindly) is the alternative when every pod may move."
    )
    if bare:
        note += f" Bare pods are not recreated: save their manifests first ({', '.join(bare)})."
    return Step(
        "Move the pods that use the GPUs", tuple(commands), note if affected else "No GPU pods run here."
    )


def uncordon_step(node: Node, ns: str, title: str = "Uncordon the node") -> Step:
    """The step that reopens ``node`` after its change: none for a node cordoned before the plan, which stays
    cordoned (whoever cordoned it did so for a reason of their own), said in the step."""
    if node.unschedulable:
        return Step(
            f"{title}: not planned, {node.name} was cordoned before this plan and stays cordoned",
            (),
            "uncordon it yourself when the reason it was cordoned for is resolved",
        )
    return Step(title, mutate(ns, f"uncordon {node.name}"))


def capacity_check(node: Node, ns: str, expected: Mapping[str, int]) -> Step:
    want = ", ".join(f"{r}={n}" for r, n in sorted(expected.items())) or "no nvidia.com resources"
    return Step(
        "Verify allocatable",
        (f"kubectl -n {ns} get node {node.name} -o jsonpath='{{.status.allocatable}}'",),
        f"expect {want}",
    )


def canary_pod_step(node: Node, ns: str, resources: Sequence[str], image: str) -> Step:
    """One throw-away pod per resource, pinned to the node (nodeName bypasses the cordon on purpose)."""
    commands: list[str] = []
    for r in resources:
        name = "gpu-test-" + r.split("/", 1)[1].replace(".", "-").replace("+", "-")
        spec = {
            "spec": {
                "nodeName": node.name,
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "t",
                        "image": image,
                        "command": ["nvidia-smi", "-L"],
                        "resources": {"limits": {r: "1"}},
                    }
                ],
            }
        }
        overrides = json.dumps(spec, separators=(",", ":"))
        commands.extend(mutate(ns, f"run {name} --image={image} --restart=Never --overrides='{overrides}'"))
        commands.append(f"kubectl -n {ns} logs {name}")
        commands.extend(mutate(ns, f"delete pod {name}"))
    return Step(
        "Run a test pod per resource and check it sees exactly its own device",
        tuple(commands),
        "nvidia-smi -L in the pod must list one device of the requested kind",
    )
