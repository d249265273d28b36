"""The error taxonomy every layer raises: bad input names its file, object and field.

``InputError`` is for anything a person wrote or a cluster returned that kubegpu cannot accept; the CLI
prints it as one line (never a traceback). ``ConfigError`` is for a profile or plugin configuration that
is invalid at construction time.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class KubegpuError(Exception):
    """Base class of every error kubegpu raises on purpose."""


class InputError(KubegpuError):
    """Bad input, located as precisely as possible: ``file: Kind ns/name: field: problem``."""

    def __init__(self, problem: str, *, source: str = "", obj: str = "", field: str = "") -> None:
        self.problem = problem
        self.source = source
        self.obj = obj
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.obj, self.field) if p]
        return ": ".join([*parts, self.problem])


class ConfigError(KubegpuError):
    """An invalid scheduler profile, plugin argument or sharing configuration."""


def read_text(path: Path, what: str) -> str:
    """``path`` as UTF-8 text, or one ``InputError`` naming the file: unreadable (``cannot read <what>: <OS
    reason>``) or not UTF-8 (a UTF-16 or Latin-1 file), never a traceback."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", source=str(path)) from exc
    return decode_text(raw, str(path), what)


def decode_text(raw: bytes, source: str, what: str) -> str:
    """UTF-8 text (a leading byte-order mark dropped), or one ``InputError`` saying which encoding it
    looks like: kubectl, the API server and NVIDIA's tools read and write UTF-8 only (``kubectl apply -f``
    does not decompress either). A compressed file or an archive is said as such, with how to open it."""
    packed = _packed(raw, source)
    if packed:
        raise InputError(f"cannot read {what}: {packed}", source=source)
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"cannot read {what}: UTF-16 text (byte-order mark); save it as UTF-8", source=source
        )
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"cannot read {what}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}; "
            "Latin-1 or another encoding?)",
            source=source,
        ) from None


# the leading bytes of the compressed and archive formats a dump is shipped in (a support bundle, an issue's
# attachment), with what to run first; tar's "ustar" magic is at offset 257 (POSIX.1-1988 header)
_PACKED = (
    (
        b"\x1f\x8b",
        "gzip-compressed; decompress it first (gunzip -k {file}; a .tar.gz: tar -xzf {file}, then give the directory)",
    ),
    (b"\xfd7zXZ\x00", "xz-compressed; decompress it first (unxz -k {file})"),
    (b"PK\x03\x04", "a zip archive; extract it (unzip {file}) and give the directory"),
)


def _packed(raw: bytes, source: str) -> str:
    import shlex

    for magic, what in _PACKED:
        if raw.startswith(magic):
            return what.format(file=shlex.quote(source))
    if raw[257:262] == b"ustar":
        return f"a tar archive; extract it (tar -xf {shlex.quote(source)}) and give the directory"
    return ""


# --- bounded parsing: every YAML and JSON text kubegpu reads goes through these two -----------------------
# kubectl's YAML and JSON never nest this deep (a CRD's OpenAPI schema is a few dozen levels); beyond it
# PyYAML's recursive composer and json's decoder would raise RecursionError instead of an answer.
MAX_DEPTH = 200
# YAML aliases may add at most this many nodes to a document (kubectl never writes aliases; PyYAML's
# dumper writes a few for shared objects). The "billion laughs" document expands nine aliases nine levels
# deep into 9**9 strings: refused while still a small graph, before anything is built from it.
MAX_ALIAS_EXPANSION = 1_000_000


def yaml_documents(text: str, source: str) -> list[object]:
    """Every document of a YAML stream (``iter_yaml_documents``), or one ``InputError``."""
    return list(iter_yaml_documents(text, source))


def iter_yaml_documents(text: str, source: str) -> Iterator[object]:
    """Every document of a YAML stream, one at a time, refusing what the API server's decoder refuses
    (duplicate keys: "mapping key already defined", as sigs.k8s.io/yaml's strict decoding) and what would
    not end: nesting beyond ``MAX_DEPTH`` and alias expansion beyond ``MAX_ALIAS_EXPANSION``. One
    ``InputError`` naming the file, line and column, never a traceback or a hang; the documents before a
    broken one have been yielded by then, so a caller keeps them."""
    import yaml

    loader = None
    after = 0  # the line the document being read starts at or after (the end of the one before)
    try:
        loader = _loader_class()(text)  # its reader refuses non-printable characters (a NUL) at once
        while loader.check_node():
            node = loader.get_node()
            distinct, expanded = _expanded_size(node)
            if expanded - distinct > MAX_ALIAS_EXPANSION:
                raise _refused(
                    f"excessive aliasing: the document expands to more than {MAX_ALIAS_EXPANSION} nodes",
                    node.start_mark,
                )
            yield loader.construct_document(node)
            after = node.end_mark.line
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        error = InputError(f"invalid YAML{where}: {problem}", source=source)
        if mark is None:
            raise error from None
        raise YamlStreamError(error, after, mark.line) from None
    except RecursionError:
        raise InputError(f"invalid YAML: nested more than {MAX_DEPTH} levels deep", source=source) from None
    finally:
        if loader is not None:
            loader.dispose()


