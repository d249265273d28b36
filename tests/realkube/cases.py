"""Scheduling fidelity cases run through both kubegpu's core and a real kube-scheduler.

Each case is a small cluster (nodes, running pods, PriorityClasses) and one pod to schedule. Cases where the
pod schedules have exactly one feasible node: kube-scheduler does not score extended resources by default,
so ties would be broken at random. The same cases are the differential suite's input and the source of the
per-version golden files (``golden/<version>.json``, written by ``record_goldens.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubegpu.testing.builders import make_node, make_pod
from tests.dra import objects as dra

Raw = dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    objects: tuple[Raw, ...]  # nodes and running pods, created before the pod
    pod: Raw  # the pod under test (default namespace, no nodeName)
    about: str = ""
    priority_classes: dict[str, int] = field(default_factory=dict)
    min_minor: int = (
        0  # the first minor whose API server serves the case's objects (DRA: resource.k8s.io/v1, 1.34)
    )

    def applies(self, minor: int) -> bool:
        return minor >= self.min_minor


def _gpu_nodes(*spec: tuple[str, int]) -> list[Raw]:
    return [make_node(n).gpus(g).obj() for n, g in spec]


def _cases() -> list[Case]:
    out: list[Case] = []

    def add(name: str, objects: list[Raw], pod: Raw, about: str = "", **pcs: int) -> None:
        out.append(Case(name, tuple(objects), pod, about, dict(pcs)))

    add("fits-one-node", [*_gpu_nodes(("a", 4), ("b", 2))], make_pod("p").gpu(3).obj(),
        "only a has 3 GPUs")  # fmt: skip
    add("insufficient-gpu", [*_gpu_nodes(("a", 4), ("b", 2))], make_pod("p").gpu(8).obj(),
        "no node has 8: a request above every node's allocatable")  # fmt: skip
    add("insufficient-gpu-used", [*_gpu_nodes(("a", 4), ("b", 4)),
                                   make_pod("r1").gpu(2).on("a").obj(), make_pod("r2").gpu(3).on("b").obj()],
        make_pod("p").gpu(3).obj(), "both nodes could hold 3 GPUs when empty; running pods (no priority) fill them")  # fmt: skip
    add("taint-and-insufficient", [
        make_node("a").gpus(4).obj(), make_node("b").gpus(2).obj(),
        make_node("c").gpus(8).taint("nvidia.com/gpu", "present").obj(),
    ], make_pod("p").gpu(6).obj(), "the issue's three-node case: 4, 2 and a tainted 8")  # fmt: skip
    add("taint-empty-value", [make_node("a").gpus(8).taint("dedicated", "").obj()], make_pod("p").gpu(1).obj(),
        "a taint without a value")  # fmt: skip
    add("two-different-taints", [
        make_node("a").gpus(8).taint("nvidia.com/gpu", "present").obj(),
        make_node("b").gpus(8).taint("dedicated", "infer").obj(),
        make_node("c").gpus(8).taint("dedicated", "infer").obj(),
    ], make_pod("p").gpu(1).obj(), "taint(s) merges different taints into one count; the older form does not")  # fmt: skip
    add("tolerated-taint-fits", [
        make_node("a").gpus(8).taint("nvidia.com/gpu", "present").obj(), make_node("b").gpus(1).obj(),
    ], make_pod("p").gpu(4).tolerate("nvidia.com/gpu", operator="Exists").obj())  # fmt: skip
    add("node-selector-mismatch", [
        make_node("a").gpus(8).label("pool", "infer").obj(), make_node("b").gpus(8).label("pool", "infer").obj(),
    ], make_pod("p").gpu(1).selector("pool", "train").obj())  # fmt: skip
    add("affinity-and-taint-and-insufficient", [
        make_node("full-0").gpus(8).label("pool", "train").obj(),
        make_node("tainted-0").gpus(8).label("pool", "train").taint("nvidia.com/gpu", "present").obj(),
        make_node("other-0").gpus(8).label("pool", "infer").obj(),
        make_pod("hog-0").gpu(8).on("full-0").obj(),
    ], make_pod("p").gpu(1).require([("pool", "In", ["train"])]).obj(), "the seed's example")  # fmt: skip

    # a pod pinned the way the DaemonSet controller pins its pods (a required matchFields metadata.name term,
    # pkg/controller/daemon/util ReplaceDaemonSetPodNodeNameNodeAffinity): NodeAffinity's PreFilter narrows the
    # nodes to a; b and c are counted as "didn't satisfy plugin(s) [NodeAffinity]" from 1.32 (PR #126022) only
    def pinned(node: str) -> Raw:
        return make_pod("p").gpu(4).require([], fields=[("metadata.name", "In", [node])]).obj()

    three = [*_gpu_nodes(("a", 4), ("b", 8), ("c", 8)), make_pod("r").gpu(2).on("a").obj()]
    add("pinned-node-full", three, pinned("a"),
        "pinned to a, whose running pod (same priority) leaves 2 of 4 GPUs; b and c are left out")  # fmt: skip
    add("pinned-node-gone", three, pinned("gone"),
        "pinned to a node that does not exist (a DaemonSet pod whose node was deleted): every node left out")  # fmt: skip
    add("cordoned", [make_node("a").gpus(8).cordon().obj(), make_node("b").gpus(1).obj()],
        make_pod("p").gpu(2).obj())  # fmt: skip
    add("cpu-and-memory", [make_node("a").capacity(cpu="1", memory="1Gi").obj()],
        make_pod("p").requests(cpu="2", memory="2Gi").obj(), "one node counts in two reasons")  # fmt: skip
    add("mig-resource-missing", [make_node("a").gpus(7, resource="nvidia.com/mig-1g.18gb").obj()],
        make_pod("p").gpu(1).obj(), "a whole-GPU request on a node offering only MIG slices")  # fmt: skip
    init = make_pod("p").gpu(1).init_container("warm", {"nvidia.com/gpu": "3"}).obj()
    # an extended resource must be given as a limit (the API server refuses a request alone)
    init["spec"]["initContainers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "3"}
    add("init-container-max", [make_node("a").gpus(2).obj()], init,
        "an init container's request above the main containers' sum decides")  # fmt: skip
    add("host-port-conflict", [
        make_node("a").gpus(8).obj(), make_pod("web").host_port(8080).on("a").obj(),
    ], make_pod("p").gpu(1).host_port(8080).obj())  # fmt: skip
    add("preemption-no-victims", [
        make_node("a").gpus(4).obj(), make_node("b").gpus(2).obj(),
        make_pod("hi").gpu(4).priority(1000, "high").on("a").obj(),
    ], make_pod("p").gpu(4).priority(100, "low").obj(),
        "a's only pod outranks p; b can never hold 4", high=1000, low=100)  # fmt: skip
    add("preemption-succeeds", [
        make_node("a").gpus(4).obj(), make_pod("lo").gpu(4).priority(100, "low").on("a").obj(),
    ], make_pod("p").gpu(4).priority(1000, "high").obj(),
        "a successful preemption: no preemption text, the pod is nominated to a", high=1000, low=100)  # fmt: skip
    add("preemption-never", [
        make_node("a").gpus(4).obj(), make_pod("lo").gpu(4).priority(100, "low").on("a").obj(),
    ], make_pod("p").gpu(4).priority(1000, "high-never").preemption_policy("Never").obj(),
        "preemptionPolicy: Never", low=100, **{"high-never": 1000})  # fmt: skip
    # found by a random-cluster comparison with the real scheduler: NodeResourcesBalancedAllocation scores the
    # change in a node's balance from 1.36 (kubernetes PR #135573), its balance with the pod before. Recorded
    # from 1.34 only: the 1.30-1.33 binaries were not built when it was added, so their goldens lack it
    out.append(Case("balanced-allocation-change", (
        make_node("a").capacity(cpu="8", memory="16Gi").obj(), make_node("b").capacity(cpu="8", memory="16Gi").obj(),
        make_pod("ra").requests(cpu="5", memory="8Gi").on("a").obj(),
        make_pod("rb").requests(cpu="6", memory="1Gi").on("b").obj(),
    ), make_pod("p").requests(cpu="1", memory="4Gi").obj(),
        "a (62.5% cpu, 50% memory) would become balanced: up to 1.35 a (balance 100) wins, from 1.36 b, whose "
        "balance the pod improves more (a 125 vs b 111, then a 103 vs b 118)"))  # fmt: skip
    _affinity_cases(add)
    out.extend(_dra_cases())
    _default_spread_cases(add)
    return out


def _mig_node(node: str, per_gpu: list[int]) -> list[Raw]:
    """A DRA node (no nvidia.com/gpu) whose GPU g holds per_gpu[g] MIG devices, as NVIDIA's driver slices them."""
    devs = [dra.mig_device(g, j, node) for g, n in enumerate(per_gpu) for j in range(n)]
    return [make_node(node).obj(), dra.node_slice(node, devs)]


