"""The ``spread`` generator stays inside what the API server admits, so every case reaches kube-scheduler.

The rules, from pkg/apis/core/validation/validation.go of k8s.io/kubernetes v1.37.2:
``validateTopologySpreadConstraints`` (one constraint per ``{topologyKey, whenUnsatisfiable}``, ``minDomains`` only
with DoNotSchedule, a ``matchLabelKeys`` key not in the ``labelSelector``, inclusion policies Honor or Ignore) and
``ValidateResourceRequirements`` (an extended resource's request needs an equal limit: "Limit must be set for non
overcommitable resources")."""

from __future__ import annotations

from collections import Counter

from tests.realkube.fuzz_spread import MIG_1G, MIG_3G, SpreadGenerator


def test_spread_cases_are_valid_pods_and_reach_every_feature() -> None:
    gen = SpreadGenerator(5)
    seen: Counter[str] = Counter()
    for i in range(200):
        case = gen.case(1000 + i)
        spec = case.pod["spec"]
        constraints = spec.get("topologySpreadConstraints", [])
        pairs = [(c["topologyKey"], c["whenUnsatisfiable"]) for c in constraints]
        assert len(pairs) == len(set(pairs))
        for c in constraints:
            seen[c["whenUnsatisfiable"]] += 1
            assert c["maxSkew"] >= 1
            if "minDomains" in c:
                assert c["whenUnsatisfiable"] == "DoNotSchedule" and c["minDomains"] >= 1
                seen["minDomains"] += 1
            for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
                assert c.get(policy, "Honor") in ("Honor", "Ignore")
                seen[policy] += policy in c
            selected = c.get("labelSelector", {}).get("matchLabels", {})
            selected |= {e["key"]: "" for e in c.get("labelSelector", {}).get("matchExpressions", [])}
            assert not set(c.get("matchLabelKeys", [])) & set(selected)
            seen["matchLabelKeys"] += "matchLabelKeys" in c
        pods = [o for o in case.objects if o["kind"] == "Pod"] + [case.pod]
        for pod in pods:
            for container in pod["spec"]["containers"]:
                res = container["resources"]
                for name, value in res.get("requests", {}).items():
                    if "/" in name:
                        assert res.get("limits", {}).get(name) == value
                seen["mig"] += any(r in res.get("limits", {}) for r in (MIG_1G, MIG_3G))
        nodes = [o for o in case.objects if o["kind"] == "Node"]
        seen["mig-node"] += any(MIG_1G in n["status"]["allocatable"] for n in nodes)
    for feature in ("DoNotSchedule", "ScheduleAnyway", "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy",
                    "matchLabelKeys", "mig", "mig-node"):  # fmt: skip
        assert seen[feature] >= 10, (feature, seen)


def test_spread_affinity_mode_adds_pod_affinity_of_each_kind() -> None:
    """``spread-affinity``: required and preferred pod affinity and anti-affinity on the pending pod (weights
    1-100, as validation.go ``validateWeightedPodAffinityTerms`` requires), preferred anti-affinity on replicas."""
    gen = SpreadGenerator(5, affinity=True)
    seen: Counter[str] = Counter()
    for i in range(100):
        case = gen.case(1000 + i)
        affinity = case.pod["spec"].get("affinity", {})
        for kind in ("podAffinity", "podAntiAffinity"):
            for how, terms in affinity.get(kind, {}).items():
                seen[f"{kind}/{how[:8]}"] += 1
                assert all(1 <= t.get("weight", 1) <= 100 for t in terms)
        seen["replica"] += any("affinity" in o["spec"] for o in case.objects if o["kind"] == "Pod")
    for kind in ("podAffinity", "podAntiAffinity"):
        assert seen[f"{kind}/required"] and seen[f"{kind}/preferre"], seen
    assert seen["replica"] >= 10
