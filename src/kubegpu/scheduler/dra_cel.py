"""CEL device selectors as kube-scheduler evaluates them (``k8s.io/dynamic-resource-allocation/cel``).

The ``device`` variable holds ``driver``, ``attributes``, ``capacity`` and ``allowMultipleAllocations``
(the last one declared where DRAConsumableCapacity is on); both maps are keyed by domain
then by id, and looking up an unknown domain yields an empty map (upstream ``mapper.Find``) while an
unknown id is the runtime error ``no such key``. Version attributes are semver values, capacities are
quantities. The Kubernetes library functions selectors use are provided: ``quantity``, ``isQuantity``,
``semver``, ``isSemver`` and the methods ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``asInteger``,
``major``, ``minor``, ``patch`` (``k8s.io/apiserver/pkg/cel/library`` quantity.go, semverlib.go).

Library: ``cel-python`` (module ``celpy``, pure Python, maintained, receiver-style custom functions).
Imported lazily, on the first selector. cel-go's strings extension, which the environment includes, is given
by ``dra_cel_ext``; what else the environment has and cel-python cannot evaluate (``cel.bind``, optional
types, the lists/regex/URL/IP libraries, ``dra_cel_ext.K8S_ONLY``) raises ``CelUnsupported``: the selector
is not evaluated, and that is said, never turned into a CEL error the cluster would not raise. Upstream's runtime cost limit
(``CELSelectorExpressionMaxCost``) is not metered: evaluation is bounded by the input instead (a device
has at most 32 attributes and capacities, strings at most 64 characters) and by expression length.

Compiled programs are cached per expression, with what compiling decides: the program, and what of the
environment kubegpu cannot evaluate seen in the text (``unsupported``). What evaluating decides is kept per
device: a result, a CEL runtime error, or a function met on a value kubegpu cannot evaluate it on
(``CelUnsupported``: the Kubernetes lists library's ``indexOf`` on a list), cached per the part of the device the
expression can read (the attributes, with their types, and capacities it names), so a thousand identical GPUs
cost one evaluation. Upstream compiles once per expression and evaluates per device
(k8s.io/dynamic-resource-allocation cel/compile.go: ``CompileCELExpression`` → ``CompilationResult``,
whose ``DeviceMatches`` evaluates one ``Device``; attribute values are typed ``AnyType``, known only when a
device's ``getAttributeValue`` gives them), so an outcome of one device never answers for another.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from kubegpu.model.dra import Device, ResourceSlice
from kubegpu.model.quantity import QuantityError, parse_quantity
from kubegpu.scheduler.dra_cel_ext import CelUnsupported, string_functions, unsupported

MAX_EXPRESSION = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-.]+)?$"
)
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'|([A-Za-z_][A-Za-z0-9_]*)')
# Macros and functions that can read a map whole: with them the result depends on every attribute.
_WHOLE_MAP = frozenset({"all", "exists", "exists_one", "map", "filter", "size", "in", "string"})


class CelError(Exception):
    """A compile or runtime error, worded as cel-go words it where kubegpu knows the wording."""


# what evaluating an expression on one device gives: its result, the runtime error, or what kubegpu met that it
# cannot evaluate on that device
Outcome = bool | CelError | CelUnsupported


class Quantity:
    """``apiservercel.Quantity``: equal by exact value; ordered only through ``compareTo`` and friends
    (Kubernetes CEL has no ``<``/``>=`` overload for quantities, so those fail here too)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Fraction) -> None:
        self.text = text
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


class Semver:
    """``apiservercel.Semver`` (blang/semver): major.minor.patch, pre-release orders below release;
    ordered only through ``compareTo`` and friends, as in Kubernetes CEL."""

    __slots__ = ("key", "text")

    def __init__(self, text: str) -> None:
        m = _SEMVER.match(text)
        if m is None:
            raise CelError(f"could not parse {text!r} as semver")
        self.text = text
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in (m.group(4) or "").split(".") if p)
        self.key = (int(m.group(1)), int(m.group(2)), int(m.group(3)), 0 if pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _functions() -> dict[str, Callable[..., Any]]:
    from celpy import celtypes

    def quantity(s: Any) -> Quantity:
        try:
            return Quantity(str(s), parse_quantity(str(s)))
        except QuantityError as exc:
            raise CelError(str(exc)) from None

    def is_quantity(s: Any) -> Any:
        try:
            parse_quantity(str(s))
        except QuantityError:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)

    def is_semver(s: Any) -> Any:
        return celtypes.BoolType(_SEMVER.match(str(s)) is not None)

    def compare(a: Any, b: Any) -> Any:
        if isinstance(a, Quantity) and isinstance(b, Quantity):
            x, y = a.value, b.value
            return celtypes.IntType((x > y) - (x < y))
        if isinstance(a, Semver) and isinstance(b, Semver):
            return celtypes.IntType((a.key > b.key) - (a.key < b.key))
        raise CelError("no such overload")

    def as_integer(q: Quantity) -> Any:
        if q.value.denominator != 1:
            raise CelError("cannot convert value to integer")
        return celtypes.IntType(q.value.numerator)

    return {
        **string_functions(celtypes, CelError),
        "quantity": quantity,
        "isQuantity": is_quantity,
        "semver": lambda s: Semver(str(s)),
        "isSemver": is_semver,
        "compareTo": compare,
        "isGreaterThan": lambda a, b: celtypes.BoolType(compare(a, b) > 0),
        "isLessThan": lambda a, b: celtypes.BoolType(compare(a, b) < 0),
        "asInteger": as_integer,
        "major": lambda v: celtypes.IntType(v.key[0]),
        "minor": lambda v: celtypes.IntType(v.key[1]),
        "patch": lambda v: celtypes.IntType(v.key[2]),
    }