def _dra_cases() -> list[Case]:
    """DynamicResources against the real scheduler (resource.k8s.io/v1: 1.34+). MIG claims with a
    ``matchAttribute`` on ``gpu.nvidia.com/parentUUID`` (NVIDIA/k8s-dra-driver-gpu quickstart gpu-test4's
    shape); plain ``nvidia.com/gpu`` pods on a mixed cluster where the GPU class sets
    ``extendedResourceName`` (KEP-5004: served from DRA from 1.36, the API server drops the field before)."""
    out: list[Case] = []
    pod = dra.pod("p", ("m", "c", ""))
    pod["metadata"] = {"name": "p"}

    def migs(constraint: bool) -> Raw:
        c = dra.claim("c", dra.request("a", "mig.nvidia.com"), dra.request("b", "mig.nvidia.com"))
        if constraint:
            c["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.nvidia.com/parentUUID"}]
        return c

    def add(name: str, objects: list[Raw], p: Raw, about: str) -> None:
        out.append(Case(name, tuple(objects), p, about, min_minor=34))

    add("dra-gpu-count-too-many", [*dra.gpu_classes(), *dra.gpu_node("n1", 1), *dra.gpu_node("n2", 2),
                                   dra.claim("c", dra.request("m", count=3))], pod,
        "a claim for 3 GPUs on DRA nodes of 1 and 2")  # fmt: skip
    add("dra-match-attribute-fits", [*dra.gpu_classes(), *_mig_node("n1", [1, 2]), migs(True)], pod,
        "two MIG devices of one parent GPU: only gpu-1 has two")  # fmt: skip
    add("dra-match-attribute-unsatisfiable", [*dra.gpu_classes(), *_mig_node("n1", [1, 1]), migs(True)], pod,
        "two MIG devices of one parent GPU: each GPU has one")  # fmt: skip
    mixed = [dra.device_class("gpu.nvidia.com", "gpu", extended="nvidia.com/gpu"), *dra.gpu_node("n1", 2),
             make_node("n2").gpus(1).obj()]  # fmt: skip
    add("dra-extended-resource-on-dra-node", mixed, make_pod("p").gpu(2).obj(),
        "2 nvidia.com/gpu: the device plugin node has 1, the DRA node 2 GPUs its class serves")  # fmt: skip
    add("dra-extended-resource-too-many", mixed, make_pod("p").gpu(3).obj(),
        "3 nvidia.com/gpu: neither path has them")  # fmt: skip
    # resourceSliceCount 2, one slice published: 1.34's allocator takes a device of an incomplete pool for
    # ExactCount; from 1.35 allocateOne skips the pool ("We don't allocate devices from invalid or
    # incomplete pools", structured/internal/stable v0.35.4)
    add("dra-incomplete-pool", [*dra.gpu_classes(), make_node("n1").obj(),
                                dra.node_slice("n1", [dra.gpu_device(0, "n1")], count=2),
                                dra.claim("c", dra.request("g"))], pod,
        "one GPU in a pool that announces 2 slices and has published 1")  # fmt: skip
    out.extend(_dra_gated_cases(pod))
    return out


