"""How kube-apiserver prints an invalid quantity (pkg/apis/core/validation ValidateResourceQuantityValue;
apimachinery field.ErrorBody): a negative amount through ``value.String()`` quoted (%q) in every release;
a fractional extended resource as a JSON-marshalled Quantity (quoted canonical form) from 1.34. Both texts
as kube-apiserver 1.37.2 gave them for these pods (1.33.13 gives the same for the negative one).
"""

from __future__ import annotations

from kubegpu.admission.admit import admit_pods
from kubegpu.model.snapshot import build_snapshot


def _pod(name: str, resources: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}  # fmt: skip


def test_negative_and_fractional_quantities_are_quoted_as_upstream_prints_them() -> None:
    neg, half = admit_pods(
        build_snapshot([]),
        [("p.yaml", _pod("neg", {"requests": {"cpu": "-1"}})),
         ("p.yaml", _pod("half-gpu", {"limits": {"nvidia.com/gpu": "0.5"}}))],
    )  # fmt: skip
    assert neg.message == (
        'Pod "neg" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
        "must be greater than or equal to 0"
    )
    assert half.message == (
        'Pod "half-gpu" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": '
        'must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": '
        "must be an integer]"
    )
