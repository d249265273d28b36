"""Where a snapshot comes from: a file or directory, the embedded demo, or a live cluster (read-only).

All three produce ``(source, raw_dict)`` pairs and go through ``model.snapshot.build_snapshot``, so the
scheduling core never knows which one it is looking at. Files may be YAML (multi-document) or JSON (one
value or several), single objects or ``List`` kinds (``kubectl get nodes,pods,resourcequotas -A -o yaml``),
typed lists included (their items take the list's kind); a directory is read recursively in name order.
``kubectl cluster-info dump`` output reads either way it is written (stdout, --output-directory): its
container logs are skipped and the dump is said in a note, with what a dump never holds. A YAML or JSON
syntax error names the file, line and column and skips only that file's broken document onwards, keeping
the complete items of a List it breaks; everything else still loads. Compressed files are refused with the
command that opens them (``errors.decode_text``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final

from kubegpu.errors import (
    InputError,
    JsonStreamError,
    YamlStreamError,
    iter_yaml_documents,
    json_documents,
    yaml_documents,
)
from kubegpu.errors import read_text as read_file
from kubegpu.model import default_spread, volumes
from kubegpu.model.bulk import bulk_load
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot, split_documents

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _documents(text: str, source: str, errors: list[InputError]) -> Iterator[Any]:
    # bounded: nesting, alias expansion and duplicate keys are refused with the file, line and column; the
    # documents before a broken one are kept, and so are the complete items of a List cut short
    text = text.removeprefix("\ufeff")
    try:
        if _is_json(text, source):
            # one or more JSON values (several `kubectl get -o json` into one file, a cluster-info dump);
            # YAML would refuse a second one. A `.yaml` file opening with "{" that is YAML's flow style,
            # not JSON, is read as YAML
            stream = json_documents(text, source)
            try:
                yield next(stream)
                yield from stream
            except StopIteration:
                return
            except JsonStreamError as exc:
                if exc.start == 0 and not source.endswith(".json") and not _JSON_LIST.match(text, exc.start):
                    yield from iter_yaml_documents(text, source)
                    return
                partial = _complete_items(text, exc)
                if partial is None:
                    raise
                yield partial
                raise _cut_short(exc, partial) from None
        else:
            try:
                yield from iter_yaml_documents(text, source)
            except YamlStreamError as exc:
                partial = _complete_yaml_items(text, exc)
                if partial is None:
                    raise
                yield partial
                raise _cut_short(exc, partial) from None
    except InputError as exc:
        errors.append(exc)


def _is_json(text: str, source: str) -> bool:
    """Whether the file is read as JSON (a ``.json`` name, or its first character opens a JSON value)."""
    return source.endswith(".json") or bool(_JSON_OPENS.match(text.removeprefix("\ufeff")))


def _cut_short(exc: InputError, partial: Mapping[str, Any]) -> InputError:
    n, kind = len(partial["items"]), partial["kind"]
    return InputError(
        f"{exc.problem}; the {n} complete item(s) of the {kind} before it were read",
        source=exc.source,
    )


_JSON_OPENS = re.compile(r"\s*\{")  # (not text.lstrip(): that copies a 100 MB snapshot to look at its start)
# the head of a List as kubectl prints it in JSON: up to its "items" array (typed lists write kind, apiVersion
# and metadata first; `kubectl get -o json` writes the keys sorted, apiVersion then items)
_JSON_LIST = re.compile(
    r'\s*\{\s*(?:"(?:kind|apiVersion)"\s*:\s*"[^"]*"\s*,\s*|"metadata"\s*:\s*\{[^{}]*\}\s*,\s*)*"items"\s*:\s*\['
)
_JSON_FIELD = re.compile(r'"(kind|apiVersion)"\s*:\s*"([^"]*)"')


def _complete_items(text: str, exc: JsonStreamError) -> dict[str, Any] | None:
    """The List a broken JSON value began, with the items before the break (a dump cut short), or None
    when the value is no List or its break comes before its first item."""
    head = _JSON_LIST.match(text, exc.start)
    if head is None:
        return None
    fields = dict(_JSON_FIELD.findall(text, exc.start, head.end()))
    items: list[Any] = []
    at = head.end()
    while True:
        try:
            item, at = exc.decoder.raw_decode(text, _skip_space(text, at))
        except (ValueError, InputError, RecursionError):
            break
        items.append(item)
        at = _skip_space(text, at)
        if text[at : at + 1] != ",":
            break
        at += 1
    return {"apiVersion": fields.get("apiVersion"), "kind": fields.get("kind", "List"), "items": items}


# a List as `kubectl get -o yaml` writes it: "items:" at the margin, each item a "- " at the margin under it
_YAML_ITEMS = re.compile(r"items:\s*$")


def _complete_yaml_items(text: str, exc: YamlStreamError) -> dict[str, Any] | None:
    """The List a broken YAML document began, with the items before the one holding the break, or None when
    the document is no List in kubectl's layout or what precedes the break does not read either."""
    lines = text.splitlines(keepends=True)
    head = next((i for i in range(exc.after, min(exc.line, len(lines))) if _YAML_ITEMS.match(lines[i])), None)
    if head is None:
        return None
    cut = max(
        (i for i in range(head + 1, min(exc.line + 1, len(lines))) if lines[i].startswith("- ")), default=None
    )
    try:
        docs = yaml_documents("".join(lines[exc.after : cut if cut is not None else head + 1]), exc.source)
    except InputError:
        return None
    doc = docs[-1] if docs else None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("items", []), list | type(None)):
        return None
    return {**doc, "kind": doc.get("kind") or "List", "items": doc.get("items") or []}


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


