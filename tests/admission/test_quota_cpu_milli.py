"""A ResourceQuota's cpu keys (requests.cpu, limits.cpu) hold milli-units as written.

Quota admission compares exact quantities (k8s.io/kubernetes v1.37.2 pkg/quota/v1/resources.go
``LessThanOrEqual`` → ``resource.Quantity.Cmp``) and prints them with ``String()``. kubegpu parsed a quota's
keys by their own name, so ``requests.cpu: 500m`` took ``Value()``'s rounding for non-CPU resources (1 whole
core): a 600m pod was admitted where a real kube-apiserver 1.37.2 refuses it
(tests/fixtures/quantity/realkube-sums-1.37.2.txt, namespace q2, recorded by
tools/kube/probe_quantity_sums.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.admission.quota import admit
from kubegpu.model.parse import parse_pod
from kubegpu.model.parse_policy import parse_resource_quota
from kubegpu.sources import load_files

FIXTURES = Path(__file__).parents[1] / "fixtures" / "quantity"


def _created() -> dict[str, tuple[int, str]]:
    out = {}
    for line in (FIXTURES / "realkube-sums-1.37.2.txt").read_text().splitlines():
        if line.startswith("create q2-"):
            _, name, status, rest = line.split(" ", 3)
            out[name] = (int(status), rest)
    return out


CREATED = _created()


@pytest.mark.parametrize(("name", "cpu"), [("q2-600m", "600m"), ("q2-400m", "400m")])
def test_cpu_quota_in_milli_units_decides_and_words_as_the_api_server(name: str, cpu: str) -> None:
    snap = load_files(FIXTURES / "realkube-sums-1.37.2.json")
    resources = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}  # as the probe created it
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "q2"},
        "spec": {"containers": [{"name": "c0", "image": "x", "resources": resources}]},
    }
    decision = admit(parse_pod(raw, "probe_quantity_sums.py"), snap.quotas, snap.pods)
    status, message = CREATED[name]
    assert decision.allowed == (status == 201)
    if status != 201:
        assert decision.message == message  # "... limited: requests.cpu=500m", byte for byte


def test_quota_cpu_keys_keep_milli_precision() -> None:
    quota = parse_resource_quota(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "small", "namespace": "q2"},
            "spec": {"hard": {"requests.cpu": "500m", "limits.cpu": "1500m", "cpu": "250m"}},
        },
        "probe_quantity_sums.py",
    )
    assert quota.hard == {"requests.cpu": 500, "limits.cpu": 1500, "cpu": 250}
