"""The ``spread`` mode of ``tests.realkube.fuzz``: topology spread constraints over GPU and MIG nodes.

Each cluster has 3-6 nodes, most in a zone, with whole GPUs or MIG partitions, a few NoSchedule /
PreferNoSchedule taints, running pods labelled ``app`` (and ``ver``) that the constraints count, and one pending
pod with one or two ``topologySpreadConstraints``: DoNotSchedule or ScheduleAnyway over the zone or the hostname,
``maxSkew`` 1-2, a ``matchLabels`` or ``matchExpressions`` selector (matching the pod or not), ``minDomains``,
``nodeAffinityPolicy`` / ``nodeTaintsPolicy`` Honor or Ignore, ``matchLabelKeys``; with a node selector or
required affinity and tolerations now and then, so that the inclusion policies decide which nodes count.

What is modelled, from kube-scheduler's ``pkg/scheduler/framework/plugins/podtopologyspread`` (common.go,
filtering.go, scoring.go; the same rules in v1.34.8 through v1.38.0-beta.0, read side by side):

- ``filterTopologySpreadConstraints`` (common.go): ``minDomains`` nil is 1, ``nodeAffinityPolicy`` nil is Honor,
  ``nodeTaintsPolicy`` nil is Ignore; ``matchLabelKeys`` values of the pod are merged into the selector (and from
  1.34, with ``MatchLabelKeysInPodTopologySpreadSelectorMerge`` beta, by the API server at creation too:
  pkg/features/kube_features.go).
- API validation (pkg/apis/core/validation/validation.go ``validateTopologySpreadConstraints``): one constraint per
  ``{topologyKey, whenUnsatisfiable}``; ``minDomains`` only with DoNotSchedule; a ``matchLabelKeys`` key may not be
  in the ``labelSelector`` too. The generator stays inside those.
- MIG, the device plugin's mixed strategy (https://docs.nvidia.com/datacenter/cloud-native/kubernetes/latest/
  index.html, "MIG Support in Kubernetes"; GPU Operator with MIG: mixed when MIG mode is not enabled on all GPUs
  of a node): a node advertises ``nvidia.com/mig-<profile>`` per partition beside ``nvidia.com/gpu`` for its
  whole GPUs. An A100/H100 80GB splits into seven ``1g.10gb`` or two ``3g.40gb`` (with a ``1g.10gb`` left).
  Extended resources are asked in limits, or requests equal to limits: a request without a limit is refused
  (validation.go ``ValidateResourceRequirements``: "Limit must be set for non overcommitable resources",
  v1.37.2), so the generator never makes one.
"""

from __future__ import annotations

from typing import Any

from kubegpu.testing.builders import make_node, make_pod
from tests.realkube.cases import Case
from tests.realkube.fuzz import PRODUCTS, TAINTS, ZONE, Generator

Raw = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
MIG_1G = "nvidia.com/mig-1g.10gb"
MIG_3G = "nvidia.com/mig-3g.40gb"
ZONES = ("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f")


