"""Evidence and advice per reason kind, one module per scheduler plugin (``explain`` owns the words).

A plugin's Filter returns structured reasons (``kubegpu.scheduler.reasons``); the module here named
after the plugin turns each of its kinds into evidence (per node: the numbers behind the reason) and
advice (per group of nodes: fix, pitfall, commands), reading the reason's data and the cluster state,
never the formatted text. ``evidence`` and ``advice`` below dispatch on the reason's type.

May import ``kubegpu.scheduler``, ``kubegpu.devices``, ``kubegpu.model`` and the rest of ``explain``;
the scheduler never imports this package.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from kubegpu.explain.causes import affinity, devices, dra, node, pod_affinity, resources, taints, volumes
from kubegpu.explain.causes.base import NO_ADVICE, Advice, Context, Hooks
from kubegpu.model.objects import Pod
from kubegpu.scheduler.reasons import Reason

HOOKS: Mapping[type[Reason], Hooks] = {
    **resources.HOOKS,
    **taints.HOOKS,
    **affinity.HOOKS,
    **node.HOOKS,
    **devices.HOOKS,
    **dra.HOOKS,
    **pod_affinity.HOOKS,
    **volumes.HOOKS,
}


def evidence(ctx: Context, reason: Reason, idx: int) -> list[str]:
    """Evidence lines for ``reason`` on node ``idx`` (empty where a kind has none)."""
    hooks = HOOKS.get(type(reason))
    return hooks.evidence(ctx, reason, idx) if hooks and hooks.evidence else []


def evidence_many(ctx: Context, reason: Reason, idxs: list[int]) -> list[list[str]]:
    """``evidence`` for each node of ``idxs`` (one list per node), through the kind's batch hook if it has one."""
    hooks = HOOKS.get(type(reason))
    if hooks is None or hooks.evidence is None:
        return [[] for _ in idxs]
    if hooks.evidence_many is not None:
        return hooks.evidence_many(ctx, reason, idxs)
    one = hooks.evidence
    return [one(ctx, reason, idx) for idx in idxs]


def pod_part(pod: Pod, reasons: tuple[Reason, ...]) -> Hashable | None:
    """What of ``pod`` the evidence lines of ``reasons`` depend on (beyond their values and the node), for
    pods to share them; None when a kind's lines may read anything of the pod."""
    parts = []
    for reason in reasons:
        hooks = HOOKS.get(type(reason))
        if hooks is None or hooks.evidence is None:
            continue  # no lines at all
        if hooks.pod_part is None:
            return None
        parts.append(hooks.pod_part(pod))
    return tuple(parts)


def advice(ctx: Context, reason: Reason, nodes: list[str]) -> Advice:
    """Advice for the nodes that ``reason`` rejected (``nodes`` in cluster order, never empty)."""
    hooks = HOOKS.get(type(reason))
    return hooks.advice(ctx, reason, nodes) if hooks and hooks.advice else NO_ADVICE


def advice_group(
    ctx: Context, reason: Reason, nodes: list[str], parts: list[tuple[Reason, list[str]]]
) -> Advice:
    """Advice for the ``nodes`` of one reason text, ``reason`` the first node's: ``parts`` is (reason, its
    nodes) per distinct reason behind the text, most nodes first. One, except where a release words several
    alike (1.34+ says "untolerated taint(s)" for every taint): there the kind's ``advice_many`` speaks for
    each; a kind without one is advised on by the first node's reason, as for a single reason."""
    if len(parts) > 1:
        hooks = HOOKS.get(type(parts[0][0]))
        if hooks is not None and hooks.advice_many is not None:
            return hooks.advice_many(ctx, parts)
    return advice(ctx, reason, nodes)


__all__ = ["Advice", "Context", "advice", "advice_group", "evidence", "evidence_many", "pod_part"]
