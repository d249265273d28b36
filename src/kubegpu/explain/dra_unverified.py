"""What a DRA pod's verdict rests on that kubegpu does not evaluate, beyond gated fields (``dra_gates``):
``unverified`` lines, one per cause, for ``explain.unverified``.

- A CEL selector using something of kube-scheduler's CEL environment kubegpu's CEL library cannot evaluate
  (``scheduler.dra_cel_ext.unsupported``): the allocator counted every device as matching it.
- kube-scheduler 1.32-1.33: DynamicResources runs only with the DynamicResourceAllocation feature gate, beta
  and off by default there (pkg/features/kube_features.go v1.32.13), so kubegpu reproduces a scheduler that
  ignores claims. The API server keeps a pod's spec.resourceClaims only with its own gate on
  (pkg/api/pod/util.go v1.32.13 dropDisabledDynamicResourceAllocationFields), so a snapshot pod with claims
  comes from a cluster that enabled DRA; whether kube-scheduler has it on too is not in the snapshot
  (kubernetes-sigs/dra-driver-nvidia-gpu#338: it was; google/dranet#30: it was not).
- kube-scheduler 1.37.0: a DeviceTaintRule without spec.deviceSelector taints every device
  (kubernetes/kubernetes#141620); v1.37.1 makes it match none (#141998, cherry-pick of #141648; dynamic-
  resource-allocation resourceslice/tracker applyPatches v0.37.2), as kubegpu does. kubegpu reads no patch
  release of the control plane.

Imports model and scheduler only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubegpu.model.dra import DeviceClass, DraObjects, ResourceClaim, ResourceSlice
from kubegpu.model.objects import FILTER_EFFECTS
from kubegpu.scheduler.dra_cel import CelError, compiled
from kubegpu.scheduler.dra_cel_ext import unsupported

DRA_GATE_OFF_MINORS = (32, 33)  # DynamicResourceAllocation beta, off by default (GA and on from 1.34)
TAINT_RULE_ALL_MINOR = 37  # 1.37.0 only; fixed in 1.37.1


def cel_lines(
    claims: list[ResourceClaim], classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice]
) -> list[str]:
    """A line per selector of the pod's unallocated claims (and their classes) kubegpu cannot evaluate: by its
    text, or on one of the devices of ``slices`` (the snapshot's)."""
    out: list[str] = []
    seen: set[str] = set()
    for c in claims:
        if c.allocated is not None:
            continue
        for req in c.requests:
            for sub in req.alternatives:
                cls = classes.get(sub.device_class_name)
                owners = [(f"DeviceClass {cls.name}", cls.selectors)] if cls is not None else []
                owners.append((f"claim {c.key} request {sub.name}", sub.selectors))
                for where, exprs in owners:
                    for i, expr in enumerate(exprs):
                        what = _cannot(expr, slices)
                        key = f"{where}#{i}"
                        if not what or key in seen:
                            continue
                        seen.add(key)
                        out.append(
                            f"{where}: selector #{i} uses {what}, which kube-scheduler's CEL environment provides "
                            "but kubegpu's CEL library cannot evaluate: kubegpu counted every device as matching "
                            "it, so the verdict and the devices chosen are not checked against that selector"
                        )
    return out


def _cannot(expr: str, slices: Sequence[ResourceSlice]) -> str:
    """What of the environment ``expr`` uses that kubegpu cannot evaluate: seen in the text, or met evaluating
    it on one of the devices of ``slices`` (a strings-extension name called on a list: the lists library's
    indexOf)."""
    what = unsupported(expr)
    if what:
        return what
    try:
        return compiled(expr).unevaluated_in(slices)
    except CelError:  # does not compile: the allocator reports that itself
        return ""


def gate_off_line(minor: int, has_claims: bool) -> list[str]:
    if minor not in DRA_GATE_OFF_MINORS or not has_claims:
        return []
    return [
        f"the pod has ResourceClaims, but DynamicResources runs in kube-scheduler 1.{minor} only with the "
        f"DynamicResourceAllocation feature gate (beta, off by default in 1.32-1.33) and kubegpu reproduces the "
        "default, which ignores claims: the claims were not checked. The API server kept the pod's "
        "spec.resourceClaims, which it drops with its gate off, so the cluster enabled DRA. If kube-scheduler has "
        "the gate on (a FailedScheduling message about claims or device classes says so), `--kube-version 1.34` "
        "checks the claims with the 1.34 rules; if it has it off, the pod is bound with unallocated claims and "
        'kubelet refuses it ("is not allowed to use resource claim"): turn the gate on in kube-scheduler and '
        "kube-controller-manager too"
    ]


def taint_rule_line(dra: DraObjects, claims: list[ResourceClaim], minor: int) -> list[str]:
    if minor != TAINT_RULE_ALL_MINOR or all(c.allocated is not None for c in claims):
        return []
    rules = [r.name for r in dra.taint_rules if not r.has_selector and r.taint.effect in FILTER_EFFECTS]
    if not rules:
        return []
    return [
        f"DeviceTaintRule(s) {', '.join(rules)} have no spec.deviceSelector: kube-scheduler 1.37.0 applies such "
        "a rule's taint to every device of every driver (kubernetes/kubernetes#141620), so a claim that does not "
        'tolerate it cannot be allocated anywhere ("cannot allocate all claims"); 1.37.1 and later match no '
        "device, as kubegpu does (check the control plane's patch release; upgrading or deleting the rule ends it)"
    ]
