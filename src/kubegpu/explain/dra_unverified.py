"""What a DRA pod's verdict rests on that kubegpu does not evaluate, beyond gated fields (``dra_gates``):
``unverified`` lines, one per cause, for ``explain.unverified``.

- A CEL selector using something of kube-scheduler's CEL environment kubegpu's CEL library cannot evaluate
  (``scheduler.dra_cel_ext.unsupported``): the allocator counted every device as matching it.

Imports model and scheduler only.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubegpu.model.dra import DeviceClass, ResourceClaim
from kubegpu.scheduler.dra_cel_ext import unsupported


def cel_lines(claims: list[ResourceClaim], classes: Mapping[str, DeviceClass]) -> list[str]:
    """A line per selector of the pod's unallocated claims (and their classes) kubegpu cannot evaluate."""
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
                        what = unsupported(expr)
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
