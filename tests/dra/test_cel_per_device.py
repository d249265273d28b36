"""What compiling a CEL selector decides is kept per expression; what evaluating it decides is kept per device.

kube-scheduler compiles a selector once (k8s.io/dynamic-resource-allocation cel/compile.go v0.37.2
``CompileCELExpression`` → ``CompilationResult``) and evaluates that program on each device
(``CompilationResult.DeviceMatches(ctx, Device)``). The attribute values have no static type (compile.go
``attributeType`` is ``AnyType``): ``getAttributeValue`` gives each device's value its own type (``IntValue`` →
int64, ``BoolValue`` → bool, ``StringValue`` → string, ``VersionValue`` → semver), so what an expression does
can differ from one device to the next, and a result (or an error) of one device says nothing of another.
``&&`` is CEL's commutative logical and (google/cel-go README, "CEL uses commutative logical operators"):
``false && x`` is false whatever ``x`` gives, so a MIG device (NVIDIA's ``type`` attribute ``mig``) never reaches
the second clause below, while a full GPU (``type`` ``gpu``) does and meets the Kubernetes lists library's
``indexOf`` on a list (k8s.io/apiserver pkg/cel/environment base.go v0.37.2 ``library.Lists``), which kubegpu
cannot evaluate. Device shapes: NVIDIA's DRA driver (``tests.dra.objects``, kubernetes-sigs/dra-driver-nvidia-gpu
issue #719's ResourceSlice: ``type`` ``gpu`` or ``mig``, ``index`` on GPUs, ``parentIndex`` on MIG devices).

The bug these pin: a runtime outcome of one device was stored in the expression's cached ``Selector``, so every
later device, in this snapshot or the next one the same process reads, was answered "not evaluated" (and
counted as matching) too; and the result cache keyed an int attribute and a bool one alike (``1 == True`` in
Python).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.dra import Device
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_cel import CelError, compiled
from kubegpu.scheduler.dra_cel_ext import CelUnsupported
from tests.dra import objects as o

D = "gpu.nvidia.com"
# "a full GPU, index 0 or 2": evaluable on a MIG device (false), not by kubegpu on a full GPU
FULL_0_OR_2 = f"device.attributes['{D}'].type == 'gpu' && [0, 2].indexOf(device.attributes['{D}'].index) >= 0"
GPU = Device("gpu-0", {f"{D}/type": "gpu", f"{D}/index": 0, f"{D}/productName": o.A100_80}, {}, {})
MIG = Device("gpu-0-mig-1", {f"{D}/type": "mig", f"{D}/parentIndex": 0, f"{D}/profile": "1g.10gb"}, {}, {})


@pytest.fixture(autouse=True)
def _fresh_selectors() -> None:
    compiled.cache_clear()  # each test starts from the compile cache empty, as a new process does


def test_a_device_the_expression_cannot_be_evaluated_on_leaves_the_others_evaluated() -> None:
    sel = compiled(FULL_0_OR_2)
    assert sel.matches(D, MIG) is False
    with pytest.raises(CelUnsupported, match=r"indexOf\(\) on a list"):
        sel.matches(D, GPU)
    # the full GPU's outcome is its own: the MIG device is still false (before: "not evaluated" from now on)
    assert sel.matches(D, MIG) is False
    other_mig = Device("gpu-1-mig-3", {**MIG.attributes, f"{D}/parentIndex": 1}, {}, {})
    assert compiled(FULL_0_OR_2).matches(D, other_mig) is False
    assert sel.unsupported == ""  # the text uses nothing kubegpu lacks: compiling decided nothing against it
    # what is reported as not evaluated depends on the devices asked about
    assert sel.unevaluated_on([(D, MIG), (D, other_mig)]) == ""
    assert "indexOf() on a list" in sel.unevaluated_on([(D, MIG), (D, GPU)])


def test_an_int_and_a_bool_attribute_are_not_one_cached_value() -> None:
    """compile.go getAttributeValue: an IntValue is an int64, a BoolValue a bool. ``x == true`` is true for the
    bool; for the int kubegpu's CEL reports an error (cel-go's heterogeneous equality would say false): either
    way not the bool's true, which the result cache returned once the int had been evaluated first."""
    expr = "device.attributes['dra.example.com'].x == true"
    as_int = Device("a", {"dra.example.com/x": 1}, {}, {})
    as_bool = Device("b", {"dra.example.com/x": True}, {}, {})
    with pytest.raises(CelError):
        compiled(expr).matches("dra.example.com", as_int)
    assert compiled(expr).matches("dra.example.com", as_bool) is True


def _any_nvidia_class() -> dict[str, Any]:
    """A DeviceClass of every device of NVIDIA's driver (the form of the Kubernetes docs' example class,
    ``device.driver == "driver.example.com"``)."""
    return {
        "apiVersion": o.API,
        "kind": "DeviceClass",
        "metadata": {"name": "nvidia-any"},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{D}'"}}]},
    }


