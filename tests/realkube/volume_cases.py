"""Storage fidelity cases: pods using PersistentVolumeClaims (and in-tree disks), run through kubegpu's core
and a real kube-scheduler like ``cases.py``, recorded in ``golden/volumes/<release>.json``.

The real control plane has no PV controller, so every state is made as that controller would have left it:
a bound claim has ``spec.volumeName``, the ``pv.kubernetes.io/bind-completed`` annotation and ``status.phase:
Bound``; its PV has a ``claimRef`` and ``status.phase: Bound``; an unbound PV is ``Available``. When
kube-scheduler binds a WaitForFirstConsumer claim to a PV (``wffc-capacity-score``), the harness completes the
binding as that controller would (``storage.complete_bindings``), so PreBind finishes and the pod is bound.
Cluster-scoped objects (PVs, StorageClasses, CSINodes) are renamed per case by the harness, so PV node
affinity selects on a ``disk`` label (not the renamed hostname) and no expected text names a PV or class.

Shapes come from public reports: a ``local`` class with ``kubernetes.io/no-provisioner`` and a PV with
required node affinity (kubernetes/kubernetes#81020, #108096: "node(s) had volume node affinity conflict"),
a CSINode whose driver's ``allocatable.count`` caps attachments (kubernetes-sigs/aws-ebs-csi-driver#1163;
"node(s) exceed max volume count" in aws/karpenter-provider-aws#3647), a ReadWriteOncePod claim in use
(kubernetes/kubernetes#102028, #103082), a GCE PD mounted twice ("node(s) had no available disk").
"""

from __future__ import annotations

from typing import Any

from kubegpu.testing.builders import make_node, make_pod
from tests.realkube.cases import Case

Raw = dict[str, Any]
EBS = "ebs.csi.aws.com"


def storage_class(name: str, provisioner: str = EBS, mode: str = "Immediate") -> Raw:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode, "reclaimPolicy": "Delete"}  # fmt: skip


def claim(name: str, cls: str, size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",),
          volume: str = "") -> Raw:  # fmt: skip
    """A claim; with ``volume`` it is bound as the PV controller leaves it (name, annotation, phase)."""
    raw: Raw = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"storageClassName": cls, "accessModes": list(modes),
                         "resources": {"requests": {"storage": size}}},
                "status": {"phase": "Pending"}}  # fmt: skip
    if volume:
        raw["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        raw["spec"]["volumeName"] = volume
        raw["status"] = {"phase": "Bound", "accessModes": list(modes), "capacity": {"storage": size}}
    return raw


def volume(name: str, cls: str, size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",),
           claim_name: str = "", disk: str = "", csi_handle: str = "", labels: dict[str, str] | None = None) -> Raw:  # fmt: skip
    """A PV: bound to ``claim_name`` (default namespace) or Available; local (node affinity ``disk In
    [disk]``) or an EBS CSI volume."""
    spec: Raw = {"storageClassName": cls, "capacity": {"storage": size}, "accessModes": list(modes),
                 "persistentVolumeReclaimPolicy": "Retain"}  # fmt: skip
    if csi_handle:
        spec["csi"] = {"driver": EBS, "volumeHandle": csi_handle, "fsType": "ext4"}
    else:
        spec["local"] = {"path": f"/mnt/disks/{name}"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": [disk]}]}]}}  # fmt: skip
    if claim_name:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim_name}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec, "status": {"phase": "Bound" if claim_name else "Available"}}  # fmt: skip


def csinode(node: str, count: int) -> Raw:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": EBS, "nodeID": f"i-{node}", "allocatable": {"count": count},
                                  "topologyKeys": ["topology.ebs.csi.aws.com/zone"]}]}}  # fmt: skip


CAPACITY_DRIVER = "capacity.csi.kubegpu.example"  # a CSIDriver of the cases' own (kept unrenamed)


