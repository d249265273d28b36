"""Simulator workloads from YAML: kubegpu's ``SimWorkload`` and plain Kubernetes manifests.

``kubegpu.io/v1alpha1 SimWorkload`` (CRD-shaped; kubegpu's names)::

    apiVersion: kubegpu.io/v1alpha1
    kind: SimWorkload
    metadata: {name: nightly}
    spec:
      templates:
      - name: trainer                  # pods are named <workload>-<template>-<i>
        count: 6
        arrival: {type: Poisson, start: 0, ratePerHour: 12}   # or Fixed {times: [...]}, Uniform {start, end}
        durationSeconds: 1800          # run time once placed (absent: runs to the end)
        patienceSeconds: 600           # deleted if still pending this long after arriving (optional)
        pod: {metadata: {labels: {...}}, spec: {containers: [...]}}    # a Pod's metadata and spec
      nodeEvents:
      - {at: 600, action: cordon, node: gpu-1}       # add | remove | cordon | uncordon
      - {at: 900, action: add, node: {apiVersion: v1, kind: Node, ...}}

Arrival times: ``Fixed`` lists ``count`` times; ``Uniform`` draws ``count`` times uniformly in [start,
end); ``Poisson`` draws exponential gaps of mean ``3600 / ratePerHour`` from ``start``. Draws use a
NumPy generator seeded with (seed, workload, template), so one seed gives one workload.

Kubernetes manifests are expanded as their controllers would: a ``Pod`` is one pod, a ``Deployment``
or ``StatefulSet`` ``spec.replicas`` pods (default 1), a ``Job`` keeps ``spec.parallelism`` pods
(default 1) running until ``spec.completions`` have finished (each finished pod is replaced by the
next; without ``completions``, ``parallelism`` pods). Timing comes from annotations on the object:
``kubegpu.io/sim-arrival-seconds`` (default 0) and ``kubegpu.io/sim-duration-seconds`` (default: runs
to the end). Queue objects and pod groups (``GpuQueue``, ``GpuCohort``, ``PodGroup``) are kept raw for
the batch layer (``batch.objects`` parses them), and so are ResourceClaims and ResourceClaimTemplates
(``sim.workload_claims`` adds them, and the claims a template yields per pod, to the snapshot's DRA
objects); a pod with ``spec.resourceClaims`` gets a UID if it has none (claims name their consumers
and owners by UID); objects the simulator does not run (Namespace,
ConfigMap, …) are skipped; anything wrong is an ``InputError`` naming the file, the object and the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubegpu.errors import InputError
from kubegpu.model.objects import Pod
from kubegpu.model.parse import collect_notes, describe, parse_node, parse_pod
from kubegpu.model.snapshot import BATCH_KINDS, api_group, reads
from kubegpu.sim.replay import NODE_ACTIONS, NodeEvent, SimPod

SIM_WORKLOAD = "SimWorkload"
# bounds on what one workload may ask for: times and durations up to ~31 years of seconds, and pods per
# template (each is an object in memory and an event in the replay); beyond them the input is refused
MAX_NUMBER = 1e9
MAX_PODS = 100_000
ARRIVAL_ANNOTATION = "kubegpu.io/sim-arrival-seconds"
DURATION_ANNOTATION = "kubegpu.io/sim-duration-seconds"
ARRIVAL_TYPES = ("Fixed", "Uniform", "Poisson")
DRA_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
CONTROLLER_KINDS = ("Pod", "Deployment", "StatefulSet", "Job")  # what ``_controller`` makes pods of
SKIPPED_KINDS = frozenset({"Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount", "PriorityClass"})


@dataclass
class SimInput:
    pods: list[SimPod] = field(default_factory=list)
    node_events: list[NodeEvent] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    batch_objects: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)  # raw BATCH_KINDS
    dra_objects: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)  # raw DRA_KINDS
    claim_pods: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)  # raw pods with claims
    notes: list[str] = field(default_factory=list)  # what a pod holds but is not counted as written


class _Where:
    """File and object for messages."""

    def __init__(self, source: str, raw: Mapping[str, Any]) -> None:
        self.source, self.obj = source, describe(raw)

    def fail(self, field_: str, problem: str) -> InputError:
        return InputError(problem, source=self.source, obj=self.obj, field=field_)

    def mapping(self, value: Any, field_: str, required: bool = False) -> Mapping[str, Any]:
        if value is None and not required:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(
                field_, "expected an object" if value is not None else "required field is missing"
            )
        return value

    def number(
        self,
        value: Any,
        field_: str,
        *,
        minimum: float = 0.0,
        integer: bool = False,
        maximum: float = MAX_NUMBER,
    ) -> float:
        ok = isinstance(value, int) if integer else isinstance(value, int | float)
        # NaN compares false with everything: without isfinite it would pass the bound checks
        if not ok or isinstance(value, bool) or not math.isfinite(value) or value < minimum:
            kind = "an integer" if integer else "a number"
            raise self.fail(field_, f"must be {kind} ≥ {minimum:g}, got {value!r}")
        if value > maximum:
            raise self.fail(field_, f"{value!r} is more than kubegpu simulates ({maximum:g})")
        return float(value)

    def annotation_seconds(self, meta: Mapping[str, Any], key: str, default: float) -> float:
        raw = (meta.get("annotations") or {}).get(key)
        if raw is None:
            return default
        try:
            value = float(str(raw))
        except ValueError:
            raise self.fail(
                f"metadata.annotations[{key}]", f"must be a number of seconds, got {raw!r}"
            ) from None
        if not math.isfinite(value) or value < 0:
            raise self.fail(f"metadata.annotations[{key}]", f"must be a number of seconds ≥ 0, got {raw!r}")
        return value


def _pod(
    where: _Where, meta: Mapping[str, Any], spec: Any, name: str, namespace: str, prefix: str, out: SimInput
) -> Pod:
    """Parse a pod built from a template; a template error names the enclosing object and field."""
    raw = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {**dict(meta), "name": name, "namespace": namespace},
        "spec": spec,
    }  # fmt: skip
    try:
        return parse_pod(_claim_pod(raw, where.source, out), where.source)
    except InputError as exc:
        raise where.fail(f"{prefix}.{exc.field}" if exc.field else prefix, exc.problem) from None


def _claim_pod(raw: Mapping[str, Any], source: str, out: SimInput) -> Mapping[str, Any]:
    """A pod with ``spec.resourceClaims``, kept raw for its claims, with a UID (its own, else one made
    from its namespace and name); any other pod as it is."""
    spec, meta = raw.get("spec"), raw.get("metadata")
    if not isinstance(spec, Mapping) or not spec.get("resourceClaims") or not isinstance(meta, Mapping):
        return raw
    if not meta.get("uid"):
        uid = f"sim-{meta.get('namespace') or 'default'}-{meta.get('name')}"
        raw = {**raw, "metadata": {**meta, "uid": uid}}
    out.claim_pods.append((source, raw))
    return raw


def arrival_times(
    where: _Where, arrival: Mapping[str, Any], count: int, rng: np.random.Generator, f: str
) -> list[float]:
    kind = arrival.get("type")
    if kind not in ARRIVAL_TYPES:
        raise where.fail(f"{f}.type", f"must be one of {', '.join(ARRIVAL_TYPES)}, got {kind!r}")
    if kind == "Fixed":
        times = arrival.get("times")
        if not isinstance(times, list) or len(times) != count:
            raise where.fail(f"{f}.times", f"must list exactly count ({count}) times")
        return [where.number(t, f"{f}.times[{i}]") for i, t in enumerate(times)]
    start = where.number(arrival.get("start", 0), f"{f}.start")
    if kind == "Uniform":
        end = where.number(arrival.get("end"), f"{f}.end")
        if end <= start:
            raise where.fail(f"{f}.end", f"must be after start ({start:g}), got {end:g}")
        return sorted(float(t) for t in rng.uniform(start, end, size=count))
    rate = where.number(arrival.get("ratePerHour"), f"{f}.ratePerHour")
    if rate <= 0:
        raise where.fail(f"{f}.ratePerHour", "must be positive")
    gaps = rng.exponential(3600.0 / rate, size=count)
    return [float(t) for t in start + np.cumsum(gaps)]


def _sim_workload(where: _Where, raw: Mapping[str, Any], seed: int, out: SimInput) -> None:
    meta = where.mapping(raw.get("metadata"), "metadata", required=True)
    wname = meta.get("name")
    if not isinstance(wname, str) or not wname:
        raise where.fail("metadata.name", "required field is missing")
    namespace = str(meta.get("namespace") or "default")
    spec = where.mapping(raw.get("spec"), "spec", required=True)
    templates = spec.get("templates")
    if not isinstance(templates, list) or not templates:
        raise where.fail("spec.templates", "must list at least one template")
    for i, t in enumerate(templates):
        f = f"spec.templates[{i}]"
        t = where.mapping(t, f, required=True)
        tname = t.get("name")
        if not isinstance(tname, str) or not tname:
            raise where.fail(f"{f}.name", "required field is missing")
        count = int(where.number(t.get("count"), f"{f}.count", minimum=1, integer=True, maximum=MAX_PODS))
        rng = np.random.default_rng([seed, *wname.encode(), 0, i])
        times = arrival_times(
            where, where.mapping(t.get("arrival"), f"{f}.arrival", True), count, rng, f"{f}.arrival"
        )
        duration = math.inf
        if "durationSeconds" in t:
            duration = where.number(t["durationSeconds"], f"{f}.durationSeconds")
        patience = None
        if "patienceSeconds" in t:
            patience = where.number(t["patienceSeconds"], f"{f}.patienceSeconds")
        pod_raw = where.mapping(t.get("pod"), f"{f}.pod", required=True)
        pod_meta = where.mapping(pod_raw.get("metadata"), f"{f}.pod.metadata")
        for k, at in enumerate(times):
            pod = _pod(
                where, pod_meta, pod_raw.get("spec"), f"{wname}-{tname}-{k}", namespace, f"{f}.pod", out
            )
            out.pods.append(SimPod(pod, at, duration, None if patience is None else at + patience))
    for i, ev in enumerate(spec.get("nodeEvents") or []):
        f = f"spec.nodeEvents[{i}]"
        ev = where.mapping(ev, f, required=True)
        action = ev.get("action")
        if action not in NODE_ACTIONS:
            raise where.fail(f"{f}.action", f"must be one of {', '.join(NODE_ACTIONS)}, got {action!r}")
        t_at = where.number(ev.get("at"), f"{f}.at")
        node = ev.get("node")
        if action == "add":
            node_raw = where.mapping(node, f"{f}.node", required=True)
            try:
                spec_node = parse_node(node_raw, where.source)
            except InputError as exc:
                raise where.fail(f"{f}.node.{exc.field}" if exc.field else f"{f}.node", exc.problem) from None
            out.node_events.append(NodeEvent(t_at, "add", spec_node.name, spec_node))
        else:
            if not isinstance(node, str) or not node:
                raise where.fail(f"{f}.node", "must be a node name")
            out.node_events.append(NodeEvent(t_at, str(action), node))


def _controller(where: _Where, raw: Mapping[str, Any], out: SimInput) -> None:
    kind = raw["kind"]
    meta = where.mapping(raw.get("metadata"), "metadata", required=True)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise where.fail("metadata.name", "required field is missing")
    namespace = str(meta.get("namespace") or "default")
    arrival = where.annotation_seconds(meta, ARRIVAL_ANNOTATION, 0.0)
    duration = where.annotation_seconds(meta, DURATION_ANNOTATION, math.inf)
    if kind == "Pod":
        try:
            pod = parse_pod(_claim_pod(raw, where.source, out), where.source)
        except InputError as exc:
            raise where.fail(exc.field, exc.problem) from None
        out.pods.append(SimPod(pod, arrival, duration))
        return
    spec = where.mapping(raw.get("spec"), "spec", required=True)
    template = where.mapping(spec.get("template"), "spec.template", required=True)
    tmeta = where.mapping(template.get("metadata"), "spec.template.metadata")
    if kind in ("Deployment", "StatefulSet"):
        replicas = int(where.number(spec.get("replicas", 1), "spec.replicas", integer=True))
        for i in range(replicas):
            pod = _pod(where, tmeta, template.get("spec"), f"{name}-{i}", namespace, "spec.template", out)
            out.pods.append(SimPod(pod, arrival, duration))
        return
    parallelism = int(where.number(spec.get("parallelism", 1), "spec.parallelism", integer=True))
    completions = parallelism
    if spec.get("completions") is not None:
        completions = int(where.number(spec["completions"], "spec.completions", minimum=1, integer=True))
    keys: list[str] = []
    for i in range(completions):
        pod = _pod(where, tmeta, template.get("spec"), f"{name}-{i}", namespace, "spec.template", out)
        # the first ``parallelism`` start together; each later one replaces a finished one
        after = keys[i - parallelism] if i >= parallelism else None
        out.pods.append(SimPod(pod, arrival, duration, after=after))
        keys.append(pod.key)


def load_workload(documents: Iterable[tuple[str, Any]], seed: int = 0) -> SimInput:
    """Pods and node events from YAML documents ``(source, object)``; the first bad object raises."""
    out = SimInput()
    with collect_notes(out.notes):  # e.g. an amount beyond kubegpu's int64 column, saturated
        _load_documents(documents, seed, out)
    return out


def _load_documents(documents: Iterable[tuple[str, Any]], seed: int, out: SimInput) -> None:
    for source, raw in documents:
        if raw is None:
            continue
        if not isinstance(raw, Mapping):
            raise InputError(f"expected a Kubernetes object, got {type(raw).__name__}", source=source)
        where = _Where(source, raw)
        kind = raw.get("kind")
        group = api_group(raw)
        # another project's kind of a name the simulator reads (a Volcano Job, a KAI PodGroup): not modelled
        known = isinstance(kind, str) and (
            kind in CONTROLLER_KINDS or kind in BATCH_KINDS or kind in DRA_KINDS
        )
        if known and not reads(str(kind), group):
            raise where.fail(
                "apiVersion",
                f"{kind} of {raw.get('apiVersion')} is not the {kind} the simulator reads (another project's kind "
                "of the same name: not modelled)",
            )
        if kind == SIM_WORKLOAD:
            _sim_workload(where, raw, seed, out)
        elif kind in CONTROLLER_KINDS:
            _controller(where, raw, out)
        elif kind in BATCH_KINDS:
            out.batch_objects.append((source, raw))
        elif kind in DRA_KINDS:
            out.dra_objects.append((source, raw))
        elif kind in SKIPPED_KINDS:
            out.skipped[str(kind)] = out.skipped.get(str(kind), 0) + 1
        else:
            raise where.fail(
                "kind",
                "the simulator runs SimWorkload, Pod, Deployment, StatefulSet and Job (with ResourceClaim "
                f"and ResourceClaimTemplate), not {kind!r}",
            )
    keys = [p.pod.key for p in out.pods]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"two workload objects make the pod {dup}: rename one")
