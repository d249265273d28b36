"""``kubegpu.kube.live.read_cluster`` against kmock serving API-server-shaped JSON.

kmock (an aiohttp mock server) runs on its own event loop in a background thread, so the synchronous
``kubernetes`` client under test talks real HTTP to it. The route table (``live_fakes.py``) emulates the API server's
list endpoints: ``limit``/``continue`` chunking with opaque tokens, ``kind: Status`` error bodies, 410 on
an expired token. The fixtures do not use kmock's pytest plugin (which needs pytest-asyncio); run with
``-p no:kmock`` when pytest-asyncio is not installed.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from tests.kube.live_fakes import (
    LIST_API,
    NODE_GPU,
    TOKEN,
    FakeApiServer,
    full_cluster,
    read,
    status_body,
    write_kubeconfig,
)

from kubegpu.kube.listed_kinds import BATCH_LISTED_KINDS, DRA_LISTED_KINDS, KUEUE_LISTED_KINDS, LISTED_KINDS
from kubegpu.kube.live import read_cluster
from kubegpu.model.snapshot import build_snapshot

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
    listed_paths = [
        listed.path for listed in (*LISTED_KINDS, *BATCH_LISTED_KINDS, *DRA_LISTED_KINDS, *KUEUE_LISTED_KINDS)
    ]
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


def test_kueue_objects_are_read_at_the_newest_version_served(api: FakeApiServer, tmp_path: Path) -> None:
    """Kueue 0.15+ serves v1beta2 (its storage version) beside the deprecated v1beta1: each kind is read once,
    at v1beta2, and reaches explain.kueue. Objects: the HAMi website Kueue lab (02-queues.yaml, Kueue
    0.18.1), as its list items (no kind/apiVersion on the wire)."""
    flavor = {"metadata": {"name": "hami-t4"}, "spec": {"nodeLabels": {"nvidia.com/gpu.product": "Tesla-T4"}}}
    cq = {"metadata": {"name": "hami-cq"}, "spec": {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["nvidia.com/gpu"],
        "flavors": [{"name": "hami-t4", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2}]}]}]}}  # fmt: skip
    lq = {
        "metadata": {"name": "hami-queue", "namespace": "hami-kueue-demo"},
        "spec": {"clusterQueue": "hami-cq"},
    }
    api.collections = {
        **full_cluster(),
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors": [flavor],
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues": [cq],
        "/apis/kueue.x-k8s.io/v1beta2/localqueues": [lq],
        "/apis/kueue.x-k8s.io/v1beta2/workloads": [],
    }
    result = read(api, tmp_path)
    assert result.warnings == []
    kueue = [(obj["kind"], obj["apiVersion"]) for _, obj in result.objects if "kueue" in obj["apiVersion"]]
    assert sorted(kueue) == [
        ("ClusterQueue", "kueue.x-k8s.io/v1beta2"), ("LocalQueue", "kueue.x-k8s.io/v1beta2"),
        ("ResourceFlavor", "kueue.x-k8s.io/v1beta2"),
    ]  # fmt: skip
    asked = {p for _, p, _, _ in api.requests}
    assert not any(p.startswith("/apis/kueue.x-k8s.io/v1beta1/") for p in asked)
    snap = build_snapshot(result.objects)
    assert sorted(str(q["kind"]) for q in snap.records.queues) == [
        "ClusterQueue",
        "LocalQueue",
        "ResourceFlavor",
    ]


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
