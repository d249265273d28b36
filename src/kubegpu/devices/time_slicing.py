"""A node once its NVIDIA device plugin time-slices every GPU ``replicas`` ways, and the plugin config
(``version: v1``) that does it (R6.2).

``time_sliced_node`` is the one implementation, used by ``kubegpu plan time-slicing`` (its capacity and,
through ``plan.device_effect``, its effect) and by ``kubegpu simulate --time-slicing``: the plugin
advertises GPUs × replicas (every replica of an unhealthy GPU unhealthy, so allocatable drops by replicas
per bad GPU), GFD relabels ``nvidia.com/gpu.replicas``, ``.sharing-strategy`` and ``.product``
(``-SHARED`` appended when time-sliced and not renamed), and the config in effect is recorded where
``explain.engine`` reads it (``kubegpu.io/device-plugin-config``). Sources: NVIDIA/k8s-device-plugin
README (time-slicing, ``renameByDefault``, ``failRequestsGreaterThanOne``) and GFD's ``-SHARED`` product
suffix.

Must not import: anything above ``kubegpu.model`` (pure: a Node in, a Node out).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

import yaml

from kubegpu.model.gpu_facts import labelled_gpu_count
from kubegpu.model.names import (
    DEVICE_PLUGIN_CONFIG_ANNOTATION,
    GPU_MILLI,
    GPU_PRODUCT_LABEL,
    GPU_REPLICAS_LABEL,
    GPU_SHARING_LABEL,
    NVIDIA_GPU,
)
from kubegpu.model.objects import Node

# GFD's product label suffixes (k8s-device-plugin internal/lm/mig-strategy.go, resource.go getProductName):
# ``-MIG-<profile>`` under mig.strategy single (a compute-instance profile too: ``-MIG-1c.3g.40gb``),
# ``-MIG-INVALID`` when single finds mixed or no MIG devices, ``-SHARED`` when time-sliced (after either).
GFD_SUFFIX = re.compile(r"(-MIG-(?:INVALID|(?:\d+c\.)?\d+g\.\d+gb).*|-SHARED)$")


def plugin_config_text(replicas: int, *, rename: bool, fail_requests_greater_than_one: bool) -> str:
    """The NVIDIA device plugin config (``version: v1``) for time-slicing every GPU ``replicas`` times."""
    doc: dict[str, object] = {"version": "v1", "flags": {"migStrategy": "none"}}
    if replicas > 1:
        doc["sharing"] = {
            "timeSlicing": {
                "renameByDefault": rename,
                "failRequestsGreaterThanOne": fail_requests_greater_than_one,
                "resources": [{"name": NVIDIA_GPU, "replicas": replicas}],
            }
        }
    return yaml.safe_dump(doc, sort_keys=False)


def time_sliced_node(
    node: Node,
    replicas: int,
    *,
    rename: bool = False,
    config_text: str | None = None,
    gfd_product: bool = True,
) -> Node:
    """``node`` once its device plugin runs ``replicas`` time-sliced replicas per GPU (1: exclusive).

    The physical GPU count is GFD's ``nvidia.com/gpu.count`` when present, else what the node advertises
    divided by its current replicas; unhealthy GPUs (capacity − allocatable, in replicas) stay unhealthy.
    ``gfd_product`` False keeps ``nvidia.com/gpu.product`` as it is (``kubegpu simulate`` asks about
    capacity, and its trace's pods select on the plain product).
    """
    old_resource = NVIDIA_GPU + ".shared" if NVIDIA_GPU + ".shared" in node.capacity else NVIDIA_GPU
    old_replicas = max(int(node.labels.get(GPU_REPLICAS_LABEL, "1") or "1"), 1)
    labelled = labelled_gpu_count(node.labels)
    gpus = labelled if labelled is not None else node.capacity.get(old_resource, 0) // 1000 // old_replicas
    bad_replicas = (node.capacity.get(old_resource, 0) - node.allocatable.get(old_resource, 0)) // 1000
    bad = -(-bad_replicas // old_replicas) if bad_replicas > 0 else 0
    resource = NVIDIA_GPU + ".shared" if rename and replicas > 1 else NVIDIA_GPU

    def scaled(resources: Mapping[str, int], healthy: int) -> dict[str, int]:
        out = {r: v for r, v in resources.items() if r not in (NVIDIA_GPU, NVIDIA_GPU + ".shared")}
        if gpus:
            out[resource] = healthy * replicas * 1000
        if GPU_MILLI in out:  # kubegpu's fractional GPU resource follows the replicas
            out[GPU_MILLI] = out[GPU_MILLI] // old_replicas * replicas
        return out

    labels = {**node.labels, GPU_REPLICAS_LABEL: str(replicas),
              GPU_SHARING_LABEL: "time-slicing" if replicas > 1 else "none"}  # fmt: skip
    product = node.labels.get(GPU_PRODUCT_LABEL)
    if gfd_product and product:
        labels[GPU_PRODUCT_LABEL] = GFD_SUFFIX.sub("", product) + (
            "-SHARED" if replicas > 1 and not rename else ""
        )
    annotations = dict(node.annotations)
    if config_text is not None:
        annotations[DEVICE_PLUGIN_CONFIG_ANNOTATION] = config_text
    return replace(
        node, capacity=scaled(node.capacity, gpus), allocatable=scaled(node.allocatable, max(gpus - bad, 0)),
        labels=labels, annotations=annotations,
    )  # fmt: skip
