"""What kubelet does with a bound pod's devices while the pod is not running on them: it keeps them (the device
manager frees only a terminated pod's devices) and starts the pod's waiting containers again on them, as their
waiting reason and the pod's restartPolicy allow. Read by ``findings`` for a pod that holds devices its node no
longer advertises (or advertises under another name)."""

from __future__ import annotations

from kubegpu.explain import device_plugin
from kubegpu.model.names import IMAGE_PULL_WAITS
from kubegpu.model.objects import Pod
from kubegpu.model.snapshot import ClusterSnapshot


def not_running(snapshot: ClusterSnapshot, pod: Pod) -> str:
    """What a bound, Running pod's status says when it does not run on the devices kubelet gave it (a container
    waits: CrashLoopBackOff, an image pull, a config error); "" when it runs. kubelet keeps them for it: the
    device manager frees only a terminated pod's devices (UpdateAllocatedDevices) and gives a restarted container
    the ones it had (devicesToAllocate)."""
    if not device_plugin.may_crash(pod):
        return ""
    lines = device_plugin.pod_state(snapshot, pod)[1]
    return (
        f"It does not run now ({'; '.join(lines)}), though kubelet keeps the devices it was given for it and "
        + _retry(pod)
    )


def _retry(pod: Pod) -> str:
    """What kubelet does next with its waiting containers, by their reason. A container that never started
    (an image pull, a config error) is started whatever the pod's restartPolicy; one that exited is restarted
    only as restartPolicy allows, and CrashLoopBackOff is the back-off of that restart, so it is seen only when
    the policy restarts it (kubernetes pkg/kubelet/container/helpers.go ShouldContainerBeRestarted: "If the
    container was never started before, we should start it"; RestartPolicyNever: "do nothing")."""
    reasons = {c.waiting for c in pod.container_states if c.waiting}
    if "CrashLoopBackOff" in reasons:
        return "restarts its containers on them"
    if reasons <= IMAGE_PULL_WAITS:
        return "retries the image pull with back-off, then starts its containers on them"
    return "tries again to start its containers on them"


def holds(pod: Pod) -> bool:
    """Bound and in phase Running: kubelet admitted it with the devices it asked for, whatever its node advertises
    now (a container of it may be restarting all the same: ``not_running``)."""
    return bool(pod.node_name) and pod.phase == "Running"
