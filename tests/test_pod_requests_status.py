"""The effective request beyond plain containers: pod-level ``spec.resources`` (KEP-2837) as the API server
defaults and validates it, and in-place resize (KEP-1287) as the scheduler counts it.

Inputs and expected values are upstream's own test cases, transcribed object for object:
- kubernetes pkg/apis/core/v1/defaults_test.go v1.34.4 ``TestPodResourcesDefaults`` (``defaultPodRequests``,
  defaults.go v1.34.4; the same rule as ``defaultPodLevelRequests``, pkg/api/pod/util.go v1.37.2);
- component-helpers resource/helpers_test.go tag kubernetes-1.34.4 ``TestPodResourceRequests`` (the
  ``UseStatusResources`` cases, on by default from 1.33: InPlacePodVerticalScaling beta, kube_features.go);
- KEP-2837 README "Clarifying Tricky Cases" example 2 (pod limit 100Gi, two containers limited to 60Gi).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.admission.admit import POD_LEVEL_DROPPED
from kubegpu.cli.main import cli
from kubegpu.errors import InputError
from kubegpu.model.parse import parse_pod
from kubegpu.testing.builders import make_node

Mi = 2**20 * 1000  # milli-bytes
Gi = 2**30 * 1000


def pod(
    containers: list[dict[str, Any]],
    pod_resources: dict[str, Any] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"container-{i + 1}", "image": "x", **c} for i, c in enumerate(containers)]
    }
    if init:
        spec["initContainers"] = init
    if pod_resources is not None:
        spec["resources"] = pod_resources
    status: dict[str, Any] = {"phase": "Running"}
    if statuses:
        status["containerStatuses"] = statuses
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": spec, "status": status}  # fmt: skip


# --- pod-level requests: defaulting (TestPodResourcesDefaults, v1.34.4) ---------------------------------


def test_pod_limits_and_container_requests_default_the_pod_request_to_the_container_sum() -> None:
    """'pod requests=unset limits=set, container requests=set limits=unset': pod request 2m / 3Mi, from the
    containers (1m+1m, 1Mi+2Mi), not the pod limit 4m / 8Mi."""
    raw = pod(
        [{"resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}},
         {"resources": {"requests": {"cpu": "1m", "memory": "2Mi"}}}],
        {"limits": {"cpu": "4m", "memory": "8Mi"}},
    )  # fmt: skip
    p = parse_pod(raw)
    assert p.pod_level_requests == {"cpu": 2, "memory": 3 * Mi}
    assert p.requests == {"cpu": 2, "memory": 3 * Mi}


def test_container_limits_become_requests_before_the_pod_request_is_derived() -> None:
    """'pod requests=unset limits=set, container requests=set limits=set': 2m / 3Mi again."""
    raw = pod(
        [{"resources": {"requests": {"cpu": "1m", "memory": "1Mi"}, "limits": {"cpu": "2m", "memory": "1Mi"}}},
         {"resources": {"requests": {"cpu": "1m", "memory": "2Mi"}, "limits": {"cpu": "1m", "memory": "5Mi"}}}],
        {"limits": {"cpu": "4m", "memory": "8Mi"}},
    )  # fmt: skip
    assert parse_pod(raw).requests == {"cpu": 2, "memory": 3 * Mi}


def test_a_resource_no_container_requests_defaults_to_the_pod_limit() -> None:
    """'pod requests=unset limits=set, container memory requests=set limits=unset': memory 1Mi+5Mi = 6Mi from
    the containers, cpu 4m from the pod limit (no container requests cpu)."""
    raw = pod(
        [{"resources": {"requests": {"memory": "1Mi"}}}, {"resources": {"requests": {"memory": "5Mi"}}}],
        {"limits": {"cpu": "4m", "memory": "8Mi"}},
    )
    assert parse_pod(raw).requests == {"cpu": 4, "memory": 6 * Mi}


def test_no_container_request_at_all_defaults_to_the_pod_limit() -> None:
    """'pod requests=unset cpu limits=set, container resources=unset': cpu 4m."""
    raw = pod([{"resources": {}}, {"resources": {}}], {"limits": {"cpu": "4m"}})
    assert parse_pod(raw).requests == {"cpu": 4}


def test_a_derived_pod_request_above_the_pod_limit_is_refused() -> None:
    """KEP-2837 example 2: container limits 60Gi + 60Gi become requests; the pod request derived from them,
    120Gi, exceeds the pod limit of 100Gi: ValidateResourceRequirements refuses it."""
    raw = pod(
        [{"resources": {"limits": {"memory": "60Gi"}}}, {"resources": {"limits": {"memory": "60Gi"}}}],
        {"limits": {"memory": "100Gi"}},
    )
    with pytest.raises(InputError) as err:
        parse_pod(raw)
    assert err.value.field == "spec.resources.requests"
    assert 'Invalid value: "120Gi": must be less than or equal to memory limit of 100Gi' in str(err.value)


def test_a_pod_request_below_the_containers_is_refused() -> None:
    """validatePodResourceConsistency (validation.go v1.34.4): 'must be greater than or equal to aggregate
    container requests of …', on the kubernetes.io example pod-level-resources.yaml with its pod-level cpu
    request lowered under its container's 0.5."""
    raw = pod(
        [{"resources": {"requests": {"cpu": "0.5", "memory": "50Mi"}, "limits": {"cpu": "0.5", "memory": "100Mi"}}},
         {}],
        {"requests": {"cpu": "250m", "memory": "100Mi"}, "limits": {"cpu": "1", "memory": "200Mi"}},
    )  # fmt: skip
    with pytest.raises(InputError) as err:
        parse_pod(raw)
    assert err.value.field == "spec.resources.requests[cpu]"
    assert (
        'Invalid value: "250m": must be greater than or equal to aggregate container requests of 500m'
        in str(err.value)
    )