# `kubectl describe` prints "Name:" first, then fields such as these, never apiVersion/kind
_DESCRIBE_FIELDS = re.compile(
    r"^(Namespace|Labels|Annotations|Status|Events|Capacity|Allocatable|Containers|Taints):", re.M
)
# What a snapshot should hold: one list, shown by README.md and docs/demo.md (tests/test_snapshot_kinds.py
# compares them) and by the hint below. The Services and controllers PodTopologySpread's default selector
# reads, and the storage objects the volume plugins read, come from the modules that read them.
_BASE_KINDS = (
    "nodes", "pods", "daemonsets", "replicasets", "deployments", "statefulsets", "replicationcontrollers",
    "services", "jobs", "events", "resourcequotas", "limitranges", "priorityclasses", "runtimeclasses",
    "poddisruptionbudgets",
    "namespaces",
)  # fmt: skip
SNAPSHOT_KINDS: Final = ",".join(
    dict.fromkeys([*_BASE_KINDS, *default_spread.RESOURCES.split(","), *volumes.RESOURCES.split(",")])
)
SNAPSHOT_COMMAND: Final = f"kubectl get {SNAPSHOT_KINDS} -A -o yaml > cluster.yaml"
DESCRIBE_HINT = (
    "this is `kubectl describe` output, which is for people and cannot be read back; save the objects instead: "
    + SNAPSHOT_COMMAND
)


def is_describe_text(text: str) -> bool:
    head = text.lstrip()[:4000]
    return head.startswith("Name:") and len(_DESCRIBE_FIELDS.findall(head)) >= 2 and "apiVersion:" not in head


