"""The fake API server of the ``kubegpu.kube.live.read_cluster`` tests: kmock serving API-server-shaped
JSON on its own event loop in a background thread (list endpoints with ``limit``/``continue`` chunking and
opaque tokens, ``kind: Status`` error bodies, 410 on an expired token), the objects it serves, the ``api``
fixture and the kubeconfig it is reached through."""

from __future__ import annotations

import asyncio
import base64
import copy
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kmock
import pytest
import yaml
from kmock._internal import parsing as kmock_parsing
from kmock._internal.rendering import Response as KmockResponse  # not in kmock.__all__

from kubegpu.kube.listed_kinds import BATCH_LISTED_KINDS, KUEUE_LISTED_KINDS, LISTED_KINDS
from kubegpu.kube.live import LiveRead, read_cluster

TOKEN = "kmock-test-token"

# ----------------------------------------------------------------------------------------------------
# API-server-shaped objects (as `kubectl get -o json` shows them, minus kind/apiVersion which lists omit).

NODE_GPU = {
    "metadata": {
        "name": "gpu-node-1",
        "uid": "5f0c9a3e-1d2b-4c47-9a43-1f1e7d2a0b01",
        "resourceVersion": "48213",
        "creationTimestamp": "2026-11-30T08:12:44Z",
        "labels": {
            "kubernetes.io/hostname": "gpu-node-1",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "p4d.24xlarge",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
            "nvidia.com/gpu.count": "8",
        },
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1"}],
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    },
    "status": {
        "capacity": {
            "cpu": "96",
            "memory": "1176478512Ki",
            "ephemeral-storage": "498443392Ki",
            "pods": "110",
            "nvidia.com/gpu": "8",
        },
        "allocatable": {
            "cpu": "95500m",
            "memory": "1175327536Ki",
            "ephemeral-storage": "459365140282",
            "pods": "110",
            "nvidia.com/gpu": "8",
        },
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": "2026-12-03T05:00:00Z",
                "lastTransitionTime": "2026-11-30T08:13:20Z",
            }
        ],
        "nodeInfo": {"kubeletVersion": "v1.34.2", "containerRuntimeVersion": "containerd://2.1.4"},
    },
}

