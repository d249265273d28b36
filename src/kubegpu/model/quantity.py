"""Kubernetes resource quantities, parsed exactly (R4.1, R11.4).

Mirrors ``k8s.io/apimachinery/pkg/api/resource.Quantity``: a signed decimal number followed by a binary
SI suffix (``Ki`` … ``Ei``), a decimal SI suffix (``n u m k M G T P E``) or a decimal exponent
(``e3``/``E-2``). Values are kept as exact fractions; ``value()`` and ``milli_value()`` round up to the
next integer exactly as upstream's ``Value()`` / ``MilliValue()`` do, so ``"0.5"`` CPU is 500 milli-CPU
and ``"0.5"`` bytes of memory is 1 byte.

kubegpu stores every resource amount as an integer number of *milli-units*: CPU as ``MilliValue()``,
everything else as ``Value() * 1000`` (the rounding upstream applies to the resource, then scaled), so
one integer type carries every resource and GPU milli-shares (openb's ``gpu_milli``) fit beside it.

``to_milli_text`` is the hot path (every request, limit, capacity and allocatable of a snapshot): pure
integer arithmetic on the digits and suffix, memoised per distinct string (a 5,000-node cluster carries
a few hundred distinct quantity strings among 170,000), never a ``Fraction`` and never ``10 ** e`` for a
huge exponent: ``1e999999999`` is decided from its digit count in microseconds.

Bounds: upstream keeps any decimal value (``inf.Dec``) and caps binary-suffixed ones at ``MaxInt64``
(``ParseQuantity``, quantity.go, apimachinery v0.37.2, the release Kubernetes 1.37.2 vendors); the API server
stores them all (``1E``, ``8Ei``, cpu ``9223372036854775807``: recorded on a real kube-apiserver 1.37.2 in
tests/fixtures/quantity).
``Value()`` / ``MilliValue()`` (``ScaledValue``: "This could overflow an int64") then wrap or drop to 0 when
the result does not fit int64. kubegpu never refuses such an amount: it *saturates* at its column's bound
(``bound``: the int64 milli-unit maximum for CPU, the largest whole number of units × 1000 below it for the
rest) and ``saturation`` says what was counted, for the snapshot's note; kube-scheduler's wrapped amount is
not modelled. What ``ParseQuantity`` refuses is still refused with its text: the grammar (``ErrFormatWrong``)
and an exponent that is not an int64 (``ErrSuffix``: ``strconv.ParseInt(suffix[1:], 10, 64)``, suffix.go).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

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
# [0-9], not \d: Go's regexp (and ParseQuantity's own digit loop) takes ASCII digits only, where Python's
# \d also matches Arabic-Indic or fullwidth digits ("٣", "１").
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

CPU = "cpu"
# Counted by MilliValue(): CPU, also under a ResourceQuota's keys for it. Quota admission compares exact
# Quantities (pkg/quota/v1 resources.go LessThanOrEqual, Quantity.Cmp), so a hard requests.cpu of 500m is
# 500m, not Value()'s whole core: a real 1.37.2 API server refuses a 600m pod under it, "limited:
# requests.cpu=500m" (tests/fixtures/quantity/realkube-sums-1.37.2.txt).
MILLI_VALUED = frozenset({CPU, "requests.cpu", "limits.cpu"})


class QuantityError(ValueError):
    """A string that ``resource.ParseQuantity`` would reject."""


MAX_MILLI = 2**63 - 1  # the stored amount is an int64 column entry
# the bound of a resource counted in whole units (Value() × 1000): the largest such amount within int64, so
# format_milli prints it as units ("9223372036854775"), not as a meaningless milli count
WHOLE_MAX = MAX_MILLI - MAX_MILLI % 1000
# An exponent beyond this makes any non-zero amount exceed MAX_MILLI (or, negative, round up to the
# smallest unit), so nothing is ever raised to it.
_EXPONENT_LIMIT = 64
_INT64_TEXT = 19  # digits of the largest int64 exponent ParseInt accepts
_FAR = 10**28  # milli-units standing for "at least 10**25 units": beyond int64 in any unit


def parse_quantity(text: object) -> Fraction:
    """Parse a quantity (string, int or float as YAML delivers it) into an exact fraction.

    Exact, for admission's canonical forms and validation; amounts whose exponent would make the
    fraction astronomically large are refused (``QuantityError``) instead of computed."""
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
    exponent = _exponent(suffix, text)
    if abs(exponent) > _EXPONENT_LIMIT + len(match.group("num")) and number:
        if exponent > 0:
            raise QuantityError(_too_large(text))
        # upstream rounds every non-zero value up to 1n (ParseQuantity: amount.Round(Nano, RoundUp))
        return Fraction(1 if number > 0 else -1, 10**9)
    return number * Fraction(10) ** exponent


def _exponent(suffix: str, text: object) -> int:
    digits = suffix[1:].lstrip("+-").lstrip("0")
    if len(digits) > _INT64_TEXT or abs(int(suffix[1:])) > 2**63 - 1:
        raise QuantityError(f"unable to parse quantity's suffix: {text!r}")
    return int(suffix[1:])


def _too_large(text: object) -> str:
    return f"quantity {text!r} is too large: kubegpu holds amounts up to {MAX_MILLI} milli-units (int64)"


def bound(resource: str) -> int:
    """The largest amount of ``resource`` kubegpu's int64 milli-unit column counts (see module docstring);
    a quota key counts in its resource's unit (``MILLI_VALUED``)."""
    return MAX_MILLI if resource in MILLI_VALUED else WHOLE_MAX


