"""Quantity parsing and rounding, pinned to k8s.io/apimachinery resource.Quantity behaviour."""

from fractions import Fraction

import pytest

from kubegpu.admission.canonical import canonical
from kubegpu.model.quantity import (
    QuantityError,
    format_milli,
    format_milli_range,
    milli_value,
    parse_quantity,
    to_milli,
    value,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500m", Fraction(1, 2)),
        ("4Gi", 4 * 2**30),
        ("1e3", 1000),
        ("0.5", Fraction(1, 2)),
        ("1.5k", 1500),
        ("2Mi", 2 * 2**20),
        ("100n", Fraction(1, 10**7)),
        ("-1", -1),
        (".5", Fraction(1, 2)),
        ("1E-3", Fraction(1, 1000)),
        (8, 8),
        (0.5, Fraction(1, 2)),  # an unquoted YAML float
    ],
    ids=lambda v: str(v),
)
def test_parse_quantity_is_exact(text: object, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.5.5", "1Gb", "1ki", "--1", "1 Gi", "Gi"])
def test_parse_quantity_rejects_what_parsequantity_rejects(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_value_and_milli_value_round_up_like_upstream() -> None:
    # Quantity.Value() rounds up: 0.5 bytes is 1 byte; MilliValue of 0.0001 is 1.
    assert value(Fraction(1, 2)) == 1
    assert milli_value(Fraction(1, 10**4)) == 1
    assert milli_value(Fraction(1, 2)) == 500


def test_to_milli_keeps_cpu_millis_and_scales_whole_values() -> None:
    assert to_milli("cpu", parse_quantity("250m")) == 250
    assert to_milli("memory", parse_quantity("1Ki")) == 1024 * 1000
    assert to_milli("nvidia.com/gpu", parse_quantity("2")) == 2000


@pytest.mark.parametrize(
    ("resource", "milli", "text"),
    [
        ("cpu", 500, "500m"),
        ("cpu", 2000, "2"),
        ("memory", 4 * 2**30 * 1000, "4Gi"),
        ("nvidia.com/gpu", 8000, "8"),
    ],
)
def test_format_milli(resource: str, milli: int, text: str) -> None:
    assert format_milli(resource, milli) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.5", "500m"), ("1000", "1k"), ("1", "1"), ("1.5Gi", "1536Mi"), ("2", "2"), ("1e3", "1e3")],
)
def test_canonical_string_matches_quantity_string(text: str, expected: str) -> None:
    """Quantity.String(): 0.5 → 500m, 1000 → 1k, binary stays binary, exponent stays exponent."""
    assert canonical(text) == expected


# --- integer milli-units on the hot path (issue 22 / 25) -------------------------------------------------
# Upstream: k8s.io/apimachinery pkg/api/resource/quantity.go ParseQuantity (every non-zero amount rounded
# up to 1n: amount.Round(Nano, RoundUp); binary-suffixed amounts capped at MaxInt64) and suffix.go
# interpret (an exponent is strconv.ParseInt(suffix[1:], 10, 64): one that is not an int64 is ErrSuffix).


@pytest.mark.parametrize(
    ("resource", "text", "expected"),
    [
        ("cpu", "250m", 250),  # MilliValue
        ("cpu", "0.0001", 1),  # 0.1 milli-CPU rounds up to 1m
        ("cpu", "1e-999999999", 1),  # below 1n: rounded up to 1n, then MilliValue rounds up to 1m
        ("memory", "1e-999999999", 1000),  # Value() of 1n is 1 byte, stored as 1 × 1000
        ("memory", "0.3Mi", 314573 * 1000),  # 0.3 × 1048576 = 314572.8 → Value() 314573
        ("memory", "1.5Gi", 1610612736 * 1000),  # 1.5 × 2^30
        ("nvidia.com/gpu", "8", 8000),
        ("cpu", "-0.5", -500),
        ("memory", "-0.5", -1000),  # Value() rounds away from zero: -1
        ("cpu", "1.0000000001", 1001),  # 1.0000000001 rounds up to 1.000000001 (1n), MilliValue 1001
        ("cpu", "0." + "0" * 5000 + "1", 1),  # 5,000 zeros: no int of 5,000 digits is ever built
        ("cpu", 2, 2000),  # YAML int
        ("cpu", 0.5, 500),  # YAML float
    ],
)
def test_to_milli_text_matches_upstream_rounding(resource: str, text: object, expected: int) -> None:
    from kubegpu.model.quantity import to_milli_text

    assert to_milli_text(resource, text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # huge amounts ("1e100", "8Ei", "1e999999999") are stored by the API server and saturate now
        # (tests/test_quantity_saturation.py); an exponent that is not an int64 is ParseQuantity's ErrSuffix
        ("1e99999999999999999999", "unable to parse quantity's suffix"),
    ],
)
def test_huge_quantities_are_refused_in_one_line(text: str, message: str) -> None:
    from kubegpu.model.quantity import to_milli_text

    with pytest.raises(QuantityError, match=message):
        to_milli_text("nvidia.com/gpu", text)


