"""``kubegpu.kube.live.read_cluster`` against kmock when the API server refuses or fails: optional kinds
forbidden (warnings), expired continue tokens, required kinds forbidden, bad credentials, server errors,
malformed replies and kubeconfigs (one clear input error each), and the DRA kinds read at the first version
served (split from test_live.py; the same fake API server, ``tests/kube/live_fakes.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.kube.live_fakes import (
    FakeApiServer,
    Reply,
    free_port,
    full_cluster,
    read,
    status_body,
    write_kubeconfig,
)

from kubegpu.errors import InputError
from kubegpu.kube.live import read_cluster
from kubegpu.model.snapshot import build_snapshot

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