def read_text(
    text: str, source: str, errors: list[InputError], notes: list[str] | None = None
) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects of one file's text; ``notes``: what was read but is no object (a cluster-info dump's
    logs), or what the input cannot show, one line each."""
    objects: list[tuple[str, Mapping[str, Any]]] = []
    if is_describe_text(text):
        errors.append(InputError(DESCRIBE_HINT, source=source))
        return objects
    text, logs = _without_logs(text, source, errors)
    lists: list[str] = []  # the kinds of the file's top-level documents, to recognise a cluster-info dump
    yaml = not _is_json(text, source)
    for doc in _documents(text, source, errors):
        lists.append(str(doc.get("kind")) if isinstance(doc, Mapping) else "")
        try:
            objects.extend(split_documents(doc, source, yaml=yaml))
        except InputError as exc:
            errors.append(exc)
    if notes is not None and (logs or _is_dump_stream(lists)):
        groups = max(len(lists) - 1, 0) // len(DUMP_LISTS)
        # a namespace whose lists are all empty shows no name in the stream
        named = sorted({ns for _, o in objects if o.get("kind") != "Node" and (ns := _namespace(o))})
        unnamed = f" and {groups - len(named)} with no object" if groups > len(named) else ""
        listed = f"{groups} namespace(s) ({', '.join(named)}{unnamed})" if named else f"{groups} namespace(s)"
        notes.append(dump_note(source, listed, logs, "container log section(s)"))
    return objects


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return ns if isinstance(ns, str) else ""


# `kubectl cluster-info dump` (kubectl pkg/cmd/clusterinfo/clusterinfo_dump.go, Run): the nodes, then for each
# namespace asked for (by default kube-system and the current one) these lists, in this order, each under
# <namespace>/<name> with --output-directory; then each pod's container logs, each between these two lines
DUMP_LISTS = (
    ("events", "EventList"),
    ("replication-controllers", "ReplicationControllerList"),
    ("services", "ServiceList"),
    ("daemonsets", "DaemonSetList"),
    ("deployments", "DeploymentList"),
    ("replicasets", "ReplicaSetList"),
    ("pods", "PodList"),
)
# (a line may end \r\n: a dump saved through an editor on Windows)
_LOG_START = re.compile(r"==== START logs for container (.*) of pod (.*) ====\r?\n")
_LOG_END = "==== END logs for container {} of pod {} ===="


def _next_log(text: str, at: int) -> re.Match[str] | None:
    """The next START line from ``at``: found as text first (a regex search over a 100 MB snapshot with no
    log in it costs seconds, ``str.find`` a tenth of that), then matched where it is."""
    while (found := text.find("==== START logs for container ", at)) >= 0:
        if (found == 0 or text[found - 1] == "\n") and (start := _LOG_START.match(text, found)):
            return start
        at = found + 1
    return None


def _without_logs(text: str, source: str, errors: list[InputError]) -> tuple[str, int]:
    """``text`` with each container-log section of a cluster-info dump blanked (its lines kept as empty
    ones, so that a later error's line number is still the file's), and how many there were. A section
    without its END line (the file cut short in the logs) blanks the rest and is an error."""
    start = _next_log(text, 0)
    if start is None:
        return text, 0
    parts: list[str] = []
    at, sections = 0, 0
    while start is not None:
        # kubectl writes the log as the server sends it: one that does not end in a newline runs into the END line
        end_line = _LOG_END.format(start.group(1), start.group(2))
        end = text.find(end_line, start.end())
        newline = text.find("\n", end + len(end_line)) if end >= 0 else -1
        stop = len(text) if newline < 0 else newline + 1
        parts += [text[at : start.start()], "\n" * text.count("\n", start.start(), stop)]
        sections, at = sections + 1, stop
        if end < 0:
            line = text.count("\n", 0, start.start()) + 1
            errors.append(
                InputError(
                    f"the logs of container {start.group(1)} of pod {start.group(2)} (line {line}) have no END "
                    "line: the dump is cut short there, and what followed is missing",
                    source=source,
                )
            )
        start = _next_log(text, at)
    parts.append(text[at:])
    return "".join(parts), sections


def _is_dump_stream(kinds: list[str]) -> bool:
    """The top-level documents are the lists a cluster-info dump prints, in its order (cut short or not)."""
    order = [kind for _, kind in DUMP_LISTS]
    return (
        len(kinds) > 1
        and kinds[0] == "NodeList"
        and all(k == order[i % len(order)] for i, k in enumerate(kinds[1:]))
    )


def dump_note(source: str, namespaces: str, logs: int, what: str) -> str:
    """What a cluster-info dump holds and lacks, and the command for a whole snapshot."""
    kinds = ", ".join(kind.removesuffix("List") for _, kind in DUMP_LISTS)
    skipped = f"; its {logs} {what} were skipped (kubegpu reads objects, not logs)" if logs else ""
    return (
        f"{source}: a `kubectl cluster-info dump` of {namespaces}: it holds Nodes and the {kinds} objects of those "
        "namespaces only (without --all-namespaces, kube-system and the current one), no ResourceQuota, "
        "LimitRange, PriorityClass, PodDisruptionBudget, StatefulSet, Job, storage or DRA object, so the diagnosis "
        f"cannot weigh them; for a whole snapshot: {SNAPSHOT_COMMAND}{skipped}"
    )


def read_path(
    path: Path, errors: list[InputError], notes: list[str] | None = None
) -> list[tuple[str, Mapping[str, Any]]]:
    if not path.exists():
        raise InputError("no such file or directory", source=str(path))
    if path.is_dir():
        every = sorted(p for p in path.rglob("*") if p.is_file())
        files = [p for p in every if p.suffix in MANIFEST_SUFFIXES]
        if not files:
            raise InputError(f"directory holds no {'/'.join(MANIFEST_SUFFIXES)} files", source=str(path))
        if notes is not None:
            notes.extend(
                _directory_notes(path, files, [p for p in every if p.suffix not in MANIFEST_SUFFIXES])
            )
    else:
        files = [path]
    objects: list[tuple[str, Mapping[str, Any]]] = []
    for f in files:
        try:
            text = read_file(f, "manifest")
        except InputError as exc:
            errors.append(exc)
            continue
        if f == path and is_describe_text(text):  # the one file given holds no object at all
            raise InputError(DESCRIBE_HINT, source=str(f))
        objects.extend(read_text(text, str(f), errors, notes))
    return objects


def _directory_notes(path: Path, files: list[Path], others: list[Path]) -> list[str]:
    """A cluster-info dump's directory (nodes.json, <namespace>/pods.json, …, <namespace>/<pod>/logs.txt) is
    said as such; any other file that is no manifest is said skipped, never passed over in silence."""
    stems = {(f.parent, f.stem) for f in files}
    namespaces = sorted(d.name for d, stem in stems if stem == "pods" and d.parent == path)
    logs = [f for f in others if f.name == "logs.txt" and f.parent.parent.name in namespaces]
    notes = []
    if (path, "nodes") in stems and namespaces:
        listed = f"namespace(s) {', '.join(namespaces)}"
        notes.append(dump_note(str(path), listed, len(logs), "logs.txt file(s)"))
    logged = set(logs)  # (one set: a dump of every namespace has a logs.txt per pod)
    rest = [f for f in others if f not in logged]
    if rest:
        shown = ", ".join(str(f.relative_to(path)) for f in rest[:3]) + (", …" if len(rest) > 3 else "")
        notes.append(
            f"{path}: {len(rest)} file(s) that are not {'/'.join(MANIFEST_SUFFIXES)} were skipped: {shown}"
        )
    return notes


def load_files(*paths: Path) -> ClusterSnapshot:
    errors: list[InputError] = []
    notes: list[str] = []
    with bulk_load():
        objects = [o for p in paths for o in read_path(p, errors, notes)]
        snap = build_snapshot(objects, description=", ".join(str(p) for p in paths))
    snap.errors[:0] = errors
    snap.notes[:0] = notes
    return snap


DEMO_RESOURCE = "cluster.yaml"


def load_demo() -> ClusterSnapshot:
    """The embedded demo cluster shipped in the package (``kubegpu/demo/cluster.yaml``)."""
    text = resources.files("kubegpu.demo").joinpath(DEMO_RESOURCE).read_text(encoding="utf-8")
    errors: list[InputError] = []
    snap = build_snapshot(
        read_text(text, "demo:" + DEMO_RESOURCE, errors), description="embedded demo cluster"
    )
    snap.errors[:0] = errors
    return snap


def load_live(
    context: str | None = None, kubeconfig: str | None = None, in_cluster: bool = False
) -> ClusterSnapshot:
    """A live cluster, listed read-only through the official client (``kubegpu.kube.live``)."""
    from kubegpu.kube import live  # the kubernetes client is imported only when a cluster is asked for
    from kubegpu.kube.progress import StderrProgress

    progress = StderrProgress()  # quiet unless the read takes more than a couple of seconds
    try:
        read = live.read_cluster(
            context=context, kubeconfig=kubeconfig, in_cluster=in_cluster, progress=progress
        )
    finally:
        progress.close()
    with bulk_load():
        snap = build_snapshot(read.objects, description=f"live cluster {context or '(current context)'}")
    snap.server_version = read.server_version
    snap.errors[:0] = [InputError(w, source="cluster") for w in read.warnings]
    return snap
