"""``Quantity.String()``: the canonical text the API server prints for a quantity in messages.

Decimal quantities use the largest SI suffix that keeps an integer mantissa (``0.5`` → ``500m``,
``1000`` → ``1k``); quantities written with a binary suffix keep binary form (``1.5Gi`` → ``1536Mi``);
a decimal exponent keeps exponent form (``1e3`` → ``1e3``).
"""

from __future__ import annotations

import re
from fractions import Fraction

from kubegpu.model.quantity import parse_quantity

_DECIMAL_SUFFIXES = (
    (18, "E"),
    (15, "P"),
    (12, "T"),
    (9, "G"),
    (6, "M"),
    (3, "k"),
    (0, ""),
    (-3, "m"),
    (-6, "u"),
    (-9, "n"),
)
_BINARY_SUFFIXES = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"), (0, ""))


def canonical(text: object) -> str:
    value = parse_quantity(text)
    raw = str(text)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value == 0:
        return "0"
    if re.search(r"[KMGTPE]i$", raw):
        for power, suffix in _BINARY_SUFFIXES:
            scaled = value / (2**power)
            if scaled.denominator == 1:
                return f"{sign}{scaled.numerator}{suffix}"
        # not a whole number of bytes: upstream falls back to decimal form
    exponent_form = re.search(r"[eE][+-]?\d+$", raw) is not None
    for power, suffix in _DECIMAL_SUFFIXES:
        scaled = value / Fraction(10) ** power
        if scaled.denominator == 1:
            if exponent_form:
                return f"{sign}{scaled.numerator}e{power}" if power else f"{sign}{scaled.numerator}"
            return f"{sign}{scaled.numerator}{suffix}"
    # finer than nano: upstream rounds up to the nano unit
    nanos = -((-value * 10**9).numerator // (value * 10**9).denominator)
    return f"{sign}{nanos}n"
