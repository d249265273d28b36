"""Rendering the Helm chart deploy/helm/kubegpu for the chart tests: the values profiles (one per mode the
chart offers), the render through ``deploy/helm/render.py`` (the real helm binary) and small lookups."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

import kubernetes_validate
import yaml

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("kubegpu_render", REPO / "deploy" / "helm" / "render.py")
assert _spec is not None and _spec.loader is not None
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)

Doc = dict[str, Any]
K8S_VERSIONS = ["1.29.0", kubernetes_validate.latest_version()]

# Values profiles (--set), one per mode the chart offers.
PROFILES: dict[str, list[str]] = {
    "defaults": [],
    "all-components": [
        "extender.enabled=true", "exporter.serviceMonitor.enabled=true", "namespace.create=true",
        "exporter.rbac.nodesProxy=true",
    ],
    "time-slicing": [
        "nodeAgent.config.sharing.mode=timeSlicing", "nodeAgent.config.sharing.replicas=4",
        "nodeAgent.config.sharing.renameByDefault=true",
        "nodeAgent.config.sharing.failRequestsGreaterThanOne=true",
    ],
    "mps": ["nodeAgent.config.sharing.mode=mps", "nodeAgent.config.sharing.replicas=3"],
    "mig-single": ["nodeAgent.config.migStrategy=single"],
    "mig-mixed-time-slicing": [
        "nodeAgent.config.migStrategy=mixed", "nodeAgent.config.sharing.mode=timeSlicing",
        "nodeAgent.config.sharing.replicas=2",
        "nodeAgent.config.sharing.resources={nvidia.com/mig-1g.18gb}",
    ],
    "cert-manager": ["webhook.certs.mode=certManager"],
    "cert-manager-issuer": [
        "webhook.certs.mode=certManager", "webhook.certs.certManager.issuerRef.kind=ClusterIssuer",
        "webhook.certs.certManager.issuerRef.name=corp-ca",
    ],
    "mutating": ["webhook.mutating.enabled=true", "webhook.failurePolicy=Ignore"],
    "control-plane-only": ["nodeAgent.enabled=false", "exporter.enabled=false", "namespace.create=true"],
    "no-leader-election": ["scheduler.leaderElection.enabled=false", "scheduler.replicas=1"],
    "scheduler-choice": ["scheduler.profile=kubegpu", "nodeAgent.schedulerChoice.enabled=true"],
    "mutating-options": [
        "webhook.mutating.enabled=true", "webhook.mutating.visibleDevices=false",
        "webhook.mutating.schedulerName=kubegpu",
    ],
    "checkpoint-handshake": ["scheduler.checkpointDeadline=120"],
}  # fmt: skip

# Kinds outside the Kubernetes schema: cert-manager's and the Prometheus Operator's CRDs.
CRD_KINDS = {("cert-manager.io/v1", "Certificate"), ("cert-manager.io/v1", "Issuer"),
             ("monitoring.coreos.com/v1", "ServiceMonitor")}  # fmt: skip


def set_args(profile: str) -> list[str]:
    return [a for s in PROFILES[profile] for a in ("--set", s)]


@functools.cache
def rendered(profile: str) -> str:
    return render.template(*set_args(profile), values=None)


def objects(profile: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(rendered(profile)) if d]


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def container(docs: list[Doc], kind: str, name: str) -> Doc:
    (c,) = one(docs, kind, name)["spec"]["template"]["spec"]["containers"]
    return c


def granted(docs: list[Doc], account: str) -> set[tuple[str, str, str, str]]:
    """Every (group, resource, verb, name) the bindings in ``docs`` give ServiceAccount ``account``."""
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"] in ("Role", "ClusterRole")}
    out: set[tuple[str, str, str, str]] = set()
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        subjects = binding["subjects"]
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account for s in subjects):
            continue
        assert all(s["namespace"] == "kubegpu-system" for s in subjects)
        role = roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        for name in rule.get("resourceNames") or [""]:
                            out.add((group, resource, verb, name))
    return out
