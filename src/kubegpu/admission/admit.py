"""Admit not-yet-created pod manifests as the API server would, before they reach any scheduler.

Order as in the API server: defaulting (a limit alone implies the request), LimitRanger's defaults for
containers that set none (``admission.limit_ranger``), RuntimeClass's overhead and scheduling
(``admission.runtime_class``), validation (``Pod "x" is invalid: …``), Priority
(``priorityClassName`` → ``spec.priority``), LimitRanger's min/max (``pods "x" is forbidden: maximum …``),
then ResourceQuota (``pods "x" is forbidden: exceeded quota: …``). Admitted pods count against quota for
the pods admitted after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubegpu.admission import limit_ranger, runtime_class
from kubegpu.admission import quota as quota_admission
from kubegpu.admission.validation import invalid_pod_message, validate_pod_resources
from kubegpu.errors import InputError
from kubegpu.model.objects import Pod, ResourceQuota
from kubegpu.model.parse import parse_pod
from kubegpu.model.resources import add
from kubegpu.model.snapshot import ClusterSnapshot


@dataclass
class Admission:
    source: str
    name: str
    pod: Pod | None
    message: str = ""  # why the API server rejected it
    raw: Mapping[str, Any] | None = None  # the object as the API server would store it
    invalid: bool = False  # rejected as invalid input (validation), not by quota: an input error
    warning: str = ""  # what the API server accepted but dropped

    def input_error(self) -> InputError | None:
        return InputError(self.message, source=self.source) if self.invalid else None

    @property
    def admitted(self) -> bool:
        return self.pod is not None


POD_LEVEL_DROPPED = (
    "spec.resources dropped: the API server of this release does not keep pod-level resources "
    "(PodLevelResources is off by default before 1.34; 1.30-1.31 have no such field)"
)


def admit_pods(
    snapshot: ClusterSnapshot,
    manifests: list[tuple[str, Mapping[str, Any]]],
    *,
    pod_level_resources: bool = True,
) -> list[Admission]:
    """``pod_level_resources``: whether the release keeps ``spec.resources`` (``Behaviour.pod_level_resources``);
    when not, the field is dropped as the API server drops it (``dropDisabledPodLevelResources``), and said."""
    results: list[Admission] = []
    admitted: list[Pod] = []  # count against quota for the pods admitted after them
    for source, raw in manifests:
        meta = raw.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        name = str(meta.get("name") or meta.get("generateName") or "")
        if raw.get("kind") != "Pod":
            results.append(
                Admission(
                    source,
                    name,
                    None,
                    f"{raw.get('kind')} is not a Pod: kubegpu schedule takes Pod manifests",
                    invalid=True,
                )
            )
            continue
        warning = ""
        spec = raw.get("spec")
        if not pod_level_resources and isinstance(spec, Mapping) and "resources" in spec:
            raw = {**raw, "spec": {k: v for k, v in spec.items() if k != "resources"}}
            warning = POD_LEVEL_DROPPED
        try:
            # mutating admission (LimitRanger's defaults) runs before validation: a default limit below
            # the container's request is refused ("must be less than or equal to cpu limit of …")
            try:
                stored = limit_ranger.apply_defaults(raw, snapshot.limit_ranges)
                stored, refused, unknown = runtime_class.admit(stored, snapshot.runtime_classes, name)
            except (TypeError, AttributeError, ValueError):
                # a field of the wrong type (a list for a map, null for a container): the API server fails to
                # decode it before any admission plugin; the parse names the field, as for a snapshot's pods
                parse_pod(raw, source, snapshot.priority_classes, validate_resources=False)
                raise InputError(
                    "not a Pod the API server can decode", source=source, obj=f"Pod {name}"
                ) from None
            warning = "; ".join(w for w in (warning, unknown) if w)
            if refused:
                results.append(Admission(source, name, None, refused))
                continue
            errors = validate_pod_resources(stored)
            if errors:
                results.append(Admission(source, name, None, invalid_pod_message(name, errors), invalid=True))
                continue
            pod = parse_pod(stored, source, snapshot.priority_classes)
        except InputError as exc:
            results.append(Admission(source, name, None, exc.problem, invalid=True))
            results[-1].message = exc.one_line().removeprefix(f"{source}: ")
            continue
        refused = limit_ranger.violation(pod, snapshot.limit_ranges)  # validating admission, before quota
        if refused:
            results.append(Admission(source, name, None, refused))
            continue
        quotas = [_with_usage(q, snapshot, admitted) for q in snapshot.quotas]
        decision = quota_admission.admit(pod, quotas, snapshot.pods)
        if not decision.allowed:
            results.append(Admission(source, name, None, decision.message))
            continue
        admitted.append(pod)
        results.append(Admission(source, name, pod, raw=stored, warning=warning))
    return results


def _with_usage(q: ResourceQuota, snapshot: ClusterSnapshot, admitted: list[Pod]) -> ResourceQuota:
    """``q`` with the usage of the pods admitted before in this pass that it selects (its namespace and
    scopes) added: the API server counts a created pod at once."""
    extra: dict[str, int] = {}
    for pod in admitted:
        if pod.namespace == q.namespace and quota_admission.selects(q, pod):
            extra = add(extra, quota_admission.pod_usage(pod))
    if not extra:
        return q
    used = quota_admission.namespace_usage(q, snapshot.pods)
    return replace(q, used={r: used.get(r, 0) + extra.get(r, 0) for r in q.hard})
