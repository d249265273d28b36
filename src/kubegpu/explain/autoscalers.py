"""What a node autoscaler said about a Pending pod, beside the scheduler's message.

Cluster Autoscaler and Karpenter write events on the pods they could not (or will) add a node for
(``names.NODE_AUTOSCALER_EVENTS``). Karpenter's reason is FailedScheduling too, but it is not the pod's
scheduler: its message is about NodePools and instance types, never the nodes the scheduler filtered, so it
is shown apart and never compared with the predicted FailedScheduling text (``observed.seen`` skips it).

The reading of each message is from its writer's source: Cluster Autoscaler simulates the pod on each node
group's template node and counts the scheduler reasons per group (eventing_scale_up_processor.go
ReasonsMessage); Karpenter names, per NodePool, which instance-type filter left nothing
(pkg/controllers/provisioning/scheduling/nodeclaim.go InstanceTypeFilterError, scheduler.go limits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kubegpu.model.names import NODE_AUTOSCALER_EVENTS
from kubegpu.model.objects import Pod
from kubegpu.model.resources import is_gpu
from kubegpu.model.snapshot import ClusterSnapshot

# "pod didn't trigger scale-up: 2 Insufficient nvidia.com/gpu, 1 max node group size reached" (before CA 1.20
# also "(it wouldn't fit if a new node is added)" before the colon)
_CA_COUNTS = re.compile(r"(\d+) ([^,]+)")
_KARPENTER_POOL = re.compile(r'incompatible with nodepool "([^"]+)"(.*?)(?=; incompatible with nodepool "|$)')


@dataclass
class AutoscalerSaid:
    reporter: str  # the event's source.component
    who: str  # "Cluster Autoscaler" | "Karpenter"
    reason: str
    message: str
    when: str = ""
    meaning: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"reporter": self.reporter, "autoscaler": self.who, "reason": self.reason,
                "message": self.message, "when": self.when or None, "meaning": self.meaning}  # fmt: skip


def said(snapshot: ClusterSnapshot, pod: Pod) -> AutoscalerSaid | None:
    """The newest node autoscaler event about ``pod``, with what it means; None when there is none."""
    newest = None
    for e in snapshot.records.events_about("Pod", pod.namespace, pod.name):
        spec = NODE_AUTOSCALER_EVENTS.get(e.component)
        if spec is not None and e.reason in spec[1] and (newest is None or e.last_seen > newest.last_seen):
            newest = e
    if newest is None:
        return None
    who = NODE_AUTOSCALER_EVENTS[newest.component][0]
    out = AutoscalerSaid(newest.component, who, newest.reason, newest.message, newest.last_seen)
    if newest.reason == "NotTriggerScaleUp":
        out.meaning = _cluster_autoscaler(newest.message)
    elif newest.reason == "TriggeredScaleUp":
        out.meaning = ["a node is being added for the pod: it can schedule once that node is Ready and its "
                       "device plugin has registered the GPUs"]  # fmt: skip
    elif newest.reason == "FailedScheduling":
        out.meaning = _karpenter(newest.message)
    return out


def _cluster_autoscaler(message: str) -> list[str]:
    out = []
    for n, reason in _CA_COUNTS.findall(message.split(":", 1)[-1]):
        reason = reason.strip().rstrip(".")
        resource = reason.removeprefix("Insufficient ").strip()
        if reason.startswith("Insufficient ") and is_gpu(resource):
            # a group at size 0 has no node to copy; on AWS the Auto Scaling group's node-template tags
            # (cloudprovider/aws README "Scaling a node group to 0"; kubernetes/autoscaler#3869, #3448) tell it
            out.append(
                f"{n} node group(s): a new node of the group would have no {resource} in Cluster Autoscaler's "
                f"simulation, so it adds none. Its template node is a copy of a running node of the group, or, "
                f"for a group at size 0, built from the cloud provider's data: a group that has GPUs must "
                f"declare them there (AWS: the Auto Scaling group tag "
                f"k8s.io/cluster-autoscaler/node-template/resources/{resource})"
            )
        elif reason == "max node group size reached":
            out.append(f"{n} node group(s) are at their maximum size: raise it, or the pod waits for room")
        else:
            out.append(f"{n} node group(s): a new node would fail the scheduler's check too: {reason}")
    return out


# Phrases of Karpenter's errors (nodeclaim.go InstanceTypeFilterError.Error, scheduler.go, taints.go) and what
# each leaves out, most specific first: the offering (zone x capacity type), the resources, the requirements.
_KARPENTER_READINGS = (
    (("met the scheduling requirements and had enough resources, had a required offering",
      "no instance type has the required offering"),
     "instance types meet the pod's requirements and have its resources, but none has an offering (zone and "
     "capacity type) it may launch now: capacity or the NodePool's zones and capacity types, not the pod; widen "
     "them or the instance types"),
    (("had enough resources and the required offering met the scheduling requirements", "met all requirements"),
     "the instance types that have the pod's requests are outside its requirements (instance category, family "
     "or type) or the pod's nodeSelector / node affinity"),
    (("the required offering had the required resources", "has enough resources"),
     "no instance type it allows has the pod's requests (with the DaemonSets' overhead)"),
    (("exceed limits for nodepool", "limits have been exhausted"),
     "its spec.limits are reached: raise them, or the pod waits for room"),
    (("did not tolerate",), "the pod does not tolerate its taints"),
    (("incompatible requirements",), "its requirements and the pod's nodeSelector / node affinity exclude each other"),
)  # fmt: skip


def _karpenter(message: str) -> list[str]:
    out = []
    for pool, why in _KARPENTER_POOL.findall(message) or [("", message)]:
        which = f'NodePool "{pool}"' if pool else "the NodePools"
        reading = next((r for phrases, r in _KARPENTER_READINGS if any(p in why for p in phrases)), None)
        if reading is not None:
            out.append(f"{which}: {reading}")
    return out
