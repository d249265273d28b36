"""CEL device selectors with Kubernetes' environment.

Sources: staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go (``device`` variable; unknown
domain → empty map via ``newStringInterfaceMapWithDefault``; unqualified names take the driver domain;
version attributes are semver values); k8s.io/apiserver/pkg/cel/library quantity.go and semverlib.go
(``quantity``, ``isQuantity``, ``compareTo``, ``isGreaterThan``, ``semver``, ``major``; no ``<`` overload on
quantities). Each expected value is worked out from those rules and the device below.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubegpu.model.dra import Device
from kubegpu.scheduler.dra_cel import CelError, compiled

D = "gpu.nvidia.com"
A100 = Device(
    "gpu-0",
    {
        f"{D}/productName": "NVIDIA A100 80GB PCIe",
        f"{D}/index": 0,
        f"{D}/driverVersion": ("version", "580.95.5"),
        f"{D}/type": "gpu",
    },
    {f"{D}/memory": Fraction(80 * 2**30)},
    {f"{D}/memory": "80Gi"},
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("device.driver == 'gpu.nvidia.com'", True),
        ("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')", True),
        # 80Gi vs 40Gi / 80Gi / 81920Mi (= 80Gi) / 100Gi
        ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) > 0", True),
        ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('81920Mi')) == 0", True),
        ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('100Gi'))", True),
        ("device.capacity['gpu.nvidia.com'].memory == quantity('81920Mi')", True),
        # 580.95.5 > 550.54.15; major 580
        ("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.54.15'))", True),
        ("device.attributes['gpu.nvidia.com'].driverVersion.major() == 580", True),
        ("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", True),
        ("isQuantity('10Gi') && !isQuantity('ten')", True),
        # unknown domain is an empty map, so has() is false and no error is raised
        ("has(device.attributes['example.com'].model)", False),
        ("device.attributes['gpu.nvidia.com'].index > 0", False),
    ],
)
def test_selector_values(expression: str, expected: bool) -> None:
    assert compiled(expression).matches(D, A100) is expected


def test_unknown_attribute_is_a_runtime_error() -> None:
    with pytest.raises(CelError, match=r"^no such key: model$"):
        compiled("device.attributes['gpu.nvidia.com'].model == 'x'").matches(D, A100)


def test_quantities_have_no_ordering_operator() -> None:
    with pytest.raises(CelError, match="no matching overload"):
        compiled("device.capacity['gpu.nvidia.com'].memory >= quantity('18Gi')").matches(D, A100)


def test_results_are_cached_per_device_view() -> None:
    # A second device identical in every attribute the expression names reuses the first result: the
    # cache holds one entry for the two devices (uuid is not named, so it is not part of the key).
    sel = compiled(
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100 80GB PCIe' && device.attributes['gpu.nvidia.com'].index >= 0"
    )
    other = Device("gpu-9", {**A100.attributes, f"{D}/uuid": "GPU-other"}, A100.capacity, A100.capacity_text)
    assert sel.matches(D, A100) and sel.matches(D, other)
    assert len(sel._results) == 1
