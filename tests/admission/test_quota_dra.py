"""GPUs taken through DRA ResourceClaims and ResourceQuota (``admission.quota.claim_usage``, ``explain.findings_quota``).

Upstream: a pod that gets a GPU through a ResourceClaim (resource.k8s.io/v1, DeviceClass ``gpu.nvidia.com``) asks
for no ``nvidia.com/gpu``, so the pod evaluator never counts it in ``requests.nvidia.com/gpu`` (pods.go
``podComputeUsageHelper`` reads the containers' requests). The claim evaluator (pkg/quota/v1/evaluator/core/
resource_claims.go) counts each ResourceClaim as one ``count/resourceclaims.resource.k8s.io`` and, per device
class, as ``<class>.deviceclass.resource.k8s.io/devices`` (``V1ResourceByDeviceClass``, ``corev1.ResourceClaimsPerClass``;
the v1alpha3 evaluator of 1.31 first has it, 1.30's classic DRA counted ``<class>.resourceclass.resource.k8s.io/
resourceclaims`` instead: kubernetes/kubernetes@02e702ec692ad5dbf66b8cf1ec41ab49cc6d5036 resource_claims_test.go).
Kubernetes docs, Resource Quotas, "Quota for DRA resource claims": ``examplegpu.deviceclass.resource.k8s.io/devices: 4``
(https://kubernetes.io/docs/concepts/policy/resource-quotas/). The claim evaluator matches no quota scope
(``generic.MatchesNoScopeFunc``). Where DRAExtendedResource is on (KEP-5004, beta and on in 1.36) it also counts
``requests.<the class's extendedResourceName>`` (``addExtendedResourceQuota``).

The usage cases are upstream's TestResourceClaimEvaluatorUsage (resource_claims_test.go, kubernetes master as
mirrored at liggitt/kubernetes@dfa070e90fccad25ca9e8550da4405e7a5fc0f62), without the extended-resource columns.
The cluster is tests/realcases/dra-cel-lowerascii-gpu-test6.yaml (NVIDIA's quickstart gpu-test6, verbatim template,
its generated claim and pod), with a namespace GPU quota added as the docs write one (``requests.nvidia.com/gpu``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegpu.admission.dra import namespace_quotas
from kubegpu.admission.lint import LintContext, lint_object
from kubegpu.admission.quota import claim_usage, namespace_usage, not_enforced, scope_note
from kubegpu.admission.quota_report import quota_rows
from kubegpu.explain.findings import find
from kubegpu.explain.findings_quota import dra_quota_findings
from kubegpu.model.dra import parse_resource_claim
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot

CASE = Path(__file__).parent.parent / "realcases" / "dra-cel-lowerascii-gpu-test6.yaml"
CLAIM = "pod-6c9f8d7b5-x8k2v-a100-7qzlp"
POD = "pod-6c9f8d7b5-x8k2v"
GPU_KEY = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
COUNT = "count/resourceclaims.resource.k8s.io"


def _sub(
    cls: str = "gpu", mode: str = "ExactCount", count: int | None = 1, name: str = "subreq-0"
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": mode}
    if count is not None:
        out["count"] = count
    return out


def _claim(*requests: dict[str, Any]) -> Any:
    return parse_resource_claim({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                 "metadata": {"name": "foo", "namespace": "ns"},
                                 "spec": {"devices": {"requests": list(requests)}}})  # fmt: skip


def _exact(**kw: Any) -> dict[str, Any]:
    sub = _sub(**kw)
    return {"name": sub.pop("name").replace("subreq", "req"), "exactly": sub}


USAGE_CASES = {
    "simple": ([_exact()], {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 1}),
    "many-requests": ([_exact()] * 5, {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 5}),
    "count": ([_exact(count=5)], {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 5}),
    "all": ([_exact(mode="All", count=None)], {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 32}),
    "prioritized-list": ([{"name": "req-0", "firstAvailable": [_sub()]}],
                         {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 1}),
    "prioritized-list-multiple-subrequests": (
        [{"name": "req-0", "firstAvailable": [_sub(count=2), _sub(name="subreq-1")]}],
        {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 2}),
    "prioritized-list-multiple-subrequests-allocation-mode-all": (
        [{"name": "req-0", "firstAvailable": [_sub(), _sub(mode="All", count=None, name="subreq-1")]}],
        {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 32}),
    "prioritized-list-multiple-subrequests-different-device-classes": (
        [{"name": "req-0", "firstAvailable": [_sub(), _sub(cls="tpu", mode="All", count=None, name="subreq-1")]}],
        {COUNT: 1, "gpu.deviceclass.resource.k8s.io/devices": 1, "tpu.deviceclass.resource.k8s.io/devices": 32}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(USAGE_CASES))
def test_claim_usage_is_upstreams(case: str) -> None:
    requests, want = USAGE_CASES[case]
    assert claim_usage(_claim(*requests)) == {k: v * 1000 for k, v in want.items()}


def _snapshot(hard: dict[str, str], *, scoped: bool = False) -> ClusterSnapshot:
    objects = [o for o in yaml.safe_load(CASE.read_text())["items"]]
    quota: dict[str, Any] = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "gpu-test6"},
                             "spec": {"hard": hard}}  # fmt: skip
    if scoped:
        quota["spec"]["scopes"] = ["NotBestEffort"]
    snap = build_snapshot([("t.yaml", o) for o in [*objects, quota]])
    assert not snap.errors, snap.errors
    return snap


def test_a_gpu_quota_on_requests_nvidia_com_gpu_leaves_the_claim_uncounted_and_diagnose_says_so() -> None:
    snap = _snapshot({"requests.nvidia.com/gpu": "2"})
    # the pod asks for no nvidia.com/gpu: the pod evaluator charges it nothing there
    assert namespace_usage(snap.quotas[0], snap.pods, claims=snap.dra.claims.values()) == {
        "requests.nvidia.com/gpu": 0
    }
    [f] = [
        f
        for f in find(snap)
        if f.title == "GPU quota in gpu-test6 does not count GPUs taken through DRA ResourceClaims"
    ]
    assert f.severity == "warning" and f.layer == "quota"
    assert f"ResourceClaim {CLAIM} (pod {POD}) asks for 1 gpu.nvidia.com device(s)" in f.detail
    assert GPU_KEY in f.detail
    assert f.objects == ["resourcequota/gpu-test6/gpu", f"resourceclaim/gpu-test6/{CLAIM}"]
    dry, patch, rollback = f.commands[-3:]
    assert dry == patch + " --dry-run=server -o yaml"
    assert patch == (
        "kubectl -n gpu-test6 patch resourcequota gpu --type=merge -p "
        f'\'{{"spec": {{"hard": {{"{GPU_KEY}": "2"}}}}}}\''
    )
    assert (
        "rollback" in rollback
        and '"path": "/spec/hard/gpu.nvidia.com.deviceclass.resource.k8s.io~1devices"' in rollback
    )


def test_a_quota_with_the_device_class_key_counts_the_claim_and_nothing_is_said() -> None:
    snap = _snapshot({"requests.nvidia.com/gpu": "2", GPU_KEY: "2", COUNT: "10"})
    assert not dra_quota_findings(snap)
    used = namespace_usage(snap.quotas[0], snap.pods, claims=snap.dra.claims.values())
    assert used == {"requests.nvidia.com/gpu": 0, GPU_KEY: 1000, COUNT: 1000}
    rows = {r["resource"]: r for r in quota_rows(snap)}
    assert rows[GPU_KEY]["used"] == "1" and "note" not in rows[GPU_KEY]
    assert rows[COUNT]["used"] == "1" and "note" not in rows[COUNT]


def test_a_scoped_quota_never_counts_claims() -> None:
    """generic.Matches with MatchesNoScopeFunc: a quota with scopes matches no ResourceClaim."""
    snap = _snapshot({"requests.nvidia.com/gpu": "2", GPU_KEY: "2"}, scoped=True)
    assert namespace_usage(snap.quotas[0], snap.pods, claims=snap.dra.claims.values())[GPU_KEY] == 0
    assert "never counts or limits" in scope_note(snap.quotas[0], GPU_KEY)
    [f] = dra_quota_findings(snap)
    assert f"ResourceClaim {CLAIM}" in f.detail
    assert not any("patch" in c for c in f.commands)  # adding the key to a scoped quota would count nothing


def test_a_class_serving_nvidia_com_gpu_counts_where_dra_extended_resource_is_on() -> None:
    """KEP-5004: a DeviceClass with extendedResourceName nvidia.com/gpu makes its claims count in
    requests.nvidia.com/gpu where DRAExtendedResource is on (1.36+), not before."""
    raw = next(o for o in yaml.safe_load(CASE.read_text())["items"] if o["kind"] == "DeviceClass")
    served = {**raw, "spec": {**raw["spec"], "extendedResourceName": "nvidia.com/gpu"}}
    objects = [o for o in yaml.safe_load(CASE.read_text())["items"] if o["kind"] != "DeviceClass"]
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "gpu-test6"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "2"}}}  # fmt: skip
    snap = build_snapshot([("t.yaml", o) for o in [*objects, served, quota]])
    assert not snap.errors, snap.errors
    assert not dra_quota_findings(snap, extended=True)
    assert dra_quota_findings(snap, extended=False)


def test_no_gpu_quota_or_no_claim_says_nothing() -> None:
    assert not dra_quota_findings(_snapshot({"requests.cpu": "8"}))
    objects = [o for o in yaml.safe_load(CASE.read_text())["items"] if o["kind"] != "ResourceClaim"]
    assert not dra_quota_findings(build_snapshot([("t.yaml", o) for o in objects]))


def test_object_count_and_device_class_keys_are_not_called_unenforced() -> None:
    """``count/<resource>`` (generic.ObjectCountQuotaResourceNameFor) and the DRA class key are enforced by
    their evaluators though they contain a ``/``; ``limits.nvidia.com/gpu`` is still never enforced."""
    assert not_enforced("count/pods") == ""
    assert not_enforced(COUNT) == ""
    assert not_enforced(GPU_KEY) == ""
    assert not_enforced("limits.nvidia.com/gpu").startswith("not enforced")


def _items_with_quota(hard: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "gpu-test6"},
             "spec": {"hard": hard}}  # fmt: skip
    return [("t.yaml", o) for o in [*yaml.safe_load(CASE.read_text())["items"], quota]]


def _template(objects: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return next(o for _, o in objects if o["kind"] == "ResourceClaimTemplate")


def test_lint_warns_on_a_claim_template_no_quota_counts() -> None:
    """NVIDIA's gpu-test6 template in a namespace bounding requests.nvidia.com/gpu only: one warning on the
    request's deviceClassName, naming the key that would count it."""
    objects = _items_with_quota({"requests.nvidia.com/gpu": "2"})
    ctx = LintContext(quotas=namespace_quotas(objects))
    [v] = [v for v in lint_object(_template(objects), ctx) if v.rule == "dra-quota"]
    assert v.warning
    assert v.field == "spec.spec.devices.requests[0].exactly.deviceClassName"
    assert v.message.startswith(
        "no ResourceQuota of namespace gpu-test6 counts the gpu.nvidia.com devices of this ResourceClaimTemplate: "
        "requests.nvidia.com/gpu (gpu) counts pods' GPU requests, not ResourceClaims"
    )
    assert f"Fix: add {GPU_KEY}" in v.message
    claim = next(o for _, o in objects if o["kind"] == "ResourceClaim")
    assert [v.field for v in lint_object(claim, ctx) if v.rule == "dra-quota"] == [
        "spec.devices.requests[0].exactly.deviceClassName"
    ]


