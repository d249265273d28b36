"""Where a snapshot comes from: a file or directory, the embedded demo, or a live cluster (read-only).

All three produce ``(source, raw_dict)`` pairs and go through ``model.snapshot.build_snapshot``, so the
scheduling core never knows which one it is looking at. Files may be YAML (multi-document) or JSON,
single objects or ``List`` kinds (``kubectl get nodes,pods,resourcequotas -A -o yaml``); a directory is
read recursively in name order. A YAML syntax error names the file, line and column and skips only that
file's broken document onwards; everything else still loads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final

from kubegpu.errors import InputError, json_document, yaml_documents
from kubegpu.errors import read_text as read_file
from kubegpu.model import default_spread, volumes
from kubegpu.model.bulk import bulk_load
from kubegpu.model.snapshot import ClusterSnapshot, build_snapshot, split_documents

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _documents(text: str, source: str, errors: list[InputError]) -> Iterator[Any]:
    # bounded: nesting, alias expansion and duplicate keys are refused with the file, line and column
    try:
        if source.endswith(".json"):
            yield json_document(text, source)
        else:
            yield from yaml_documents(text.removeprefix("\ufeff"), source)
    except InputError as exc:
        errors.append(exc)


# `kubectl describe` prints "Name:" first, then fields such as these, never apiVersion/kind
_DESCRIBE_FIELDS = re.compile(
    r"^(Namespace|Labels|Annotations|Status|Events|Capacity|Allocatable|Containers|Taints):", re.M
)
# What a snapshot should hold: one list, shown by README.md and docs/demo.md (tests/test_snapshot_kinds.py
# compares them) and by the hint below. The Services and controllers PodTopologySpread's default selector
# reads, and the storage objects the volume plugins read, come from the modules that read them.
_BASE_KINDS = (
    "nodes", "pods", "daemonsets", "replicasets", "deployments", "statefulsets", "replicationcontrollers",
    "services", "jobs", "events", "resourcequotas", "limitranges", "priorityclasses", "poddisruptionbudgets",
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


def read_text(text: str, source: str, errors: list[InputError]) -> list[tuple[str, Mapping[str, Any]]]:
    objects: list[tuple[str, Mapping[str, Any]]] = []
    if is_describe_text(text):
        errors.append(InputError(DESCRIBE_HINT, source=source))
        return objects
    for doc in _documents(text, source, errors):
        try:
            objects.extend(split_documents(doc, source))
        except InputError as exc:
            errors.append(exc)
    return objects


def read_path(path: Path, errors: list[InputError]) -> list[tuple[str, Mapping[str, Any]]]:
    if not path.exists():
        raise InputError("no such file or directory", source=str(path))
    files = sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES) if path.is_dir() else [path]
    if path.is_dir() and not files:
        raise InputError(f"directory holds no {'/'.join(MANIFEST_SUFFIXES)} files", source=str(path))
    objects: list[tuple[str, Mapping[str, Any]]] = []
    for f in files:
        try:
            text = read_file(f, "manifest")
        except InputError as exc:
            errors.append(exc)
            continue
        if f == path and is_describe_text(text):  # the one file given holds no object at all
            raise InputError(DESCRIBE_HINT, source=str(f))
        objects.extend(read_text(text, str(f), errors))
    return objects


def load_files(*paths: Path) -> ClusterSnapshot:
    errors: list[InputError] = []
    with bulk_load():
        objects = [o for p in paths for o in read_path(p, errors)]
        snap = build_snapshot(objects, description=", ".join(str(p) for p in paths))
    snap.errors[:0] = errors
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
