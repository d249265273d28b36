"""KAI's GPU reservation pod and the GPU nodes' NoExecute taints: when the snapshot shows that cause.

A KAI GPU share (gpu-fraction / gpu-memory annotation) is bound only once KAI's binder has a reservation pod
holding a whole GPU on the node: the binder creates it with ``spec.nodeName`` in namespace
kai-resource-reservation (``gpu-reservation-<node>-<suffix>``; pkg/binder/binding/resourcereservation
createResourceReservationPod), waits for it to be allocated and, when it is not, deletes it and fails the bind
with "failed waiting for GPU reservation pod to allocate: <ns>/<name>", recorded on the share pod as a Warning
BindingError by the binder ("Failed to bind pod <ns>/<name> to node <node>: …", pkg/binder/controllers/
bindrequest_controller.go). NoSchedule taints do not stop a pod bound by ``spec.nodeName``, but kubelet admits
no pod that does not tolerate the node's NoExecute taints (pkg/kubelet/lifecycle/predicate.go generalFilter).
Before kai-scheduler PR #2000 (first released in v0.17.0; its v0.16 backport #2006 in v0.16.9) the reservation
pod carried none of the share pod's tolerations (KAI-Scheduler#1986, the maintainers' workaround: drop the
NoExecute effect); since then it carries the first requesting pod's.

So a NoExecute taint on the GPU nodes is established as the pod's cause only where the snapshot shows it: a
reservation pod on such a node that does not tolerate the taint, or the binder's "failed waiting for GPU
reservation pod to allocate" on such a node while KAI's binder image names a release before the fix. Otherwise
the taints are a note that holds on releases before the fix (the snapshot rarely shows KAI's release).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubegpu.model.names import KAI_RESERVATION_NAMESPACE, NVIDIA_GPU
from kubegpu.model.objects import Pod, Taint, image_repo_tag
from kubegpu.model.snapshot import ClusterSnapshot

# the KAI releases that give the reservation pod the share pod's tolerations: v0.16.9 on (git tag --contains of
# #2006 43c83f84 and #2000 e4594c4c), except v0.20.0 / v0.20.1, tags of November 2025 code that KAI's go.mod
# retracts (#701, #702) and that do not contain the fix
FIXED_IN = (0, 16, 9)
RETRACTED = frozenset({(0, 20, 0), (0, 20, 1)})
_RELEASE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-fips)?")  # the chart's tag, "-fips" with global.fips
BINDER_FAILED = "failed waiting for GPU reservation pod to allocate"
# the binder's BindingError on the share pod, naming the node (a node name may hold dots)
_FAILED_ON = re.compile(r"to node (\S+?)[.:] .*" + BINDER_FAILED)
KAI_RESERVATION_NOEXECUTE = "KAI's GPU reservation pod cannot stay on the GPU nodes: their NoExecute taints"


@dataclass(frozen=True)
class Reservation:
    notes: list[str]
    cause: str | None  # the note to establish, when the snapshot shows it


@dataclass(frozen=True)
class _Cluster:
    """What every KAI share pod's reading needs from the whole snapshot, read once per snapshot."""

    gpu_nodes: list[tuple[str, list[Taint]]]  # GPU nodes and their NoSchedule / NoExecute taints
    reservation_pods: dict[str, list[Pod]]  # node → the reservation pods bound to it
    release: tuple[str, bool] | None  # KAI's binder image tag and whether it has the fix; None: unknown


def _binder_release(pods: list[Pod]) -> tuple[str, bool] | None:
    """KAI's release from its binder's image (<registry>/kai-scheduler/binder:<tag>, the chart's binder.image):
    None when no such pod is in the snapshot, a tag is not a release, or the binders disagree on the fix."""
    images = {c.image for p in pods for c in p.containers if "kai-scheduler/" in c.image.lower()}
    tags = {tag for repo, tag in map(image_repo_tag, images) if repo == "binder"}
    verdicts = set()
    for tag in tags:
        m = _RELEASE.fullmatch(tag)
        if m is None:
            return None
        version = tuple(int(x) for x in m.groups())
        verdicts.add(version >= FIXED_IN and version not in RETRACTED)
    if len(verdicts) != 1:
        return None
    return ", ".join(sorted(tags)), verdicts.pop()


