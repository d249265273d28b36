"""Why is this pod Pending? The exact scheduler message, then the evidence behind each part (R11, R17).

``explain_pod`` runs one scheduling cycle without placing the pod, then groups nodes by the reason that
rejected them (by its text, as kube-scheduler's histogram does) and asks the reason kind's hooks
(``explain.causes``) for each node's evidence and each group's fix, pitfall and commands. Nothing here
reads a formatted reason: the hooks get the structured reason values.

Module map: ``explanation`` (the result as data), ``causes`` (evidence/advice per plugin's reasons),
``grants`` (devices of a schedulable pod), ``notes`` (pod-level pitfalls), ``shared_evidence`` (node
evidence that pods explained against one engine share), this module (the cycle and the grouping).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from kubegpu.batch.status import workload_status
from kubegpu.explain import autoscalers, causes, observed, schedulers
from kubegpu.explain.dra import own_claims
from kubegpu.explain.dra_binding import binding_wait
from kubegpu.explain.dra_queue import not_queued
from kubegpu.explain.engine import Engine
from kubegpu.explain.explanation import DeviceGrant, Explanation, NodeEvidence, NodeList, ReasonGroup
from kubegpu.explain.grants import explain_devices
from kubegpu.explain.notes import pod_notes
from kubegpu.explain.preempting import terminating_victims
from kubegpu.explain.shared_evidence import EvidenceStore, Objects, store_for
from kubegpu.explain.unverified import unverified
from kubegpu.model.objects import Pod
from kubegpu.scheduler.framework import Diagnosis, Rows
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


def autoscaler_for(engine: Engine, pod: Pod) -> dict[str, Any] | None:
    """What Cluster Autoscaler or Karpenter said about ``pod`` (``explain.autoscalers``)."""
    said = autoscalers.said(engine.snapshot, pod)
    return said.to_dict() if said is not None else None


def explain_pod(engine: Engine, pod: Pod) -> Explanation:
    """Explain ``pod`` against the engine's cluster state without changing it."""
    notes = pod_notes(engine, pod)
    # nodes whose summed requests of what the pod asks for are held at the int64 bound, where
    # kube-scheduler's own sum may wrap
    notes.extend(engine.scheduler.cluster.saturated(r for r, v in pod.requests.items() if v))
    modelled = engine.profile.scheduler_name
    who = schedulers.handling(engine.snapshot, pod, modelled)
    notes[:0] = who.notes
    # another scheduler's pod, or a gated one: the node checks run on the pod as every scheduler sees it
    checked = pod if who.modelled and not pod.scheduling_gates else schedulers.common_pod(pod, modelled)
    result = engine.scheduler.schedule_one(checked, assume=False)
    doubts, ranking_only = unverified(engine, pod, result.scheduled)
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
        established=who.established,
        waiting=who.waiting,
        kueue=who.kueue,
        unverified=doubts,
        ranking_only=ranking_only,
    )
    if engine.snapshot.dra.claims:
        exp.binding = binding_wait(pod, engine.snapshot.dra, engine.framework.handle.behaviour.minor)
    if engine.snapshot.dra.pod_claims and who.modelled and not pod.scheduling_gates:
        exp.not_queued = not_queued(engine.framework.plugins, pod, engine.snapshot.dra)
    exp.claims = own_claims(pod, engine.snapshot.dra)
    exp.observed = observed_for(engine, pod, exp)
    exp.autoscaler = autoscaler_for(engine, pod)
    exp.devices_synthesized = any(m.synthesized for m in engine.devices.values())
    exp.queue = workload_status(engine.snapshot, pod)
    if result.node is not None:
        explain_devices(engine, pod, result.node, result.allocation, exp)
    diag = result.diagnosis
    if diag is None:
        return exp
    ctx = causes.Context(engine, checked)
    _add_node_evidence(engine, ctx, diag, exp)
    if (
        not result.scheduled
        and not result.nominated_node
        and (victims := terminating_victims(engine.snapshot, pod))
    ):
        exp.nominated_node, exp.victims, exp.preempting = (
            pod.nominated_node_name,
            [v.key for v in victims],
            True,
        )
        # (before the per-node advice, whose shortage fix would have the pod preempt again)
        exp.notes.append(
            f"preemption under way: kube-scheduler already evicted {', '.join(exp.victims)} (lower priority) on "
            f"{exp.nominated_node} for this pod and nominated it there; it binds when they have terminated. Wait "
            "for them: nothing in the per-node advice needs doing for this pod."
        )
    if who.if_short is not None and not result.scheduled and not exp.nominated_node:
        exp.established_from_checks = schedulers.establish_if_short(
            exp, pod, who, _refusals(engine, diag), engine.snapshot
        )
    if result.nominated_node:
        exp.notes.append(
            f"preemption: the pod would be nominated to {result.nominated_node} after evicting {', '.join(exp.victims)} "
            "(lower priority). Preemption is never free: check the victims' checkpoints and PDBs first."
        )
    return exp


