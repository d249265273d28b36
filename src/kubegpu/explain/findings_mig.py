"""MIG layouts the node's ``nvidia.com/mig.strategy`` cannot serve (R6.3), and the rule they break.

``mig.strategy=single`` advertises every MIG device as one ``nvidia.com/gpu``, so it needs every GPU of the
node MIG-enabled with one profile (``single_strategy_breach``: the one statement of that rule; ``kubegpu plan
mig`` refuses a planned layout with it). On a node that breaks it, GPU feature discovery writes
``nvidia.com/gpu.product=<model>-MIG-INVALID`` with ``nvidia.com/gpu.count``, ``replicas`` and ``memory``
``0`` (k8s-device-plugin ``internal/lm/mig-strategy.go``, ``newInvalidMigStrategyLabeler``), and the
device plugin does not start (``internal/rm/device_map.go``: "invalid MIG configuration: more than one MIG
device type present on node", or "all devices on the node must be configured with the same migEnabled
value"), so the node advertises no GPU (NVIDIA/gpu-operator#479).

Read from the labels alone: the GPUs' actual layout (which profiles, which GPU is off MIG) is not in them,
so the finding names the config that produced it (``nvidia.com/mig.config``), not the profiles.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubegpu.explain.findings_base import Finding
from kubegpu.model.names import (
    GPU_COUNT_LABEL,
    GPU_MEMORY_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_REPLICAS_LABEL,
    MIG_CONFIG_LABEL,
    MIG_STRATEGY_LABEL,
)
from kubegpu.model.snapshot import ClusterSnapshot

MIG_LAYOUT_LABELS = (
    f"{MIG_CONFIG_LABEL},{MIG_STRATEGY_LABEL}"  # (``get nodes -L``: what a node's MIG layout is)
)
SINGLE_STRATEGY_RULE = "mig.strategy single needs every GPU MIG-enabled with one profile"
INVALID_SUFFIX = "-MIG-INVALID"  # GFD productLabel(model, "MIG", "INVALID")


def single_strategy_breach(gpus: Iterable[tuple[bool, Iterable[str]]]) -> str:
    """'' when a layout suits ``mig.strategy=single``, else the rule and what breaks it. ``gpus``: per GPU,
    whether MIG is enabled and the profiles it has instances of."""
    layout = [(enabled, list(profiles)) for enabled, profiles in gpus]
    profiles = sorted({p for enabled, ps in layout if enabled for p in ps})
    without = sum(not enabled for enabled, _ in layout)
    if not without and len(profiles) == 1:
        return ""
    return (
        f"{SINGLE_STRATEGY_RULE}; the device plugin refuses this layout (profiles {profiles}, "
        f"{without} GPU(s) without MIG)"
    )


def mig_invalid_findings(snapshot: ClusterSnapshot) -> list[Finding]:
    """A node GFD labelled ``<model>-MIG-INVALID``: its MIG layout breaks the single strategy's rule."""
    out = []
    for node in snapshot.nodes:
        product = node.labels.get(GPU_PRODUCT_LABEL, "")
        if not product.endswith(INVALID_SUFFIX):
            continue
        strategy = node.labels.get(MIG_STRATEGY_LABEL)
        config = node.labels.get(MIG_CONFIG_LABEL)
        zeros = ", ".join(
            f"{k}={node.labels[k]}"
            for k in (GPU_COUNT_LABEL, GPU_REPLICAS_LABEL, GPU_MEMORY_LABEL)
            if k in node.labels
        )
        made_by = (
            f"the MIG config {MIG_CONFIG_LABEL}={config}"
            if config
            else f"its MIG layout (no {MIG_CONFIG_LABEL} label)"
        )
        out.append(Finding(
            "critical", "driver/device-plugin", "MIG layout invalid for mig.strategy single", [f"node/{node.name}"],
            f"GPU feature discovery labels it {GPU_PRODUCT_LABEL}={product}" + (f" ({zeros})" if zeros else "")
            + f" under {MIG_STRATEGY_LABEL}={strategy or '(label absent; GFD writes INVALID only for single)'}: "
            f"{SINGLE_STRATEGY_RULE}, and {made_by} breaks it (several MIG profiles, a GPU left out of MIG, or a "
            "MIG-enabled GPU without instances). The device plugin then refuses to start (\"invalid MIG "
            "configuration: more than one MIG device type present on node\") and the node advertises no "
            "nvidia.com/gpu, though nvidia-smi shows the MIG instances. Fix: set mig.strategy=mixed (pods then "
            "request nvidia.com/mig-<profile>), or label the node with a MIG config that gives every GPU one "
            "profile (mig-parted's all-<profile> configs, e.g. all-1g.10gb).",
            "R6.3, R3.4",
            [f"kubectl get node {node.name} -L {GPU_PRODUCT_LABEL},{MIG_LAYOUT_LABELS}",
             f"kubectl label node {node.name} {MIG_CONFIG_LABEL}=<single-profile-config> --overwrite",
             "kubectl patch clusterpolicies.nvidia.com/cluster-policy --type=merge "
             "-p '{\"spec\":{\"mig\":{\"strategy\":\"mixed\"}}}'   # GPU Operator: every node"],
        ))  # fmt: skip
    return out
