"""VolumeBinding's storage capacity check and the 1.37 score of volumes to provision, hand-derived from kubernetes
``pkg/scheduler/framework/plugins/volumebinding/binder.go`` (``checkVolumeProvisions``, ``hasEnoughCapacity``,
``capacitySufficient``, ``volumeLimit``, ``nodeHasAccess``; ``ErrReasonNotEnoughSpace`` = "node(s) did not have
enough free storage", the same text and logic in v1.30.14 … v1.37.2) and ``volume_binding.go`` ``Score`` (the
DynamicProvisions branch: ``NodeCapacity.Capacity``, "cannot be +="), read from the Go module cache.
The real decisions are pinned by ``tests/realkube/volume_cases.py`` (``csi-capacity-*``).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.errors import InputError
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model import parse
from kubegpu.model.volumes import parse_capacity, parse_csidriver
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import scheduler_for, snapshot_of
from tests.realkube.volume_cases import CAPACITY_DRIVER, capacity, claim, csidriver, storage_class, uses
from tests.volume_scoring import volume_scores

CPU = {"cpu": "4", "memory": "8Gi"}
NO_SPACE = "node(s) did not have enough free storage"
BIND = "node(s) didn't find available persistent volumes to bind"
Raw = dict[str, Any]


def nodes(*pools: str) -> list[Raw]:
    return [make_node(p).capacity(**CPU).label("pool", p).obj() for p in pools]


def base(*extra: Raw, size: str = "10Gi") -> list[Raw]:
    """Node a (pool a), the capacity-tracking driver, its WaitForFirstConsumer class ``c`` and claim ``data``."""
    return [*nodes("a"), csidriver(), storage_class("c", CAPACITY_DRIVER, "WaitForFirstConsumer"),
            claim("data", "c", size), *extra]  # fmt: skip


def verdict(objects: list[Raw], *claims: str, version: str = "1.37") -> tuple[str | None, str]:
    pod = uses(make_pod("p").obj(), *(claims or ("data",)))
    result = scheduler_for(*objects, kube_version=version).schedule_one(
        parse.parse_pod(pod, "t"), assume=False
    )
    return result.node, result.message


def refused(reason: str, n: int = 1) -> str:
    return (f"0/{n} nodes are available: {n} {reason}. preemption: 0/{n} nodes are available: {n} Preemption is "
            "not helpful for scheduling.")  # fmt: skip


@pytest.mark.parametrize(
    ("cap", "fits"),
    [
        (capacity("x", "c", "a", "100Gi", max_size="5Gi"), False),  # maximumVolumeSize 5Gi < 10Gi wins
        (capacity("x", "c", "a", "5Gi", max_size="10Gi"), True),  # 10Gi ≥ 10Gi: the limit, not capacity
        (capacity("x", "c", "a", "10Gi"), True),  # no maximum: capacity 10Gi ≥ 10Gi
        (capacity("x", "c", "a", "9Gi"), False),
        (capacity("x", "other", "a", "100Gi"), False),  # another class's pool
        (capacity("x", "c", "b", "100Gi"), False),  # nodeTopology selects pool b, not the node
        ({**capacity("x", "c", "a", "100Gi"), "nodeTopology": None}, False),  # no topology: reachable nowhere
        ({**capacity("x", "c", "a", "100Gi"), "nodeTopology": {}}, True),  # empty selector: every node
        (
            {k: v for k, v in capacity("x", "c", "a", "1Gi").items() if k != "capacity"},
            False,
        ),  # no limit at all
    ],
)
def test_capacity_rules(cap: Raw, fits: bool) -> None:
    """``hasEnoughCapacity``: a CSIStorageCapacity of the claim's class, whose ``volumeLimit`` (maximumVolumeSize,
    else capacity; nil → not sufficient) is ≥ the request and whose nodeTopology (nil → false) selects the node."""
    node, message = verdict(base(cap))
    assert (node, message) == (("a", "") if fits else (None, refused(NO_SPACE)))


@pytest.mark.parametrize("version", ["1.30", "1.32", "1.37"])
def test_no_check_without_a_driver_opting_in_or_a_request(version: str) -> None:
    """The check runs only for a CSIDriver named by the class's provisioner with storageCapacity true, and a
    claim with requests.storage: a 1Gi capacity refuses the 10Gi claim only then."""
    small = capacity("x", "c", "a", "1Gi")
    assert verdict(base(small), version=version) == (None, refused(NO_SPACE))
    off = {**csidriver(), "spec": {"storageCapacity": False}}
    objects = [o for o in base(small) if o["kind"] != "CSIDriver"]
    assert verdict(objects, version=version) == ("a", "")  # no CSIDriver: not a capacity-tracking driver
    assert verdict([*objects, off], version=version) == ("a", "")
    no_request = claim("data", "c")
    del no_request["spec"]["resources"]
    assert verdict([*objects[:-2], no_request, small, csidriver()], version=version) == ("a", "")


def test_the_first_claim_to_provision_that_fails_decides_the_reason() -> None:
    """``checkVolumeProvisions`` returns at the first failing claim, claims sorted by size (byPVCSize):
    a 1Gi claim of a class whose allowedTopologies excludes the node → (false, true): only the bind conflict,
    though the 10Gi claim would not fit the 5Gi pool either. Swap the sizes: the 1Gi claim fails on capacity
    first → (true, false): only "not enough free storage"."""
    fenced = {**storage_class("far", CAPACITY_DRIVER, "WaitForFirstConsumer"),
              "allowedTopologies": [{"matchLabelExpressions": [{"key": "pool", "values": ["z"]}]}]}  # fmt: skip
    pool = capacity("x", "c", "a", "5Gi")
    assert verdict(base(fenced, claim("near", "far", "1Gi"), pool), "data", "near") == (None, refused(BIND))
    objects = base(fenced, claim("near", "far", "20Gi"), pool, size="6Gi")
    assert verdict(objects, "data", "near") == (None, refused(NO_SPACE))


def test_score_of_volumes_to_provision_in_1_37() -> None:
    """StorageCapacityScoring with no static binding: per class requested/NodeCapacity.Capacity. b: 10Gi of
    1000Gi → 10·100/1000 = 1 → 100 − 1 = 99; c: 10 of 12 → 1000/12 = 83 → 17; a: 10Gi of 100Gi
    capacity → 10 → 90, though its maximumVolumeSize is 20Gi (the score reads capacity, not the limit)."""
    objects = [*nodes("a", "b", "c"), csidriver(), storage_class("c", CAPACITY_DRIVER, "WaitForFirstConsumer"),
               claim("data", "c", "10Gi"), capacity("ca", "c", "a", "100Gi", max_size="20Gi"),
               capacity("cb", "c", "b", "1000Gi"), capacity("cc", "c", "c", "12Gi")]  # fmt: skip
    pod = uses(make_pod("p").obj(), "data")
    assert volume_scores(objects, pod, "1.37") == {"a": 90, "b": 99, "c": 17}
    assert volume_scores(objects, pod, "1.36") == {}  # the gate is off: no scorer


def test_two_claims_of_one_class_share_the_capacity() -> None:
    """Two 5Gi claims of class c, pool 20Gi: requested 5 + 5 = 10, capacity 20 (assigned, "cannot be +=",
    not 40) → 50 → score 50. A claim of a driver without capacity tracking has no NodeCapacity: left out."""
    objects = base(claim("more", "c", "5Gi"), capacity("x", "c", "a", "20Gi"), size="5Gi")
    pod = uses(make_pod("p").obj(), "data", "more")
    assert volume_scores(objects, pod, "1.37") == {"a": 50}
    plain = [storage_class("p", "other.csi.example", "WaitForFirstConsumer"), claim("p1", "p", "1Gi")]
    assert volume_scores(objects + plain, uses(make_pod("p").obj(), "p1"), "1.37") == {"a": 0}


def test_explain_shows_the_capacities_and_the_missing_kinds() -> None:
    """The refused node's evidence names the claim's request and each reachable pool's limit; a snapshot
    without CSIDriver objects marks the verdict unverified, one with a tracking driver but no
    CSIStorageCapacity too, and one with both does not."""
    objects = base(capacity("x", "c", "a", "100Gi", max_size="5Gi"))
    snap = snapshot_of(*objects, uses(make_pod("p").obj(), "data"))
    exp = explain_pod(Engine(snap), snap.pods[0])
    assert exp.message == refused(NO_SPACE)
    evidence = [e for n in exp.nodes for e in n.evidence]
    assert any("requests 10Gi of class c" in e and "default/x (maximumVolumeSize 5Gi, capacity 100Gi)" in e
               for e in evidence), evidence  # fmt: skip
    assert not [u for u in exp.unverified if "free storage" in u]
    for kinds, missing in ((("CSIDriver", "CSIStorageCapacity"), "CSIDriver or CSIStorageCapacity"),
                           (("CSIStorageCapacity",), "CSIStorageCapacity objects")):  # fmt: skip
        snap = snapshot_of(*(o for o in objects if o["kind"] not in kinds), uses(make_pod("p").obj(), "data"))
        lines = explain_pod(Engine(snap), snap.pods[0]).unverified
        assert any(
            f"holds no {missing}" in u and "free storage was not checked and scored" in u for u in lines
        )


def test_bad_capacity_objects_name_the_field() -> None:
    with pytest.raises(InputError, match=r"spec\.storageCapacity"):
        parse_csidriver({"kind": "CSIDriver", "metadata": {"name": "d"}, "spec": {"storageCapacity": "yes"}})
    with pytest.raises(InputError, match="maximumVolumeSize"):
        parse_capacity({**capacity("x", "c", "a", "1Gi"), "maximumVolumeSize": "lots"})
    with pytest.raises(InputError, match="storageClassName"):
        parse_capacity({k: v for k, v in capacity("x", "c", "a", "1Gi").items() if k != "storageClassName"})