def _cluster(snapshot: ClusterSnapshot) -> _Cluster:
    def read() -> _Cluster:
        reservation: dict[str, list[Pod]] = {}
        for p in snapshot.pods:
            if p.namespace == KAI_RESERVATION_NAMESPACE and p.node_name:
                reservation.setdefault(p.node_name, []).append(p)
        gpu_nodes = [
            (n.name, [t for t in n.taints if t.effect in ("NoSchedule", "NoExecute")])
            for n in snapshot.nodes
            if n.allocatable.get(NVIDIA_GPU)
        ]
        return _Cluster(gpu_nodes, reservation, _binder_release(snapshot.pods))

    found: _Cluster = snapshot.derived(
        "kai-reservation", read, over=(snapshot.nodes,)
    )  # the pods are always read
    return found


def reservation(snapshot: ClusterSnapshot, pod: Pod) -> Reservation:
    """The NoExecute taints of the GPU nodes a KAI share pod tolerates, and whether the snapshot shows that
    KAI's reservation pod is kept off them (the caller checks that the pod is a gpu-fraction / gpu-memory share)."""
    cluster = _cluster(snapshot)
    tainted: dict[str, list[Taint]] = {}
    reachable = 0
    for name, hard in cluster.gpu_nodes:
        if not all(pod.tolerates(t) for t in hard):
            continue  # the share pod itself may not go there
        reachable += 1
        noexec = [t for t in hard if t.effect == "NoExecute" and not t.key.startswith("node.kubernetes.io/")]
        if noexec:
            tainted[name] = noexec
    if not tainted:
        return Reservation([], None)
    shown = "; ".join(f"{n}: {', '.join(map(str, t))}" for n, t in sorted(tainted.items())[:5])
    head = (
        f"KAI: every GPU node this pod tolerates carries a NoExecute taint ({shown})"
        if len(tainted) == reachable
        else f"KAI: {len(tainted)} of the {reachable} GPU nodes this pod tolerates carry a NoExecute taint ({shown})"
    )
    rule = (
        f"kubelet admits no pod that does not tolerate a node's NoExecute taint, and KAI's reservation pod "
        f"(namespace {KAI_RESERVATION_NAMESPACE}), which must hold a whole GPU there before the share is bound, "
        "does not get the share pod's tolerations on kai-scheduler releases before v0.16.9 / v0.17.0 (PR #2000, "
        f'v0.16 backport #2006; KAI-Scheduler#1986): the binder then fails "{BINDER_FAILED}" and the pod stays '
        "Pending. Upgrade KAI, or drop the NoExecute effect from those taints"
    )
    see = f"`kubectl -n {KAI_RESERVATION_NAMESPACE} get pods,events` shows the reservation pods."
    for node, taints in sorted(tainted.items()):
        for rp in cluster.reservation_pods.get(node, []):
            kept_off = [t for t in taints if not rp.tolerates(t)]
            if kept_off:
                note = f"{head}. KAI's reservation pod {rp.key} on {node} does not tolerate {kept_off[0]}: {rule}; {see}"
                return Reservation([note], note)
    failed = {
        m.group(1)
        for e in snapshot.records.events_about("Pod", pod.namespace, pod.name)
        for m in [_FAILED_ON.search(e.message)]
        if m is not None and m.group(1) in tainted
    }
    said = f'. KAI\'s binder reported "{BINDER_FAILED}" on {", ".join(sorted(failed))}' if failed else ""
    if cluster.release is None:
        return Reservation(
            [
                f"{head}{said}. Whether that keeps this pod Pending depends on KAI's release, which the snapshot "
                f"does not show (no KAI binder pod with a release tag): {rule}; {see}"
            ],
            None,
        )
    tag, fixed = cluster.release
    if fixed:
        return Reservation([], None)  # the reservation pod gets the share pod's tolerations there
    note = f"{head}{said}. KAI's binder runs {tag}, a release before the fix: {rule}; {see}"
    return Reservation([note], note if failed else None)