@pytest.mark.parametrize("kind", ["limits", "requests"])
def test_gpus_at_pod_level_are_refused(kind: str) -> None:
    """validatePodResourceName (validation.go v1.34.4): only cpu, memory and hugepages- at pod level;
    field.NotSupported lists them sorted."""
    raw = pod([{"resources": {"limits": {"nvidia.com/gpu": "1"}}}], {kind: {"nvidia.com/gpu": "1"}})
    with pytest.raises(InputError) as err:
        parse_pod(raw)
    assert err.value.field == f"spec.resources.{kind}[nvidia.com/gpu]"
    assert 'Unsupported value: "nvidia.com/gpu": supported values: "cpu", "hugepages-", "memory"' in str(
        err.value
    )


def test_the_kubernetes_io_pod_level_example_counts_its_pod_level_requests() -> None:
    """kubernetes/website content/en/examples/pods/resource/pod-level-resources.yaml (release-1.32): pod
    requests cpu 1 / memory 100Mi win over the containers' 0.5 / 50Mi."""
    raw = pod(
        [{"resources": {"requests": {"cpu": "0.5", "memory": "50Mi"}, "limits": {"cpu": "0.5", "memory": "100Mi"}}},
         {}],
        {"requests": {"cpu": "1", "memory": "100Mi"}, "limits": {"cpu": "1", "memory": "200Mi"}},
    )  # fmt: skip
    assert parse_pod(raw).requests == {"cpu": 1000, "memory": 100 * Mi}


# --- in-place resize (TestPodResourceRequests, component-helpers kubernetes-1.34.4) --------------------

INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]


