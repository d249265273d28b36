"""Test pods that prove a changed GPU node works: single-GPU, multi-GPU, shared and MIG (R15.4).

``verify_manifests`` writes, for one node, the Pod manifests its resources call for: one whole GPU; every
GPU of the node at once (all devices usable, ``nvidia-smi topo -m`` shows the links); one time-slicing
replica (``nvidia.com/gpu.shared`` when renamed) when the node shares GPUs; one device of each
``nvidia.com/mig-*`` resource. Each pod is pinned with ``spec.nodeName`` (it bypasses the scheduler, so
it runs on a still-cordoned node, which is the point), tolerates the node's taints, runs ``nvidia-smi`` and
exits; ``verify_step`` applies them (server-side dry run first), waits, reads the logs and deletes them.

Pure: a Node in, plain dicts out (they validate against the Kubernetes 1.34 Pod schema).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import GPU_REPLICAS_LABEL as REPLICAS_LABEL
from kubegpu.model.names import NVIDIA_GPU as GPU
from kubegpu.model.objects import Node
from kubegpu.plan.procedure import Step

SHARED = "nvidia.com/gpu.shared"
TEST_IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
APP_LABEL = "app.kubernetes.io/name"
APP = "kubegpu-verify"


def _pod(node: Node, namespace: str, name: str, resource: str, count: int, command: list[str],
         image: str) -> dict[str, Any]:  # fmt: skip
    tolerations = [
        {"key": t.key, "operator": "Exists", "effect": t.effect}
        for t in sorted(node.taints, key=lambda t: t.key)
    ]
    spec: dict[str, Any] = {
        "nodeName": node.name,
        "restartPolicy": "Never",
        "containers": [{
            "name": "check",
            "image": image,
            "command": command,
            "resources": {"limits": {resource: str(count)}},
        }],
    }  # fmt: skip
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {APP_LABEL: APP}},
        "spec": spec,
    }


def _short(resource: str) -> str:
    return resource.split("/", 1)[1].replace(".", "-").replace("+", "-")


def verify_manifests(node: Node, namespace: str = "default", image: str = TEST_IMAGE) -> list[dict[str, Any]]:
    """The test pods for ``node``, from the GPU resources it advertises (capacity, whole units)."""
    capacity = {r: v // 1000 for r, v in node.capacity.items() if r.startswith("nvidia.com/") and v}
    replicas = int(node.labels.get(REPLICAS_LABEL, "1") or "1")
    base = f"verify-{node.name}"
    out = []
    shared = SHARED if SHARED in capacity else GPU if replicas > 1 and GPU in capacity else None
    whole = capacity.get(GPU, 0) if shared != GPU else 0
    if whole:
        out.append(_pod(node, namespace, f"{base}-single-gpu", GPU, 1, ["nvidia-smi", "-L"], image))
    if whole >= 2:
        # every GPU at once: each device usable, and the interconnect as the container sees it
        out.append(_pod(node, namespace, f"{base}-multi-gpu", GPU, whole,
                        ["sh", "-c", "nvidia-smi -L && nvidia-smi topo -m"], image))  # fmt: skip
    if shared is not None:
        out.append(_pod(node, namespace, f"{base}-shared", shared, 1, ["nvidia-smi", "-L"], image))
    for r in sorted(r for r in capacity if r.startswith("nvidia.com/mig-")):
        out.append(_pod(node, namespace, f"{base}-{_short(r)}", r, 1, ["nvidia-smi", "-L"], image))
    return out


def numa_pod(node: Node, namespace: str = "default", image: str = TEST_IMAGE) -> dict[str, Any]:
    """A Guaranteed pod (requests = limits, whole CPUs) with one GPU: under CPU Manager ``static`` it gets
    exclusive CPUs, and under a Topology Manager policy they sit on the GPU's NUMA node (R10.2). Its log
    shows the CPUs it was given next to the GPU's CPU affinity from ``nvidia-smi topo -m``."""
    cpus = max(1, min(4, node.allocatable.get("cpu", 0) // 1000 // 2))
    pod = _pod(node, namespace, f"verify-{node.name}-numa", GPU, 1,
               ["sh", "-c", "cat /sys/fs/cgroup/cpuset.cpus.effective && nvidia-smi topo -m"], image)  # fmt: skip
    amounts = {"cpu": str(cpus), "memory": "4Gi"}
    resources = pod["spec"]["containers"][0]["resources"]
    resources["limits"] = {**amounts, **resources["limits"]}
    resources["requests"] = dict(resources["limits"])
    return pod


def manifests_text(manifests: Sequence[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(manifests, sort_keys=False)


def verify_step(node: Node, namespace: str, manifests: Sequence[dict[str, Any]]) -> Step:
    """Apply the test pods (dry run first), wait for each to finish, read its log, delete them."""
    path = f"verify-{node.name}.yaml"
    if not manifests:
        return Step("Test pods", (), f"{node.name} advertises no nvidia.com resource: nothing to run")
    commands = [*mutate(namespace, f"apply -f {path}")]
    for m in manifests:
        name = m["metadata"]["name"]
        commands.append(
            f"kubectl -n {namespace} wait pod/{name} --for=jsonpath='{{.status.phase}}'=Succeeded --timeout=5m"
        )
        commands.append(f"kubectl -n {namespace} logs {name}")
    commands.extend(mutate(namespace, f"delete -f {path}"))
    kinds = ", ".join(m["metadata"]["name"].removeprefix(f"verify-{node.name}-") for m in manifests)
    return Step(
        f"{node.name}: run the test pods ({kinds}); save them as {path} first",
        tuple(commands),
        "each log must list exactly the devices the pod asked for (nvidia-smi -L: one line per GPU or MIG "
        f"device); a pod stuck Pending or failing with UnexpectedAdmissionError means the plugin is not "
        f"serving that resource.\n{manifests_text(manifests)}",
    )