# Sums. One rule for every total of amounts kubegpu keeps (a pod's containers, a node's requested and
# non-zero requested, a quota's usage, a cluster's totals): add exactly (Python ints), then store the total
# saturated at ``bound`` like a single amount, never wrapped. Upstream differs by place: quota usage adds
# ``resource.Quantity`` values exactly (inf.Dec), while kube-scheduler adds int64s that wrap (``Resource.Add``
# and ``NodeInfo.update``, pkg/scheduler/framework/types.go v1.37.2: two 8Ei pods on one node sum to -2 bytes,
# and a real 1.37.2 scheduler then binds a 1Gi pod there, tests/fixtures/quantity/realkube-sums-1.37.2.txt).
# kubegpu does not model that wrap: a saturated total is said in a note (``saturated_total``) instead.
def saturate(resource: str, milli: int) -> int:
    """``milli`` of ``resource`` as kubegpu stores it: itself, or ±``bound(resource)`` beyond it."""
    limit = bound(resource)
    return limit if milli > limit else -limit if milli < -limit else milli


def is_saturated(resource: str, milli: int) -> bool:
    """Whether a stored amount or total is at ``bound``: what was written may be larger (``saturation``)."""
    return milli >= bound(resource) or milli <= -bound(resource)


def exact_sum(amounts: Iterable[int] | Any) -> int:
    """The exact sum of ``amounts``: ints, or an int64 numpy column, whose own ``sum()`` would wrap silently
    past int64; it is used only where it cannot (every entry within ``MAX_MILLI // len``), else Python ints."""
    if hasattr(amounts, "dtype"):  # a numpy array (not imported here: the model stays light)
        column: Any = amounts
        n = len(column)
        if n == 0:
            return 0
        if max(int(column.max()), -int(column.min())) <= MAX_MILLI // n:
            return int(column.sum())
        return sum(column.tolist())
    return sum(int(a) for a in amounts)


def saturated_total(resource: str, what: str) -> str:
    """The note for a total of several amounts (a pod's, a node's) beyond ``bound``, held there (``what``:
    whose, e.g. ``node n1: requested``)."""
    counted = format_milli(resource, bound(resource))
    return (
        f"{what} {resource} is beyond what kubegpu counts exactly (int64 milli-units): counted as {counted}; "
        "kube-scheduler keeps such totals in int64 (Resource.Add, NodeInfo.update), where a total past the "
        "int64 range wraps to a small or negative amount, and then binds pods where kubegpu finds no room "
        "(a real 1.37.2 scheduler bound a 1Gi pod beside two 8Ei pods, and a pod of two 8Ei containers): "
        "not modelled"
    )


_MILLI_CACHE: dict[tuple[bool, str], int] = {}
_CACHE_LIMIT = 65536  # distinct strings remembered; bounded so hostile input cannot grow it without end
_SUFFIX_E10 = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_E2 = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def to_milli_text(resource: str, text: object) -> int:
    """``to_milli(resource, parse_quantity(text))`` in integer arithmetic, memoised per string."""
    cpu = resource in MILLI_VALUED
    if isinstance(text, float):
        text = repr(text)  # YAML turns an unquoted `0.5` into a float; its repr is the decimal written
    if isinstance(text, str):
        key = (cpu, text)
        cached = _MILLI_CACHE.get(key)
        if cached is None:
            cached = _milli_of(cpu, text)
            if len(_MILLI_CACHE) >= _CACHE_LIMIT:
                _MILLI_CACHE.clear()
            _MILLI_CACHE[key] = cached
        return cached
    if isinstance(text, int) and not isinstance(text, bool):
        return _clamp(cpu, text * 1000)
    return to_milli(resource, parse_quantity(text))


def _clamp(cpu: bool, milli: int) -> int:
    """Saturate at the column's bound (``saturate``) instead of overflowing or refusing."""
    return saturate(CPU if cpu else "", milli)