@pytest.mark.parametrize(
    ("spec", "status", "conditions", "expected"),
    [
        # "resized, infeasible": the spec's 4 was never granted; 2 runs
        ({"cpu": "4"}, {"resources": {"requests": {"cpu": "2"}}}, INFEASIBLE, {"cpu": 2000}),
        # "resized, infeasible & in-progress": max(actuated 2, allocated 4)
        (
            {"cpu": "6"},
            {"allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "2"}}},
            INFEASIBLE,
            {"cpu": 4000},
        ),
        # "resized, no resize status": a pending upsize counts the spec
        ({"cpu": "4"}, {"resources": {"requests": {"cpu": "2"}}}, None, {"cpu": 4000}),
        # "resized: per-resource 3-way maximum"
        (
            {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"},
            {
                "allocatedResources": {"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                "resources": {"requests": {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"}},
            },
            None,
            {"cpu": 30, "memory": 30 * 10**6 * 1000, "ephemeral-storage": 30 * 10**9 * 1000},
        ),
    ],
    ids=["infeasible", "infeasible-in-progress", "no-resize-status", "three-way-max"],
)
def test_resize_counts_the_larger_of_spec_and_status(
    spec: dict[str, str], status: dict[str, Any], conditions: Any, expected: dict[str, int]
) -> None:
    raw = pod(
        [{"resources": {"requests": spec}}],
        statuses=[{"name": "container-1", **status}],
        conditions=conditions,
    )
    assert parse_pod(raw).requests == expected


def test_a_pending_downsize_keeps_the_running_size_counted() -> None:
    """'pod scaled down': spec lowered to 1Gi while 2Gi still runs: the scheduler counts 2Gi (what kubernetes
    issue #135107 describes: the node looks full, 109% requested, until the kubelet applies the resize)."""
    raw = pod(
        [{"resources": {"requests": {"memory": "1Gi"}}}],
        statuses=[{"name": "container-1", "resources": {"requests": {"memory": "2Gi"}}}],
    )
    assert parse_pod(raw).requests == {"memory": 2 * Gi}


@pytest.mark.parametrize(
    ("spec", "running", "expected"),
    [({"memory": "1Gi"}, {"memory": "2Gi"}, {"memory": 2 * Gi}), ({"cpu": "4"}, {"cpu": "2"}, {"cpu": 4000})],
    ids=[
        "pod scaled down with restartable init containers",
        "resized, restartable init container, no resize status",
    ],
)
def test_a_sidecars_status_counts_like_an_app_containers(
    spec: dict[str, str], running: dict[str, str], expected: dict[str, int]
) -> None:
    init = [
        {
            "name": "restartable-init-1",
            "image": "x",
            "restartPolicy": "Always",
            "resources": {"requests": spec},
        }
    ]
    raw = pod(
        [{}], init=init
    )  # upstream's case has no app container; the API server requires one: no requests
    raw["status"]["initContainerStatuses"] = [
        {"name": "restartable-init-1", "resources": {"requests": running}}
    ]
    assert parse_pod(raw).requests == expected


def test_a_plain_init_containers_status_is_never_read() -> None:
    """helpers.go (kubernetes-1.33.13 to 1.36.3) reads an init container's status only under
    ``RestartPolicy == Always``: a finished init container's reported resources leave its spec in the init
    max (1.37 reads it too; kubegpu models the 1.33-1.36 rule, see parse_parts.resize_requests)."""
    init = [{"name": "init-1", "image": "x", "resources": {"requests": {"cpu": "1"}}}]
    raw = pod([{"resources": {"requests": {"cpu": "1"}}}], init=init)
    raw["status"]["initContainerStatuses"] = [{"name": "init-1", "resources": {"requests": {"cpu": "9"}}}]
    assert parse_pod(raw).requests == {"cpu": 1000}


def test_a_status_without_resources_is_not_read() -> None:
    """Upstream reads a container status only when ``cs.Resources != nil``: allocatedResources alone (as a
    1.30-1.32 API server with the gate off never stores, and a kubelet reports with ``resources``) leaves the
    spec."""
    raw = pod(
        [{"resources": {"requests": {"cpu": "1"}}}],
        statuses=[{"name": "container-1", "allocatedResources": {"cpu": "3"}}],
    )
    assert parse_pod(raw).requests == {"cpu": 1000}


# --- pod-level resources by release (PodLevelResources: off before 1.34) ------------------------------


def test_before_1_34_the_api_server_drops_pod_level_resources(tmp_path: Path) -> None:
    """On a real kube-apiserver 1.33.13 the defaults_test.go pod (pod limits cpu 4m / memory 8Mi,
    containers 1m+1m / 1Mi+2Mi) is stored with ``spec.resources: null``, and a pod-level nvidia.com/gpu is
    accepted (dropped), while 1.37.2 refuses it (kubernetes pkg/api/pod/util.go v1.33.13
    dropDisabledPodLevelResources; /work/qa/accounting realkube records). ``schedule --pods`` does the same
    per ``--kube-version`` and says so."""
    node = make_node("n").gpus(1).obj()
    node["status"]["nodeInfo"] = {"kubeletVersion": "v1.33.13"}
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(node))
    gpu_at_pod_level = pod(
        [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}], {"limits": {"nvidia.com/gpu": "1"}}
    )
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump(gpu_at_pod_level))
    args = [
        "schedule",
        "--snapshot",
        str(tmp_path / "snap.yaml"),
        "--pods",
        str(tmp_path / "pods.yaml"),
        "-o",
        "json",
    ]
    old = json.loads(CliRunner().invoke(cli, [*args, "--kube-version", "1.33"]).stdout)
    assert not old["rejected"]
    assert old["warnings"] == [
        {"pod": "p", "source": str(tmp_path / "pods.yaml"), "message": POD_LEVEL_DROPPED}
    ]
    assert old["results"][0]["node"] == "n"
    new = json.loads(CliRunner().invoke(cli, [*args, "--kube-version", "1.37"]).stdout)
    assert [r["message"] for r in new["rejected"]] == [
        'Pod "p" is invalid: spec.resources.limits[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu": '
        'supported values: "cpu", "hugepages-", "memory"'
    ]