def _add_node_evidence(engine: Engine, ctx: causes.Context, diag: Diagnosis, exp: Explanation) -> None:
    """Each rejected node's evidence (``exp.nodes``, in node order) and the nodes grouped by reason text
    (``exp.groups``, as the FailedScheduling histogram counts them), with each group's advice.

    Thousands of nodes share a handful of (plugin, reason id, code) triples: each triple's nodes are found
    with one sort, their reasons rendered once, and their ``NodeEvidence`` taken from the engine's
    ``EvidenceStore`` where the reason kinds say what of the pod their lines read (``Hooks.pod_part``):
    pods that differ elsewhere share the objects, built once per node."""
    fw = engine.framework
    version = fw.version
    store = store_for(engine)
    # the per-node verdicts, as one key: pods alike but for what no node's verdict turned on (their CPU or
    # memory where GPUs are short, say) have the same, and share the grouping and the list of evidence
    verdicts = b"".join(a.tobytes() for a in (diag.codes, diag.plugins, diag.reason_ids, diag.evaluated))
    rejected, triples = store.recent(("triples", verdicts), lambda: _triples(diag))
    # per reason text, each triple's (first node, reason, nodes) that renders it
    parts: dict[str, list[tuple[int, Reason, Rows]]] = {}
    shared: list[tuple[Hashable, Rows, Callable[[Rows], list[NodeEvidence]]]] = []
    own: list[tuple[Rows, Callable[[Rows], list[NodeEvidence]]]] = []  # built for this pod alone
    blocks: list[tuple[Rows, tuple[str, ...], Callable[[Rows], list[NodeEvidence]]]] = []  # (``NodeList``)
    for key, idxs in triples:
        plugin_idx, rid, code = key >> 40, (key >> 8) & 0xFFFFFFFF, key & 0xFF
        plugin, reasons = fw.plugin_name(plugin_idx), fw.reason_values(rid)
        texts = [render(r, version) for r in reasons]  # the release reproduced, as the message
        build = _builder(ctx, store, plugin, reasons, texts, Code(code).name)
        blocks.append((idxs, tuple(r.kind for r in reasons), build))
        part = causes.pod_part(ctx.pod, reasons)
        if part is None:
            own.append((idxs, build))
        else:
            shared.append(((plugin_idx, rid, code, part), idxs, build))
        for r, text in zip(reasons, texts, strict=True):
            parts.setdefault(text, []).append((int(idxs[0]), r, idxs))
    absent = rejected[
        ~diag.evaluated[rejected]
    ]  # not evaluated: the pod-level status (``diag.absent``) speaks
    if absent.size:
        plugin = diag.absent.plugin if diag.absent else ""
        reasons = diag.absent.reasons if diag.absent else ()
        texts = [render(r, version) for r in reasons]
        for code in sorted(set(diag.codes[absent].tolist())):
            idxs = absent[diag.codes[absent] == code]
            build = _builder(ctx, store, plugin, reasons, texts, Code(code).name)
            own.append((idxs, build))
            blocks.append((idxs, tuple(r.kind for r in reasons), build))
            for r, text in zip(reasons, texts, strict=True):
                parts.setdefault(text, []).append((int(idxs[0]), r, idxs))

    def evidence() -> list[NodeEvidence]:
        slots: Objects = np.empty(len(diag.codes), dtype=object)
        for key, idxs, build in shared:
            slots[idxs] = store.nodes(key, idxs, build)
        for idxs, build in own:
            slots[idxs] = build(idxs)
        listed: list[NodeEvidence] = slots[rejected].tolist()  # in node order, as the histogram and the JSON
        return listed

    # built when read (``NodeList``); without evidence of the pod's own, pods of the same verdicts and keys
    # share one list (as its objects: nobody changes either), which ``-o json`` encodes once
    cluster = engine.cluster

    def listed() -> NodeList:
        return NodeList(rejected, blocks, evidence, store.names, lambda: int(cluster.version.max(initial=0)))

    exp.nodes = listed() if own else store.recent(("evidence", verdicts, *(k for k, _, _ in shared)), listed)
    # the first node's reason speaks for its text's group, whose nodes are in node order
    groups: dict[str, tuple[Reason, list[str], list[tuple[Reason, list[str]]], Rows]] = {}
    for text, found in parts.items():
        found.sort(key=lambda found_part: found_part[0])
        idxs = found[0][2] if len(found) == 1 else np.sort(np.concatenate([f[2] for f in found]))
        nodes = store.names_of(idxs)
        by_reason = [(found[0][1], nodes)] if len(found) == 1 else _by_reason(store, found)
        groups[text] = (found[0][1], nodes, by_reason, idxs)
    for text in sorted(groups, key=lambda t: f"{len(groups[t][1])} {t}"):
        reason, nodes, by_reason, idxs = groups[text]
        advice = causes.advice_group(ctx, reason, nodes, by_reason)
        exp.groups.append(ReasonGroup(text, nodes, advice.fix, advice.pitfall, list(advice.commands), idxs))


