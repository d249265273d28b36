"""The chart's CustomResourceDefinitions (deploy/helm/kubegpu/crds/, rendered to deploy/crds/batch.yaml):
GpuQueue and GpuCohort, ``kubegpu.io/v1alpha1``, whose ``openAPIV3Schema`` must accept exactly what
``kubegpu.batch.objects`` parses.

Pins: the CRDs render with ``--include-crds`` (Helm installs ``crds/`` before the templates) and are in
the plain manifests; the group, names, scope and the cluster-wide list paths match the informers'
(``kube/live.py`` ``BATCH_LISTED_KINDS``); the spec fields are the ones ``batch/objects.py`` reads (its
docstring lists them: cohort, weight, nominalQuota, borrowingLimit, lendingLimit; parent); the demo
cluster's queues (``src/kubegpu/demo/cluster.yaml``, what ``kubegpu queues --demo`` reads) validate; and
objects the parser refuses (weight 0 or a string, a quantity that is not one) the API server refuses too.
The schema check uses jsonschema (kubernetes-validate's own validator) on the structural schema; the
``x-kubernetes-*`` keywords are the API server's and ignored there.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest
import yaml

from kubegpu.batch.objects import parse_batch_objects
from kubegpu.kube.listed_kinds import BATCH_LISTED_KINDS
from kubegpu.live.fair_usage import status_patch
from tests.conftest import REPO
from tests.deploy.helm_chart import objects

Doc = dict[str, Any]


def crds() -> dict[str, Doc]:
    return {
        d["spec"]["names"]["kind"]: d for d in objects("defaults") if d["kind"] == "CustomResourceDefinition"
    }


def schema_of(kind: str) -> Doc:
    (version,) = crds()[kind]["spec"]["versions"]
    assert version["served"] and version["storage"] and version["name"] == "v1alpha1"
    schema: Doc = version["schema"]["openAPIV3Schema"]
    return schema


def valid(kind: str, obj: Doc) -> bool:
    return not list(jsonschema.Draft7Validator(schema_of(kind)).iter_errors(obj))


def parses(obj: Doc) -> bool:
    _, _, _, errors = parse_batch_objects([("test", obj)])
    return not errors


def test_the_crds_are_rendered_and_in_the_plain_manifests() -> None:
    assert set(crds()) == {"GpuQueue", "GpuCohort"}
    plain = [d for d in yaml.safe_load_all((REPO / "deploy" / "crds" / "batch.yaml").read_text()) if d]
    assert sorted(d["metadata"]["name"] for d in plain) == ["gpucohorts.kubegpu.io", "gpuqueues.kubegpu.io"]


@pytest.mark.parametrize("kind", ["GpuQueue", "GpuCohort"])
def test_names_and_scope_are_what_the_informers_list(kind: str) -> None:
    crd = crds()[kind]
    (listed,) = [k for k in BATCH_LISTED_KINDS if k.kind == kind]
    names = crd["spec"]["names"]
    assert crd["metadata"]["name"] == f"{names['plural']}.{crd['spec']['group']}"  # the API server's rule
    assert names["listKind"] == f"{kind}List"  # list_kind checks the list's kind
    assert listed.path == f"/apis/{crd['spec']['group']}/v1alpha1/{names['plural']}"
    assert listed.api_version == f"{crd['spec']['group']}/v1alpha1"
    assert crd["spec"]["scope"] == "Cluster"  # queues and cohorts are keyed by name alone


def test_spec_fields_are_the_ones_batch_objects_reads() -> None:
    queue = schema_of("GpuQueue")["properties"]["spec"]["properties"]
    assert set(queue) == {"cohort", "weight", "nominalQuota", "borrowingLimit", "lendingLimit"}
    assert set(schema_of("GpuCohort")["properties"]["spec"]["properties"]) == {
        "parent",
        "admissionFairSharing",
    }
    fair = schema_of("GpuCohort")["properties"]["spec"]["properties"]["admissionFairSharing"]["properties"]
    assert set(fair) == {"usageHalfLifeTime", "usageSamplingInterval"}  # batch/objects.py ``_fair_sharing``


def test_the_demo_queues_and_cohort_validate_and_parse() -> None:
    demo = yaml.safe_load((REPO / "src" / "kubegpu" / "demo" / "cluster.yaml").read_text())
    items = [d for d in demo["items"] if d["kind"] in ("GpuQueue", "GpuCohort")]
    assert len(items) == 4  # gpu-org, training, inference, research
    for obj in items:
        assert valid(obj["kind"], obj), obj["metadata"]["name"]
        assert parses(obj)


def queue(spec: Doc) -> Doc:
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": "q"}, "spec": spec}


@pytest.mark.parametrize(
    "spec",
    [
        {"weight": 0},
        {"weight": "2"},
        {"nominalQuota": {"nvidia.com/gpu": "four"}},
        {"borrowingLimit": {"nvidia.com/gpu": "1.5.0"}},
        {"nominalQuota": ["nvidia.com/gpu"]},
    ],
)
def test_what_the_parser_refuses_the_api_server_refuses(spec: Doc) -> None:
    assert not parses(queue(spec))
    assert not valid("GpuQueue", queue(spec))


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"weight": 3, "cohort": "org"},
        {
            "nominalQuota": {"nvidia.com/gpu": 8, "nvidia.com/mig-1g.18gb": "7"},
            "lendingLimit": {"nvidia.com/gpu": "2"},
        },
        {"borrowingLimit": {"nvidia.com/gpu": "0"}},
    ],
)
def test_what_the_parser_accepts_the_api_server_accepts(spec: Doc) -> None:
    assert parses(queue(spec))
    assert valid("GpuQueue", queue(spec))


def test_gpuqueue_status_is_a_subresource_holding_what_the_scheduler_writes_and_reads_back() -> None:
    """The scheduler records decayed usage on the status subresource only (``subresources.status``: the
    API server then ignores status in writes to the main resource, and spec in writes to ``/status``), in
    Kueue's LocalQueue shape ``status.fairSharing.admissionFairSharingStatus``. What
    ``live.fair_usage.status_patch`` writes validates and parses back to the same milli-units: 6828.4
    milli-GPUs (Kueue's "8 decayed 5 min with 4 running, 10 min half-life") → ``6828m`` → 6828."""
    (version,) = crds()["GpuQueue"]["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    status = schema_of("GpuQueue")["properties"]["status"]["properties"]["fairSharing"]["properties"]
    afs = status["admissionFairSharingStatus"]
    assert set(afs["properties"]) == {"consumedResources", "lastUpdate"} == set(afs["required"])
    at = datetime(2026, 12, 3, 11, 0, 0, tzinfo=UTC)
    patch = status_patch({"nvidia.com/gpu": 8000 * 2**-0.5 + 4000 * (1 - 2**-0.5)}, at)
    assert patch == {
        "status": {
            "fairSharing": {
                "admissionFairSharingStatus": {
                    "consumedResources": {"nvidia.com/gpu": "6828m"},
                    "lastUpdate": "2026-12-03T11:00:00Z",
                }
            }
        }
    }
    queue = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": "a"}, **patch}
    assert valid("GpuQueue", queue)
    queues, _, _, errors = parse_batch_objects([("test", queue)])
    assert errors == [] and queues["a"].consumed == {"nvidia.com/gpu": 6828} and queues["a"].consumed_at == at
    no_time = {**queue, "status": {"fairSharing": {"admissionFairSharingStatus": {"consumedResources": {}}}}}
    assert not valid("GpuQueue", no_time)


def cohort(fair: Doc) -> Doc:
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuCohort", "metadata": {"name": "org"},
            "spec": {"admissionFairSharing": fair}}  # fmt: skip


@pytest.mark.parametrize(
    ("fair", "ok"),
    [
        ({"usageHalfLifeTime": "168h"}, True),
        ({"usageHalfLifeTime": "1h30m", "usageSamplingInterval": "90s"}, True),
        ({"usageHalfLifeTime": "1.5h", "usageSamplingInterval": "500ms"}, True),
        ({"usageHalfLifeTime": "soon"}, False),
        ({"usageHalfLifeTime": "7d"}, False),  # Go durations have no day unit
        ({"usageSamplingInterval": "5m"}, False),  # the half-life is required
        ({"usageHalfLifeTime": 3600}, False),
    ],
)
def test_admission_fair_sharing_durations_the_parser_takes_the_api_server_takes(fair: Doc, ok: bool) -> None:
    """Go duration strings (``time.ParseDuration``'s units ns, us/µs, ms, s, m, h) as ``metav1.Duration``."""
    assert parses(cohort(fair)) is ok
    assert valid("GpuCohort", cohort(fair)) is ok
