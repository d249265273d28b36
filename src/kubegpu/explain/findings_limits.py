"""LimitRanges that hand out or demand GPUs: what the LimitRanger admission plugin does with a GPU resource
(plugin/pkg/admission/limitranger/admission.go v1.37.2; each effect below checked on kube-apiserver 1.37.2,
``tests/test_findings_limits.py``).

* A Container item with a default for a GPU resource (written, or its ``max``: ``SetDefaults_LimitRangeItem``
  makes a missing default the max) gives that many GPUs to every container and init container that sets no
  limit of its own: a pod meant for CPU only asks for GPUs, and a pod of two containers asks for two
  defaults. The plugin says so in the pod's ``kubernetes.io/limit-ranger`` annotation.
* A Pod item with a max for a GPU resource refuses every pod of the namespace that sets no limit for it
  (``maximum … usage per Pod is N.  No limit is specified``).
* A Container item with a min (and no default) for a GPU resource sets the request alone, which validation
  refuses for a resource that cannot be overcommitted: every container must set the GPU limit itself.

May not import: faces.
"""

from __future__ import annotations

import json
from typing import Final

from kubegpu.explain.findings_base import Finding
from kubegpu.explain.kubectl import kubectl, mutate
from kubegpu.model.objects import LimitRange, Pod
from kubegpu.model.parse import LIMIT_REQUIRED
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"  # limitranger admission.go limitRangerAnnotation
SHOWN = 5  # pods named in a finding's detail
LIMIT_RANGE: Final = "limitrange-gpu"  # ``Finding.check`` of the findings below (one per LimitRange item)


def limit_range_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    out = []
    for lr in sorted(snapshot.limit_ranges, key=lambda lr: (lr.namespace, lr.name)):
        for i, item in enumerate(lr.limits):
            if item.type == "Container":
                for r, amount in sorted(item.default.items()):
                    if is_gpu(r) and amount > 0:
                        out.append(_default_finding(snapshot, lr, i, r, amount, amount == item.max.get(r)))
                for r, amount in sorted(item.min.items()):
                    if is_gpu(r) and amount > 0 and r not in item.default:
                        out.append(_refusing(lr, f"make{{s}} every container set a {r} limit", (
                            f"its Container item has min {r} {format_milli(r, amount)} and no default: LimitRanger "
                            "sets the request alone on a container that sets no limit, which validation refuses for "
                            f'a GPU ("{LIMIT_REQUIRED}"), so every container and init container, CPU-only pods\' '
                            "included, must set the limit itself.")))  # fmt: skip
            elif item.type == "Pod":
                for r, amount in sorted(item.max.items()):
                    if is_gpu(r):
                        shown = format_milli(r, amount)
                        out.append(_refusing(lr, f"refuse{{s}} every pod that sets no {r} limit", (
                            f"its Pod item bounds {r} at {shown}, and a pod whose containers set no {r} limit is "
                            f'refused at creation: "maximum {r} usage per Pod is {shown}.  No limit is specified" '
                            "(CPU-only pods and their controllers' FailedCreate included). Bound GPUs per namespace "
                            f"with a ResourceQuota on requests.{r}, or per container with a Container item (whose "
                            "default must then be 0).")))  # fmt: skip
    return out


def _default_finding(
    snapshot: ClusterSnapshot, lr: LimitRange, index: int, r: str, amount: int, from_max: bool
) -> Finding:
    shown = format_milli(r, amount)
    given = [
        p.key
        for p in _annotated(snapshot).get(lr.namespace, ())
        if f"{r} limit for " in p.annotations[LIMIT_RANGER_ANNOTATION]
    ]
    evidence = (
        f" {len(given)} pod(s) here got it ({LIMIT_RANGER_ANNOTATION}): {', '.join(given[:SHOWN])}"
        + (f" and {len(given) - SHOWN} more" if len(given) > SHOWN else "")
        + "."
        if given
        else ""
    )
    origin = " (its max: a Container item without a default takes the max as the default)" if from_max else ""
    pointer = "/".join(("", "spec", "limits", str(index), "{field}", r.replace("~", "~0").replace("/", "~1")))

    def patch(value: str) -> str:
        ops = [
            {"op": "add", "path": pointer.format(field=f), "value": value}
            for f in ("default", "defaultRequest")
        ]
        return f"patch limitrange {lr.name} --type=json -p '{json.dumps(ops)}'"

    old = format_milli(r, lr.limits[index].default_request.get(r, amount))
    rollback = kubectl(lr.namespace, patch(old))
    gives = f"every container {shown} {r} by default"
    return Finding(
        "warning", "quota", f"LimitRange {lr.namespace}/{lr.name} gives {gives}",
        [f"limitrange/{lr.namespace}/{lr.name}", *(f"pod/{k}" for k in given)],
        f"its Container item sets the default {r} limit to {shown}{origin}: LimitRanger gives it to every "
        "container and init container that sets no limit of its own, so a pod meant for CPU only asks for "
        f"GPUs (and waits Pending for them, or holds them idle), and a pod of two containers asks for {shown} "
        f"each.{evidence} Fix: a default of 0 keeps the max and gives no GPU unasked (or bound GPUs with a "
        f"ResourceQuota on requests.{r} instead).",
        "R8",
        [f"kubectl -n {lr.namespace} get limitrange {lr.name} -o yaml",
         *mutate(lr.namespace, patch("0"), output="yaml"),
         f"{rollback}   # rollback (default {shown}, defaultRequest {old})"],
        check=LIMIT_RANGE, subject=f"{lr.namespace}/{lr.name}", many=f"LimitRanges give {gives}",
    )  # fmt: skip


def _annotated(snapshot: ClusterSnapshot) -> dict[str, list[Pod]]:
    """Per namespace, the pods LimitRanger wrote its annotation on, in the snapshot's order: read once per
    snapshot, not once per GPU default of a LimitRange (a fleet has hundreds of namespaces, 20,000 pods)."""

    def index() -> dict[str, list[Pod]]:
        by_ns: dict[str, list[Pod]] = {}
        for p in snapshot.pods:
            if LIMIT_RANGER_ANNOTATION in p.annotations:
                by_ns.setdefault(p.namespace, []).append(p)
        return by_ns

    return snapshot.derived("limit-ranger-annotated", index)


def _refusing(lr: LimitRange, what: str, detail: str) -> Finding:
    """A LimitRange that makes the API server refuse pods: the finding around ``what`` it does (its verb's
    ending ``{s}``: "s" for one LimitRange, "" for several) and why."""
    return Finding(
        "warning", "quota", f"LimitRange {lr.namespace}/{lr.name} {what.format(s='s')}",
        [f"limitrange/{lr.namespace}/{lr.name}"], detail, "R8",
        [f"kubectl -n {lr.namespace} get limitrange {lr.name} -o yaml"],
        check=LIMIT_RANGE, subject=f"{lr.namespace}/{lr.name}", many=f"LimitRanges {what.format(s='')}",
    )  # fmt: skip
