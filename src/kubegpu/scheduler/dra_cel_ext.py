"""What kube-scheduler's DRA CEL environment adds to plain CEL, beyond quantities and semvers (``dra_cel``).

The environment (``k8s.io/dynamic-resource-allocation/cel`` compile.go on top of
``k8s.io/apiserver/pkg/cel/environment`` base.go, v0.37.2) includes cel-go's strings extension
(``ext.Strings(ext.StringsVersion(2))`` since 1.29), the Kubernetes regex, lists, URL, IP/CIDR and format
libraries, ``ext.Sets``, ``ext.Lists``, two-variable comprehensions, optional types (``.?``, ``[?``,
``optional.*``) and ``cel.bind``. NVIDIA's own documented selector uses one of them:
``device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')``
(kubernetes-sigs/dra-driver-nvidia-gpu demo/specs/quickstart/v1/gpu-test6.yaml).

The strings extension's functions are given here as cel-go v0.23.2 ``ext/strings.go`` defines them (code
point indices, ASCII-only case mapping, Go's ``strings.Split``/``Replace``/``TrimSpace``). The rest is named
in ``K8S_ONLY``: kubegpu's CEL library (cel-python) cannot evaluate them, and ``unsupported`` says which an
expression uses so that a selector using them is reported as not evaluated, never as a CEL error the
cluster would not raise. Imports nothing of kubegpu.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final


class CelUnsupported(Exception):
    """The expression uses something kube-scheduler's CEL environment has and kubegpu's CEL cannot evaluate."""


# Go's unicode.IsSpace (strings.TrimSpace): Latin-1 '\t'..'\r', ' ', U+0085, U+00A0, else Unicode White_Space
_GO_SPACE: Final = "".join(
    chr(c)
    for c in (
        *range(0x09, 0x0E),
        0x20,
        0x85,
        0xA0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    )
)

# What the environment provides that kubegpu does not evaluate, by where it comes from (base.go v0.37.2)
K8S_ONLY: Final[dict[str, str]] = {
    **dict.fromkeys(("format", "quote"), "cel-go's strings extension"),
    **dict.fromkeys(("find", "findAll"), "the Kubernetes regex library"),
    **dict.fromkeys(
        ("isSorted", "sum", "min", "max", "slice", "distinct", "flatten", "reverse", "sort", "sortBy", "first", "last"),
        "the Kubernetes and cel-go lists libraries",
    ),
    **dict.fromkeys(("includes",), "the Kubernetes lists library (1.36+)"),
    **dict.fromkeys(
        ("url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery"),
        "the Kubernetes URL library",
    ),
    **dict.fromkeys(
        ("ip", "isIP", "cidr", "isCIDR", "family", "isLoopback", "isUnspecified", "isLinkLocalMulticast",
         "isLinkLocalUnicast", "isGlobalUnicast", "containsIP", "containsCIDR", "masked", "prefixLength",
         "isCanonical"),
        "the Kubernetes IP/CIDR libraries",
    ),
    **dict.fromkeys(
        ("isInteger", "asApproximateFloat", "sign", "add", "sub"), "the Kubernetes quantity library"
    ),
    **dict.fromkeys(("transformList", "transformMap", "transformMapEntry"), "cel-go's two-variable comprehensions"),
    **dict.fromkeys(("orValue", "hasValue", "value", "or", "ofNonZeroValue"), "CEL optional types"),
}  # fmt: skip
_NAMESPACES: Final = {
    "cel.bind": "cel-go's bindings extension (cel.bind)",
    "sets.": "cel-go's sets extension",
    "lists.": "cel-go's lists extension",
    "strings.": "cel-go's strings extension",
    "optional.": "CEL optional types",
}
_CALL = re.compile(r"\.\s*([A-Za-z_]\w*)\s*\(")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_TWO_VAR = re.compile(r"\.\s*(all|exists|existsOne|exists_one)\s*\(\s*\w+\s*,\s*\w+\s*,")


def unsupported(expression: str) -> str:
    """What of ``K8S_ONLY`` (or optional/namespaced syntax) ``expression`` uses, "" when nothing."""
    code = _STRING.sub("''", expression)  # names inside string literals are not calls
    if ".?" in code or "[?" in code:
        return "optional field selection (.? / [?]) of CEL optional types"
    for prefix, what in _NAMESPACES.items():
        if re.search(r"(?<![\w.])" + re.escape(prefix), code):
            return what
    if _TWO_VAR.search(code):
        return "cel-go's two-variable comprehensions"
    for m in _CALL.finditer(code):
        source = K8S_ONLY.get(m.group(1))
        if source is not None:
            return f"{m.group(1)}() of {source}"
    return ""


def string_functions(celtypes: Any, error: Callable[[str], Exception]) -> dict[str, Callable[..., Any]]:
    """cel-go's strings extension v2 (ext/strings.go v0.23.2) as cel-python receiver-style functions."""

    def text(s: Any, fn: str) -> str:
        if not isinstance(s, str):
            # a list receiver (lists library indexOf/lastIndexOf/join of non-strings): not evaluated here
            kind = "list (the Kubernetes lists library)" if isinstance(s, list) else type(s).__name__
            raise CelUnsupported(f"{fn}() on a {kind}")
        return str(s)

    def lower_ascii(s: Any) -> Any:
        return celtypes.StringType("".join(c.lower() if c <= "\x7f" else c for c in text(s, "lowerAscii")))

    def upper_ascii(s: Any) -> Any:
        return celtypes.StringType("".join(c.upper() if c <= "\x7f" else c for c in text(s, "upperAscii")))

    def index_of(s: Any, sub: Any, offset: Any = 0) -> Any:
        runes, sub_s, off = text(s, "indexOf"), str(sub), int(offset)
        if sub_s == "":
            return celtypes.IntType(off)
        if off < 0:
            raise error(f"index out of range: {off}")
        return celtypes.IntType(-1 if off >= len(runes) else runes.find(sub_s, off))

    def last_index_of(s: Any, sub: Any, *offset: Any) -> Any:
        runes, sub_s = text(s, "lastIndexOf"), str(sub)
        off = int(offset[0]) if offset else len(runes) - 1
        if sub_s == "":
            return celtypes.IntType(off if offset else len(runes))
        if off < 0:
            raise error(f"index out of range: {off}")
        if off >= len(runes):
            return celtypes.IntType(-1)
        return celtypes.IntType(runes.rfind(sub_s, 0, min(off, len(runes) - len(sub_s)) + len(sub_s)))

    def replace(s: Any, old: Any, new: Any, n: Any = -1) -> Any:
        return celtypes.StringType(text(s, "replace").replace(str(old), str(new), int(n)))

    def split(s: Any, sep: Any, n: Any = -1) -> Any:
        s_, sep_, n_ = text(s, "split"), str(sep), int(n)
        if n_ == 0:
            return celtypes.ListType([])
        if sep_ == "":  # Go explodes into characters, the last one keeping the rest
            parts = list(s_) if n_ < 0 or n_ >= len(s_) else [*s_[: n_ - 1], s_[n_ - 1 :]]
        else:
            parts = s_.split(sep_, -1 if n_ < 0 else n_ - 1)
        return celtypes.ListType([celtypes.StringType(p) for p in parts])

    def substring(s: Any, start: Any, *end: Any) -> Any:
        runes, a = text(s, "substring"), int(start)
        b = int(end[0]) if end else len(runes)
        if end and a > b:
            raise error(f"invalid substring range. start: {a}, end: {b}")
        for i in (a, b):
            if i < 0 or i > len(runes):
                raise error(f"index out of range: {i}")
        return celtypes.StringType(runes[a:b])

    def char_at(s: Any, i: Any) -> Any:
        runes, k = text(s, "charAt"), int(i)
        if k < 0 or k > len(runes):
            raise error(f"index out of range: {k}")
        return celtypes.StringType(runes[k] if k < len(runes) else "")

    def trim(s: Any) -> Any:
        return celtypes.StringType(text(s, "trim").strip(_GO_SPACE))

    def join(items: Any, sep: Any = "") -> Any:
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise CelUnsupported("join() on a non-string list")
        return celtypes.StringType(str(sep).join(str(x) for x in items))

    return {
        "lowerAscii": lower_ascii,
        "upperAscii": upper_ascii,
        "indexOf": index_of,
        "lastIndexOf": last_index_of,
        "replace": replace,
        "split": split,
        "substring": substring,
        "charAt": char_at,
        "trim": trim,
        "join": join,
    }
