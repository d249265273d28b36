"""A GPU Operator deploy label held at ``paused-for-mig-change``: NVIDIA's MIG manager keeps the GPU clients
(the device plugin among them) off a node while it re-partitions its GPUs. ``device_plugin``'s chain asks it
why a plugin DaemonSet does not select a node (``device_plugin._explain_not_selected``)."""

from __future__ import annotations

from kubegpu.model.names import MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, MIG_PAUSED_DEPLOY_VALUE
from kubegpu.model.objects import Node
from kubegpu.model.records import DaemonSet
from kubegpu.model.snapshot import ClusterSnapshot


def mig_paused(ds: DaemonSet, node: Node) -> list[str]:
    """The template's nodeSelector keys the node holds at ``paused-for-mig-change``."""
    sel = ds.template.node_selector
    return [
        k
        for k, v in sel.items()
        if node.labels.get(k) == MIG_PAUSED_DEPLOY_VALUE and v != MIG_PAUSED_DEPLOY_VALUE
    ]


def mig_paused_why(snapshot: ClusterSnapshot, node: Node, keys: list[str], commands: list[str]) -> str:
    """Why a GPU Operator deploy label reads paused-for-mig-change, and where to look. NVIDIA's MIG manager
    (mig-parted pkg/mig/reconfigure/reconfigure.go Run) sets mig.config.state=pending, pauses the GPU
    clients' deploy labels (shutdownKubernetesGPUClients), waits for their pods to go, re-partitions, then
    sets the labels back to true and the state to success or failed (setState). A return between the pause
    and setState (waitForPodsToBeDeleted timing out) leaves them paused with the state pending for good,
    NVIDIA/gpu-operator#2833, as the manager then waits for a new nvidia.com/mig.config value. The manager's
    log, when its pod is on the node, goes first in ``commands``."""
    config = node.labels.get(MIG_CONFIG_LABEL, "?")
    state = node.labels.get(MIG_CONFIG_STATE_LABEL, "unset")
    managers = [
        p for p in snapshot.pods_on(node.name) if p.owner is not None and "mig-manager" in p.owner.name
    ]
    if managers:
        commands.insert(0, f"kubectl -n {managers[0].namespace} logs {managers[0].name} --tail=200")
    where = f"pod {managers[0].key}" if managers else "the nvidia-mig-manager pod on the node"
    text = (
        f": {', '.join(keys)}={MIG_PAUSED_DEPLOY_VALUE} is NVIDIA's MIG manager keeping the GPU clients off "
        f"{node.name} while it applies {MIG_CONFIG_LABEL}={config} ({MIG_CONFIG_STATE_LABEL}={state}); it sets "
        "them back to true when the change ends, success or failed"
    )
    if state == "pending":
        text += (
            f". Still pending: either the change is running or the MIG manager stopped half-way and waits for a new "
            f"{MIG_CONFIG_LABEL} value (after a failed GPU-client shutdown it never restores the labels, "
            f"NVIDIA/gpu-operator#2833). Read {where}'s log before changing any label"
        )
    return text