@pytest.mark.parametrize("text", ["1e999999999", "1e99999999999999999999"])
def test_exact_parser_never_raises_ten_to_a_huge_exponent(text: str) -> None:
    """parse_quantity (admission's exact Fraction) refuses instead of computing 10 ** 999999999."""
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_exact_parser_rounds_a_vanishing_amount_up_to_one_nano() -> None:
    assert parse_quantity("1e-999999999") == Fraction(1, 10**9)


def test_largest_storable_amount_is_int64_milli() -> None:
    # 9223372036854775 whole units × 1000 = 9223372036854775000 ≤ 2^63 - 1; one more unit saturates there
    # (the API server stores it: ParseQuantity, apimachinery v0.37.2 quantity.go)
    from kubegpu.model.quantity import to_milli_text

    assert to_milli_text("nvidia.com/gpu", "9223372036854775") == 9223372036854775000
    assert to_milli_text("nvidia.com/gpu", "9223372036854776") == 9223372036854775000


def test_a_huge_gpu_request_loads_with_one_note_naming_object_and_field() -> None:
    """Issue 22: `nvidia.com/gpu: 1e999999999` in a pod froze the load. kube-apiserver stores it
    (ParseQuantity's int64Amount{1, 999999999}, apimachinery v0.37.2 quantity.go), so the pod now loads,
    saturated and noted, decided from the digit count in microseconds."""
    from kubegpu.model.snapshot import build_snapshot

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1e999999999"}}}]},
    }
    snap = build_snapshot([("pods.yaml", pod)])
    assert not snap.errors and [p.key for p in snap.pods] == ["ns/p"]
    (note,) = snap.notes
    assert note.startswith(
        "Pod ns/p: spec.containers[0].resources.limits[nvidia.com/gpu] 1e999999999 is beyond"
    )


@pytest.mark.parametrize(
    ("resource", "low", "high", "text"),
    [
        ("cpu", 4000, 4000, "4"),  # one amount: format_milli's own text
        ("cpu", 1000, 119000, "1–119"),
        ("cpu", 500, 96000, "500m–96000m"),  # 500m and 96 share only the milli unit
        ("memory", 16 * 2**30 * 1000, 64 * 2**30 * 1000, "16Gi–64Gi"),
        # 128Gi = 131072Mi; 131119Mi is no whole Gi: both in Mi, not "128Gi–131119Mi"
        ("memory", 128 * 2**30 * 1000, 131119 * 2**20 * 1000, "131072Mi–131119Mi"),
        ("memory", 1000, 3000, "1–3"),  # plain bytes
        ("nvidia.com/gpu", 1000, 8000, "1–8"),
    ],
)
def test_format_milli_range_prints_both_ends_in_one_unit(
    resource: str, low: int, high: int, text: str
) -> None:
    assert format_milli_range(resource, low, high) == text
