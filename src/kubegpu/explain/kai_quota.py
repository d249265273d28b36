"""kai-scheduler's refusal of a non-preemptible workload over its queue's GPU quota, read from its message.

KAI (pkg/scheduler/plugins/proportion/capacity_policy/quota_check.go isAllocatedNonPreemptibleOverQuota)
refuses a non-preemptible job when ``deserved < allocatedNonPreemptible + requested`` for a resource, in any
queue up its hierarchy, and says so (pkg/scheduler/api/unschedule_info.go GetBuildOverCapacityMessageForQueue):
"Non-preemptible workload is over quota. Workload requested R GPUs, but Q quota is D GPUs, while A GPUs are
already allocated for non-preemptible pods. Use a preemptible workload to go over quota." (KAI v0.17.0). The
comparison is in float64: fractions whose exact sum equals the quota (0.1 + 0.2 against 0.3) read as over it
(kai-scheduler/KAI-Scheduler#2209, open). kubegpu reads the numbers KAI printed; it does not reproduce KAI's
queue accounting.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from kubegpu.explain import kai_events
from kubegpu.explain.kubectl import mutate
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot

_OVER_QUOTA = re.compile(
    r"Non-preemptible workload is over quota\. Workload requested ([0-9.]+) GPUs, but (\S+) quota is "
    r"([0-9.]+) GPUs, while ([0-9.]+) GPUs are already allocated for non-preemptible pods"
)
# the established causes, as the grouped view names them
OVER_QUOTA = "kai-scheduler: non-preemptible workload over its queue's GPU quota"
ROUNDING = "kai-scheduler: non-preemptible GPU quota refused at an exact fit (float sum, KAI-Scheduler#2209)"


def over_quota(snapshot: ClusterSnapshot, pod: Pod) -> tuple[str, str] | None:
    """(cause, note) when kai-scheduler refused the pod's job as a non-preemptible workload over its queue's
    GPU quota; None otherwise. The queue is cluster-scoped (scheduling.run.ai Queue CRD ``scope: Cluster``)."""
    # the quota check is the job's, recorded on the PodGroup too (status_updater recordUnschedulablePodGroup)
    for event in reversed(kai_events.events(snapshot, pod)):
        m = _OVER_QUOTA.search(event.message)
        if m is None:
            continue
        try:
            requested, deserved, allocated = (Decimal(m.group(i)) for i in (1, 3, 4))
        except InvalidOperation:
            continue
        queue = m.group(2)
        said = (
            f"kai-scheduler refused it as a non-preemptible workload over queue {queue}'s GPU quota: "
            f"{requested} requested + {allocated} already allocated to non-preemptible pods against a quota of "
            f"{deserved}"
        )
        if requested + allocated <= deserved:
            bumped = deserved + Decimal("0.01")
            patch = f"patch queues.scheduling.run.ai {queue} --type merge -p "
            body = f"""'{{"spec":{{"resources":{{"gpu":{{"quota":{bumped}}}}}}}}}'"""
            return ROUNDING, (
                f"{said}, which is an exact fit, not over it. KAI compares the float64 sum "
                f"(quota_check.go: deserved < allocatedNonPreemptible + requested), and a sum of fractions can "
                f"exceed the quota by rounding (kai-scheduler/KAI-Scheduler#2209, open as of v0.17.0: raising "
                f"0.30 to 0.31 let the workload schedule). Raise the queue's GPU quota a hair: "
                f"`{mutate(pod.namespace, patch + body)[0]}`, then without "
                f"--dry-run (rollback: the same patch with quota {deserved}); or make the workload preemptible."
            )
        return OVER_QUOTA, (
            f"{said} (more than it). Non-preemptible workloads may not go over their queue's quota (KAI "
            "quota_check.go); use a preemptible workload (KAI's own advice), wait for the queue's non-preemptible "
            f"pods to finish, or raise queue {queue}'s GPU quota. kubegpu does not reproduce KAI's queue accounting."
        )
    return None
