"""What the device plugin chain's pods wait for or fail on, where the upstream source says why: the init
containers a known plugin pod runs first, the GPU Operator validator's components, and image references that
cannot be pulled for a known reason. Text only; ``kubegpu.explain.device_plugin`` reads the pods."""

from __future__ import annotations

import re
from typing import Final

# What a plain init container of a known plugin that never completes waits for. GKE's device plugin pod
# (container-engine-accelerators) runs nvidia-driver-installer first: with no driver to install (the pool's
# GPUDriverInstallationConfig unspecified or INSTALLATION_DISABLED, Node Auto-Provisioning's default) it loops
# on "Waiting for GPU driver libraries to be available" (issues #402, #407), so the plugin never starts. The
# GPU Operator's plugin pod runs toolkit-validation first: "until [ -f /run/nvidia/validations/toolkit-ready ]"
# (NVIDIA/gpu-operator#378), a file its validator's toolkit component writes (validator/main.go toolkitStatusFile).
INIT_WAITS: Final = {
    "toolkit-validation": (
        ": it waits for /run/nvidia/validations/toolkit-ready, which the GPU Operator's validator "
        "(nvidia-operator-validator) writes once the driver and the NVIDIA container toolkit work on the node: "
        "read that pod and the driver and container-toolkit pods on the node"
    ),
    "nvidia-driver-installer": (
        ": it waits until a GPU driver is installed on the node, which GKE does not do for a node pool created "
        "without a GPU driver version (Node Auto-Provisioning's default): create the pool with "
        "gpu-driver-version=default|latest (NAP: the pod's nodeSelector cloud.google.com/gke-gpu-driver-version), "
        "or install the driver DaemonSet; its log says which"
    ),
}


# Why the GPU Operator's validator fails an init container (cmd/nvidia-validator/main.go): the toolkit
# component runs nvidia-smi in its own container "to check if container run with toolkit injected files", so
# its failure means the container runtime gave that container no driver files; NVIDIA/gpu-operator#1374 (fixed
# there with cdi.enabled=true, cdi.default=true).
VALIDATOR_FAILS: Final = {
    "toolkit-validation": (
        ": it runs nvidia-smi in a container the NVIDIA container runtime should give the driver's files, so the "
        "runtime did not inject them (the container toolkit's runtime configuration in containerd / CRI-O, or CDI: "
        "the GPU Operator's cdi.enabled / cdi.default values); its log says which"
    ),
}


# NVIDIA/gpu-operator PR 1483 put the validator into the operator's image; the maintainer on #1968: "Starting in
# 25.10.0, we consolidated the gpu-operator and gpu-operator-validator images into a single image" (the pull of
# gpu-operator-validator:v25.10.1 there backs off for good). Tags are vYY.MM.P, from 26.x also without the v.
OLD_VALIDATOR_IMAGE = "gpu-operator-validator"
_SPLIT_VALIDATOR = re.compile("/" + re.escape(OLD_VALIDATOR_IMAGE) + r":(v?\d+\.\d+\.\S*)")


def validator_in_operator_image(version: str) -> bool:
    """Whether GPU Operator ``version`` (v25.10.1, 26.7.0) ships the validator inside its own image."""
    m = re.match(r"v?(\d+)\.(\d+)", version)
    return m is not None and (int(m[1]), int(m[2])) >= (25, 10)


def image_hint(image: str) -> str:
    """Why a pull of ``image`` cannot succeed, where that is known; "" otherwise."""
    m = _SPLIT_VALIDATOR.search(image)
    if m is None or not validator_in_operator_image(m[1]):
        return ""
    return (
        f" ({image}: from GPU Operator v25.10.0 the validator is in the operator's own image, "
        "nvcr.io/nvidia/gpu-operator, and no gpu-operator-validator image of that version is published: values "
        "carried over from an older chart (validator.repository / validator.image) still name the old one; drop "
        "them, or point them at the gpu-operator image of the same version, and upgrade the release again)"
    )