def _explain(node_objs: list[dict[str, Any]]) -> Any:
    req = o.request("gpu", cls="nvidia-any", selectors=(FULL_0_OR_2,))
    objs = [_any_nvidia_class(), *node_objs, *o.generated("a", req)]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    return explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "a"))


def test_a_later_snapshot_of_mig_devices_only_is_refused_as_kube_scheduler_refuses_it() -> None:
    """First a cluster with a full GPU: kubegpu cannot evaluate the selector there, counts it as matching and
    says so. Then (same process, as ``kubegpu live`` or the cluster exporter reads one snapshot after another)
    a cluster whose node has MIG devices only: the selector is false on each (``type`` is ``mig``), so
    kube-scheduler cannot allocate the claim. Before, the full GPU's "not evaluated" answered for the MIG devices
    too: kubegpu called the pod schedulable, with an "unverified" line about a device it never saw."""
    first = _explain([*o.gpu_node("g1", 1)])
    assert first.schedulable, first.message
    assert [u for u in first.unverified if "indexOf() on a list" in u], first.unverified
    migs = [o.mig_device(0, j, "m1") for j in (1, 2)]
    second = _explain([o.make_node("m1").obj(), o.node_slice("m1", migs)])
    assert not second.schedulable
    assert "cannot allocate all claims" in second.message
    assert not [u for u in second.unverified if "indexOf() on a list" in u], second.unverified


def test_an_unevaluable_selector_on_a_pod_that_does_not_fit_is_explained_not_a_traceback() -> None:
    """compile.go's own cel.bind example (``cel.bind(dra, device.attributes["dra.example.com"], ...)``) on a
    claim for 2 GPUs of a 1-GPU node: the pod cannot fit whatever the selector says; the per-device evidence
    counts the selector as matching (as the allocator does) instead of raising out of ``explain``."""
    bind = f"cel.bind(g, device.attributes['{D}'], g.productName.startsWith('NVIDIA'))"
    objs = [
        *o.gpu_classes(),
        *o.gpu_node("n1", 1),
        *o.generated("a", o.request("gpu", count=2, selectors=(bind,))),
    ]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    exp = explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "a"))
    assert not exp.schedulable
    evidence = " ".join(e for n in exp.nodes for e in n.evidence)
    assert "selectors admit 1" in evidence and "1 short" in evidence, evidence
    assert [u for u in exp.unverified if "cel.bind" in u], exp.unverified


def test_the_memos_of_a_selector_stay_bounded_when_devices_keep_coming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A selector stays compiled for the process's life (the live faces read new Device objects on every cycle
    of the slices): its per-device and per-view memos start afresh at MAX_MEMO entries instead of growing,
    and the answers stay right across the reset."""
    from kubegpu.scheduler import dra_cel

    monkeypatch.setattr(dra_cel, "MAX_MEMO", 8)
    sel = compiled(f"device.attributes['{D}'].uuid.endsWith('7')")
    answers = [sel.matches(D, Device(f"gpu-{i}", {f"{D}/uuid": f"GPU-{i:04d}"}, {}, {})) for i in range(50)]
    assert answers == [i % 10 == 7 for i in range(50)]
    assert len(sel._by_device) <= 8 and len(sel._results) <= 8


def test_what_a_selector_cannot_be_evaluated_on_is_found_once_per_slice_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every Pending pod's unverified lines ask which device a selector cannot be evaluated on, over the same
    slices: found once (a walk of every device), then read back, while the slice list is the same object
    (review: 1,000 pods × 40,000 devices on 5,000 nodes walked once a pod). An empty answer is not kept: a
    later pod's allocation may meet such a device."""
    from kubegpu.explain import dra_unverified
    from kubegpu.model.dra import ResourceSlice
    from kubegpu.scheduler.dra_cel import Selector

    migs = tuple(Device(f"gpu-0-mig-{i}", {**MIG.attributes}, {}, {}) for i in range(200))
    slices = [ResourceSlice("node-a", D, "node-a", 1, 1, node_name="node-a", devices=(*migs, GPU))]
    walked: list[int] = []
    real = Selector.unevaluated_on

    def counting(self: Selector, devices: Any) -> str:
        walked.append(1)
        return real(self, devices)

    monkeypatch.setattr(Selector, "unevaluated_on", counting)
    sel = compiled(FULL_0_OR_2)
    assert dra_unverified._cannot(FULL_0_OR_2, slices) == ""  # nothing evaluated yet: nothing met, not kept
    with pytest.raises(CelUnsupported):
        sel.matches(D, GPU)  # an allocation meets the full GPU
    answers = [dra_unverified._cannot(FULL_0_OR_2, slices) for _ in range(5)]
    assert all("indexOf() on a list" in a for a in answers)
    assert len(walked) == 2  # the empty answer, then one walk for the five
    assert "indexOf() on a list" in dra_unverified._cannot(
        FULL_0_OR_2, list(slices)
    )  # another list: asked anew
    assert len(walked) == 3
