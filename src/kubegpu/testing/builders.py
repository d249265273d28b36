"""Builders that produce Kubernetes objects shaped exactly as the API server returns them.

``make_pod("p").ns("team-a").gpu(2).tolerate("nvidia.com/gpu", "present").obj()`` returns the raw dict;
``.parsed()`` returns the model object through the real parser, so tests exercise the same path a
snapshot does.
"""

from __future__ import annotations

import copy
from typing import Any

from kubegpu.model import parse
from kubegpu.model.names import HOSTNAME_LABEL
from kubegpu.model.objects import Node, Pod

Raw = dict[str, Any]


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._raw: Raw = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "containers": [{"name": "main", "image": "registry.example.com/app:1", "resources": {}}]
            },
            "status": {"phase": "Pending"},
        }

    @property
    def _spec(self) -> Raw:
        spec: Raw = self._raw["spec"]
        return spec

    def ns(self, namespace: str) -> PodBuilder:
        self._raw["metadata"]["namespace"] = namespace
        return self

    def labels(self, **labels: str) -> PodBuilder:
        self._raw["metadata"].setdefault("labels", {}).update(labels)
        return self

    def created(self, ts: str) -> PodBuilder:
        self._raw["metadata"]["creationTimestamp"] = ts
        return self

    def requests(self, container: int = 0, **res: str | int) -> PodBuilder:
        r = self._spec["containers"][container]["resources"].setdefault("requests", {})
        r.update({_name(k): v for k, v in res.items()})
        return self

    def limits(self, container: int = 0, **res: str | int) -> PodBuilder:
        r = self._spec["containers"][container]["resources"].setdefault("limits", {})
        r.update({_name(k): v for k, v in res.items()})
        return self

    def gpu(self, n: int | str, resource: str = "nvidia.com/gpu") -> PodBuilder:
        """GPUs the way users write them: in limits (the request is implied)."""
        self._spec["containers"][0]["resources"].setdefault("limits", {})[resource] = str(n)
        return self

    def container(
        self, name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None
    ) -> PodBuilder:
        res: Raw = {}
        if requests:
            res["requests"] = dict(requests)
        if limits:
            res["limits"] = dict(limits)
        self._spec["containers"].append(
            {"name": name, "image": "registry.example.com/side:1", "resources": res}
        )
        return self

    def init_container(self, name: str, requests: dict[str, str], sidecar: bool = False) -> PodBuilder:
        c: Raw = {
            "name": name,
            "image": "registry.example.com/init:1",
            "resources": {"requests": dict(requests)},
        }
        extended = {k: v for k, v in requests.items() if "/" in k}
        if extended:  # the API server: "Limit must be set for non overcommitable resources"
            c["resources"]["limits"] = extended
        if sidecar:
            c["restartPolicy"] = "Always"
        self._spec.setdefault("initContainers", []).append(c)
        return self

    def overhead(self, **res: str) -> PodBuilder:
        self._spec["overhead"] = {_name(k): v for k, v in res.items()}
        return self

    def tolerate(self, key: str = "", value: str = "", effect: str = "", operator: str = "") -> PodBuilder:
        t: Raw = {}
        if key:
            t["key"] = key
        if operator or not value:
            t["operator"] = operator or ("Exists" if not value else "Equal")
        if value:
            t["value"] = value
        if effect:
            t["effect"] = effect
        self._spec.setdefault("tolerations", []).append(t)
        return self

    def node_selector(self, **labels: str) -> PodBuilder:
        self._spec.setdefault("nodeSelector", {}).update(
            {k.replace("__", "/").replace("_", "-"): v for k, v in labels.items()}
        )
        return self

    def selector(self, key: str, value: str) -> PodBuilder:
        self._spec.setdefault("nodeSelector", {})[key] = value
        return self

    def require(
        self, *terms: list[tuple[str, str, list[str]]], fields: list[tuple[str, str, list[str]]] | None = None
    ) -> PodBuilder:
        """Required node affinity: each argument is one term (a list of (key, operator, values))."""
        aff = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        req = aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        for term in terms:
            t: Raw = {}
            if term:
                t["matchExpressions"] = [_expr(k, op, vals) for k, op, vals in term]
            if fields:
                t["matchFields"] = [_expr(k, op, vals) for k, op, vals in fields]
            req["nodeSelectorTerms"].append(t)
        return self

    def prefer(self, weight: int, term: list[tuple[str, str, list[str]]]) -> PodBuilder:
        aff = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        aff.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": {"matchExpressions": [_expr(k, op, v) for k, op, v in term]}}
        )
        return self

    def pod_affinity(
        self,
        topology_key: str,
        selector: dict[str, str],
        *,
        anti: bool = False,
        weight: int = 0,
        **extra: Any,
    ) -> PodBuilder:
        """One pod (anti-)affinity term selecting ``selector`` (matchLabels): required, or preferred with
        ``weight``; ``extra`` adds term fields as written (``namespaces``, ``matchLabelKeys``, …)."""
        kind = "podAntiAffinity" if anti else "podAffinity"
        term: Raw = {"topologyKey": topology_key, "labelSelector": {"matchLabels": dict(selector)}, **extra}
        aff = self._spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight:
            aff.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        else:
            aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        return self

    def spread(
        self, topology_key: str, max_skew: int, selector: dict[str, str],
        when: str = "DoNotSchedule", **extra: Any,
    ) -> PodBuilder:  # fmt: skip
        """One topology spread constraint; ``extra`` adds fields as written (``minDomains``, …)."""
        self._spec.setdefault("topologySpreadConstraints", []).append({
            "maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": dict(selector)}, **extra,
        })  # fmt: skip
        return self

    def host_port(self, port: int, protocol: str = "TCP", ip: str = "") -> PodBuilder:
        p: Raw = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if ip:
            p["hostIP"] = ip
        self._spec["containers"][0].setdefault("ports", []).append(p)
        return self

    def priority(self, value: int, class_name: str = "") -> PodBuilder:
        self._spec["priority"] = value
        if class_name:
            self._spec["priorityClassName"] = class_name
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._spec["preemptionPolicy"] = policy
        return self

    def on(self, node: str, started: str = "2026-01-01T00:00:00Z") -> PodBuilder:
        self._spec["nodeName"] = node
        self._raw["status"] = {"phase": "Running", "startTime": started}
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._raw["status"]["phase"] = phase
        return self

    def owner(self, kind: str, name: str) -> PodBuilder:
        self._raw["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}
        ]
        return self

    def obj(self) -> Raw:
        return copy.deepcopy(self._raw)

    def parsed(self) -> Pod:
        return parse.parse_pod(self.obj(), "test")


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._raw: Raw = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"},
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }

    def capacity(self, **res: str | int) -> NodeBuilder:
        for k, v in res.items():
            self._raw["status"]["capacity"][_name(k)] = str(v)
            self._raw["status"]["allocatable"][_name(k)] = str(v)
        return self

    def allocatable(self, **res: str | int) -> NodeBuilder:
        for k, v in res.items():
            self._raw["status"]["allocatable"][_name(k)] = str(v)
        return self

    def gpus(self, n: int, resource: str = "nvidia.com/gpu", product: str = "NVIDIA-H200") -> NodeBuilder:
        self.capacity(**{resource: n})
        self.label("nvidia.com/gpu.present", "true").label("nvidia.com/gpu.product", product)
        return self.label("nvidia.com/gpu.count", str(n))

    def label(self, key: str, value: str) -> NodeBuilder:
        self._raw["metadata"]["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        t: Raw = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self._raw["spec"].setdefault("taints", []).append(t)
        return self

    def cordon(self) -> NodeBuilder:
        self._raw["spec"]["unschedulable"] = True
        return self.taint("node.kubernetes.io/unschedulable", "", "NoSchedule")

    def obj(self) -> Raw:
        return copy.deepcopy(self._raw)

    def parsed(self) -> Node:
        return parse.parse_node(self.obj(), "test")


def _name(key: str) -> str:
    """Keyword-friendly resource names: ``nvidia_com__gpu`` → ``nvidia.com/gpu``, ``ephemeral_storage``."""
    return {"gpu": "nvidia.com/gpu"}.get(
        key, key.replace("__", "/").replace("_com", ".com").replace("_", "-")
    )


def _expr(key: str, op: str, values: list[str]) -> Raw:
    e: Raw = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)