class YamlStreamError(InputError):
    """A broken document of ``iter_yaml_documents``: ``after``, the (0-based) line it starts at or after, and
    ``line``, the line of the break, for a reader that can still use its whole parts (a List's complete
    items)."""

    def __init__(self, error: InputError, after: int, line: int) -> None:
        super().__init__(error.problem, source=error.source, obj=error.obj, field=error.field)
        self.after, self.line = after, line


def _refused(problem: str, mark: Any) -> Exception:
    import yaml

    return yaml.MarkedYAMLError(problem=problem, problem_mark=mark)


@functools.cache
def _loader_class() -> Any:
    """PyYAML's ``SafeLoader`` that counts nesting while composing (PyYAML composes recursively) and
    refuses duplicate mapping keys with their line; built on first use so that importing this module
    does not import yaml."""
    import yaml

    class Loader(yaml.SafeLoader):
        def __init__(self, text: str) -> None:
            super().__init__(text)
            self.depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    event = self.peek_event()  # type: ignore[no-untyped-call]
                    raise _refused(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                self.flatten_mapping(node)
                seen: set[object] = set()
                for key_node, _ in node.value:
                    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else id(key_node)
                    if key in seen:
                        raise _refused(f"mapping key {key!r} already defined", key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Loader


def _expanded_size(root: Any) -> tuple[int, int]:
    """(distinct nodes, nodes once every alias is expanded) of a composed document, iteratively: the
    composed graph of a "billion laughs" document is a few dozen nodes, only its expansion is huge, so it
    is measured before anything is constructed from it."""
    import yaml

    size: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        else:
            kids = []
        if children_done or not kids:
            size[id(node)] = 1 + sum(size[id(k)] for k in kids)
            if size[id(node)] > MAX_ALIAS_EXPANSION + len(size) + 1:
                return len(size), size[id(node)]
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)
    return len(size), size[id(root)]


def json_document(text: str | bytes, source: str, what: str = "JSON") -> object:
    """One JSON document, refusing what Go's decoder refuses (``NaN``/``Infinity`` literals), duplicate
    keys (the API server's strict field validation: "duplicate field") and nesting deeper than the
    interpreter's recursion limit."""
    if isinstance(text, bytes):  # UTF-8 only (RFC 8259): json.loads would guess UTF-16 or UTF-32 from bytes
        text = decode_text(text, source, what)
    # deeper nesting than the interpreter's recursion limit ends in RecursionError below (json's C scanner
    # counts it); a Python scan of every bracket first would cost more than the parse of a large snapshot
    with _json_errors(text, source, what):
        doc: object = _json_decoder(source, what).decode(text)
    return doc


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def json_documents(text: str, source: str, what: str = "JSON") -> Iterator[object]:
    """Every JSON value of a stream of them separated by whitespace, one at a time, checked as
    ``json_document``: what ``kubectl get … -o json`` run several times into one file holds, and what
    ``kubectl cluster-info dump`` writes (one List per resource; json.MarshalIndent plus a newline each,
    k8s.io/cli-runtime pkg/printers/json.go). A broken value is one ``JsonStreamError`` with its line and
    column, raised after the values before it were yielded."""
    decoder = _json_decoder(source, what)
    at = _JSON_SPACE.match(text, 0).end()  # type: ignore[union-attr]
    while at < len(text):
        try:
            with _json_errors(text, source, what):
                doc, end = decoder.raw_decode(text, at)
        except InputError as exc:
            raise JsonStreamError(exc, at, decoder) from None
        yield doc
        at = _JSON_SPACE.match(text, end).end()  # type: ignore[union-attr]


class JsonStreamError(InputError):
    """A broken value of ``json_documents``: ``start``, where it begins in the text, and the ``decoder`` that
    refused it, for a reader that can still use its whole parts (a List's complete items)."""

    def __init__(self, error: InputError, start: int, decoder: Any) -> None:
        super().__init__(error.problem, source=error.source, obj=error.obj, field=error.field)
        self.start, self.decoder = start, decoder


def _json_decoder(source: str, what: str) -> Any:
    import json

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        out = dict(items)  # C speed: this runs for every object of a 100 MB snapshot
        if len(out) != len(items):
            seen: set[str] = set()
            key = next(k for k, _ in items if k in seen or seen.add(k))  # type: ignore[func-returns-value]
            raise InputError(f"invalid {what}: duplicate field {key!r}", source=source)
        return out

    def constant(name: str) -> object:
        raise InputError(f"invalid {what}: {name} is not a JSON value", source=source)

    return json.JSONDecoder(object_pairs_hook=pairs, parse_constant=constant)


@contextlib.contextmanager
def _json_errors(text: str, source: str, what: str) -> Iterator[None]:
    """json's exceptions as one ``InputError`` naming the line and column; a value cut off by the end of
    the text (a dump saved or pasted in part) is said to be truncated."""
    import json

    try:
        yield
    except json.JSONDecodeError as exc:
        end = len(text.rstrip())
        cut = " (the text ends inside a value: truncated?)" if end and exc.pos >= end else ""
        raise InputError(
            f"invalid {what} at line {exc.lineno}, column {exc.colno}: {exc.msg}{cut}", source=source
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"invalid {what}: not UTF-8 text (offset {exc.start})", source=source) from None
    except RecursionError:
        raise InputError(f"invalid {what}: nested too deeply", source=source) from None