NODE_CPU = {
    "metadata": {
        "name": "cpu-node-1",
        "uid": "9c1f2b44-0000-4d3e-8a7b-2f6d1e0c9a11",
        "labels": {"pool": "cpu"},
    },
    "spec": {},
    "status": {
        "capacity": {"cpu": "16", "memory": "65843884Ki", "pods": "110"},
        "allocatable": {"cpu": "15890m", "memory": "64692908Ki", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def gpu_pod(name: str, gpus: str, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "labels": {"app": "trainer"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "trainer",
                    "uid": "job-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "priorityClassName": "research-high",
            "priority": 100000,
            "preemptionPolicy": "PreemptLowerPriority",
            "containers": [
                {
                    "name": "train",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "resources": {
                        "limits": {"nvidia.com/gpu": gpus, "memory": "64Gi"},
                        "requests": {"nvidia.com/gpu": gpus, "cpu": "8", "memory": "64Gi"},
                    },
                }
            ],
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        },
        "status": {"phase": phase, "qosClass": "Burstable"},
    }
    if node:
        pod["spec"]["nodeName"] = node
    return pod


PODS = [
    gpu_pod(f"train-{i}", "2", node="gpu-node-1" if i < 3 else "", phase="Running" if i < 3 else "Pending")
    for i in range(5)
]

QUOTA = {
    "metadata": {"name": "gpu-quota", "namespace": "team-a", "uid": "rq-uid"},
    "spec": {"hard": {"requests.nvidia.com/gpu": "8", "pods": "20"}},
    "status": {
        "hard": {"requests.nvidia.com/gpu": "8", "pods": "20"},
        "used": {"requests.nvidia.com/gpu": "6", "pods": "5"},
    },
}
NAMESPACE = {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
             "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}  # fmt: skip
PRIORITY_CLASS = {
    "metadata": {"name": "research-high"},
    "value": 100000,
    "preemptionPolicy": "PreemptLowerPriority",
}
LIMIT_RANGE = {
    "metadata": {"name": "defaults", "namespace": "team-a"},
    "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "500m", "memory": "1Gi"}}]},
}
PDB = {
    "metadata": {"name": "trainer-pdb", "namespace": "team-a"},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "trainer"}}},
    "status": {"currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1, "expectedPods": 3},
}

LIST_API = {
    listed.path: (f"{listed.kind}List", listed.api_version)
    for listed in (*LISTED_KINDS, *BATCH_LISTED_KINDS, *KUEUE_LISTED_KINDS)
}


def full_cluster() -> dict[str, list[dict[str, Any]]]:
    return {
        "/api/v1/namespaces": [NAMESPACE],
        "/api/v1/nodes": [NODE_GPU, NODE_CPU],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [PRIORITY_CLASS],
        "/api/v1/pods": PODS,
        "/api/v1/resourcequotas": [QUOTA],
        "/api/v1/limitranges": [LIMIT_RANGE],
        "/apis/node.k8s.io/v1/runtimeclasses": [],
        "/apis/policy/v1/poddisruptionbudgets": [PDB],
        # read for the device plugin chain, FailedCreate and the scheduler's own events (model.records)
        "/apis/apps/v1/daemonsets": [],
        "/apis/apps/v1/replicasets": [],
        "/apis/batch/v1/jobs": [],
        # PodTopologySpread's default selector (model.default_spread)
        "/apis/apps/v1/statefulsets": [],
        "/api/v1/replicationcontrollers": [],
        "/api/v1/services": [],
        "/api/v1/events": [],
        # the storage kinds, empty lists (a cluster without volumes): listed, nothing to warn about
        "/api/v1/persistentvolumeclaims": [],
        "/api/v1/persistentvolumes": [],
        "/apis/storage.k8s.io/v1/storageclasses": [],
        "/apis/storage.k8s.io/v1/csinodes": [],
        "/apis/storage.k8s.io/v1/csidrivers": [],
        "/apis/storage.k8s.io/v1/csistoragecapacities": [],
    }


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip


# ----------------------------------------------------------------------------------------------------
# The fake API server.

Reply = tuple[int, Any]  # (HTTP status, JSON body or raw bytes)


@dataclass
class FakeApiServer:
    """kmock on a private loop; ``collections`` are served as paginated lists, ``overrides`` win over them."""

    url: str = ""
    collections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    overrides: dict[str, Callable[[dict[str, str]], Reply]] = field(default_factory=dict)
    # (method, path, query, Authorization header) of every request, in arrival order
    requests: list[tuple[str, str, dict[str, str], str]] = field(default_factory=list)

    def respond(self, request: kmock.Request) -> KmockResponse:
        path, params = request.url.path, dict(request.params)
        self.requests.append(
            (str(request.method.value).upper(), path, params, request.headers.get("Authorization", ""))
        )
        if path in self.overrides:
            status, body = self.overrides[path](params)
        elif path in self.collections:
            status, body = self._page(path, params)
        elif (
            path.rstrip("/") == "/version"
        ):  # what a 1.34 API server answers (k8s.io/apimachinery version.Info)
            status, body = 200, {
                "major": "1", "minor": "34", "gitVersion": "v1.34.4", "gitCommit": "0" * 40,
                "gitTreeState": "clean", "buildDate": "2026-02-10T12:00:00Z", "goVersion": "go1.24.12",
                "compiler": "gc", "platform": "linux/amd64",
            }  # fmt: skip
        else:
            status, body = (
                404,
                status_body(404, "NotFound", "the server could not find the requested resource"),
            )
        return KmockResponse(status=status, payload=body)

    def _page(self, path: str, params: dict[str, str]) -> Reply:
        items = self.collections[path]
        start = int(base64.b64decode(params["continue"]).decode()) if params.get("continue") else 0
        limit = int(params.get("limit", "0")) or len(items)
        chunk, rest = items[start : start + limit], items[start + limit :]
        list_kind, api_version = LIST_API[path]
        metadata: dict[str, Any] = {"resourceVersion": "48999"}
        if rest:
            metadata["continue"] = base64.b64encode(str(start + limit).encode()).decode()
            metadata["remainingItemCount"] = len(rest)
        return 200, {
            "kind": list_kind,
            "apiVersion": api_version,
            "metadata": metadata,
            "items": copy.deepcopy(chunk),
        }

    def list_calls(self, path: str) -> list[dict[str, str]]:
        return [query for _, p, query, _ in self.requests if p == path]


_kmock_parse_path = kmock_parsing.parse_path


def _parse_path_tolerating_namespace_list(path: str) -> kmock_parsing.ParsedPath:
    """kmock 0.8 reads ``/api/v1/namespaces`` as a ``namespaces/<ns>/...`` prefix missing its name and raises
    ValueError inside the server (HTTP 500). The Namespace list is a plain cluster-scoped collection."""
    if path.strip("/").split("/") == ["api", "v1", "namespaces"]:
        return kmock_parsing.ParsedPath(group="", version="v1", plural="namespaces")
    return _kmock_parse_path(path)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApiServer]:
    monkeypatch.setattr(kmock_parsing, "parse_path", _parse_path_tolerating_namespace_list)
    server = FakeApiServer()
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        state["stop"] = asyncio.Event()
        async with kmock.RawHandler() as handler, kmock.Server(handler) as srv:
            handler << server.respond
            server.url = str(srv.url).rstrip("/")
            ready.set()
            await state["stop"].wait()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10), "kmock did not start"
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(state["stop"].set)
        thread.join(10)
        loop.close()


def write_kubeconfig(tmp_path: Path, server: str, current: str | None = "kmock") -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kmock-cluster", "cluster": {"server": server}}],
        "users": [{"name": "tester", "user": {"token": TOKEN}}],
        "contexts": [
            {"name": "kmock", "context": {"cluster": "kmock-cluster", "user": "tester"}},
            {
                "name": "other",
                "context": {"cluster": "kmock-cluster", "user": "tester", "namespace": "team-b"},
            },
        ],
    }
    if current:
        doc["current-context"] = current
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def read(api: FakeApiServer, tmp_path: Path, **kwargs: Any) -> LiveRead:
    return read_cluster(kubeconfig=str(write_kubeconfig(tmp_path, api.url)), **kwargs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