def _dra_gated_cases(pod: Raw) -> list[Case]:
    """The DRA gates on by default from 1.36 (kube_features.go): device taints (beta 1.36, GA 1.37),
    partitionable devices and consumable capacity (beta 1.36). The API server drops their fields before."""
    out: list[Case] = []

    def add(name: str, objects: list[Raw], about: str) -> None:
        out.append(Case(name, tuple(objects), pod, about, min_minor=36))

    def tainted(node: str) -> list[Raw]:
        sl = dra.node_slice(node, [dra.gpu_device(0, node)])
        sl["spec"]["devices"][0]["taints"] = [
            {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
        ]
        return [make_node(node).obj(), sl]

    xid = [{"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}]
    add("dra-device-taint-untolerated", [*dra.gpu_classes(), *tainted("n1"), dra.claim("c", dra.request("g"))],
        "the only GPU has a NoSchedule device taint the claim does not tolerate")  # fmt: skip
    add("dra-device-taint-tolerated", [*dra.gpu_classes(), *tainted("n1"),
                                       dra.claim("c", dra.request("g", tolerations=xid))],
        "the claim's request tolerates the taint")  # fmt: skip
    whole_and_mig = dra.claim("c", dra.request("g"), dra.request("m", "mig.nvidia.com"))
    add("dra-counters-exhausted", [*dra.gpu_classes(), *dra.partitionable_node("n1", (0, 1)), whole_and_mig],
        "the full GPU and a MIG device of it: together they consume more than the GPU's counter set")  # fmt: skip
    two_migs = dra.claim("c", dra.request("m", "mig.nvidia.com", count=2))
    add("dra-counters-fit", [*dra.gpu_classes(), *dra.partitionable_node("n1", (0, 1)), two_migs],
        "two MIG devices on different memory slices: the counter set holds both")  # fmt: skip
    shared = [
        *dra.gpu_classes(),
        make_node("n1").obj(),
        dra.node_slice("n1", [dra.shared_gpu_device(0, "n1")]),
    ]

    def halves(amount: str) -> Raw:
        return dra.claim(
            "c", dra.request("a", capacity={"memory": amount}), dra.request("b", capacity={"memory": amount})
        )

    add("dra-consumable-capacity-fits", [*shared, halves("40Gi")],
        "two shares of one GPU's 80Gi memory, 40Gi each")  # fmt: skip
    add("dra-consumable-capacity-too-much", [*shared, halves("50Gi")],
        "two shares of 50Gi: each fits alone, together they exceed 80Gi")  # fmt: skip

    def distinct(per_gpu: list[int]) -> list[Raw]:
        c = dra.claim("c", dra.request("a", "mig.nvidia.com"), dra.request("b", "mig.nvidia.com"))
        c["spec"]["devices"]["constraints"] = [{"distinctAttribute": "gpu.nvidia.com/parentUUID"}]
        return [*dra.gpu_classes(), *_mig_node("n1", per_gpu), c]

    add("dra-distinct-attribute-fits", distinct([1, 1]), "two MIG devices of different parent GPUs")  # fmt: skip
    # One request of 3 with distinctAttribute over devices whose parents are A, B, A in slice order: 1.36
    # compares each device with the request's previous one only (constraint.go v0.36.3 keeps one value per
    # request name) and takes all three; 1.37 compares with every value taken (a list) and finds none.
    aba = [dra.mig_device(0, 0, "n1"), dra.mig_device(1, 0, "n1"), dra.mig_device(0, 1, "n1")]
    three = dra.claim("c", dra.request("m", "mig.nvidia.com", count=3))
    three["spec"]["devices"]["constraints"] = [{"distinctAttribute": "gpu.nvidia.com/parentUUID"}]
    add("dra-distinct-attribute-per-request", [*dra.gpu_classes(), make_node("n1").obj(),
                                               dra.node_slice("n1", aba), three],
        "3 MIG devices with distinct parents from parents A, B, A: 1.36 takes them, 1.37 does not")  # fmt: skip
    all_gpus = [
        make_node("n1").obj(),
        dra.node_slice("n1", [dra.gpu_device(0, "n1"), dra.gpu_device(1, "n1")]),
    ]
    all_gpus[1]["spec"]["devices"][1]["taints"] = [
        {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}
    ]
    add("dra-device-taint-all-mode", [*dra.gpu_classes(), *all_gpus, dra.claim("c", dra.request("g", mode="All"))],
        "allocationMode All over two GPUs, one tainted: the taint fails the request, it does not shrink it")  # fmt: skip
    rule = {"apiVersion": dra.API, "kind": "DeviceTaintRule", "metadata": {"name": "xid-79-n1-gpu-0"},
            "spec": {"deviceSelector": {"driver": dra.DRIVER, "pool": "n1", "device": "gpu-0"},
                     "taint": {"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}}}  # fmt: skip
    clean = [make_node("n1").obj(), dra.node_slice("n1", [dra.gpu_device(0, "n1")])]
    out.append(Case("dra-device-taint-rule", (*dra.gpu_classes(), *clean, rule, dra.claim("c", dra.request("g"))),
                    pod, "a DeviceTaintRule (GA, on in 1.37) taints the only GPU", min_minor=37))  # fmt: skip
    # per-device node selection (KEP-4815, GatherPools / isSelectable): gpu-a on n1 by name, gpu-b on zone z2
    # (no such node), gpu-c on all nodes; 2 devices: n1 reaches gpu-a and gpu-c, n3 only gpu-c → n1
    zone = "topology.kubernetes.io/zone"
    a, b, c = (dra.gpu_device(i, "fabric") for i in range(3))
    a["nodeName"], c["allNodes"] = "n1", True
    b["nodeSelector"] = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": zone, "operator": "In", "values": ["z2"]}]}]
    }
    fabric = dra.node_slice("fabric", [a, b, c])
    fabric["spec"].pop("nodeName")
    fabric["spec"]["perDeviceNodeSelection"] = True
    add("dra-per-device-node-selection", [*dra.gpu_classes(), make_node("n1").label(zone, "z1").obj(),
                                          make_node("n3").label(zone, "z1").obj(), fabric,
                                          dra.claim("c", dra.request("g", count=2))],
        "a slice whose devices each select their nodes: only n1 reaches 2 of them")  # fmt: skip
    add("dra-distinct-attribute-unsatisfiable", distinct([2]),
        "two MIG devices of different parent GPUs: both are on gpu-0")  # fmt: skip
    return out


ZONE = "topology.kubernetes.io/zone"


def _zoned(*spec: tuple[str, str]) -> list[Raw]:
    return [make_node(n).gpus(8).label(ZONE, z).obj() for n, z in spec]


def _affinity_cases(add: Any) -> None:
    """InterPodAffinity and PodTopologySpread (messages: interpodaffinity/filtering.go and
    podtopologyspread/plugin.go ErrReason* of each release)."""
    web = {"app": "web"}
    add("pod-affinity-unmet", _zoned(("a", "z1"), ("b", "z2")),
        make_pod("p").labels(app="web").gpu(1).pod_affinity(ZONE, {"app": "db"}).obj(),
        "required affinity to app=db, which runs nowhere; p is not app=db itself")  # fmt: skip
    add("pod-anti-affinity-hit", [*_zoned(("a", "z1"), ("b", "z1"), ("c", "z2")),
        make_pod("web-0").labels(app="web").on("a").obj(), make_pod("web-1").labels(app="web").on("c").obj()],
        make_pod("p").labels(app="web").gpu(1).pod_affinity(ZONE, web, anti=True).obj(),
        "zone anti-affinity to app=web: both zones hold one; equal priorities leave no victims")  # fmt: skip
    add("existing-anti-affinity", [
        make_node("a").gpus(8).obj(), make_node("b").obj(),
        make_pod("guard").labels(app="guard").pod_affinity("kubernetes.io/hostname", web, anti=True).on("a").obj(),
    ], make_pod("p").labels(app="web").gpu(1).obj(),
        "a running pod's hostname anti-affinity selects p on a; b has no GPU")  # fmt: skip
    add("spread-skew", [
        make_node("a").gpus(8).label(ZONE, "z1").obj(),
        make_node("b").gpus(8).label(ZONE, "z2").taint("dedicated", "infer").obj(),
        make_pod("web-0").labels(app="web").on("a").obj(), make_pod("web-1").labels(app="web").on("a").obj(),
    ], make_pod("p").labels(app="web").gpu(1).spread(ZONE, 1, web).obj(),
        "z1 holds 2, z2 (tainted, still a domain: nodeTaintsPolicy Ignore) 0: skew on a is 2 + 1 - 0 = 3 > 1")  # fmt: skip
    add("spread-min-domains", [*_zoned(("a", "z1"), ("b", "z2")),
        make_pod("web-0").labels(app="web").on("a").obj(), make_pod("web-1").labels(app="web").on("b").obj()],
        make_pod("p").labels(app="web").gpu(1).spread(ZONE, 1, web, minDomains=3).obj(),
        "2 domains < minDomains 3, so the minimum is 0: skew 1 + 1 - 0 = 2 > 1 on both")  # fmt: skip
    add("spread-missing-label", [
        make_node("a").gpus(8).label(ZONE, "z1").taint("dedicated", "infer").obj(), make_node("b").gpus(8).obj(),
    ], make_pod("p").labels(app="web").gpu(1).spread(ZONE, 1, web).obj(),
        "b has no zone label; a is tainted (TaintToleration runs first)")  # fmt: skip
    add("spread-match-label-keys", [
        make_node("a").gpus(8).label(ZONE, "z1").obj(),
        make_node("b").gpus(8).label(ZONE, "z2").taint("dedicated", "infer").obj(),
        make_pod("web-0").labels(app="web", ver="1").on("a").obj(),
        make_pod("web-1").labels(app="web", ver="1").on("a").obj(),
    ], make_pod("p").labels(app="web", ver="2").gpu(1).spread(ZONE, 1, web, matchLabelKeys=["ver"]).obj(),
        "matchLabelKeys [ver]: the ver=1 pods do not count, so a fits (b is tainted)")  # fmt: skip
    add("anti-affinity-mismatch-label-keys", [
        make_node("a").gpus(8).label(ZONE, "z1").obj(),
        make_node("b").gpus(8).label(ZONE, "z2").taint("dedicated", "infer").obj(),
        make_pod("web-0").labels(app="web", ver="1").on("a").obj(),
    ], make_pod("p").labels(app="web", ver="1").gpu(1)
        .pod_affinity(ZONE, web, anti=True, mismatchLabelKeys=["ver"]).obj(),
        "mismatchLabelKeys [ver] adds ver NotIn (1): web-0 (ver=1) is not selected, so a fits")  # fmt: skip

    add("anti-affinity-preemption", [
        make_node("a").gpus(8).obj(),
        make_pod("web-0").labels(app="web").priority(100, "low").on("a").obj(),
    ], make_pod("p").labels(app="api").gpu(1).priority(1000, "high")
        .pod_affinity("kubernetes.io/hostname", web, anti=True).obj(),
        "evicting the lower-priority app=web pod clears p's anti-affinity: p is nominated to a",
        high=1000, low=100)  # fmt: skip


def _service(name: str, selector: dict[str, str]) -> Raw:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": selector, "ports": [{"port": 80}]}}  # fmt: skip


def _replicaset(name: str, labels: dict[str, str]) -> Raw:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}  # fmt: skip


def _default_spread_cases(add: Any) -> None:
    """PodTopologySpread's system default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway;
    podtopologyspread/plugin.go) with helper/spread.go DefaultSelector. No GPUs: two or three feasible nodes,
    scores decide. Without spreading, NodeResourcesFit (LeastAllocated) prefers a, whose pods request 2×100m
    CPU against b's 1 CPU (4-CPU nodes); the default spread (weight 2, hostname: a 80, b 200) overrides it."""

    def nodes(*names: str) -> list[Raw]:
        return [make_node(n).capacity(cpu="4", memory="8Gi").obj() for n in names]

    x = {"app": "x"}
    load = [make_pod("x-0").labels(app="x").requests(cpu="100m").on("a").obj(),
            make_pod("x-1").labels(app="x").requests(cpu="100m").on("a").obj(),
            make_pod("big").labels(app="other").requests(cpu="1").on("b").obj()]  # fmt: skip
    pod = make_pod("p").labels(app="x").requests(cpu="100m")
    add("default-spread-service", [*nodes("a", "b"), _service("web", x), *load], pod.obj(),
        "a Service selects app=x: two of them on a, none on b → b, against LeastAllocated")  # fmt: skip
    add("default-spread-no-service", [*nodes("a", "b"), _service("web", {"app": "y"}), *load], pod.obj(),
        "the Service selects app=y, not p: no default spread, LeastAllocated picks a")  # fmt: skip
    owned = make_pod("p").labels(app="x").requests(cpu="100m").owner("ReplicaSet", "rs-x")
    add("default-spread-replicaset", [*nodes("a", "b"), _replicaset("rs-x", x), *load], owned.obj(),
        "no Service; p's controller is ReplicaSet rs-x (app=x): its selector spreads p to b")  # fmt: skip
    zoned = [make_node("a").capacity(cpu="4", memory="8Gi").label(ZONE, "z1").obj(),
             make_node("b").capacity(cpu="4", memory="8Gi").label(ZONE, "z1").obj(),
             make_node("c").capacity(cpu="4", memory="8Gi").obj(), _service("web", x),
             make_pod("x-0").labels(app="x").requests(cpu="100m").on("a").obj(),
             make_pod("o-0").labels(app="other").requests(cpu="100m").on("b").obj(),
             make_pod("o-1").labels(app="other").requests(cpu="100m").on("c").obj()]  # fmt: skip
    add("default-spread-no-zone-label", zoned, pod.obj(),
        "c has no zone label yet is scored (system defaults do not require every key): spread a 44, b 88, "
        "c 200; b and c carry equal load")  # fmt: skip


CASES = _cases()


def _ahead_cases() -> list[Case]:
    """What a pre-release's sources change that no case above exercises, recorded on the newest supported
    release and on the pre-release (``record_goldens --ahead``, golden_prerelease/ahead/<release>.json), never
    in the supported releases' goldens (the other minors were not re-recorded for them)."""
    skewed = (
        make_node("a").gpus(8).label(ZONE, "z1").obj(),
        make_node("b").gpus(8).label(ZONE, "z2").taint("dedicated", "infer").obj(),
        make_pod("web-0").labels(app="web").on("a").obj(),
        make_pod("web-1").labels(app="web").on("a").obj(),
    )
    # kubernetes/kubernetes#141339: countPodsMatchSelector returned 0 for an Everything() selector (PR #116607,
    # 1.27: `if selector.Empty()`), so `labelSelector: {}` spread nothing; PR #141340 (1.38) tests
    # labels.MatchesNothing instead and {} counts every pod of the namespace
    pod = make_pod("p").labels(app="web").gpu(1).spread(ZONE, 1, {}).obj()
    return [Case("spread-empty-selector", skewed, pod, "spread-skew's cluster with labelSelector {}: 1.37 counts "
                 "no pod and binds p to a; from 1.38 z1 holds 2, skew 3 > 1")]  # fmt: skip


AHEAD_CASES = _ahead_cases()