def test_lint_says_nothing_when_the_class_is_counted_or_the_quotas_are_unknown() -> None:
    counted = _items_with_quota({"requests.nvidia.com/gpu": "2", GPU_KEY: "2"})
    assert not [v for v in lint_object(_template(counted), LintContext(quotas=namespace_quotas(counted)))
                if v.rule == "dra-quota"]  # fmt: skip
    unknown = _items_with_quota({"requests.nvidia.com/gpu": "2"})
    assert not [v for v in lint_object(_template(unknown), LintContext()) if v.rule == "dra-quota"]


def test_kubegpu_lint_prints_the_warning_and_exits_0(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubegpu.cli.live_cmd import lint as lint_command

    path = tmp_path / "gpu-test6.yaml"
    path.write_text(yaml.safe_dump_all([o for _, o in _items_with_quota({"requests.nvidia.com/gpu": "2"})]))
    result = CliRunner().invoke(lint_command, [str(path)])
    assert result.exit_code == 0, result.output
    assert (
        "ResourceClaimTemplate gpu-test6/a100: spec.spec.devices.requests[0].exactly.deviceClassName: "
        in result.output
    )
    assert "[dra-quota, warning]" in result.output


def test_kubegpu_lint_reads_a_quota_with_a_number_for_a_key(tmp_path: Path) -> None:
    """YAML reads ``1: 2`` under spec.hard as a number key; the API server refuses such a quota (a resource
    name is a string), and lint must still read the file's other keys without a traceback."""
    from click.testing import CliRunner

    from kubegpu.cli.live_cmd import lint as lint_command

    objects = [o for _, o in _items_with_quota({"requests.nvidia.com/gpu": "2"})]
    quota = next(o for o in objects if o["kind"] == "ResourceQuota")
    quota["spec"]["hard"][1] = "2"
    path = tmp_path / "gpu-test6.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    result = CliRunner().invoke(lint_command, [str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, result.output
    assert "[dra-quota, warning]" in result.output


def test_plan_quota_counts_the_claims_against_a_device_class_key() -> None:
    """``kubegpu plan quota`` lowering the class key below what the namespace's claims already hold: the API
    server counts the claim (resource_claims.go Usage: 1 device of gpu.nvidia.com), so usage is 1, over the new
    limit 0, as ``kubegpu quota`` says; before, plan quota summed pods only and said 0 used, nothing over."""
    from kubegpu.plan.quota_change import plan_quota

    snap = _snapshot({"requests.nvidia.com/gpu": "2", GPU_KEY: "2"})
    change = plan_quota(snap, "gpu-test6", "gpu", {GPU_KEY: 0})
    [row] = [r for r in change.details["scope"]["resources"] if r["resource"] == GPU_KEY]
    assert (row["used"], row["over_after"]) == ("1", True)
    assert any(w.startswith(f"usage is above the new limit of {GPU_KEY}") for w in change.warnings)


def test_a_nic_class_in_the_same_claim_is_not_named_by_the_gpu_quota_finding() -> None:
    """A claim asking for a GPU and a NIC (google/dranet's driver ``dra.net``, its DeviceClass selecting
    ``device.driver == "dra.net"``): the GPU quota's finding names the GPU class only (review: it listed every
    class the claim asks for under a GPU-quota title)."""
    objects = [o for o in yaml.safe_load(CASE.read_text())["items"]]
    for o in objects:
        if o["kind"] == "ResourceClaim":
            o["spec"]["devices"]["requests"].append(
                {
                    "name": "nic",
                    "exactly": {"deviceClassName": "dranet", "allocationMode": "ExactCount", "count": 1},
                }
            )
    nic_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "dranet"},
                 "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]}}  # fmt: skip
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": "gpu-test6"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "2"}}}  # fmt: skip
    snap = build_snapshot([("t.yaml", o) for o in [*objects, nic_class, quota]])
    assert not snap.errors, snap.errors
    [f] = dra_quota_findings(snap)
    assert GPU_KEY in f.detail and "dranet" not in f.detail
