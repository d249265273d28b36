"""The storage plugins (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits) and ImageLocality.

Each expected text is upstream's constant, copied from the source named in the test (kubernetes/kubernetes
``pkg/scheduler/framework/plugins/<plugin>/``, releases 1.32.13–1.37.2 as vendored by the module proxy);
each expected decision is derived by hand from the upstream rule the test names. The real kube-scheduler's
answers on the same kinds of states are in ``tests/realkube/golden/volumes/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kubegpu.errors import InputError
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model import parse
from kubegpu.model.volumes import parse_claim, parse_storage_class
from kubegpu.scheduler.plugins.image_locality import ImageLocality, normalized, priority
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for, snapshot_of
from tests.realkube.volume_cases import claim, csinode, storage_class, uses, volume

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "volumes"
CPU = {"cpu": "4", "memory": "8Gi"}


def verdict(*objects: dict[str, Any], pod: dict[str, Any], version: str = "1.33") -> tuple[str | None, str]:
    result = scheduler_for(*objects, kube_version=version).schedule_one(parse.parse_pod(pod, "test"))
    return result.node, result.message


def test_prebound_claim_without_bind_completed_is_unbound_immediate() -> None:
    """binder.go isPVCFullyBound: volumeName AND pv.kubernetes.io/bind-completed; a claim with only a
    volumeName is "prebound" and GetPodVolumeClaims files it with the unbound immediate claims."""
    c = claim("data", "gp3", volume="pv-1")
    del c["metadata"]["annotations"]
    node, msg = verdict(make_node("a").capacity(**CPU).obj(), storage_class("gp3"),
                        volume("pv-1", "gp3", claim_name="data", csi_handle="h1"), c,
                        pod=uses(make_pod("p").obj(), "data"))  # fmt: skip
    assert node is None
    assert msg.startswith("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.")


def test_wffc_picks_the_node_whose_pv_fits_and_selected_node_pins() -> None:
    """FindMatchingVolume: a 10Gi Available PV on disk=ssd-a satisfies a 5Gi WaitForFirstConsumer claim on
    node a only; a claim annotated volume.kubernetes.io/selected-node=b fits b only (FindPodVolumes fast path)."""
    objs = [make_node("a").capacity(**CPU).label("disk", "ssd-a").obj(),
            make_node("b").capacity(**CPU).label("disk", "ssd-b").obj(),
            storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
            volume("pv-a", "local", "10Gi", disk="ssd-a"), claim("data", "local", "5Gi")]  # fmt: skip
    assert verdict(*objs, pod=uses(make_pod("p").obj(), "data"))[0] == "a"
    pinned = claim("data", "local", "5Gi")
    pinned["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "b"}
    objs[-1] = storage_class("fast", "ebs.csi.aws.com", "WaitForFirstConsumer")
    pinned["spec"]["storageClassName"] = "fast"  # provisionable, so the selected node decides
    assert verdict(*objs, pinned, pod=uses(make_pod("p").obj(), "data"))[0] == "b"


def test_bound_and_unbound_reasons_keep_upstream_order() -> None:
    """FindPodVolumes does not stop at a bound claim's conflict: a node failing both a bound PV's affinity and
    the unbound claim's match gets ErrReasonNodeConflict and ErrReasonBindConflict, one histogram entry each
    (sorted by text in the message; 1.32 texts: PR #129887 changed the first in 1.33)."""
    objs = [make_node("a").capacity(**CPU).label("disk", "ssd-x").obj(),
            storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
            volume("pv-bound", "local", claim_name="logs", disk="ssd-a"), claim("logs", "local", volume="pv-bound"),
            claim("data", "local", "5Gi")]  # fmt: skip
    _, msg = verdict(*objs, pod=uses(make_pod("p").obj(), "logs", "data"), version="1.32")
    assert msg.startswith("0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind, "
                          "1 node(s) had volume node affinity conflict.")  # fmt: skip


def test_bound_claim_whose_pv_is_gone() -> None:
    """VolumeBinding passes a fully bound claim at PreFilter, but VolumeZone's PreFilter (after it) reads the
    PV: pvLister.Get's NotFound, "persistentvolume \\"x\\" not found", rejects every node."""
    _, msg = verdict(make_node("a").capacity(**CPU).obj(), storage_class("gp3"), claim("data", "gp3", volume="ghost"),
                     pod=uses(make_pod("p").obj(), "data"))  # fmt: skip
    assert msg.startswith('0/1 nodes are available: persistentvolume "ghost" not found.')


def test_rwop_holder_of_lower_priority_is_preempted() -> None:
    """VolumeRestrictions returns Unschedulable for an in-use ReadWriteOncePod claim, so DefaultPreemption
    dry-runs: removing the lower-priority holder on a frees the claim (upstream RemovePod), so p is nominated
    to a with the holder as victim; b has no pod to remove."""
    objs = [make_node("a").capacity(**CPU).obj(), make_node("b").capacity(**CPU).obj(), storage_class("gp3"),
            volume("pv-db", "gp3", modes=("ReadWriteOncePod",), claim_name="db", csi_handle="h"),
            claim("db", "gp3", modes=("ReadWriteOncePod",), volume="pv-db"),
            uses(make_pod("holder").priority(10).on("a").obj(), "db")]  # fmt: skip
    s = scheduler_for(*objs, kube_version="1.34")
    result = s.schedule_one(parse.parse_pod(uses(make_pod("p").priority(1000).obj(), "db"), "t"))
    assert result.nominated_node == "a" and [v.name for v in result.victims] == ["holder"]


def test_volume_limit_counts_a_shared_volume_once() -> None:
    """csi.go Filter: a volume the node's pods already use is deleted from the new ones, so a second pod on
    the same claim fits a node at its limit (1 of 1), while a different volume does not."""
    objs = [make_node("a").capacity(**CPU).obj(), csinode("a", 1), storage_class("gp3"),
            volume("pv-1", "gp3", claim_name="vol-1", csi_handle="h1"), claim("vol-1", "gp3", volume="pv-1"),
            volume("pv-2", "gp3", claim_name="vol-2", csi_handle="h2"), claim("vol-2", "gp3", volume="pv-2"),
            uses(make_pod("user").on("a").obj(), "vol-1")]  # fmt: skip
    assert verdict(*objs, pod=uses(make_pod("p").obj(), "vol-1"))[0] == "a"
    assert "1 node(s) exceed max volume count" in verdict(*objs, pod=uses(make_pod("p").obj(), "vol-2"))[1]


@pytest.mark.parametrize(("pv_label", "node_label", "fits"), [
    (("topology.kubernetes.io/zone", "z1__z2"), ("topology.kubernetes.io/zone", "z2"), True),  # LabelZonesToSet
    (("failure-domain.beta.kubernetes.io/zone", "z1"), ("topology.kubernetes.io/zone", "z1"), True),  # GA form
    (("topology.kubernetes.io/zone", "z1"), ("topology.kubernetes.io/zone", "z3"), False),
    (("topology.kubernetes.io/zone", "z1"), ("other", "x"), True),  # a node without zone/region labels passes
])  # fmt: skip
def test_volume_zone(pv_label: tuple[str, str], node_label: tuple[str, str], fits: bool) -> None:
    """volume_zone.go Filter: the PV's zone/region labels against the node's (the beta key falls back to GA)."""
    objs = [make_node("a").capacity(**CPU).label(*node_label).obj(), storage_class("gp3"),
            volume("pv", "gp3", claim_name="d", csi_handle="h", labels=dict([pv_label])),
            claim("d", "gp3", volume="pv")]  # fmt: skip
    node, msg = verdict(*objs, pod=uses(make_pod("p").obj(), "d"))
    assert (node == "a") is fits
    assert fits or "1 node(s) had no available volume zone" in msg


def test_image_locality_score_by_hand() -> None:
    """image_locality.go: a 500 MiB image on 1 of 2 nodes scores int64(500 MiB * 1/2) = 250 MiB; clamped to
    [23 MiB, 1000 MiB] and scaled: 100 * (250 - 23) / (1000 - 23) = 22700 / 977 = 23 (integer division)."""
    mib = 1024 * 1024
    a = make_node("a").obj()
    a["status"]["images"] = [
        {"names": ["docker.io/library/nginx:1.27", "nginx:1.27"], "sizeBytes": 500 * mib}
    ]
    s = scheduler_for(a, make_node("b").obj())
    plugin = next(p for p in s.framework.plugins if isinstance(p, ImageLocality))
    pod = parse.parse_pod(
        {**make_pod("p").obj(), "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}, "t"
    )
    scores = [plugin.score(None, pod, s.cluster.view(i)) for i in range(2)]  # type: ignore[arg-type]
    assert sorted(scores) == [0, 23]
    assert (
        priority(0, 1) == 0
        and normalized("nginx") == "nginx:latest"
        and normalized("r:5000/x") == "r:5000/x:latest"
    )


def test_image_locality_batch_scores_every_node_by_hand() -> None:
    """image_locality.go over four nodes: nginx:1.27 (500 MiB) on a and b, py:3.12 (300 MiB) on a, busybox
    (100 MiB, listed as busybox:latest) on c. scaledImageScore: nginx int64(500 MiB * 2/4) = 250 MiB, py
    int64(300 MiB * 1/4) = 75 MiB, busybox 25 MiB. The pod uses busybox (init), nginx and py: 3 images, so
    calculatePriority clamps to [23 MiB, 3000 MiB]: a 250 + 75 = 325 → 100 * 302 / 2977 = 10; b 250 →
    100 * 227 / 2977 = 7; c 25 → 100 * 2 / 2977 = 0; d 0 → 0. The batch gives each node's scalar answer."""
    mib = 1024 * 1024
    objs = [make_node(n).obj() for n in "abcd"]
    objs[0]["status"]["images"] = [{"names": ["nginx:1.27"], "sizeBytes": 500 * mib},
                                   {"names": ["py:3.12"], "sizeBytes": 300 * mib}]  # fmt: skip
    objs[1]["status"]["images"] = [
        {"names": ["docker.io/library/nginx:1.27", "nginx:1.27"], "sizeBytes": 500 * mib}
    ]
    objs[2]["status"]["images"] = [{"names": ["busybox:latest"], "sizeBytes": 100 * mib}]
    s = scheduler_for(*objs)
    plugin = next(p for p in s.framework.plugins if isinstance(p, ImageLocality))
    spec = {"initContainers": [{"name": "i", "image": "busybox"}],
            "containers": [{"name": "c", "image": "nginx:1.27"}, {"name": "d", "image": "py:3.12"}]}  # fmt: skip
    pod = parse.parse_pod({**make_pod("p").obj(), "spec": spec}, "t")
    rows = np.array([s.cluster.index[n] for n in "abcd"], dtype=np.intp)
    batch = plugin.score_batch(None, pod, s.cluster, rows)  # type: ignore[arg-type]
    assert batch.tolist() == [10, 7, 0, 0]
    assert [plugin.score(None, pod, s.cluster.view(int(i))) for i in rows] == [10, 7, 0, 0]  # type: ignore[arg-type]
    assert plugin.score_batch(None, pod, s.cluster, rows[::-1]).tolist() == [0, 0, 7, 10]  # type: ignore[arg-type]


def test_version_texts_follow_the_minor() -> None:
    """PR #129887 (1.33) renamed the PV node affinity text; PR #129145 (1.34) the ReadWriteOncePod one."""
    from kubegpu.scheduler.reasons import ReadWriteOncePodInUse, VolumeNodeConflict, render

    assert render(VolumeNodeConflict(), "1.32") == "node(s) had volume node affinity conflict"
    assert render(VolumeNodeConflict(), "1.33") == "node(s) didn't match PersistentVolume's node affinity"
    assert render(ReadWriteOncePodInUse(), "1.33") == (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
    )
    assert render(ReadWriteOncePodInUse(), "1.34") == ("node(s) unavailable due to PersistentVolumeClaim with "
                                                       "ReadWriteOncePod access mode already in-use by another pod")  # fmt: skip


def test_a_prefilter_rejection_ends_postfilter_at_dynamic_resources_from_1_34() -> None:
    """1.34+: DynamicResources' PostFilter reads state its PreFilter never wrote (VolumeRestrictions rejected
    first): cs.Read's ErrNotFound is an error status, "not found", and DefaultPreemption does not run."""
    objs = (make_node("a").obj(), storage_class("gp3"), claim("other", "gp3"))
    pod = uses(make_pod("p").obj(), "data")
    assert verdict(*objs, pod=pod, version="1.33")[1].endswith(
        "not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert verdict(*objs, pod=pod, version="1.36")[1] == (
        '0/1 nodes are available: persistentvolumeclaim "data" not found. not found'
    )


def test_snapshot_without_claims_says_volumes_were_not_checked() -> None:
    """No PersistentVolumeClaim in the snapshot: the plugins skip (nothing to judge by) and explain marks the
    verdict unverified instead of calling the claim missing."""
    snap = snapshot_of(make_node("a").capacity(**CPU).obj(), uses(make_pod("p").obj(), "data"))
    engine = Engine(snap)
    exp = explain_pod(engine, snap.pods[0])
    assert exp.schedulable and exp.to_dict()["verified"] is False
    assert any("snapshot holds none" in line for line in exp.unverified)


def test_issue_81020_fixture() -> None:
    """kubernetes/kubernetes#81020's PV, claim and pod on 1.32 (from the kubelets): the reporter's reason for
    the node with the pod's label, NodeAffinity's text for the others (renamed since the 2019 report)."""
    from kubegpu.sources import load_files

    snap = load_files(FIXTURES / "issue-81020.yaml")
    exp = explain_pod(Engine(snap), snap.pods[0])
    assert exp.message == ("0/5 nodes are available: 1 node(s) had volume node affinity conflict, 4 node(s) didn't "
                           "match Pod's node affinity/selector. preemption: 0/5 nodes are available: 5 Preemption "
                           "is not helpful for scheduling.")  # fmt: skip
    assert any("kubernetes.io/hostname In ['node4']" in e for n in exp.nodes for e in n.evidence)


def test_bad_storage_objects_name_the_field() -> None:
    with pytest.raises(InputError, match=r"spec\.accessModes"):
        parse_claim(
            {"kind": "PersistentVolumeClaim", "metadata": {"name": "x"}, "spec": {"accessModes": "RWO"}}
        )
    with pytest.raises(InputError, match="allowedTopologies"):
        parse_storage_class({"kind": "StorageClass", "metadata": {"name": "x"}, "allowedTopologies": {}})


@pytest.mark.parametrize(("version", "named"), [("1.30", True), ("1.31", False), ("1.37", False)])
def test_the_in_tree_volume_limit_plugins_of_1_30_are_said_to_be_unmodelled(
    version: str, named: bool
) -> None:
    """1.30's default profile still holds EBSLimits, GCEPDLimits and AzureDiskLimits (kubernetes v1.30.14
    pkg/scheduler/apis/config/v1/default_plugins.go); PR #124500 dropped them in 1.31. kubegpu does not count
    them, so a pod with an in-tree GCE PD is unverified on 1.30 for that reason, and only on 1.30."""
    from kubegpu.scheduler.assembly import SchedulerSpec
    from kubegpu.scheduler.registry import default_profile
    from tests.realkube.volume_cases import gce_disk

    snap = snapshot_of(make_node("a").capacity(**CPU).obj(), gce_disk(make_pod("p").obj(), "disk-1"))
    engine = Engine(snap, SchedulerSpec(default_profile(kube_version=version)))
    lines = explain_pod(engine, snap.pods[0]).unverified
    # the kinds are listed as words, not as a Python list
    expected = "in-tree volumes gcePersistentDisk count against EBSLimits/GCEPDLimits/AzureDiskLimits"
    assert any(line.startswith(expected) for line in lines) is named
    assert not any("[" in line for line in lines)