# --- a pending downsize on a real kube-scheduler 1.37.2 ------------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "accounting" / "resize.yaml"
# kube-scheduler 1.37.2 on the fixture's objects (tools/kube/controlplane.py; /work/qa/accounting
# probe_realkube.py): infer-0 binds beside the infeasible resize, small-0 does not fit beside the pending
# downsize
REAL_1_37 = (
    "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is "
    "not helpful for scheduling."
)


def test_resizes_are_counted_and_explained_as_the_real_scheduler_counts_them() -> None:
    from kubegpu.explain.engine import Engine
    from kubegpu.explain.pending import explain_pod
    from kubegpu.sources import load_files

    snap = load_files(FIXTURE)
    assert not snap.errors
    engine = Engine(snap)
    pods = {p.key: p for p in snap.pods}
    assert explain_pod(engine, pods["ml/infer-0"]).node  # schedulable: the infeasible 64 CPUs are not counted
    exp = explain_pod(engine, pods["c/small-0"])
    assert exp.message == REAL_1_37
    [evidence] = [n.evidence for n in exp.nodes if n.name == "gpu-node-2"]
    assert "already requested 30" in evidence[0]
    assert "c/shrink-0 (main: 30, spec 1)" in evidence[0]


def test_scheduler_only_resources_stay_out_of_a_resizing_pods_request() -> None:
    """HAMi/HAMi#536's pod (nvidia.com/gpumem, a resource only HAMi's scheduler resolves) with a kubelet
    status echoing its resources and a cpu downsize pending (helpers.go 'pod scaled down' shape): the view
    every scheduler's node checks share (explain.schedulers.common_pod) drops gpumem from the resize's
    counted request as it does from the spec's."""
    from kubegpu.explain.schedulers import common_pod

    res = {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": "3k", "cpu": "1"}}
    raw = pod(
        [{"resources": res}],
        statuses=[
            {
                "name": "container-1",
                "resources": {"requests": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3k", "cpu": "2"}},
            }
        ],
    )
    p = parse_pod(raw)
    assert p.requests["cpu"] == 2000 and "nvidia.com/gpumem" in p.requests
    assert common_pod(p, "default-scheduler").requests == {"nvidia.com/gpu": 1000, "cpu": 2000}