# Entries each memo of one Selector keeps before it starts afresh: a selector stays cached (``selector``) for
# the process's life, and the live faces build new Device objects on every read of the slices.
MAX_MEMO = 1 << 16


class Selector:
    """One compiled expression and what of a device it can read."""

    def __init__(self, expression: str) -> None:
        import celpy
        from celpy.celparser import CELParseError

        if len(expression) > MAX_EXPRESSION:
            raise CelError(f"expression longer than {MAX_EXPRESSION} characters")
        self.expression = expression
        # something of kube-scheduler's environment cel-python lacks, seen in the text: not compiled, never
        # evaluated. Only the text decides it: what evaluating meets is an outcome of one device (``_results``).
        self.unsupported = unsupported(expression)
        self._results: dict[Any, Outcome] = {}
        self._by_device: dict[int, tuple[Device, str, Outcome]] = {}
        # some device's outcome is CelUnsupported (``unevaluated_on`` looks at devices only then)
        self._met_unsupported = False
        # (slice list, its non-empty ``unevaluated_in`` answer): the last list walked that met one
        self._walked: tuple[Sequence[ResourceSlice], str] | None = None
        if self.unsupported:
            self._names: frozenset[str] | None = frozenset()
            return
        env = celpy.Environment()
        try:
            ast = env.compile(expression)
        except CELParseError as exc:
            raise CelError(f"compilation failed: {str(exc).splitlines()[0]}") from None
        self._program = env.program(ast, functions=_functions())
        tokens = {next(g for g in m.groups() if g is not None) for m in _TOKEN.finditer(expression)}
        self._names = None if tokens & _WHOLE_MAP else frozenset(tokens)

    def _view(self, driver: str, device: Device) -> Any:
        """The part of the device this expression can see (its cache key)."""
        names = self._names
        if names is None:
            return (
                driver,
                tuple((k, type(v), v) for k, v in device.attributes.items()),
                tuple(device.capacity_text.items()),
                device.allow_multiple,
            )
        # with the value's type: 1 == True in Python, yet an int and a bool attribute are different CEL values
        attrs = tuple((k, type(v), v) for k, v in device.attributes.items() if k.rpartition("/")[2] in names)
        # the written text, not the Fraction: hashing exact fractions costs more than a rare extra miss
        caps = tuple((k, v) for k, v in device.capacity_text.items() if k.rpartition("/")[2] in names)
        multi = device.allow_multiple if "allowMultipleAllocations" in names else False
        return (driver if "driver" in names else "", attrs, caps, multi)

    def matches(self, driver: str, device: Device) -> bool:
        """True/False, or raises ``CelError`` with the runtime error, or ``CelUnsupported`` when kubegpu
        cannot evaluate the expression (its text), or cannot evaluate it on this device."""
        if self.unsupported:
            raise CelUnsupported(self.unsupported)
        seen = self._by_device.get(id(device))
        if seen is not None and seen[0] is device and seen[1] == driver:
            hit = seen[2]
        else:
            hit = self._lookup(driver, device)
            if len(self._by_device) >= MAX_MEMO:  # a long-running face reads new Device objects every cycle
                self._by_device.clear()
            self._by_device[id(device)] = (device, driver, hit)
        if isinstance(hit, Exception):
            raise hit.with_traceback(None)  # a stored outcome, raised again: no traceback piling up
        return hit

    def unevaluated_on(self, devices: Iterable[tuple[str, Device]]) -> str:
        """What kubegpu cannot evaluate of this expression: seen in its text, else met evaluating it on one of
        ``devices`` (driver, device), "" when neither. Looks at the devices only once some device met it."""
        if self.unsupported or not self._met_unsupported:
            return self.unsupported
        for driver, device in devices:
            try:
                self.matches(driver, device)
            except CelUnsupported as exc:
                return str(exc)
            except CelError:
                continue
        return ""

    def unevaluated_in(self, slices: Sequence[ResourceSlice]) -> str:
        """``unevaluated_on`` over the devices of ``slices``, walked once per list: every Pending pod of a
        diagnosis asks the same of the same slices (1,000 pods × 40,000 devices on 5,000 nodes). Only a
        non-empty answer is kept, while ``slices`` is the same object: a device's outcome does not change,
        but "" may, once a later pod's allocation meets such a device."""
        if self._walked is not None and self._walked[0] is slices:
            return self._walked[1]
        answer = self.unevaluated_on((s.driver, d) for s in slices for d in s.devices)
        if answer:
            self._walked = (slices, answer)
        return answer

    def _lookup(self, driver: str, device: Device) -> Outcome:
        key = self._view(driver, device)
        try:
            hit = self._results.get(key)
        except TypeError:  # an unhashable view (never for the stored types); evaluate uncached
            hit, key = None, None
        if hit is None:
            hit = self._evaluate(driver, device)
            if key is not None:
                # views naming a per-device attribute (uuid) grow with churn
                if len(self._results) >= MAX_MEMO:
                    self._results.clear()
                self._results[key] = hit
        return hit

    def _evaluate(self, driver: str, device: Device) -> Outcome:
        from celpy import celtypes
        from celpy.evaluation import CELEvalError

        try:
            result = self._program.evaluate({"device": _activation(driver, device)})
        except CELEvalError as exc:
            return CelError(_eval_message(exc))
        except CelError as exc:
            return exc
        # e.g. indexOf on a list (the lists library): this device's outcome only
        except CelUnsupported as exc:
            self._met_unsupported = True
            return exc
        if isinstance(result, CELEvalError):
            return CelError(_eval_message(result))
        if not isinstance(result, (bool, celtypes.BoolType)):
            return CelError(f"CEL result of type {type(result).__name__} could not be converted to bool")
        return bool(result)