class SpreadGenerator(Generator):
    """Clusters where PodTopologySpread decides: filters (DoNotSchedule) and scores (ScheduleAnyway)."""

    def __init__(self, seed: int, preempt: bool = False, affinity: bool = False) -> None:
        super().__init__(seed, "spread")
        self.zones = ZONES[:2]
        # spread-preempt: GPUs filled by lower-priority pods and a priority-10000 pending pod, so DefaultPreemption's
        # dry runs remove counted pods (PodTopologySpread RemovePod → updateWithPod, filtering.go)
        self.spread_preempt = preempt
        # spread-affinity: what replicated inference pairs with spreading, pod (anti-)affinity on the pending
        # pod and preferred anti-affinity among the running app=x replicas (InterPodAffinity filter and score)
        self.spread_affinity = affinity

    def node(self, name: str) -> Raw:
        rng = self.rng
        b = make_node(name).capacity(cpu=rng.choice(["16", "32", "96"]), memory=rng.choice(["64Gi", "256Gi"]))
        gpus = rng.choice([0, 2, 4, 8, 8, 8])
        product = rng.choice(list(PRODUCTS))
        if gpus:
            b.gpus(gpus, product=product)
        if gpus and product.endswith(("80GB", "HBM3")) and self.chance(0.4):
            # mixed strategy: some GPUs partitioned, the whole ones still nvidia.com/gpu
            parted = rng.randint(1, gpus)
            one_g = 7 * parted if self.chance(0.5) else parted
            b.capacity(**{MIG_1G: one_g, "nvidia.com/gpu": gpus - parted})
            if one_g == parted:
                b.capacity(**{MIG_3G: 2 * parted})
            b.label("nvidia.com/mig.strategy", "mixed")
        if self.chance(0.85):
            b.label(ZONE, rng.choice(self.zones))
        # nodeTaintsPolicy Honor drops NoSchedule / NoExecute nodes, not PreferNoSchedule ones
        if self.chance(0.2):
            b.taint(*rng.choice(TAINTS))
        if self.chance(0.06):  # counted with nodeTaintsPolicy Ignore (the taint is NoSchedule)
            b.cordon()
        return b.obj()

    def running(self, name: str, node: Raw, free: dict[str, int]) -> Raw:
        rng = self.rng
        b = make_pod(name)
        mig = [r for r in (MIG_1G, MIG_3G) if free.get(r, 0) > 0]
        if mig and self.chance(0.5):
            r = rng.choice(mig)
            n = min(rng.choice([1, 1, 2]), free[r])
            b.gpu(n, r)
            free[r] -= n
        # most nodes keep a GPU free, so spreading, not room, decides (spread-preempt fills more of them)
        elif free["gpu"] and self.chance(0.9 if self.spread_preempt else 0.5):
            full = self.spread_preempt and self.chance(0.6)
            n = free["gpu"] if full else min(rng.choice([1, 1, 2]), free["gpu"])
            b.gpu(n)
            free["gpu"] -= n
        cpu = min(rng.choice([0, 500, 2000]), free["cpu"])
        if cpu:
            b.requests(cpu=f"{cpu}m")
            free["cpu"] -= cpu
        if self.chance(0.85):
            b.labels(app=rng.choice(["x", "x", "y"]))
        if self.chance(0.5):
            b.labels(ver=rng.choice(["1", "2"]))
        if self.chance(0.9 if self.spread_preempt else 0.5):  # below a pending pod's 10000: victims
            b.priority(rng.choice([0, 100, 1000, 20000] if self.spread_preempt else [0, 100, 1000]))
        raw = b.on(node["metadata"]["name"]).obj()
        if self.spread_affinity and raw["metadata"].get("labels", {}).get("app") == "x" and self.chance(0.3):
            term = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": "x"}}}
            raw["spec"]["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}]}}  # fmt: skip
        return raw

    def constraint(self, key: str, when: str) -> Raw:
        rng = self.rng
        c: Raw = {"maxSkew": rng.choice([1, 1, 2]), "topologyKey": key, "whenUnsatisfiable": when}
        r = rng.random()
        if r < 0.6:
            c["labelSelector"] = {"matchLabels": {"app": "x"}}
        elif r < 0.8:
            c["labelSelector"] = {
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "y"]}]
            }
        elif r < 0.92:
            c["labelSelector"] = {"matchLabels": {"app": "y"}}
        # else no labelSelector: the constraint counts no pod (countPodsMatchSelector on a nil selector)
        if when == "DoNotSchedule" and self.chance(0.3):
            c["minDomains"] = rng.choice([2, 3, 4])
        for field in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if self.chance(0.4):
                c[field] = rng.choice(["Honor", "Ignore"])
        if "labelSelector" in c and self.chance(0.3):
            c["matchLabelKeys"] = ["ver"]
        return c

    def pending(self, nodes: list[Raw]) -> Raw:
        rng = self.rng
        b = make_pod("p").labels(app=rng.choice(["x", "x", "x", "y"]))
        if self.chance(0.6):
            b.labels(ver=rng.choice(["1", "2"]))
        kind = rng.random()
        if kind < 0.2:
            b.gpu(1, rng.choice([MIG_1G, MIG_1G, MIG_3G]))
        elif kind < 0.3:
            r = rng.choice([MIG_1G, "nvidia.com/gpu"])
            b.requests(**{r: "1"}).limits(**{r: "1"})
        elif kind < 0.75:
            b.gpu(rng.choice([1, 1, 1, 2]))
        if self.chance(0.5):
            b.requests(cpu=f"{rng.choice([500, 1000, 4000])}m")
        raw = b.obj()
        spec = raw["spec"]
        pairs = [(k, w) for k in (ZONE, HOSTNAME) for w in ("DoNotSchedule", "ScheduleAnyway")]
        rng.shuffle(pairs)
        if self.chance(0.9):  # else the system default constraints (a Service may select app=x)
            spec["topologySpreadConstraints"] = [
                self.constraint(k, w) for k, w in pairs[: rng.choice([1, 1, 2])]
            ]
        if self.chance(0.2):
            labels = [n["metadata"]["labels"] for n in nodes]
            values = sorted({v[ZONE] for v in labels if ZONE in v})
            if values:
                spec["nodeSelector"] = {ZONE: rng.choice(values)}
        if self.chance(0.15):
            spec["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "nvidia.com/gpu.product", "operator": "In",
                         "values": rng.sample(sorted(PRODUCTS), k=2)}]}]}}}  # fmt: skip
        taints = [t for n in nodes for t in n["spec"].get("taints", [])]
        if taints and self.chance(0.5):
            spec["tolerations"] = [{"key": rng.choice(taints)["key"], "operator": "Exists"}]
        if self.spread_preempt or self.chance(0.4):
            spec["priority"] = rng.choice([100, 10000, 10000])
        if self.spread_affinity:
            term: Raw = {"topologyKey": rng.choice([HOSTNAME, ZONE]),
                         "labelSelector": {"matchLabels": {"app": rng.choice(["x", "x", "y"])}}}  # fmt: skip
            kind = "podAntiAffinity" if self.chance(0.6) else "podAffinity"
            if self.chance(0.4):
                rule: Raw = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            else:
                weighted = {"weight": rng.choice([10, 50, 100]), "podAffinityTerm": term}
                rule = {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}
            spec.setdefault("affinity", {})[kind] = rule
        return raw

    def case(self, index: int) -> Case:
        self.zones = ZONES[: self.rng.choice([2, 2, 3, 4])]
        nodes = [self.node(f"n{k}") for k in range(self.rng.randint(3, 6))]
        objects: list[Raw] = list(nodes)
        for node in nodes:
            alloc = node["status"]["allocatable"]
            free = {"gpu": int(alloc.get("nvidia.com/gpu", 0)), "cpu": int(alloc["cpu"]) * 1000, "port": 0,
                    MIG_1G: int(alloc.get(MIG_1G, 0)), MIG_3G: int(alloc.get(MIG_3G, 0))}  # fmt: skip
            for _ in range(self.rng.choice([0, 1, 2, 2, 3, 4])):
                objects.append(self.running(f"r{len(objects) - len(nodes)}", node, free))
        if self.chance(0.3):
            objects.append({"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": "web", "namespace": "default"},
                            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})  # fmt: skip
        return Case(f"fuzz-{index}", tuple(objects), self.pending(nodes))
