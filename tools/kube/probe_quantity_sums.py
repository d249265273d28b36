#!/usr/bin/env python3
"""Real kube-apiserver + kube-scheduler: sums of huge quantities (int64 in kube-scheduler's NodeInfo).

    python tools/kube/probe_quantity_sums.py 1.37.2 OUT_DIR

Creates nodes and pods whose requests sum past int64 on one node, then pods the scheduler must place beside
them, and a ResourceQuota with huge hard limits. Writes OUT_DIR/realkube-sums-<version>.json (every object as
the API server stored it, in creation order: the snapshot kubegpu reads) and prints the record (create lines,
quota answers, then each pending pod's verdict: node name and PodScheduled message).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from controlplane import start

READY = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok",
          "lastHeartbeatTime": "2026-12-05T00:00:00Z", "lastTransitionTime": "2026-12-05T00:00:00Z"}]  # fmt: skip
BASE = {"cpu": "32", "memory": "256Gi", "pods": "110"}
NODES = {
    "wrap": BASE,  # two 8Ei pods: Requested.Memory = 2 x MaxInt64, wraps to -2
    "one": BASE,  # one 8Ei pod: MaxInt64, no wrap
    "pair1e": BASE,  # two 1E pods: 2e18, no wrap
    "free": BASE,  # nothing placed
    "cpumax": {**BASE, "cpu": "9223372036854775807"},  # MilliValue() wraps to -1000
    "cpumaxm": {**BASE, "cpu": "9223372036854775807m"},  # MilliValue() = MaxInt64 exactly
    "mem8ei": {**BASE, "memory": "8Ei"},  # two 4Ei pods: 2^63, wraps to MinInt64
}
BOUND = [("big-a", "wrap", "8Ei"), ("big-b", "wrap", "8Ei"), ("big-c", "one", "8Ei"), ("e1-a", "pair1e", "1E"),
         ("e1-b", "pair1e", "1E"), ("fill-8ei-1", "mem8ei", "4Ei"), ("fill-8ei-2", "mem8ei", "4Ei")]  # fmt: skip
PENDING = [("after-wrap", "wrap", {"memory": "1Gi"}), ("after-one", "one", {"memory": "1Gi"}),
           ("after-pair1e", "pair1e", {"memory": "1Gi"}), ("on-cpumax", "cpumax", {"cpu": "1"}),
           ("on-cpumaxm", "cpumaxm", {"cpu": "1"}), ("on-mem8ei", "mem8ei", {"memory": "1"})]  # fmt: skip
HARD = {"requests.memory": "8Ei", "requests.cpu": "9223372036854775807"}


def _stored(body: dict[str, Any]) -> dict[str, Any]:
    body.get("metadata", {}).pop("managedFields", None)
    return body


def main(version: str, out: Path) -> None:
    cp = start(version)
    req = cp.request
    stored: list[dict[str, Any]] = []

    def pod(name: str, containers: list[dict[str, str]], ns: str = "default", **spec: Any) -> None:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                "spec": {"containers": [{"name": f"c{i}", "image": "x", "resources": {"requests": r}}
                                        for i, r in enumerate(containers)], **spec}}  # fmt: skip
        s, b = req("POST", f"/api/v1/namespaces/{ns}/pods", body)
        shown = json.dumps([c["resources"] for c in b["spec"]["containers"]]) if s == 201 else b.get("message", "")
        print("create", name, s, shown)
        if s == 201:
            stored.append(_stored(b))

    def quota(ns: str, name: str, hard: dict[str, str]) -> None:
        s, b = req("POST", f"/api/v1/namespaces/{ns}/resourcequotas",
                   {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}})  # fmt: skip
        print("quota", s, b.get("message", ""))
        # no controller-manager: the quota controller's first status, as it writes it, by hand
        req("PATCH", f"/api/v1/namespaces/{ns}/resourcequotas/{name}/status",
            {"status": {"hard": hard, "used": {k: "0" for k in hard}}}, "application/merge-patch+json")  # fmt: skip

    try:
        for ns in ("default", "q", "q2"):
            if ns != "default":
                req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            req("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})  # fmt: skip
        for name, alloc in NODES.items():
            req("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})  # fmt: skip
            s, b = req("PATCH", f"/api/v1/nodes/{name}/status",
                       {"status": {"capacity": alloc, "allocatable": alloc, "conditions": READY}},
                       "application/merge-patch+json")  # fmt: skip
            print("node", name, s, json.dumps(b["status"]["allocatable"]) if s == 200 else b.get("message"))
            stored.append(_stored(b))
        for name, node, memory in BOUND:
            pod(name, [{"memory": memory}], nodeName=node)
        time.sleep(2)
        pod("two-8ei", [{"memory": "8Ei"}, {"memory": "8Ei"}], nodeSelector={"kubernetes.io/hostname": "free"})
        for name, node, res in PENDING:
            pod(name, [res], nodeSelector={"kubernetes.io/hostname": node})
        quota("q", "huge", HARD)
        pod("q-1", [{"memory": "8Ei", "cpu": "1"}], ns="q")
        pod("q-2", [{"memory": "1", "cpu": "1"}], ns="q")
        pod("q-3", [{"memory": "0", "cpu": "9223372036854775807"}], ns="q")
        s, b = req("GET", "/api/v1/namespaces/q/resourcequotas/huge")
        print("quota-used", json.dumps(b["status"]["used"], sort_keys=True))
        stored.append(_stored(b))
        # a quota's cpu keys hold milli-units as written (500m), compared exactly, not rounded to whole cores
        quota("q2", "small", {"requests.cpu": "500m", "limits.cpu": "1500m"})
        s, b = req("GET", "/api/v1/namespaces/q2/resourcequotas/small")
        stored.append(_stored(b))
        for name, cpu in (("q2-600m", "600m"), ("q2-400m", "400m")):
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "q2"},
                    "spec": {"containers": [{"name": "c0", "image": "x",
                                             "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}}  # fmt: skip
            s, b = req("POST", "/api/v1/namespaces/q2/pods", body)
            print("create", name, s, b.get("message", "") if s != 201 else json.dumps(b["spec"]["containers"][0]["resources"]))
        time.sleep(6)
        for name in ["two-8ei", *(p[0] for p in PENDING)]:
            s, b = req("GET", f"/api/v1/namespaces/default/pods/{name}")
            conds = [x.get("message") for x in b["status"].get("conditions", []) if x["type"] == "PodScheduled"]
            print("verdict", name, b["spec"].get("nodeName", ""), conds)
    finally:
        cp.stop()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"realkube-sums-{version}.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": stored}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