def csidriver(name: str = CAPACITY_DRIVER) -> Raw:
    """A CSIDriver opting into storage capacity tracking (``spec.storageCapacity``, k8s.io/api storage/v1
    ``CSIDriverSpec``; the Kubernetes docs' concepts/storage/storage-capacity, kubernetes/website#21634)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
            "spec": {"attachRequired": False, "storageCapacity": True, "volumeLifecycleModes": ["Persistent"]}}  # fmt: skip


def capacity(name: str, cls: str, pool: str, size: str, max_size: str = "") -> Raw:
    """A CSIStorageCapacity as external-provisioner publishes it (one per class and topology segment; fields of
    k8s.io/api storage/v1 ``CSIStorageCapacity``), the segment selecting the nodes labelled ``pool`` (node names
    are renamed per case). The shape of a report: a pod Pending while the driver's pools are too small
    (piraeusdatastore/piraeus-operator#528, "stuck in a pending state while reporting insufficient free
    storage")."""
    raw: Raw = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": name, "namespace": "default"}, "storageClassName": cls,
                "nodeTopology": {"matchLabels": {"pool": pool}}, "capacity": size}  # fmt: skip
    if max_size:
        raw["maximumVolumeSize"] = max_size
    return raw


def uses(pod: Raw, *claims: str) -> Raw:
    pod["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    return pod


def gce_disk(pod: Raw, pd: str) -> Raw:
    pod["spec"]["volumes"] = [{"name": "pd", "gcePersistentDisk": {"pdName": pd, "fsType": "ext4"}}]
    return pod


def _cases() -> list[Case]:
    out: list[Case] = []

    def add(name: str, objects: list[Raw], pod: Raw, about: str) -> None:
        out.append(Case(name, tuple(objects), pod, about))

    cpu = {"cpu": "4", "memory": "8Gi"}
    add("unbound-immediate-pvc", [
        make_node("a").capacity(**cpu).obj(), make_node("b").capacity(**cpu).obj(),
        storage_class("gp3"), claim("data", "gp3"),
    ], uses(make_pod("p").requests(cpu="1").obj(), "data"),
        "an Immediate claim nobody bound: VolumeBinding's PreFilter rejects the pod on every node")  # fmt: skip
    add("missing-pvc", [
        make_node("a").capacity(**cpu).obj(), storage_class("gp3"), claim("other", "gp3"),
    ], uses(make_pod("p").requests(cpu="1").obj(), "data"),
        "a claim that does not exist: VolumeRestrictions' PreFilter says so first")  # fmt: skip
    add("pv-node-affinity-conflict", [
        make_node("a").capacity(**cpu).label("disk", "ssd-b").obj(),
        make_node("b").capacity(**cpu).label("disk", "ssd-a").taint("dedicated", "db").obj(),
        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        volume("local-pv", "local", "10Gi", claim_name="data", disk="ssd-a"),
        claim("data", "local", "10Gi", volume="local-pv"),
    ], uses(make_pod("p").requests(cpu="1").obj(), "data"),
        "a bound local PV on ssd-a: a has the wrong disk, b the right one but a taint (taints come first)")  # fmt: skip
    add("wffc-no-matching-pv", [
        make_node("a").capacity(**cpu).label("disk", "ssd-a").obj(),
        make_node("b").capacity(**cpu).label("disk", "ssd-b").obj(),
        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        volume("small-pv", "local", "1Gi", disk="ssd-a"), volume("other-pv", "local", "50Gi", disk="ssd-c"),
        claim("data", "local", "5Gi"),
    ], uses(make_pod("p").requests(cpu="1").obj(), "data"),
        "WaitForFirstConsumer, no provisioner: a's PV is too small, the big one is on no node")  # fmt: skip
    add("rwop-in-use", [
        make_node("a").capacity(**cpu).obj(), make_node("b").capacity(**cpu).obj(),
        storage_class("gp3"), volume("pv-db", "gp3", "8Gi", ("ReadWriteOncePod",), "db", csi_handle="vol-0db"),
        claim("db", "gp3", "8Gi", ("ReadWriteOncePod",), volume="pv-db"),
        uses(make_pod("holder").requests(cpu="1").on("a").obj(), "db"),
    ], uses(make_pod("p").requests(cpu="1").obj(), "db"),
        "a ReadWriteOncePod claim used by a pod on a: every node refuses, the holder is not lower priority")  # fmt: skip
    add("csi-volume-limit", [
        make_node("a").capacity(**cpu).obj(), csinode("a", 1), storage_class("gp3"),
        volume("pv-1", "gp3", claim_name="vol-1", csi_handle="vol-0001"), claim("vol-1", "gp3", volume="pv-1"),
        volume("pv-2", "gp3", claim_name="vol-2", csi_handle="vol-0002"), claim("vol-2", "gp3", volume="pv-2"),
        uses(make_pod("user").requests(cpu="1").on("a").obj(), "vol-1"),
    ], uses(make_pod("p").requests(cpu="1").obj(), "vol-2"),
        "CSINode allows one EBS volume on a and a pod already has one attached")  # fmt: skip
    add("volume-zone-conflict", [
        make_node("a").capacity(cpu="16", memory="8Gi").label("topology.kubernetes.io/zone", "us-east-1b").obj(),
        make_node("b").capacity(**cpu).obj(), storage_class("gp3"),
        volume("pv-z", "gp3", claim_name="data", csi_handle="vol-0z",
               labels={"topology.kubernetes.io/zone": "us-east-1a"}),
        claim("data", "gp3", volume="pv-z"),
    ], uses(make_pod("p").requests(cpu="8").obj(), "data"),
        "a PV labelled us-east-1a: a is in 1b (VolumeZone); b has no zone label, passes, but is too small")  # fmt: skip
    add("gce-disk-conflict", [
        make_node("a").capacity(**cpu).obj(), gce_disk(make_pod("writer").requests(cpu="1").on("a").obj(), "pd-1"),
    ], gce_disk(make_pod("p").requests(cpu="1").obj(), "pd-1"),
        "the same GCE PD mounted read-write twice on one node")  # fmt: skip
    add("wffc-capacity-score", [
        make_node("a").capacity(**cpu).label("disk", "ssd-a").obj(),
        make_node("b").capacity(**cpu).label("disk", "ssd-b").obj(),
        storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
        volume("big-pv", "local", "1000Gi", disk="ssd-a"), volume("tight-pv", "local", "11Gi", disk="ssd-b"),
        claim("data", "local", "10Gi"), make_pod("busy").requests(cpu="1").on("a").obj(),
    ], uses(make_pod("p").requests(cpu="100m").obj(), "data"),
        "a 10Gi WaitForFirstConsumer claim: a's PV is 1% used by it, b's 90%. StorageCapacityScoring (on by "
        "default in 1.37 only) prefers a by 99 − 10 = 89 points; before, b's lighter CPU load wins")  # fmt: skip
    wffc = storage_class("capcsi", CAPACITY_DRIVER, "WaitForFirstConsumer")
    add("csi-capacity-not-enough", [
        make_node("a").capacity(**cpu).label("pool", "a").obj(),
        make_node("b").capacity(cpu="1", memory="8Gi").label("pool", "b").obj(),
        make_node("c").capacity(**cpu).label("pool", "c").obj(),
        csidriver(), wffc, claim("data", "capcsi", "10Gi"),
        capacity("cap-a", "capcsi", "a", "100Gi", max_size="5Gi"), capacity("cap-b", "capcsi", "b", "50Gi"),
    ], uses(make_pod("p").requests(cpu="2").obj(), "data"),
        "a 10Gi claim to provision by a driver tracking capacity: a's pool has 100Gi but volumes of at most 5Gi "
        "(maximumVolumeSize wins), b's 50Gi fits but b has 1 CPU, c has no CSIStorageCapacity")  # fmt: skip
    add("csi-capacity-score", [
        make_node("a").capacity(**cpu).label("pool", "a").obj(),
        make_node("b").capacity(**cpu).label("pool", "b").obj(),
        make_node("c").capacity(**cpu).label("pool", "c").obj(),
        csidriver(), wffc, claim("data", "capcsi", "10Gi"),
        capacity("cap-a", "capcsi", "a", "5Gi"), capacity("cap-b", "capcsi", "b", "1000Gi"),
        capacity("cap-c", "capcsi", "c", "12Gi"), make_pod("busy").requests(cpu="1").on("b").obj(),
    ], uses(make_pod("p").requests(cpu="100m").obj(), "data"),
        "a 10Gi claim to provision: a's 5Gi is too small; b's 1000Gi is 1% used by it (score 99), c's 12Gi "
        "83% (17). StorageCapacityScoring (1.37) picks b despite its CPU load; before, c (the emptier node)")  # fmt: skip
    return out


VOLUME_CASES = _cases()
