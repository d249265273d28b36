"""One list of the kinds a snapshot should hold (``sources.SNAPSHOT_KINDS``): the README's and the demo
page's ``kubectl get`` commands and the hint given for pasted ``kubectl describe`` output show the same
list, and it holds what the readers need — the Services and controllers of PodTopologySpread's default
selector and the storage objects of the volume plugins (listed by hand here, not from the modules that
build the list)."""

from __future__ import annotations

import re

from kubegpu import sources
from kubegpu.errors import InputError
from tests.conftest import REPO

_GET = re.compile(r"kubectl get (nodes,pods[a-z,.]*) -A -o yaml")


def test_readme_and_demo_page_show_the_one_kinds_list() -> None:
    for doc in ("README.md", "docs/demo.md"):
        found = _GET.findall((REPO / doc).read_text(encoding="utf-8"))
        assert found, doc
        assert all(kinds == sources.SNAPSHOT_KINDS for kinds in found), (doc, found)


def test_pasted_describe_output_is_refused_with_the_readme_command() -> None:
    """What a user sees: ``kubectl describe node`` text is refused, and the error gives README's command."""
    readme_kinds = _GET.findall((REPO / "README.md").read_text(encoding="utf-8"))[0]
    errors: list[InputError] = []
    got = sources.read_text(
        "Name:  gpu-1\nLabels:  x=y\nCapacity:\n  nvidia.com/gpu: 8\n", "node.txt", errors
    )
    assert got == []
    assert len(errors) == 1
    assert f"kubectl get {readme_kinds} -A -o yaml" in errors[0].one_line()


def test_the_readme_list_holds_what_the_readers_need_once_each() -> None:
    """The kinds written out by hand: what PodTopologySpread's default selector reads (Services, RCs,
    ReplicaSets, StatefulSets: helper.DefaultSelector) and the volume plugins' objects (PVCs, PVs,
    StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities), besides nodes and pods."""
    kinds = _GET.findall((REPO / "README.md").read_text(encoding="utf-8"))[0].split(",")
    assert len(kinds) == len(set(kinds))
    needed = {
        "nodes", "pods", "services", "replicationcontrollers", "replicasets", "statefulsets",
        "persistentvolumeclaims", "persistentvolumes", "storageclasses", "csinodes", "csidrivers",
        "csistoragecapacities",
    }  # fmt: skip
    assert needed <= set(kinds)
