"""What the API server refuses in the names and values a plan is given, checked before anything is planned.

The rules are k8s.io/apimachinery/pkg/util/validation/validation.go: ``IsQualifiedName`` (label and taint
keys: an optional DNS-1123 subdomain prefix and ``/``, then a name part of at most 63 characters),
``IsValidLabelValue`` (label and taint values: empty, or the name part's charset, at most 63), and
``IsDNS1123Label`` (namespaces, through ``model.parse.name_problem``). Each failure is one ``InputError``
line with the API server's own wording, so the CLI exits 2 instead of printing a runbook kubectl refuses.
"""

from __future__ import annotations

import re

from kubegpu.errors import InputError
from kubegpu.model.parse import name_problem

_QNAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
# matched whole (``fullmatch``): Python's ``$`` also matches before a final newline, Go's does not
_QNAME_RE = re.compile(_QNAME)
_VALUE_RE = re.compile(f"({_QNAME})?")
_MAX = 63
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_QNAME}')"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    f"for validation is '({_QNAME})?')"
)


def qualified_name_problem(key: str) -> str:
    """``IsQualifiedName``'s first complaint about ``key`` ("" when valid)."""
    parts = key.split("/")
    if len(parts) > 2:
        return f"a qualified name {_QNAME_MSG}"
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            return "prefix part must be non-empty"
        problem = name_problem(parts[0])
        if problem:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > _MAX:
        return f"name part must be no more than {_MAX} characters"
    return "" if _QNAME_RE.fullmatch(name) else f"name part {_QNAME_MSG}"


def label_value_problem(value: str) -> str:
    """``IsValidLabelValue``'s first complaint about ``value`` ("" when valid)."""
    if len(value) > _MAX:
        return f"must be no more than {_MAX} characters"
    return "" if _VALUE_RE.fullmatch(value) else _VALUE_MSG


def check_key_value(what: str, key: str, value: str | None) -> None:
    """Raise the API server's refusal of a label or taint ``key`` (and ``value``, unless None)."""
    problem = qualified_name_problem(key)
    if problem:
        raise InputError(f"Invalid value: {key!r}: {problem}", field=f"{what} key")
    if value is not None:
        problem = label_value_problem(value)
        if problem:
            raise InputError(f"Invalid value: {value!r}: {problem}", field=f"{what} value")


def check_namespace(ns: str, field: str = "--namespace") -> None:
    """Raise when ``ns`` is not a namespace name (``IsDNS1123Label``); kubectl would refuse ``-n ns``."""
    problem = name_problem(ns, label=True) if ns else "must be non-empty"
    if problem:
        raise InputError(f"Invalid value: {ns!r}: {problem}", field=field)
