"""kube-scheduler's DRA CEL environment beyond plain CEL: cel-go's strings extension, evaluated, and the rest,
said to be unevaluated.

Sources: k8s.io/apiserver pkg/cel/environment/base.go v0.37.2 (ext.Strings(ext.StringsVersion(2)) from 1.29,
library.Regex, library.Lists, ext.Sets, ext.Lists, cel.OptionalTypes, ext.TwoVarComprehensions) and
k8s.io/dynamic-resource-allocation cel/compile.go v0.37.2 (ext.Bindings); the functions' semantics from cel-go
v0.23.2 ext/strings.go (lowerASCII maps only ASCII, indexOf/substring count code points, split is Go's
strings.Split/SplitN, trim is strings.TrimSpace). NVIDIA documents
``productName.lowerAscii().matches('^.*a100.*$')`` (kubernetes-sigs/dra-driver-nvidia-gpu
demo/specs/quickstart/v1/gpu-test6.yaml @ 22407113785e78c7763b4637689a201eb39c6199). Each expected value is
worked out from those definitions.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod
from kubegpu.model.dra import Device
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.dra_cel import CelError, compiled
from kubegpu.scheduler.dra_cel_ext import CelUnsupported, unsupported
from tests.dra import objects as o

D = "gpu.nvidia.com"
A100 = Device(
    "gpu-0",
    {f"{D}/productName": "NVIDIA A100-SXM4-40GB", f"{D}/index": 0},
    {f"{D}/memory": Fraction(40 * 2**30)},
    {f"{D}/memory": "40Gi"},
)
P = "device.attributes['gpu.nvidia.com'].productName"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f"{P}.lowerAscii().matches('^.*a100.*$')", True),
        (f"{P}.lowerAscii().matches('^.*h100.*$')", False),
        ("'ÀB'.lowerAscii() == 'Àb'", True),  # only ASCII letters change
        (f"{P}.upperAscii() == 'NVIDIA A100-SXM4-40GB'", True),
        # "NVIDIA A100-SXM4-40GB": A100 starts at code point 7, the last '0' is at 18
        (f"{P}.indexOf('A100') == 7", True),
        (f"{P}.indexOf('A', 6) == 7", True),
        (f"{P}.lastIndexOf('0') == 18", True),
        (f"{P}.indexOf('H100') == -1", True),
        (f"{P}.substring(7, 11) == 'A100'", True),
        (f"{P}.split(' ') == ['NVIDIA', 'A100-SXM4-40GB']", True),
        ("'a,b,c'.split(',', 2) == ['a', 'b,c']", True),  # Go SplitN: at most n parts
        ("'a,b'.split(',', 0).size() == 0", True),  # SplitN with n == 0 is empty
        (f"{P}.replace('NVIDIA ', '') == 'A100-SXM4-40GB'", True),
        ("'aaa'.replace('a', 'b', 2) == 'bba'", True),
        ("' \\t x \\n'.trim() == 'x'", True),
        ("'abc'.charAt(3) == ''", True),
        ("['a', 'b'].join('-') == 'a-b'", True),
    ],
)
def test_strings_extension(expression: str, expected: bool) -> None:
    assert compiled(expression).matches(D, A100) is expected


def test_strings_extension_errors_are_cel_go_s() -> None:
    with pytest.raises(CelError, match=r"^index out of range: 4$"):
        compiled("'abc'.substring(4) == ''").matches(D, A100)


@pytest.mark.parametrize(
    ("expression", "what"),
    [
        ("cel.bind(p, device.attributes['gpu.nvidia.com'], p.index == 0)", "cel.bind"),
        (f"{P}.?x.orValue('') == ''", "optional"),
        ("[1, 2].sum() == 3", "sum()"),
        (f"{P}.find('A[0-9]+') == 'A100'", "find()"),
        ("sets.contains([1, 2], [1])", "sets extension"),
        ("device.attributes.all(k, v, k != '')", "two-variable"),
    ],
)
def test_what_kubegpu_cannot_evaluate_is_said_not_an_error(expression: str, what: str) -> None:
    assert what in unsupported(expression)
    with pytest.raises(CelUnsupported):
        compiled(expression).matches(D, A100)


def test_names_inside_string_literals_are_not_calls() -> None:
    assert unsupported(f"{P} == 'x.sum()'") == ""


def test_runtime_error_messages_carry_no_library_dump() -> None:
    with pytest.raises(CelError) as got:
        compiled("device.attributes['gpu.nvidia.com'].productName.noSuchFunction()").matches(D, A100)
    assert "activation" not in str(got.value)


def test_a_pod_whose_selector_kubegpu_cannot_evaluate_is_unverified_not_failed() -> None:
    """The selector compile.go's own comment gives for cel.bind (k8s.io/dynamic-resource-allocation cel/compile.go
    v0.37.2: ``cel.bind(dra, device.attributes["dra.example.com"], ...)``), on NVIDIA's attributes: kube-scheduler
    evaluates it; kubegpu must not answer with a CEL error the cluster would not raise, and must say it did not
    check it."""
    bind = "cel.bind(g, device.attributes['gpu.nvidia.com'], g.productName.startsWith('NVIDIA'))"
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 1), *o.generated("a", o.request("gpu", selectors=(bind,)))]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    assert not snap.errors
    exp = explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "a"))
    assert exp.schedulable, exp.message
    lines = [u for u in exp.unverified if "cel.bind" in u]
    assert lines and "kubegpu's CEL library cannot evaluate" in lines[0], exp.unverified


def test_allow_multiple_allocations_is_a_device_field() -> None:
    """compile.go v0.37.2 declares ``device.allowMultipleAllocations`` (multiAllocVar) with DRAConsumableCapacity
    and binds it to ``ptr.Deref(input.AllowMultipleAllocations, false)``; the result cache must tell devices apart
    by it."""
    shared = Device("gpu-1", A100.attributes, A100.capacity, A100.capacity_text, allow_multiple=True)
    sel = compiled("device.allowMultipleAllocations")
    assert sel.matches(D, shared) is True
    assert sel.matches(D, A100) is False


def test_a_list_function_met_at_run_time_is_named_too() -> None:
    """``indexOf`` on a list is the Kubernetes lists library's (base.go v0.37.2 library.Lists), not the strings
    extension's: found only when evaluated, and then named for the pod as well."""
    sel = "[0, 2].indexOf(device.attributes['gpu.nvidia.com'].index) >= 0"
    objs = [*o.gpu_classes(), *o.gpu_node("n1", 1), *o.generated("a", o.request("gpu", selectors=(sel,)))]
    snap = build_snapshot([("t.yaml", x) for x in objs])
    exp = explain_pod(Engine(snap), next(p for p in snap.pods if p.name == "a"))
    assert exp.schedulable, exp.message
    assert [u for u in exp.unverified if "indexOf() on a list (the Kubernetes lists library)" in u], (
        exp.unverified
    )