def _eval_message(exc: Exception) -> str:
    args = exc.args
    if args and args[0] == "no such key" and len(args) > 2:
        return f"no such key: {args[2][0] if args[2] else ''}"
    member = "no such member in mapping: "
    if args and isinstance(args[0], str) and args[0].startswith(member):
        return "no such key: " + args[0][len(member) :].strip("'")
    # cel-python appends its whole activation to some messages: the first part is cel-go's wording
    return str(args[0]).split(" (in activation ", 1)[0] if args else type(exc).__name__


def _activation(driver: str, device: Device) -> Any:
    from celpy import celtypes

    class DomainMap(celtypes.MapType):
        """Unknown domain → empty map, as upstream's ``newStringInterfaceMapWithDefault``."""

        def __getitem__(self, key: Any) -> Any:
            if not super().__contains__(key):
                return celtypes.MapType({})
            return super().__getitem__(key)

    def value(v: Any) -> Any:
        if isinstance(v, bool):
            return celtypes.BoolType(v)
        if isinstance(v, int):
            return celtypes.IntType(v)
        if isinstance(v, tuple):
            return Semver(v[1])
        return celtypes.StringType(v)

    attrs: dict[str, dict[Any, Any]] = {}
    for k, v in device.attributes.items():
        domain, _, ident = k.rpartition("/")
        attrs.setdefault(domain, {})[celtypes.StringType(ident)] = value(v)
    caps: dict[str, dict[Any, Any]] = {}
    for k, q in device.capacity.items():
        domain, _, ident = k.rpartition("/")
        caps.setdefault(domain, {})[celtypes.StringType(ident)] = Quantity(device.capacity_text[k], q)

    def outer(m: Mapping[str, dict[Any, Any]]) -> Any:
        return DomainMap({celtypes.StringType(d): celtypes.MapType(inner) for d, inner in m.items()})

    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("attributes"): outer(attrs),
            celtypes.StringType("capacity"): outer(caps),
            # declared with DRAConsumableCapacity (compile.go v0.37.2 multiAllocVar, ptr.Deref(..., false)); with
            # the gate off the API server refuses an expression naming it, so no stored selector reads it then
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(device.allow_multiple),
        }
    )


@functools.lru_cache(maxsize=1024)
def compiled(expression: str) -> Selector:
    """One ``Selector`` per distinct expression (upstream keeps an LRU of compiled expressions too)."""
    return Selector(expression)
