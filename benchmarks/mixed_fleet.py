"""A heterogeneous GPU fleet for ``bench_scale.py --mixed``: what a large EKS cluster under Karpenter looks
like, where no two Pending pods need be alike.

Nodes (names as EKS gives them, ``ip-10-…ec2.internal``): six instance types with their GPUs and GFD labels
(p5.48xlarge 8 × H100, p4d.24xlarge 8 × A100-40GB, g6e.12xlarge 4 × L40S, g6e.xlarge 1 × L40S, g5.48xlarge
8 × A10G, p6-b200.48xlarge 8 × B200), each in four ``karpenter.sh/nodepool`` pools, four zones, on-demand or
spot (half the spot nodes tainted ``spot=true:NoSchedule``, every B200 node ``nvidia.com/gpu=present``). A
third of the A100 nodes are MIG-partitioned (mixed strategy: 1g.5gb, 2g.10gb, 3g.20gb), 40 % of the A10G
nodes time-slice 4 replicas per GPU, 3 % advertise no GPU (labels say GPUs: the device plugin is not
there), 1 % have one GPU unhealthy (allocatable below capacity), 2 % are cordoned, 1 % NotReady (with the
node lifecycle controller's ``not-ready`` taint). Up to three running GPU pods per resource and node.

Pending pods (all distinct, sixteen namespaces): 55 % 1–8 whole GPUs, 10 % a MIG profile (one of them no
GPU is split into), 5 % a misspelt resource (``nvidia.com/gpus``), 10 % a GPU product by nodeSelector (one
product no node has), 10 % required node affinity on two pools and a zone, 10 % a spot toleration and
hostname anti-affinity to their replicas; CPU and memory requests drawn per pod.
"""

from __future__ import annotations

import random
from typing import Any

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d")
# instance type, GFD product, GPUs, CPU, memory Gi, GFD family; weights
TYPES = (
    ("p5.48xlarge", "NVIDIA-H100-80GB-HBM3", 8, 192, 2048, "hopper"),
    ("p4d.24xlarge", "NVIDIA-A100-SXM4-40GB", 8, 96, 1152, "ampere"),
    ("g6e.12xlarge", "NVIDIA-L40S", 4, 48, 384, "ada-lovelace"),
    ("g6e.xlarge", "NVIDIA-L40S", 1, 4, 32, "ada-lovelace"),
    ("g5.48xlarge", "NVIDIA-A10G", 8, 192, 768, "ampere"),
    ("p6-b200.48xlarge", "NVIDIA-B200", 8, 192, 2048, "blackwell"),
)
WEIGHTS = (30, 20, 15, 10, 15, 10)
NAMESPACES = tuple(f"team-{c}" for c in "abcdefghijklmnop")
MIG = {"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1, "nvidia.com/mig-3g.20gb": 1}  # per GPU


def _node(i: int, rng: random.Random) -> tuple[dict[str, Any], dict[str, int], int]:
    kind, product, gpus, cpu, mem, family = TYPES[rng.choices(range(len(TYPES)), weights=WEIGHTS)[0]]
    name = f"ip-10-{i // 250}-{i % 250}-{rng.randrange(255)}.ec2.internal"
    spot = rng.random() < 0.5
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": rng.choice(ZONES), "node.kubernetes.io/instance-type": kind,
        "karpenter.sh/nodepool": f"{kind.split('.')[0]}-{rng.randrange(4)}",
        "karpenter.sh/capacity-type": "spot" if spot else "on-demand",
        "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product, "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.family": family,
    }  # fmt: skip
    draw = rng.random()
    devices: dict[str, int]
    if product.startswith("NVIDIA-A100") and draw < 0.3:
        labels.update({"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-balanced"})
        devices = {r: n * gpus for r, n in MIG.items()}
    elif product == "NVIDIA-A10G" and draw < 0.4:
        labels.update({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"})
        devices = {"nvidia.com/gpu": 4 * gpus}
    elif draw > 0.97:
        devices = {}  # no device plugin: the labels say GPUs, none advertised
    else:
        devices = {"nvidia.com/gpu": gpus}
    capacity = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": "110", "ephemeral-storage": "500Gi"}
    capacity.update({r: str(n) for r, n in devices.items()})
    allocatable = dict(capacity)
    if devices.get("nvidia.com/gpu") and rng.random() < 0.01:  # one GPU unhealthy
        allocatable["nvidia.com/gpu"] = str(devices["nvidia.com/gpu"] - 1)
    spec: dict[str, Any] = {}
    taints = []
    if spot and rng.random() < 0.5:
        taints.append({"key": "spot", "value": "true", "effect": "NoSchedule"})
    if family == "blackwell":
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    if rng.random() < 0.02:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    ready = rng.random() >= 0.01
    if not ready:
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    condition = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    if not ready:
        condition = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                     "message": "container runtime network not ready: NetworkReady=false "
                                "reason:NetworkPluginNotReady message:Network plugin returns error: "
                                "cni plugin not initialized"}  # fmt: skip
    node = {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-node-{i}", "labels": labels},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": allocatable, "conditions": [condition],
                   "nodeInfo": {"kubeletVersion": "v1.33.4-eks-1234"}},
    }  # fmt: skip
    return node, devices, cpu


