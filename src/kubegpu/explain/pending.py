"""Why is this pod Pending? The exact scheduler message, then the evidence behind each part (R11, R17).

``explain_pod`` runs one scheduling cycle without placing the pod, then groups nodes by the reason that
rejected them (by its text, as kube-scheduler's histogram does) and asks the reason kind's hooks
(``explain.causes``) for each node's evidence and each group's fix, pitfall and commands. Nothing here
reads a formatted reason: the hooks get the structured reason values.

Module map: ``explanation`` (the result as data), ``causes`` (evidence/advice per plugin's reasons),
``grants`` (devices of a schedulable pod), ``notes`` (pod-level pitfalls), this module (the cycle and
the grouping).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubegpu.batch.status import workload_status
from kubegpu.explain import causes, observed, schedulers
from kubegpu.explain.dra_binding import binding_wait
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import DeviceGrant, Explanation, NodeEvidence, ReasonGroup
from kubegpu.explain.grants import explain_devices
from kubegpu.explain.notes import pod_notes
from kubegpu.explain.unverified import unverified
from kubegpu.model.objects import Pod
from kubegpu.scheduler.reasons import Reason, render
from kubegpu.scheduler.status import Code

__all__ = ["DeviceGrant", "Explanation", "NodeEvidence", "ReasonGroup", "explain_pod", "pod_notes"]


def _recorded_condition(pod: Pod) -> str:
    cond = pod.scheduled_condition
    return cond[2] if cond and cond[0] == "False" else ""


def observed_for(engine: Engine, pod: Pod, exp: Explanation) -> dict[str, Any] | None:
    """The cluster's own FailedScheduling event / PodScheduled message for ``pod`` beside ``exp``."""
    obs = observed.seen(engine.snapshot, pod)
    if obs is None:
        return None
    mine = not exp.handled_by and not exp.waiting
    return observed.compare(
        engine.snapshot,
        pod,
        obs,
        exp.message if mine else "",
        exp.schedulable and mine,
        engine.profile.scheduler_name,
    ).to_dict()


def explain_pod(engine: Engine, pod: Pod) -> Explanation:
    """Explain ``pod`` against the engine's cluster state without changing it."""
    notes = pod_notes(engine, pod)
    modelled = engine.profile.scheduler_name
    who = schedulers.handling(engine.snapshot, pod, modelled)
    notes[:0] = who.notes
    # another scheduler's pod, or a gated one: the node checks run on the pod as every scheduler sees it
    checked = pod if who.modelled and not pod.scheduling_gates else schedulers.common_pod(pod, modelled)
    result = engine.scheduler.schedule_one(checked, assume=False)
    exp = Explanation(
        pod=pod.key,
        schedulable=result.scheduled,
        node=result.node,
        message=result.message,
        nominated_node=result.nominated_node,
        victims=[v.key for v in result.victims],
        notes=notes,
        recorded_message=_recorded_condition(pod),
        scheduler=pod.scheduler_name,
        handled_by=who.other,
        waiting=who.waiting,
        unverified=unverified(engine, pod, result.scheduled),
    )
    if engine.snapshot.dra.claims:
        exp.binding = binding_wait(pod, engine.snapshot.dra, engine.framework.handle.behaviour.minor)
    exp.observed = observed_for(engine, pod, exp)
    exp.devices_synthesized = any(m.synthesized for m in engine.devices.values())
    exp.queue = workload_status(engine.snapshot, pod)
    if result.node is not None:
        explain_devices(engine, pod, result.node, result.allocation, exp)
    diag = result.diagnosis
    if diag is None:
        return exp
    ctx = causes.Context(engine, checked)
    fw = engine.framework
    version = fw.version
    cluster_nodes = engine.cluster.nodes
    rejected = np.flatnonzero(diag.codes)
    all_codes = diag.codes.tolist()
    # thousands of nodes share a handful of (plugin, reason id) pairs: the nodes of each pair together,
    # their reasons named and rendered once and their evidence asked for as one batch
    by_key: dict[tuple[int, int] | None, list[int]] = {}
    for idx, evaluated, plugin_idx, rid in zip(
        rejected.tolist(),
        diag.evaluated[rejected].tolist(),
        diag.plugins[rejected].tolist(),
        diag.reason_ids[rejected].tolist(),
        strict=True,
    ):
        by_key.setdefault((plugin_idx, rid) if evaluated else None, []).append(idx)
    code_names = {c: Code(c).name for c in set(diag.codes[rejected].tolist())}
    slots: list[NodeEvidence | None] = [None] * len(cluster_nodes)
    # per reason text, each pair's (first node, reason, nodes) that renders it
    parts: dict[str, list[tuple[int, Reason, list[int]]]] = {}
    for key, idxs in by_key.items():
        if key is not None:
            plugin, reasons = fw.plugin_name(key[0]), fw.reason_values(key[1])
        else:
            plugin = diag.absent.plugin if diag.absent else ""
            reasons = diag.absent.reasons if diag.absent else ()
        texts = tuple(render(r, version) for r in reasons)  # the release reproduced, as the message
        kinds = tuple(r.kind for r in reasons)
        per_reason = [causes.evidence_many(ctx, r, idxs) for r in reasons]
        if len(per_reason) == 1:
            evidence = per_reason[0]
        else:
            evidence = [[line for lines in per_reason for line in lines[j]] for j in range(len(idxs))]
        for idx, lines in zip(idxs, evidence, strict=True):
            node = NodeEvidence(
                cluster_nodes[idx].name, plugin, list(texts), code_names[all_codes[idx]], lines, kinds
            )
            slots[idx] = node
        for r, text in zip(reasons, texts, strict=True):
            parts.setdefault(text, []).append((idxs[0], r, idxs))
    exp.nodes.extend(
        n for n in slots if n is not None
    )  # in node order, as the histogram and the JSON list them
    # grouped by text, as the FailedScheduling histogram counts them; the first node's reason speaks for
    # the group, whose nodes are in node order
    groups: dict[str, tuple[Reason, list[str]]] = {}
    for text, found in parts.items():
        found.sort(key=lambda part: part[0])
        idxs = found[0][2] if len(found) == 1 else sorted(i for part in found for i in part[2])
        groups[text] = (found[0][1], [cluster_nodes[i].name for i in idxs])
    for text in sorted(groups, key=lambda t: f"{len(groups[t][1])} {t}"):
        reason, nodes = groups[text]
        advice = causes.advice(ctx, reason, nodes)
        exp.groups.append(ReasonGroup(text, nodes, advice.fix, advice.pitfall, list(advice.commands)))
    if result.nominated_node:
        exp.notes.append(
            f"preemption: the pod would be nominated to {result.nominated_node} after evicting {', '.join(exp.victims)} "
            "(lower priority). Preemption is never free: check the victims' checkpoints and PDBs first."
        )
    return exp
