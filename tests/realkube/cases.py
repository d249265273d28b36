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
    _affinity_cases(add)
    out.extend(_dra_cases())
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


CASES = _cases()
