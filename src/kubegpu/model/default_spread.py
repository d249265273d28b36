"""The selector of PodTopologySpread's default constraints: kube-scheduler's ``helper.DefaultSelector``.

A pod without its own ``topologySpreadConstraints`` is spread with the scheduler's default constraints
(``podtopologyspread/common.go`` ``buildDefaultConstraints``), whose selector is deduced from the objects
that select the pod (``pkg/scheduler/framework/plugins/helper/spread.go``, the same in 1.30–1.37):

- every Service of the pod's namespace whose ``spec.selector`` matches the pod's labels (a Service without
  a selector selects nothing; ``GetPodServices``): their selectors merged into one label set;
- the pod's controller (the ownerReference with ``controller: true``, ``metav1.GetControllerOfNoCopy``), when
  it is exactly ``v1`` ReplicationController (its selector map merged into the set), ``apps/v1`` ReplicaSet or
  ``apps/v1`` StatefulSet (its ``spec.selector``'s requirements added) and exists in the pod's namespace.

An empty result means no default constraint at all (``selector.Empty()``). ``SpreadOwners.missing`` names the
kinds a snapshot did not carry that this pod's selector depends on (Services always; the controller's kind when
it is one of the three): ``explain`` marks such a pod's ranking unverified rather than assuming there are none.

Must not import: anything above ``kubegpu.model``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubegpu.errors import InputError
from kubegpu.model.objects import LabelSelector, Pod, Requirement
from kubegpu.model.records import SERVICE, Controller, Records, Service, parse_controller, parse_service

# helper/spread.go rcKind, rsKind, ssKind: the controller kinds whose selector is read, by apiVersion
CONTROLLER_GVKS: Final = frozenset(
    {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}
)
# what a snapshot needs for the default selector (``kubectl get`` resource names, for messages)
RESOURCES: Final = "services,replicationcontrollers,replicasets,statefulsets"
KINDS: Final = frozenset({SERVICE, *(kind for _, kind in CONTROLLER_GVKS)})


@dataclass
class SpreadOwners:
    """The Services and the ReplicationControllers, ReplicaSets and StatefulSets of a snapshot, per namespace
    (or of a live scheduler's informers, kept by ``apply``)."""

    services: dict[str, dict[str, Service]] = field(default_factory=dict)  # namespace → name → Service
    controllers: dict[tuple[str, str, str], Controller] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)  # which kinds the snapshot carried (or were listed)

    @classmethod
    def of(cls, records: Records) -> SpreadOwners:
        return cls.build(records.services, records.controllers, records.seen)

    @classmethod
    def build(
        cls, services: Iterable[Service], controllers: Iterable[Controller], seen: Iterable[str]
    ) -> SpreadOwners:
        out = cls(seen=set(seen))
        for s in services:
            out.services.setdefault(s.namespace, {})[s.name] = s
        for c in controllers:
            out.controllers[(c.kind, c.namespace, c.name)] = c
        return out

    def apply(self, kind: str, event_type: str, items: Iterable[Mapping[str, Any]]) -> list[InputError]:
        """An informer's event for one of ``KINDS`` (``SYNC``, ``kube.informer``'s: the full list, replacing
        the kind's objects; ``DELETED``; else added or modified). Objects that cannot be parsed are left out
        and returned as errors."""
        errors: list[InputError] = []
        if event_type == "SYNC":
            self.seen.add(kind)
            if kind == SERVICE:
                self.services.clear()
            else:
                for key in [k for k in self.controllers if k[0] == kind]:
                    del self.controllers[key]
        for raw in items:
            meta = raw.get("metadata") or {}
            ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
            try:
                if kind == SERVICE:
                    self.services.get(ns, {}).pop(name, None)
                    if event_type != "DELETED":
                        self.services.setdefault(ns, {})[name] = parse_service({**raw, "kind": kind}, "watch")
                else:
                    self.controllers.pop((kind, ns, name), None)
                    if event_type != "DELETED":
                        self.controllers[(kind, ns, name)] = parse_controller({**raw, "kind": kind}, "watch")
            except InputError as exc:
                errors.append(exc)
        return errors

    def controller_of(self, pod: Pod) -> tuple[str, str] | None:
        """The pod's controller as (kind, name) when its kind is one DefaultSelector reads."""
        o = pod.owner
        if o is None or not o.controller or (o.api_version, o.kind) not in CONTROLLER_GVKS:
            return None
        return o.kind, o.name

    def default_selector(self, pod: Pod) -> LabelSelector | None:
        """``helper.DefaultSelector``; None when it is empty (then the pod has no default constraints)."""
        merged: dict[str, str] = {}
        for s in self.services.get(pod.namespace, {}).values():
            sel = s.selector
            if sel is None:  # services with nil selectors match nothing, not everything
                continue
            if all(pod.labels.get(k) == v for k, v in sel.items()):
                merged.update(sel)  # they all match the pod, so no key conflicts (spread.go)
        extra: tuple[Requirement, ...] = ()
        owner = self.controller_of(pod)
        c = self.controllers.get((owner[0], pod.namespace, owner[1])) if owner else None
        if c is not None and c.selector is not None:
            if c.kind == "ReplicationController":
                merged.update(c.selector.match_labels)
            else:  # selector.Add(requirements): matchLabels become key=value requirements
                extra = (
                    tuple(Requirement(k, "In", (v,)) for k, v in c.selector.match_labels)
                    + c.selector.match_expressions
                )
        if not merged and not extra:
            return None
        return LabelSelector(tuple(sorted(merged.items())), extra)

    def missing(self, pod: Pod) -> list[str]:
        """Kinds the pod's default selector reads that the snapshot did not carry."""
        out = [] if SERVICE in self.seen else [SERVICE]
        owner = self.controller_of(pod)
        if owner is not None and owner[0] not in self.seen:
            out.append(owner[0])
        return out
