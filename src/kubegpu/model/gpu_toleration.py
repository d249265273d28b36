"""The toleration-without-GPU pitfall (R17.4), the one rule ``diagnose``'s finding, ``explain``'s note, ``plan``'s
pitfall and the admission lint's ``toleration-without-gpu`` read: a pod tolerates the GPU-node taint, is given no
GPU, and is no node agent or system add-on. Each caller passes what it reads the facts from (explain: a parsed
pod and the snapshot's claims; the admission lint: a manifest, its containers' claim references and who asked).
"""

from __future__ import annotations

from kubegpu.model.names import SYSTEM_NAMESPACE


def exempt_from_gpu_toleration_rule(namespace: str, daemonset: bool) -> bool:
    """Pods that tolerate the GPU taint on purpose, without a GPU of their own.

    A DaemonSet's pod: node agents (the GPU Operator's operands, NFD's worker, DCGM exporter, node-exporter and
    other monitoring agents) must run on every GPU node, and a DaemonSet places one pod per node whose taints it
    tolerates, so it takes one pod's share of the node, not whatever the scheduler packs there.

    Any pod in kube-system: the namespace of the cluster's own add-ons (DNS, CNI and CSI controllers, metrics,
    the cloud provider's agents), deployed by the distribution or the platform team, often with a blanket
    ``operator: Exists`` toleration so that they run whatever taints nodes carry. Tenants cannot create there
    under any usual RBAC, an add-on manager reconciles the add-on's spec back, and "drop the toleration" is no
    fix its owners' users can make. A tenant's Deployment elsewhere that tolerates the taint, by contrast, lets
    the scheduler place replicas on GPU nodes, taking the CPU and memory GPU pods need: that stays the pitfall.
    """
    return daemonset or namespace == SYSTEM_NAMESPACE


def tolerates_without_gpu(*, tolerates: bool, given_gpu: bool, namespace: str, daemonset: bool) -> bool:
    """R17.4: ``tolerates`` the GPU taint, is not ``given_gpu`` (an NVIDIA or other scheduler's GPU ask in its
    spec, ``gpu_facts.asks_gpu``, or a GPU claim) and is not exempt (``exempt_from_gpu_toleration_rule``)."""
    return tolerates and not given_gpu and not exempt_from_gpu_toleration_rule(namespace, daemonset)
