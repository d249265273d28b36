"""``kubegpu.kube.live.read_cluster`` against kmock serving API-server-shaped JSON.

kmock (an aiohttp mock server) runs on its own event loop in a background thread, so the synchronous
``kubernetes`` client under test talks real HTTP to it. The route table below emulates the API server's
list endpoints: ``limit``/``continue`` chunking with opaque tokens, ``kind: Status`` error bodies, 410 on
an expired token. The fixtures do not use kmock's pytest plugin (which needs pytest-asyncio); run with
``-p no:kmock`` when pytest-asyncio is not installed.
"""

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

from kubegpu.errors import InputError
from kubegpu.kube.live import BATCH_LISTED_KINDS, DRA_LISTED_KINDS, LISTED_KINDS, LiveRead, read_cluster
from kubegpu.model.snapshot import build_snapshot

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
    listed.path: (f"{listed.kind}List", listed.api_version) for listed in (*LISTED_KINDS, *BATCH_LISTED_KINDS)
}


def full_cluster() -> dict[str, list[dict[str, Any]]]:
    return {
        "/api/v1/namespaces": [NAMESPACE],
        "/api/v1/nodes": [NODE_GPU, NODE_CPU],
        "/apis/scheduling.k8s.io/v1/priorityclasses": [PRIORITY_CLASS],
        "/api/v1/pods": PODS,
        "/api/v1/resourcequotas": [QUOTA],
        "/api/v1/limitranges": [LIMIT_RANGE],
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


# ----------------------------------------------------------------------------------------------------
# Happy path.


def test_reads_every_kind_as_plain_api_dicts(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    result = read(api, tmp_path)

    assert result.context == "kmock"
    assert result.server == api.url
    assert result.warnings == []
    assert result.counts == {"Namespace": 1, "Node": 2, "PriorityClass": 1, "Pod": 5, "ResourceQuota": 1,
                             "LimitRange": 1, "PodDisruptionBudget": 1}  # fmt: skip
    by_name = {(obj["kind"], obj["metadata"]["name"]): (source, obj) for source, obj in result.objects}

    source, node = by_name[("Node", "gpu-node-1")]
    assert source == "cluster kmock/api/v1/nodes"
    # Exactly what the server sent, plus kind/apiVersion: camelCase keys, quantities still strings.
    assert node == {"apiVersion": "v1", "kind": "Node", **NODE_GPU}
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert node["status"]["allocatable"]["cpu"] == "95500m"
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert node["status"]["conditions"][0]["lastHeartbeatTime"] == "2026-12-03T05:00:00Z"
    assert node["metadata"]["managedFields"][0]["manager"] == "kubelet"

    source, pod = by_name[("Pod", "train-0")]
    assert source == "cluster kmock/api/v1/pods"
    assert pod["apiVersion"] == "v1"
    assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert pod["spec"]["tolerations"][1]["tolerationSeconds"] == 300
    assert pod["spec"]["priorityClassName"] == "research-high"

    source, quota = by_name[("ResourceQuota", "gpu-quota")]
    assert quota["status"]["used"] == {"requests.nvidia.com/gpu": "6", "pods": "5"}
    assert by_name[("PriorityClass", "research-high")][1]["apiVersion"] == "scheduling.k8s.io/v1"
    assert (
        by_name[("PodDisruptionBudget", "trainer-pdb")][0]
        == "cluster kmock/apis/policy/v1/poddisruptionbudgets"
    )
    assert by_name[("PodDisruptionBudget", "trainer-pdb")][1]["apiVersion"] == "policy/v1"


def test_only_gets_with_the_kubeconfig_token_and_never_watches(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    kubeconfig = write_kubeconfig(tmp_path, api.url)
    before = kubeconfig.read_bytes()
    read_cluster(kubeconfig=str(kubeconfig))

    assert {method for method, _, _, _ in api.requests} == {"GET"}
    assert {auth for _, _, _, auth in api.requests} == {f"Bearer {TOKEN}"}
    listed_paths = [listed.path for listed in (*LISTED_KINDS, *BATCH_LISTED_KINDS, *DRA_LISTED_KINDS)]
    # first the server's version (it picks the kube-scheduler release reproduced), then each list
    assert [path for _, path, _, _ in api.requests] == ["/version/", *listed_paths]
    lists = api.requests[1:]
    assert all("watch" not in query for _, _, query, _ in lists)
    assert all(query.get("limit") == "500" for _, _, query, _ in lists)
    assert kubeconfig.read_bytes() == before  # persist_config=False: nothing written back


def test_follows_continue_tokens_across_pages(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    result = read(api, tmp_path, page_size=2)

    pods = [obj["metadata"]["name"] for source, obj in result.objects if obj["kind"] == "Pod"]
    assert pods == ["train-0", "train-1", "train-2", "train-3", "train-4"]
    calls = api.list_calls("/api/v1/pods")
    assert len(calls) == 3
    assert "continue" not in calls[0]
    assert [base64.b64decode(c["continue"]).decode() for c in calls[1:]] == ["2", "4"]
    assert all(c["limit"] == "2" for c in calls)
    assert len(api.list_calls("/api/v1/nodes")) == 1  # two nodes fit in one page of two


def test_explicit_context_and_its_name_in_sources(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    result = read_cluster(context="other", kubeconfig=str(write_kubeconfig(tmp_path, api.url)))
    assert result.context == "other"
    assert {source.split("/", 1)[0] for source, _ in result.objects} == {"cluster other"}


def test_kubeconfig_env_var_is_honoured(
    api: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.collections = full_cluster()
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path, api.url)))
    assert read_cluster().counts["Node"] == 2


def test_objects_build_a_snapshot(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    snap = build_snapshot(read(api, tmp_path).objects, description="live")
    assert snap.errors == []
    assert sorted(n.name for n in snap.nodes) == ["cpu-node-1", "gpu-node-1"]
    assert len(snap.pods) == 5
    assert len(snap.pending_pods()) == 2
    assert len(snap.quotas) == 1 and len(snap.pdbs) == 1 and "research-high" in snap.priority_classes


def test_empty_collections_and_null_items(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = {path: [] for path in LIST_API}
    api.overrides["/api/v1/limitranges"] = lambda q: (200, {"kind": "LimitRangeList", "apiVersion": "v1",
                                                             "metadata": {}, "items": None})  # fmt: skip
    result = read(api, tmp_path)
    assert result.objects == [] and result.warnings == []


# ----------------------------------------------------------------------------------------------------
# The batch CRDs: read where installed, skipped without a word where not (404), warned about on 403.

GPU_QUEUE = {
    "metadata": {"name": "team-a"},
    "spec": {"cohort": "org", "nominalQuota": {"nvidia.com/gpu": "8"}},
}
GPU_COHORT = {"metadata": {"name": "org"}, "spec": {"admissionFairSharing": {"usageHalfLifeTime": "168h"}}}
VOLCANO_GROUP = {
    "metadata": {"name": "train", "namespace": "team-a"},
    "spec": {"minMember": 2, "queue": "team-a"},
}


def test_the_batch_crds_are_read_where_installed(api: FakeApiServer, tmp_path: Path) -> None:
    """Custom resources list like built-in kinds (``GpuQueueList`` items without kind/apiVersion); the
    coscheduling PodGroup CRD is not installed here: its 404 adds no warning."""
    api.collections = {
        **full_cluster(),
        "/apis/kubegpu.io/v1alpha1/gpuqueues": [GPU_QUEUE],
        "/apis/kubegpu.io/v1alpha1/gpucohorts": [GPU_COHORT],
        "/apis/scheduling.volcano.sh/v1beta1/podgroups": [VOLCANO_GROUP],
    }
    result = read(api, tmp_path)
    assert result.warnings == []
    assert (result.counts["GpuQueue"], result.counts["GpuCohort"], result.counts["PodGroup"]) == (1, 1, 1)
    by_kind = {obj["kind"]: (source, obj) for source, obj in result.objects}
    assert by_kind["GpuQueue"] == (
        "cluster kmock/apis/kubegpu.io/v1alpha1/gpuqueues", {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", **GPU_QUEUE}
    )  # fmt: skip
    assert by_kind["PodGroup"][1]["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    snap = build_snapshot(result.objects)
    assert sorted(str(raw["kind"]) for _, raw in snap.batch_objects) == ["GpuCohort", "GpuQueue", "PodGroup"]
    assert ("GET", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups") in {(m, p) for m, p, _, _ in api.requests}


def test_a_batch_crd_that_is_installed_but_forbidden_is_warned_about(
    api: FakeApiServer, tmp_path: Path
) -> None:
    """403: the CRD exists but these credentials cannot read it — what that costs is worth a line."""
    api.collections = full_cluster()
    forbidden = status_body(
        403, "Forbidden",
        'gpuqueues.kubegpu.io is forbidden: User "alice" cannot list resource "gpuqueues" in API group '
        '"kubegpu.io" at the cluster scope',
    )  # fmt: skip
    api.overrides["/apis/kubegpu.io/v1alpha1/gpuqueues"] = lambda q: (403, forbidden)
    result = read(api, tmp_path)
    assert result.warnings == [
        "cluster kmock/apis/kubegpu.io/v1alpha1/gpuqueues: skipped GpuQueue objects (HTTP 403 Forbidden: "
        + forbidden["message"]
        + "); pods naming a queue are admitted without queue quota"
    ]


# ----------------------------------------------------------------------------------------------------
# Optional kinds degrade to warnings.


def test_forbidden_optional_kinds_become_warnings(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    forbidden = status_body(
        403,
        "Forbidden",
        'poddisruptionbudgets.policy is forbidden: User "system:serviceaccount:kubegpu:reader" cannot list '
        'resource "poddisruptionbudgets" in API group "policy" at the cluster scope',
    )
    api.overrides["/apis/policy/v1/poddisruptionbudgets"] = lambda q: (403, forbidden)
    api.overrides["/apis/scheduling.k8s.io/v1/priorityclasses"] = lambda q: (
        403,
        status_body(403, "Forbidden", "no"),
    )
    api.overrides["/api/v1/limitranges"] = lambda q: (404, status_body(404, "NotFound", "not served"))

    result = read(api, tmp_path)

    assert "PodDisruptionBudget" not in result.counts and "PriorityClass" not in result.counts
    assert result.counts["Pod"] == 5 and result.counts["Node"] == 2
    assert len(result.warnings) == 3
    pdb_warning = next(w for w in result.warnings if "PodDisruptionBudget" in w)
    assert pdb_warning.startswith(
        "cluster kmock/apis/policy/v1/poddisruptionbudgets: skipped PodDisruptionBudget"
    )
    assert "HTTP 403 Forbidden" in pdb_warning
    assert 'cannot list resource "poddisruptionbudgets"' in pdb_warning
    assert "preemption" in pdb_warning
    assert any("HTTP 404" in w and "LimitRange" in w for w in result.warnings)
    assert all("\n" not in w for w in result.warnings)


def test_expired_continue_token_restarts_the_list_once(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    served = {"expired": 0}

    def pods(query: dict[str, str]) -> Reply:
        if query.get("continue") and served["expired"] == 0:
            served["expired"] += 1
            return 410, status_body(410, "Expired", "The provided continue parameter is too old")
        return api._page("/api/v1/pods", query)

    api.overrides["/api/v1/pods"] = pods
    result = read(api, tmp_path, page_size=2)
    assert [o["metadata"]["name"] for _, o in result.objects if o["kind"] == "Pod"] == [
        f"train-{i}" for i in range(5)
    ]
    assert result.warnings == [
        "cluster kmock/api/v1/pods: continue token expired (HTTP 410); restarted the list"
    ]


# ----------------------------------------------------------------------------------------------------
# Fatal problems: one-line InputError naming the source.


def test_forbidden_required_kind_is_an_input_error(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    message = 'pods is forbidden: User "dev" cannot list resource "pods" in API group "" at the cluster scope'
    api.overrides["/api/v1/pods"] = lambda q: (403, status_body(403, "Forbidden", message))
    with pytest.raises(InputError) as err:
        read(api, tmp_path)
    assert err.value.source == "cluster kmock/api/v1/pods"
    assert (
        str(err.value)
        == f"cluster kmock/api/v1/pods: not allowed to list pods (HTTP 403 Forbidden): {message}"
    )


def test_unauthorized_is_an_input_error(api: FakeApiServer, tmp_path: Path) -> None:
    api.overrides["/api/v1/namespaces"] = lambda q: (401, status_body(401, "Unauthorized", "Unauthorized"))
    with pytest.raises(InputError, match=r"rejected the credentials \(HTTP 401 Unauthorized\)") as err:
        read(api, tmp_path)
    assert err.value.source == "cluster kmock/api/v1/namespaces"
    assert "\n" not in str(err.value)


def test_server_error_is_an_input_error(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    api.overrides["/api/v1/nodes"] = lambda q: (500, b"etcdserver: request timed out\n")
    with pytest.raises(
        InputError, match=r"listing nodes failed \(HTTP 500 Internal Server Error\): etcdserver"
    ):
        read(api, tmp_path)


def test_non_json_and_wrong_kind_responses(api: FakeApiServer, tmp_path: Path) -> None:
    api.collections = full_cluster()
    api.overrides["/api/v1/nodes"] = lambda q: (200, b"<html>proxy login</html>")
    with pytest.raises(InputError, match="the response is not JSON") as err:
        read(api, tmp_path)
    assert err.value.source == "cluster kmock/api/v1/nodes"

    api.overrides["/api/v1/nodes"] = lambda q: (200, {"kind": "PodList", "apiVersion": "v1", "items": []})
    with pytest.raises(InputError, match="expected kind NodeList, got 'PodList'"):
        read(api, tmp_path)


def test_unreachable_server(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path, f"http://127.0.0.1:{free_port()}")
    with pytest.raises(InputError) as err:
        read_cluster(kubeconfig=str(kubeconfig), timeout_s=5)
    assert err.value.source == "cluster kmock/api/v1/namespaces"
    assert str(err.value).startswith(
        "cluster kmock/api/v1/namespaces: cannot reach the API server at http://127.0.0.1:"
    )
    assert "refused" in str(err.value).lower()
    assert "\n" not in str(err.value)


def test_missing_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="does not exist") as err:
        read_cluster(kubeconfig=str(tmp_path / "nope"))
    assert err.value.source == "kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "also-nope"))
    with pytest.raises(InputError, match=r"\(from \$KUBECONFIG\) does not exist"):
        read_cluster()


def test_unknown_context_lists_the_known_ones(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path, "http://127.0.0.1:1")
    with pytest.raises(InputError) as err:
        read_cluster(context="prod", kubeconfig=str(kubeconfig))
    assert err.value.source == str(kubeconfig)
    assert err.value.problem == "context 'prod' is not in the kubeconfig (contexts: kmock, other)"


def test_no_current_context(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path, "http://127.0.0.1:1", current=None)
    with pytest.raises(InputError, match="no current-context"):
        read_cluster(kubeconfig=str(kubeconfig))


def test_malformed_kubeconfig(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(InputError, match="cannot read kubeconfig") as err:
        read_cluster(kubeconfig=str(bad))
    assert err.value.source == str(bad)


def test_in_cluster_outside_a_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(InputError, match="cannot use the in-cluster service account") as err:
        read_cluster(in_cluster=True)
    assert err.value.source == "in-cluster config"


def test_dra_kinds_are_read_at_the_first_version_served(api: FakeApiServer, tmp_path: Path) -> None:
    """A 1.32 cluster serves resource.k8s.io/v1beta1 only: v1 and v1beta2 answer 404 (no warning), v1beta1
    is read and parsed by conversion; a kind read at one version is not asked again at an older one."""
    api.collections = full_cluster()
    rslice = {
        "metadata": {"name": "n1-gpu.nvidia.com-x"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "basic": {"attributes": {"type": {"string": "gpu"}}}}],
        },
    }
    body = {
        "kind": "ResourceSliceList",
        "apiVersion": "resource.k8s.io/v1beta1",
        "metadata": {},
        "items": [rslice],
    }
    api.overrides["/apis/resource.k8s.io/v1beta1/resourceslices"] = lambda q: (200, body)
    classes = {"kind": "DeviceClassList", "apiVersion": "resource.k8s.io/v1", "metadata": {}, "items": []}
    api.overrides["/apis/resource.k8s.io/v1/deviceclasses"] = lambda q: (200, classes)
    result = read(api, tmp_path)
    assert [p for _, p, _, _ in api.requests if "deviceclasses" in p] == [
        "/apis/resource.k8s.io/v1/deviceclasses"
    ]
    assert result.warnings == []
    asked = [p for _, p, _, _ in api.requests if "resourceslices" in p]
    assert asked == ["/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1beta2/resourceslices",
                     "/apis/resource.k8s.io/v1beta1/resourceslices"]  # fmt: skip
    snap = build_snapshot(result.objects)
    assert [d.attributes for s in snap.dra.slices for d in s.devices] == [{"gpu.nvidia.com/type": "gpu"}]
