"""Kubernetes resource quantities, parsed exactly (R4.1, R11.4).

Mirrors ``k8s.io/apimachinery/pkg/api/resource.Quantity``: a signed decimal number followed by a binary
SI suffix (``Ki`` … ``Ei``), a decimal SI suffix (``n u m k M G T P E``) or a decimal exponent
(``e3``/``E-2``). Values are kept as exact fractions; ``value()`` and ``milli_value()`` round up to the
next integer exactly as upstream's ``Value()`` / ``MilliValue()`` do, so ``"0.5"`` CPU is 500 milli-CPU
and ``"0.5"`` bytes of memory is 1 byte.

kubegpu stores every resource amount as an integer number of *milli-units*: CPU as ``MilliValue()``,
everything else as ``Value() * 1000`` (the rounding upstream applies to the resource, then scaled), so
one integer type carries every resource and GPU milli-shares (openb's ``gpu_milli``) fit beside it.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# The grammar of resource.ParseQuantity: <signedNumber><suffix>; the number needs a digit on at least
# one side of the point, and an exponent suffix is e/E followed by a signed integer.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)

CPU = "cpu"


class QuantityError(ValueError):
    """A string that ``resource.ParseQuantity`` would reject."""


def parse_quantity(text: object) -> Fraction:
    """Parse a quantity (string, int or float as YAML delivers it) into an exact fraction."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        # YAML turns an unquoted `0.5` into a float; its repr is the decimal the author wrote.
        text = repr(text)
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string or number, got {type(text).__name__}")
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"quantities must match the regular expression '{_QUANTITY.pattern}': {text!r}")
    number = Fraction(match.group("num"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def value(quantity: Fraction) -> int:
    """Upstream ``Quantity.Value()``: the integer value, rounded up (away from zero for negatives too)."""
    return _ceil(quantity) if quantity >= 0 else -_ceil(-quantity)


def milli_value(quantity: Fraction) -> int:
    """Upstream ``Quantity.MilliValue()``: value × 1000, rounded up."""
    return value(quantity * 1000)


def to_milli(resource: str, quantity: Fraction) -> int:
    """The integer milli-units kubegpu stores for ``quantity`` of ``resource`` (see module docstring)."""
    if resource == CPU:
        return milli_value(quantity)
    return value(quantity) * 1000


def is_integer(quantity: Fraction) -> bool:
    return quantity.denominator == 1


def format_milli(resource: str, milli: int) -> str:
    """Render stored milli-units the way ``kubectl describe`` / the API server print them.

    CPU keeps milli precision (``500m``, ``2``); memory-like amounts use the largest binary suffix that
    divides them exactly (``4Gi``), else plain bytes; counts print as integers.
    """
    if resource == CPU:
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    if milli % 1000:
        return f"{milli}m"
    whole = milli // 1000
    if _is_bytes(resource) and whole:
        for suffix, factor in reversed(_BINARY.items()):
            if whole % factor == 0:
                return f"{whole // factor}{suffix}"
    return str(whole)


def _is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-")
