"""The RuntimeClass admission plugin (plugin/pkg/admission/runtimeclass/admission.go v1.37.2) on a pod being
created: the RuntimeClass named by ``spec.runtimeClassName`` sets the pod's ``spec.overhead`` (which the
scheduler and quota add to the pod's requests) and merges its ``scheduling.nodeSelector`` and
``scheduling.tolerations`` into the pod's; a pod that sets an overhead of its own must match it, and one that
sets an overhead without a RuntimeClass defining one is refused.

Tolerations are appended where not already present; upstream's ``MergeTolerations`` also drops one that
another covers, which changes no scheduling outcome. A RuntimeClass missing from the snapshot is not
assumed absent (the API server would refuse the pod): it is said, and nothing of it is applied.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kubegpu.model.objects import RuntimeClass
from kubegpu.model.quantity import QuantityError, parse_quantity, to_milli

NOT_IN_SNAPSHOT = "RuntimeClass {name!r} is not in the snapshot: its overhead and scheduling are not applied"


def _milli(resources: Mapping[str, Any]) -> dict[str, int] | None:
    """A resource list in milli-units for ``Semantic.DeepEqual`` (quantities compared by value); None when
    one does not parse (validation reports it)."""
    try:
        return {str(r): to_milli(str(r), parse_quantity(q)) for r, q in resources.items()}
    except QuantityError:
        return None


# kube-apiserver's answer (HTTP 500, no reason) to a pod with ``runtimeClassName: ""``: the RuntimeClass admission
# plugin looks up a class of an empty name (1.30.14, 1.33.13, 1.37.2 checked; 1.38.0-beta.0 refuses it in
# validation instead, kubernetes/kubernetes#139462)
EMPTY_NAME = "resource name may not be empty"


def admit(
    raw: Mapping[str, Any], classes: Mapping[str, RuntimeClass], name: str
) -> tuple[dict[str, Any], str, str]:
    """(the pod as the plugin leaves it, the refusal or "", a warning or ""). The refusal is upstream's
    ``pods "<name>" is forbidden: …`` (``admission.NewForbidden``)."""
    out = copy.deepcopy(dict(raw))
    spec = out.setdefault("spec", {})
    forbidden = f'pods "{name}" is forbidden: '
    wanted = spec.get("runtimeClassName")
    overhead = spec.get("overhead")
    if wanted == "":  # the plugin's lister Get of "": kube-apiserver 1.30.14-1.37.2 answer 500 with this text
        return out, EMPTY_NAME, ""
    if not wanted:  # validateOverhead with no RuntimeClass
        if overhead is not None:
            return (
                out,
                forbidden
                + "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
                "",
            )
        return out, "", ""
    rc = classes.get(str(wanted))
    if rc is None:
        return out, "", NOT_IN_SNAPSHOT.format(name=str(wanted))
    if rc.overhead is not None:  # setOverhead
        if overhead and _milli(overhead) != _milli(rc.overhead):
            return (
                out,
                forbidden + "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
                "",
            )
        spec["overhead"] = dict(rc.overhead)
    elif overhead is not None:  # validateOverhead
        return (
            out,
            forbidden + "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            "",
        )
    if rc.node_selector or rc.tolerations:  # setScheduling
        selector = dict(spec.get("nodeSelector") or {})
        for key, value in rc.node_selector.items():
            if key in selector and selector[key] != value:
                return (
                    out,
                    forbidden
                    + (
                        f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                        f"pod.spec.nodeSelector[{key}] = {selector[key]}"
                    ),
                    "",
                )
            selector[key] = value
        if selector:
            spec["nodeSelector"] = selector
        tolerations = list(spec.get("tolerations") or [])
        tolerations += [dict(t) for t in rc.tolerations if dict(t) not in tolerations]
        if tolerations:
            spec["tolerations"] = tolerations
    return out, "", ""
