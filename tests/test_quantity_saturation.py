"""Quantities the API server stores but that do not fit kubegpu's int64 milli-unit column.

Upstream (k8s.io/apimachinery v0.37.2, the release Kubernetes 1.37.2 vendors), pkg/api/resource/quantity.go:
``ParseQuantity`` keeps any decimal amount exactly (``inf.Dec``) and caps a binary-suffixed one at
``MaxInt64`` ("The max is just a simple cap"); it refuses only the grammar (``ErrFormatWrong``) and an
exponent that is not an int64 (``ErrSuffix``). ``Value()`` / ``MilliValue()`` go through ``ScaledValue``,
which "could overflow an int64". A real kube-apiserver + kube-scheduler 1.37.2 (fixtures/quantity, recorded by
/work/qa/accounting/probe_quantities.py) stores memory ``1E``, ``8Ei`` (as 9223372036854775807), cpu
``9223372036854775807`` and nvidia.com/gpu ``1e18``; it says "Insufficient memory" / "Insufficient
nvidia.com/gpu" for three of them and *binds* the cpu one (MilliValue() wraps). kubegpu used to refuse all
four as input errors; it now saturates them at its column bound and says so in one note per object.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubegpu.model.quantity import QuantityError, to_milli_text

FIXTURES = Path(__file__).parent / "fixtures" / "quantity"
SNAPSHOT = (FIXTURES / "quantity-node.yaml", FIXTURES / "quantity-pods.yaml")


def _recorded() -> tuple[dict[str, tuple[int, str]], dict[str, tuple[str, str]]]:
    """The real API server's answer per pod (status, message) and kube-scheduler's verdict (node, message)."""
    created: dict[str, tuple[int, str]] = {}
    verdicts: dict[str, tuple[str, str]] = {}
    for line in (FIXTURES / "realkube-quantities-1.37.2.txt").read_text().splitlines():
        if line.startswith("create "):
            _, name, status, rest = line.split(" ", 3)
            created[name] = (int(status), rest.strip())
        elif line.startswith("verdict "):
            m = re.match(r"verdict (\S+) (\S*) \[(.*)\]$", line)
            assert m is not None, line
            verdicts[m.group(1)] = (m.group(2), m.group(3).strip("'") if m.group(3) != "None" else "")
    return created, verdicts


CREATED, VERDICTS = _recorded()


def _snapshot():  # type: ignore[no-untyped-def]
    from kubegpu.sources import load_files

    return load_files(*SNAPSHOT)


def test_every_pod_the_api_server_stored_is_read_and_the_refused_ones_are_refused() -> None:
    snap = _snapshot()
    loaded = {p.name for p in snap.pods}
    stored = {name for name, (status, _) in CREATED.items() if status == 201}
    refused = {name for name, (status, _) in CREATED.items() if status == 422}
    assert stored == {"mem-1e", "mem-8ei", "cpu-huge", "gpu-huge"}  # the record, as a sanity check
    assert loaded == stored
    errors = {e.obj: e.one_line() for e in snap.errors}
    assert {obj.split("/")[-1] for obj in errors} == refused
    for name in refused:  # the API server's reason, not kubegpu's own "too large"
        reason = CREATED[name][1].split("Invalid value: ")[1].split(": ", 1)[1].split(",")[0].rstrip("] ")
        assert reason in errors[f"Pod default/{name}"]


def test_verdicts_are_the_real_schedulers_and_the_overflow_bind_is_said_not_modelled() -> None:
    from kubegpu.explain.engine import Engine
    from kubegpu.explain.pending import explain_pod

    snap = _snapshot()
    engine = Engine(snap)
    pods = {p.name: p for p in snap.pods}
    for name, (node, message) in VERDICTS.items():
        exp = explain_pod(engine, pods[name])
        if node:  # cpu 2^63-1: MilliValue() wraps upstream and the real scheduler binds it
            assert name == "cpu-huge"
            assert exp.node is None  # kubegpu counts the bound instead ...
            [note] = [n for n in snap.notes if "cpu-huge" in n]
            assert "MilliValue() overflows int64" in note and "not modelled" in note  # ... and says so
        else:
            assert exp.message == message, name


def test_one_note_per_object_naming_field_text_and_the_counted_bound() -> None:
    snap = _snapshot()
    notes = {n.split(":")[0]: n for n in snap.notes if n.startswith("Pod default/")}
    assert set(notes) == {f"Pod default/{name}" for name in ("mem-1e", "mem-8ei", "cpu-huge", "gpu-huge")}
    assert notes["Pod default/mem-8ei"].startswith(
        "Pod default/mem-8ei: spec.containers[0].resources.requests[memory] 8Ei is beyond what kubegpu counts"
    )
    # 8Ei and 1E fit upstream's Value() (capped at MaxInt64 / 10^18): nothing "not modelled" about them
    assert "not modelled" not in notes["Pod default/mem-8ei"] + notes["Pod default/mem-1e"]
    gpu = notes["Pod default/gpu-huge"]
    assert "limits[nvidia.com/gpu] 1e18" in gpu and "requests[nvidia.com/gpu] 1e18" in gpu


@pytest.mark.parametrize(
    ("resource", "text"),
    [
        ("memory", "1E"),
        ("memory", "8Ei"),
        ("memory", "1e999999999"),  # upstream: int64Amount{1, 999999999}; decided from the digits alone
        ("cpu", "9223372036854775807"),
        ("cpu", 9223372036854775807),  # a YAML int
        ("nvidia.com/gpu", "1e18"),
        ("nvidia.com/gpu", "100000000000000000000Ki"),  # capped at MaxInt64 upstream
    ],
)
def test_beyond_the_column_saturates_at_a_printable_bound(resource: str, text: object) -> None:
    from kubegpu.model.quantity import bound, format_milli, saturation

    assert to_milli_text(resource, text) == bound(resource)
    assert saturation(resource, text) is not None
    printed = format_milli(resource, bound(resource))
    assert printed in {"9223372036854775807m", "9223372036854775"}  # whole units, or CPU's exact MilliValue


def test_the_largest_exact_amounts_are_not_saturated() -> None:
    from kubegpu.model.quantity import MAX_MILLI, saturation

    assert to_milli_text("cpu", "9223372036854775807m") == MAX_MILLI
    assert saturation("cpu", "9223372036854775807m") is None
    assert to_milli_text("nvidia.com/gpu", "9223372036854775") == 9223372036854775000
    assert saturation("nvidia.com/gpu", "9223372036854775") is None
    assert saturation("nvidia.com/gpu", "9223372036854776") is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1e99999999999999999999", "unable to parse quantity's suffix"),  # ErrSuffix: exponent beyond int64
        ("1.2.3", "quantities must match the regular expression"),  # ErrFormatWrong
    ],
)
def test_what_parse_quantity_refuses_is_still_refused(text: str, message: str) -> None:
    with pytest.raises(QuantityError, match=message):
        to_milli_text("memory", text)


def test_a_node_beyond_the_column_loads_and_its_note_claims_no_fit() -> None:
    """The fixture's node with memory capacity 8Ei (what a binary suffix is capped to upstream, MaxInt64
    bytes: ParseQuantity, apimachinery v0.37.2): the node loads; its note names the field but says nothing
    about holding a pod (that is said of a pod's requests only)."""
    import copy

    import yaml

    from kubegpu.model.snapshot import build_snapshot

    node = yaml.safe_load(SNAPSHOT[0].read_text())
    raw = copy.deepcopy(node)
    raw["status"]["capacity"]["memory"] = "8Ei"
    snap = build_snapshot([("node.yaml", raw)])
    assert not snap.errors and [n.name for n in snap.nodes] == ["n1"]
    (note,) = snap.notes
    assert note.startswith("Node n1: status.capacity[memory] 8Ei is beyond what kubegpu counts exactly")
    assert "no node can hold it" not in note and "not modelled" not in note
