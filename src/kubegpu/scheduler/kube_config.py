"""A ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``) as kube-scheduler reads it, turned into
kubegpu profiles, with everything kubegpu cannot reproduce named rather than dropped.

kube-scheduler starts each profile from its default plugins (all under ``multiPoint``), then applies the
profile's ``plugins``: per extension point, ``disabled`` removes plugins (``*``: all defaults there) and
``enabled`` adds them or, for a default plugin, replaces it (a score ``weight`` included); ``pluginConfig``
gives a plugin its ``args`` (``apis/config/v1`` defaults, ``mergePlugins``). kubegpu's profile is one list of
plugins, each running at every extension point it implements, so this module reproduces exactly:
``multiPoint`` enabled/disabled, ``score`` enabled/disabled (a weight, or no score at all), a plugin disabled
at every point it has in kubegpu, and the args kubegpu's plugins read (``MODELLED_ARGS``). Anything else —
a plugin kubegpu does not implement, a plugin disabled at some of its points only, args no plugin here reads —
becomes a line in ``Profile.unmodelled``, which ``explain`` prints as the reason its verdict is unverified.

Pure: takes the decoded document; ``ConfigError`` names the file and the field for malformed input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from kubegpu.errors import ConfigError
from kubegpu.scheduler.framework import PluginSpec, Profile
from kubegpu.scheduler.plugins import names
from kubegpu.scheduler.plugins.dynamic_resources import DYNAMIC_RESOURCES
from kubegpu.scheduler.plugins.pod_topology_spread import spread_defaults
from kubegpu.scheduler.plugins.volume_binding import parse_shape
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.versions import behaviour

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
EXTENSION_POINTS: Final = (
    "multiPoint", "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
    "reserve", "permit", "preBind", "bind", "postBind",
)  # fmt: skip
# Upstream default plugins that change no decision kubegpu reports (queue order, gates, binding).
NO_DECISION: Final = frozenset({"PrioritySort", "SchedulingGates", "DefaultBinder"})
# Upstream default plugins kubegpu does not implement (yet): a profile keeping them is unverified for pods
# that use what they check; the pod-level notes say which pods (``explain.unverified``).
NOT_IMPLEMENTED: Final = frozenset({"PodTopologySpread", "InterPodAffinity"})
# Which extension points each implemented plugin has in kubegpu (a plugin disabled at all of them is removed).
_POINTS: Final[Mapping[str, frozenset[str]]] = {
    names.NODE_UNSCHEDULABLE: frozenset({"filter"}),
    names.NODE_NAME: frozenset({"filter"}),
    names.TAINT_TOLERATION: frozenset({"filter", "preScore", "score"}),
    names.NODE_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.NODE_PORTS: frozenset({"preFilter", "filter"}),
    names.NODE_RESOURCES_FIT: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.VOLUME_RESTRICTIONS: frozenset({"preFilter", "filter"}),
    names.NODE_VOLUME_LIMITS: frozenset({"preFilter", "filter"}),
    names.VOLUME_BINDING: frozenset({"preFilter", "filter", "reserve", "preBind", "preScore", "score"}),
    names.VOLUME_ZONE: frozenset({"preFilter", "filter"}),
    DYNAMIC_RESOURCES: frozenset({"preFilter", "filter", "postFilter", "reserve", "preBind"}),
    names.DEFAULT_PREEMPTION: frozenset({"postFilter"}),
    names.BALANCED_ALLOCATION: frozenset({"preScore", "score"}),
    names.IMAGE_LOCALITY: frozenset({"score"}),
    names.POD_TOPOLOGY_SPREAD: frozenset({"preFilter", "filter", "preScore", "score"}),
    names.INTER_POD_AFFINITY: frozenset({"preFilter", "filter", "preScore", "score"}),
}
MODELLED_ARGS: Final[Mapping[str, frozenset[str]]] = {
    names.NODE_RESOURCES_FIT: frozenset({"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}),
    names.BALANCED_ALLOCATION: frozenset({"resources"}),
    names.DEFAULT_PREEMPTION: frozenset({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}),
    names.POD_TOPOLOGY_SPREAD: frozenset({"defaultingType", "defaultConstraints"}),
    names.VOLUME_BINDING: frozenset({"shape"}),  # where StorageCapacityScoring is on (1.37): _volume_shape
}
_TYPE_META: Final = frozenset({"apiVersion", "kind"})


@dataclass(frozen=True)
class SchedulerConfig:
    profiles: tuple[Profile, ...]

    def profile(self, scheduler_name: str | None) -> Profile:
        """The profile named ``scheduler_name`` (None: the first, as ``kubegpu explain`` uses by default)."""
        if scheduler_name is None:
            return self.profiles[0]
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        have = ", ".join(p.scheduler_name for p in self.profiles)
        raise ConfigError(f"the scheduler configuration has no profile {scheduler_name!r} (it has {have})")


def _fail(source: str, field: str, problem: str) -> ConfigError:
    return ConfigError(f"{source}: {KIND}: {field}: {problem}")


def _seq(source: str, value: Any, field: str) -> Sequence[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(source, field, f"expected a list, got {type(value).__name__}")
    return value


def _map(source: str, value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(source, field, f"expected an object, got {type(value).__name__}")
    return value


def _plugin_list(source: str, value: Any, field: str) -> list[tuple[str, int | None]]:
    out = []
    for i, item in enumerate(_seq(source, value, field)):
        item = _map(source, item, f"{field}[{i}]")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _fail(source, f"{field}[{i}].name", "required field is missing")
        weight = item.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int) or weight < 0):
            raise _fail(source, f"{field}[{i}].weight", f"expected a non-negative integer, got {weight!r}")
        out.append((name, weight))
    return out


def parse_scheduler_config(raw: Any, source: str, kube_version: str | None = None) -> SchedulerConfig:
    doc = _map(source, raw, "document")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise _fail(source, "apiVersion/kind", f"expected {API_VERSION} {KIND}, got "
                    f"{doc.get('apiVersion')!r} {doc.get('kind')!r}")  # fmt: skip
    top_pct = doc.get("percentageOfNodesToScore")
    profiles = []
    raw_profiles = _seq(source, doc.get("profiles"), "profiles") or [{}]  # none given: one default profile
    for i, p in enumerate(raw_profiles):
        profiles.append(
            _profile(source, _map(source, p, f"profiles[{i}]"), f"profiles[{i}]", top_pct, kube_version)
        )
    return SchedulerConfig(tuple(profiles))


def _profile(
    source: str, p: Mapping[str, Any], field: str, top_pct: Any, kube_version: str | None
) -> Profile:
    name = p.get("schedulerName") or "default-scheduler"
    pct = p.get("percentageOfNodesToScore", top_pct)
    if pct is not None and (isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100):
        raise _fail(
            source, f"{field}.percentageOfNodesToScore", f"expected an integer in [0, 100], got {pct!r}"
        )
    base = default_profile(str(name), kube_version=kube_version)
    specs: dict[str, PluginSpec] = {s.name: s for s in base.plugins}
    order = [s.name for s in base.plugins]
    notes: list[str] = []
    known = set(in_tree_registry())
    plugins = _map(source, p.get("plugins"), f"{field}.plugins")
    for point in plugins:
        if point not in EXTENSION_POINTS:
            raise _fail(
                source,
                f"{field}.plugins.{point}",
                f"unknown extension point (one of {', '.join(EXTENSION_POINTS)})",
            )
    disabled_at: dict[str, set[str]] = {}
    for point in EXTENSION_POINTS:
        set_ = _map(source, plugins.get(point), f"{field}.plugins.{point}")
        f = f"{field}.plugins.{point}"
        for pname, _ in _plugin_list(source, set_.get("disabled"), f"{f}.disabled"):
            targets = list(order) if pname == "*" else [pname]
            for t in targets:
                if point == "multiPoint":
                    if t in specs:
                        order.remove(t)
                        del specs[t]
                elif point == "score" and t in specs:
                    specs[t] = replace(specs[t], weight=0)
                elif t in _POINTS:
                    disabled_at.setdefault(t, set()).add(point)
        for pname, weight in _plugin_list(source, set_.get("enabled"), f"{f}.enabled"):
            if pname in NO_DECISION:
                continue
            if pname not in known:
                why = (
                    "kubegpu does not implement it"
                    if pname in NOT_IMPLEMENTED
                    else "not a plugin kubegpu models"
                )
                notes.append(f"plugin {pname} ({point}) in profile {name!r}: {why}")
                continue
            if point not in ("multiPoint", "score") and pname not in specs:
                notes.append(f"plugin {pname} enabled at {point} only in profile {name!r}: kubegpu runs a plugin "
                             "at every extension point it has, not modelled")  # fmt: skip
                continue
            if pname not in specs:
                order.append(pname)
                specs[pname] = PluginSpec(pname, 0)
            if weight is not None and point in ("multiPoint", "score"):
                specs[pname] = replace(specs[pname], weight=weight)
            elif point == "score" and specs[pname].weight == 0:
                specs[pname] = replace(specs[pname], weight=1)  # an enabled score plugin's default weight
    for pname, points in disabled_at.items():
        if pname not in specs:
            continue
        scored = specs[pname].weight > 0
        if not _POINTS[pname] - points - (set() if scored else {"score", "preScore"}):
            order.remove(pname)
            del specs[pname]
        else:
            notes.append(f"plugin {pname} disabled at {', '.join(sorted(points))} only in profile {name!r}: "
                         "kubegpu runs a plugin at every extension point it has, not modelled")  # fmt: skip
    for i, pc in enumerate(_seq(source, p.get("pluginConfig"), f"{field}.pluginConfig")):
        pc = _map(source, pc, f"{field}.pluginConfig[{i}]")
        cname = pc.get("name")
        args = dict(_map(source, pc.get("args"), f"{field}.pluginConfig[{i}].args"))
        if not isinstance(cname, str) or cname not in specs:
            continue  # args of a plugin the profile does not run do nothing
        if cname == names.POD_TOPOLOGY_SPREAD:  # checked here, where the file and field can be named
            spread_defaults(args, f"{source}: {KIND}: {field}.pluginConfig[{i}].args")
        if cname == names.VOLUME_BINDING and "shape" in args:
            notes.extend(
                _volume_shape(args, f"{source}: {KIND}: {field}.pluginConfig[{i}].args", name, kube_version)
            )
        extra = sorted(set(args) - _TYPE_META - MODELLED_ARGS.get(cname, frozenset()))
        if extra:
            notes.append(f"pluginConfig of {cname} in profile {name!r}: {', '.join(extra)} not modelled")
        specs[cname] = replace(specs[cname], args={**specs[cname].args, **args})
    return Profile(name, tuple(specs[n] for n in order), pct, kube_version, tuple(notes))


def _volume_shape(args: Mapping[str, Any], where: str, profile: str, kube_version: str | None) -> list[str]:
    """VolumeBinding's ``shape``: checked and modelled where StorageCapacityScoring is on by default (1.37);
    before, kube-scheduler accepts it only with ``--feature-gates=StorageCapacityScoring=true``, a flag kubegpu
    does not read, so the score it would turn on is said to be unmodelled."""
    rel = behaviour(kube_version)
    if rel.storage_capacity_scoring:
        parse_shape(args, where)
        return []
    return [f"pluginConfig of VolumeBinding in profile {profile!r}: shape (StorageCapacityScoring is off by default "
            f"in {rel.name}; the score a feature gate would turn on is not modelled)"]  # fmt: skip