def _pod(
    name: str, ns: str, requests: dict[str, str], node: str | None = None, **spec: Any
) -> dict[str, Any]:
    from bench_scale import pod_object  # (this folder: run as a script)

    return pod_object(name, ns, requests, node, {"app": name.rsplit("-", 1)[0]}, **spec)


def generate_mixed(nodes: int, pending: int, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    serial = 0
    placed = []
    for i in range(nodes):
        node, devices, cpu = _node(i, rng)
        items.append(node)
        placed.append((node["metadata"]["name"], devices, cpu))
    for name, devices, cpu in placed:
        for resource, count in devices.items():
            left = count
            for _ in range(rng.randrange(4)):
                take = min(left, rng.choice((1, 1, 2, 4)))
                if take <= 0:
                    break
                left -= take
                requests = {"cpu": str(max(1, cpu // 16)), "memory": "8Gi", resource: str(take)}
                items.append(_pod(f"run-{serial}", rng.choice(NAMESPACES), requests, node=name,
                                  tolerations=[{"operator": "Exists"}]))  # fmt: skip
                serial += 1
    for j in range(pending):
        draw, gpus = rng.random(), rng.choice((1, 1, 2, 4, 8))
        requests = {
            "cpu": str(rng.choice((2, 4, 8, 16, 32, 64, 96))),
            "memory": f"{rng.choice((8, 16, 64, 128, 512))}Gi",
        }
        spec: dict[str, Any] = {}
        if draw < 0.55:
            requests["nvidia.com/gpu"] = str(gpus)
        elif draw < 0.65:
            requests[
                rng.choice(("nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb", "nvidia.com/mig-7g.40gb"))
            ] = "1"
        elif draw < 0.70:
            requests["nvidia.com/gpus"] = "1"  # misspelt
        elif draw < 0.80:
            requests["nvidia.com/gpu"] = str(gpus)
            product = rng.choice(("NVIDIA-H100-80GB-HBM3", "NVIDIA-B200", "NVIDIA-H200"))
            spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
        elif draw < 0.90:
            requests["nvidia.com/gpu"] = str(gpus)
            pools = [f"p5-{rng.randrange(6)}", f"p6-b200-{rng.randrange(6)}"]
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "karpenter.sh/nodepool", "operator": "In", "values": pools},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [rng.choice(ZONES)]},
                ]}]}}}  # fmt: skip
        else:
            requests["nvidia.com/gpu"] = str(gpus)
            spec["tolerations"] = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": f"grp-{j % 7}"}},
                 "topologyKey": "kubernetes.io/hostname"}]}}  # fmt: skip
        items.append(_pod(f"grp-{j % 7}-{j}", rng.choice(NAMESPACES), requests, **spec))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
