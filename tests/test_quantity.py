"""Quantity parsing and rounding, pinned to k8s.io/apimachinery resource.Quantity behaviour."""

from fractions import Fraction

import pytest

from kubegpu.admission.canonical import canonical
from kubegpu.model.quantity import QuantityError, format_milli, milli_value, parse_quantity, to_milli, value


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