def _refusals(engine: Engine, diag: Diagnosis) -> dict[str, tuple[Reason, ...]]:
    """Each node the checks evaluated and refused, with its reasons (for ``schedulers.establish_if_short``)."""
    rows = diag.codes.nonzero()[0]
    rows = rows[diag.evaluated[rows]]
    names = store_for(engine).names
    fw = engine.framework
    return {str(names[i]): fw.reason_values(int(diag.reason_ids[i])) for i in rows.tolist()}


def _triples(diag: Diagnosis) -> tuple[Rows, list[tuple[int, Rows]]]:
    """The rejected rows, and the evaluated ones per (plugin, reason id, code) triple, as one integer each
    (``plugin << 40 | reason id << 8 | code``) with its rows in node order, in the triples' order: found
    with one sort."""
    rejected = diag.codes.nonzero()[0]
    rows = rejected[diag.evaluated[rejected]]
    if not rows.size:
        return rejected, []
    # plugin < 2**15, reason id < 2**31, code < 2**8
    triple = diag.plugins[rows].astype(np.int64) << 40
    triple |= diag.reason_ids[rows].astype(np.int64) << 8
    triple |= diag.codes[rows].astype(np.int64)
    order = np.argsort(triple, kind="stable")  # one sort: each triple's nodes together, in node order
    ordered = triple[order]
    split = (ordered[1:] != ordered[:-1]).nonzero()[0] + 1  # where the next triple begins
    keys = ordered[np.concatenate(([0], split))]
    return rejected, list(zip(keys.tolist(), np.split(rows[order], split), strict=True))


def _by_reason(store: EvidenceStore, found: list[tuple[int, Reason, Rows]]) -> list[tuple[Reason, list[str]]]:
    """A reason text's (reason, nodes) per distinct reason behind it, most nodes first (ties: the first node
    in node order), nodes in node order."""
    rows: dict[Reason, list[Rows]] = {}
    for _, r, idxs in found:  # (sorted by first node)
        rows.setdefault(r, []).append(idxs)
    out = [(r, np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0]) for r, parts in rows.items()]
    out.sort(key=lambda rn: -len(rn[1]))  # stable: ties keep node order
    return [(r, store.names_of(idxs)) for r, idxs in out]


def _builder(
    ctx: causes.Context,
    store: EvidenceStore,
    plugin: str,
    reasons: tuple[Reason, ...],
    texts: list[str],
    code: str,
) -> Callable[[Rows], list[NodeEvidence]]:
    """What builds the ``NodeEvidence`` of nodes refused by ``plugin`` with ``reasons`` (rendered:
    ``texts``, one list for all of them: never changed) and ``code``; the lines per node."""
    kinds = tuple(r.kind for r in reasons)

    def build(idxs: Rows) -> list[NodeEvidence]:
        at = idxs.tolist()
        per_reason = [causes.evidence_many(ctx, r, at) for r in reasons]
        if len(per_reason) == 1:
            evidence = per_reason[0]
        else:
            evidence = [[line for lines in per_reason for line in lines[j]] for j in range(len(at))]
        names = store.names[idxs].tolist()
        return [
            NodeEvidence(name, plugin, texts, code, lines, kinds)
            for name, lines in zip(names, evidence, strict=True)
        ]

    return build