def _milli_of(cpu: bool, text: str) -> int:
    return _clamp(cpu, _exact_milli(cpu, text))


def _exact_milli(cpu: bool, text: str) -> int:
    """The stored milli-units before saturation: exact, or ±``_FAR`` when the digit count alone shows the
    amount is at least 10**25 units (``10 ** e`` is never computed for a huge exponent)."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"quantities must match the regular expression '{_QUANTITY.pattern}': {text!r}")
    num = match.group("num")
    whole, _, frac = num.lstrip("+-").partition(".")
    sig = (whole + frac).lstrip("0")
    if not sig:
        return 0
    suffix = match.group("suffix") or ""
    e2 = _SUFFIX_E2.get(suffix, 0)
    e10 = (_SUFFIX_E10[suffix] if suffix in _SUFFIX_E10 else 0 if e2 else _exponent(suffix, text)) - len(frac)
    # amount = int(sig) * 10**e10 * 2**e2 < 10**order * 2**e2; decide the extremes from the lengths alone
    order = len(sig) + e10
    if order - 1 + (e2 * 3) // 10 > 25:  # at least 10**25 units: beyond int64 milli-units
        return -_FAR if num.startswith("-") else _FAR
    # ParseQuantity rounds every non-zero amount up to a whole number of nano-units first
    shift = e10 + 9
    if shift >= 0:
        nanos = int(sig) * 10**shift << e2
    elif e2 == 0:  # digits below 1n only decide whether to round up: never turn them into an int
        head, rest = sig[:shift], sig[shift:]
        nanos = int(head or "0") + (1 if rest.strip("0") else 0)
    elif len(sig) > 1000:  # a binary suffix with a thousand-digit fraction: not worth exact arithmetic
        raise QuantityError(f"quantity {text!r} has more than 1000 significant digits")
    else:
        nanos = -((-(int(sig) << e2)) // 10**-shift)
    # MilliValue for CPU, Value × 1000 otherwise; both round up (away from zero for negatives)
    milli: int = -(-nanos // 10**6) if cpu else -(-nanos // 10**9) * 1000
    return -milli if num.startswith("-") else milli


def saturation(resource: str, text: object, *, request: bool = False) -> str | None:
    """``None`` when ``text`` of ``resource`` is counted exactly; else what kubegpu counts instead, for a
    note (``<text> is beyond ... counted as <bound>``), and whether kube-scheduler's own int64 amount
    (``MilliValue()`` for CPU, ``Value()`` otherwise) overflows there: that it then counts a wrapped amount
    (cpu 9223372036854775807 *binds* on a real 1.37.2 scheduler) is not modelled. Only called for an
    amount already at the bound (rare), so the hot path stays one comparison. ``request``: a pod's amount,
    which the note says no node holds."""
    cpu = resource in MILLI_VALUED
    if isinstance(text, float):
        text = repr(text)
    if isinstance(text, bool) or not isinstance(text, int | str):
        return None
    milli = text * 1000 if isinstance(text, int) else _exact_milli(cpu, text)
    if abs(milli) <= (MAX_MILLI if cpu else WHOLE_MAX):
        return None
    counted = format_milli(resource, _clamp(cpu, milli))
    line = f"{text} is beyond what kubegpu counts exactly (int64 milli-units); counted as {counted}"
    if request:  # a pod's amount fitted against nodes
        line += ": no node can hold it unless its allocatable is at that bound too"
    # upstream's amount: binary-suffixed values are capped at MaxInt64 units by ParseQuantity; CPU's
    # MilliValue() overflows wherever kubegpu's milli column does (the same int64 milli-units)
    units = abs(milli) // 1000
    if isinstance(text, str) and _binary_suffix(text):
        units = min(units, MAX_MILLI)
    if cpu or units > MAX_MILLI:
        method = "MilliValue()" if cpu else "Value()"
        return f"{line}; kube-scheduler's {method} overflows int64 on it and counts a wrapped (or zero) amount: not modelled"
    return line


def _binary_suffix(text: str) -> bool:
    return text.strip()[-2:] in _SUFFIX_E2


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
    if resource in MILLI_VALUED:
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


def format_milli_range(resource: str, low: int, high: int) -> str:
    """``low–high`` as ``format_milli`` prints amounts, both ends in one unit: the one it prints for the
    largest amount dividing both (``128Gi–131119Mi`` would read as two scales: ``131072Mi–131119Mi``)."""
    if low == high:
        return format_milli(resource, low)
    unit = format_milli(resource, math.gcd(low, high))
    if unit.endswith("m"):  # milli precision
        return f"{low}m–{high}m"
    suffix = unit.lstrip("0123456789")
    factor = 1000 * _BINARY.get(suffix, 1)
    return f"{low // factor}{suffix}–{high // factor}{suffix}"


def _is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-")
