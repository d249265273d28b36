"""Plans for label, taint, cordon and drain changes on GPU nodes (R5.3, R5.4, R14.4, R15.3).

Each plan: the scope (nodes, running pods and their controllers, DaemonSets that do not tolerate a new
taint, pods whose required affinity involves a changed label, PDBs and checkpoint annotations at risk),
the effect as the scheduling core computes it on the changed snapshot (``plan.effect``), and a runbook
— record, ``--dry-run=server`` then the change on a canary node chosen by least disruption, verify,
the remaining nodes, and the rollback. Every ``kubectl`` line carries ``-n <namespace>``.

The pool-wide plans (``plan.upgrade``, ``plan.kubelet_policy``) share its canary choice, ``drain_checks``
(kubectl drain's refusals, PDBs, checkpoints) and ``canary_change``. The R17 pitfalls a change walks into
(``plan.pitfalls``) come with every plan: ``details.pitfalls`` and the warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from kubegpu.explain.kubectl import mutate
from kubegpu.model.gpu_facts import label_writer, taint_writer
from kubegpu.model.names import NVIDIA_PREFIX
from kubegpu.model.objects import Node, Pod, Taint
from kubegpu.model.podgroup import LAST_CHECKPOINT_ANNOTATION, eviction_cost
from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.plan.effect import Effect, simulate
from kubegpu.plan.inputs import check_key_value, check_namespace
from kubegpu.plan.pitfalls import (
    Pitfall,
    flagged,
    scattered_pods,
    tolerating_without_gpu,
    without_allocatable,
)
from kubegpu.plan.procedure import AffectedPod, NodeChange, Step, gpu_capacity, label_node


def gpu_pods(snapshot: ClusterSnapshot, node: str) -> list[Pod]:
    return [
        p
        for p in snapshot.pods_on(node)
        if any(r.startswith(NVIDIA_PREFIX) and v for r, v in p.requests.items())
    ]


def choose_canary(
    snapshot: ClusterSnapshot,
    nodes: Sequence[Node],
    now: datetime,
    pods_of: Callable[[str], list[Pod]] | None = None,
) -> tuple[Node, str]:
    """Least disruption first: fewest GPU pods (``pods_of``: the pods the change moves), then fewest
    GPU-hours at risk, then name."""

    def cost(n: Node) -> tuple[int, int, str]:
        pods = (pods_of or (lambda name: gpu_pods(snapshot, name)))(n.name)
        return len(pods), sum(eviction_cost(p, now) for p in pods), n.name

    best = min(nodes, key=cost)
    count, seconds, _ = cost(best)
    return (
        best,
        f"{best.name} runs {count} GPU pod(s) with {seconds / 3600:.1f} GPU-hours at risk, the least of {len(nodes)}",
    )


def moved_pods(pods: Sequence[Pod], stays_lost: Collection[str] = ()) -> tuple[AffectedPod, ...]:
    """The GPU pods a change evicts; one returns when a controller recreates it and it is not in ``stays_lost``."""
    out = []
    for p in pods:
        used = {r: v // 1000 for r, v in p.requests.items() if r.startswith(NVIDIA_PREFIX) and v}
        if not used:
            continue
        owner = f"{p.owner.kind}/{p.owner.name}" if p.owner else ""
        out.append(
            AffectedPod(p.namespace, p.name, used, owner, p.owner is not None and p.key not in stays_lost)
        )
    return tuple(out)


def canary_change(kind: str, snapshot: ClusterSnapshot, targets: Sequence[Node], canary: Node, why: str,
                  effect: Effect, summary: str, affected: tuple[AffectedPod, ...], steps: Sequence[Step],
                  rollback: Sequence[Step], warnings: Sequence[str], scope: Mapping[str, Any],
                  pitfalls: Sequence[Pitfall] = (), **details: Any) -> NodeChange:  # fmt: skip
    """The ``NodeChange`` of a change rolled over several nodes from a canary, with the core's effect and
    the R17 pitfalls it walks into (``pitfalls``, and the pods it leaves scattered: ``plan.pitfalls``)."""
    change = NodeChange(
        kind=kind,
        node=canary.name,
        summary=summary,
        capacity_before={r: b for r, (b, _) in effect.capacity.items()} or total_capacity(snapshot.nodes),
        capacity_after={r: a for r, (_, a) in effect.capacity.items()} or total_capacity(snapshot.nodes),
        affected=affected,
        steps=tuple(steps),
        rollback=tuple(rollback),
        warnings=tuple(warnings),
        details={
            "nodes": [n.name for n in targets],
            "canary": canary.name,
            "canary_reason": why,
            "scope": dict(scope),
            "effect": effect.as_dict(),
            **details,
        },
    )
    return flagged(change, [*pitfalls, *scattered_pods(effect)])


def pdb_warnings(snapshot: ClusterSnapshot, evicted: Sequence[Pod], *, deleted: bool = False,
                 by_taint: bool = False) -> list[str]:  # fmt: skip
    """PDBs the change would break; ``deleted``: the runbook deletes pods, which no PDB stops; ``by_taint``:
    the taint eviction controller deletes them (``Pods().Delete``, not the Eviction API), so no PDB is
    consulted and every pod it names goes, however few disruptions the budget allows."""
    consequence = (
        "`kubectl delete pod` does not consult PDBs, so delete them one at a time and wait for each "
        "replacement to be Ready"
        if deleted
        else "the Eviction API will refuse the rest until replacements are Ready — drain waits; never --force "
        "or --disable-eviction blindly"
    )
    out = []
    for pdb in snapshot.pdbs:
        hit = [p for p in evicted if pdb.selects(p)]
        allowed = pdb.disruptions_allowed or 0
        if len(hit) > allowed and by_taint:
            out.append(
                f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows {allowed} disruption(s) and does not stop "
                f"this: the taint eviction controller deletes pods directly, without the Eviction API, so "
                f"{len(hit)} of its pods go ({', '.join(p.key for p in hit)})"
            )
        elif len(hit) > allowed:
            out.append(
                f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows {allowed} disruption(s) but the change evicts "
                f"{len(hit)} of its pods ({', '.join(p.key for p in hit)}): {consequence}"
            )
    return out


def checkpoint_warnings(evicted: Sequence[Pod]) -> list[str]:
    unsaved = [p.key for p in evicted if p.requests and LAST_CHECKPOINT_ANNOTATION not in p.annotations
               and any(r.startswith(NVIDIA_PREFIX) for r in p.requests)]  # fmt: skip
    if not unsaved:
        return []
    return [
        f"no checkpoint recorded for GPU pods {', '.join(unsaved)}: evicting them loses all work since start"
    ]


# PDB-aware (the Eviction API), keeps emptyDir data unless told otherwise, and no --force
DRAIN = "drain {node} --ignore-daemonsets --delete-emptydir-data=false --timeout=15m"
# kubectl drain's refusals, byte for byte (k8s.io/kubectl/pkg/drain/filters.go)
DRAIN_UNMANAGED = "cannot delete Pods that declare no controller (use --force to override)"
DRAIN_LOCAL_STORAGE = "cannot delete Pods with local storage (use --delete-emptydir-data to override)"


def _raw_pod(snapshot: ClusterSnapshot, pod: Pod) -> Mapping[str, Any]:
    """The pod as the snapshot stored it ({} when absent)."""
    return snapshot.raw_object("Pod", pod.namespace, pod.name)


def _uses_empty_dir(snapshot: ClusterSnapshot, pod: Pod) -> bool:
    """Whether the pod mounts an emptyDir volume (read from the pod as the snapshot stored it)."""
    spec = _raw_pod(snapshot, pod).get("spec") or {}
    return any("emptyDir" in (v or {}) for v in spec.get("volumes") or ())


def toleration_seconds(snapshot: ClusterSnapshot, pod: Pod, taint: Taint) -> int | None:
    """How long the taint eviction controller lets ``pod`` stay under NoExecute ``taint`` it tolerates:
    ``getMinTolerationTime`` (pkg/controller/tainteviction/taint_eviction.go) over the tolerations that
    match it — the least tolerationSeconds, 0 when one is <= 0, None (forever) when none sets it."""
    least: int | None = None
    for t in pod.tolerations:
        if t.seconds is None or not t.tolerates(taint):
            continue
        least = 0 if t.seconds <= 0 else t.seconds if least is None else min(least, t.seconds)
        if least == 0:
            return 0
    return least


def drain_outcome(snapshot: ClusterSnapshot, node: str) -> tuple[list[Pod], list[Pod], list[str]]:
    """What ``kubectl drain`` (as ``DRAIN`` runs it) does on ``node``: the pods it evicts, the pods it leaves
    (refused or blocked) and why, before anyone adds --force.

    DaemonSet pods stay (``--ignore-daemonsets``). A bare pod (``unreplicatedFilter``) or an emptyDir user
    with --delete-emptydir-data=false (``localStorageFilter``) is a fatal error of ``GetPodsForDeletion``
    (k8s.io/kubectl pkg/drain/filters.go): drain cordons, then evicts nothing on that node. Otherwise each
    PDB lets ``status.disruptionsAllowed`` of its pods go (maxUnavailable 0: none) and the Eviction API
    answers 429 for the rest until replacements are Ready, or drain's --timeout ends (R14.3, R15.3).
    Which of a PDB's pods go first is the API server's order; the plan takes them in pod order.
    """
    pods = [p for p in snapshot.pods_on(node) if not (p.owner is not None and p.owner.kind == "DaemonSet")]
    out = []
    bare = [p.key for p in pods if p.owner is None]
    if bare:
        out.append(f"{node}: drain refuses: {DRAIN_UNMANAGED}: {', '.join(bare)}. Save their manifests and "
                   "recreate them elsewhere, or delete them knowingly; never add --force blindly")  # fmt: skip
    local = [p.key for p in pods if _uses_empty_dir(snapshot, p)]
    if local:
        out.append(f"{node}: drain refuses: {DRAIN_LOCAL_STORAGE}: {', '.join(local)}. Their emptyDir data is "
                   "lost on eviction: copy what matters first, then add --delete-emptydir-data")  # fmt: skip
    if bare or local:
        out.append(f"{node}: so drain cordons it and evicts none of its {len(pods)} pod(s)")
        return [], pods, out + checkpoint_warnings(pods)
    evicted: list[Pod] = []
    blocked: list[Pod] = []
    budget = {(b.namespace, b.name): b.disruptions_allowed or 0 for b in snapshot.pdbs}
    for p in pods:
        mine = [b for b in snapshot.pdbs if b.selects(p)]
        if all(budget[(b.namespace, b.name)] > 0 for b in mine):
            for b in mine:
                budget[(b.namespace, b.name)] -= 1
            evicted.append(p)
        else:
            blocked.append(p)
    for b in snapshot.pdbs:
        held = [p.key for p in blocked if b.selects(p)]
        if held:
            out.append(
                f"{node}: PodDisruptionBudget {b.namespace}/{b.name} allows {b.disruptions_allowed or 0} "
                f"disruption(s): the Eviction API refuses {', '.join(held)} (429) until replacements are Ready; "
                "drain retries until --timeout, then fails; never --force or --disable-eviction blindly"
            )
    return evicted, blocked, out + checkpoint_warnings(pods)  # blocked ones go too once the PDB allows


def drain_checks(snapshot: ClusterSnapshot, node: str) -> tuple[list[Pod], list[str]]:
    """The pods ``kubectl drain`` would try to evict from ``node`` and what stops it (``drain_outcome``)."""
    evicted, blocked, out = drain_outcome(snapshot, node)
    return evicted + blocked, out


# A command for every node (a template with ``{node}``), or each node's own command (absent: nothing to do).
NodeCommand = str | Mapping[str, str]


def _mutate_on(ns: str, command: NodeCommand, node: str) -> tuple[str, ...]:
    if isinstance(command, str):
        return mutate(ns, command.format(node=node))
    return mutate(ns, command[node]) if node in command else ()


def _change(
    kind: str, snapshot: ClusterSnapshot, targets: Sequence[Node], changed: dict[str, Node], evicted: list[Pod],
    now: datetime, summary: str, apply_cmd: NodeCommand, rollback_cmd: NodeCommand, verify: Sequence[str],
    warnings: list[str], scope: dict[str, Any], ns: str, pitfalls: Sequence[Pitfall] = (), owner: str = "",
) -> NodeChange:  # fmt: skip
    """The runbook around ``apply_cmd``/``rollback_cmd``; ``warnings`` already carry the PDB and checkpoint
    risks of ``evicted`` as the change meets them (the Eviction API, or a plain delete). ``owner``: who owns
    what the change touches; then no mutating line is printed, only why (it would be reverted)."""
    acting = [n for n in targets if isinstance(apply_cmd, str) or n.name in apply_cmd]
    canary, why = choose_canary(snapshot, acting or targets, now)
    effect: Effect = simulate(snapshot, changed, {p.key for p in evicted}, now)
    others = [n for n in targets if n.name != canary.name]
    evicted_here = [p for p in evicted if p.node_name == canary.name]
    steps = [
        Step(
            "Record the nodes and what runs on them (the Node YAML is for comparison, not to re-apply)",
            tuple(
                [f"kubectl -n {ns} get node {n.name} -o yaml > {n.name}-before.yaml" for n in targets]
                + [
                    f"kubectl -n {ns} get pods -A -o wide --field-selector spec.nodeName={n.name}"
                    for n in targets
                ]
            ),
        ),
    ]
    if owner:
        steps.append(Step("No runbook: its owner would undo the change (the first warning says who and why)"))
        rollback: tuple[Step, ...] = (Step("Nothing to undo: no change is proposed"),)
        return canary_change(kind, snapshot, targets, canary, why, effect, summary, moved_pods(evicted), steps,
                             rollback, [owner, *warnings], scope, pitfalls)  # fmt: skip
    steps += [
        Step(f"Canary: {canary.name} ({why})", _mutate_on(ns, apply_cmd, canary.name)),
        Step(
            "Verify on the canary",
            tuple(c.format(node=canary.name) for c in verify),
            f"expected: {len(evicted_here)} pod(s) evicted here; pending pods predicted to change: "
            f"{len(effect.newly_pending) + len(effect.newly_schedulable)}",
        ),
    ]
    if others:
        steps.append(Step(
            "The remaining nodes, one at a time, verifying each",
            tuple(c for n in others for c in _mutate_on(ns, apply_cmd, n.name)),
        ))  # fmt: skip
    rollback = (
        Step(
            "Undo, canary first",
            tuple(c for n in [canary, *others] for c in _mutate_on(ns, rollback_cmd, n.name)),
        ),
    )
    return canary_change(kind, snapshot, targets, canary, why, effect, summary, moved_pods(evicted), steps, rollback,
                         warnings, scope, pitfalls)  # fmt: skip


def total_capacity(nodes: Sequence[Node]) -> dict[str, int]:
    total: dict[str, int] = {}
    for n in nodes:
        for r, v in gpu_capacity(n).items():
            total[r] = total.get(r, 0) + v
    return total


def _affinity_keys(p: Pod) -> set[str]:
    return {*p.node_selector, *(r.key for t in p.required_affinity or () for r in t.match_expressions)}


def plan_label(snapshot: ClusterSnapshot, targets: Sequence[Node], key: str, value: str | None, now: datetime,
               ns: str = "default") -> NodeChange:  # fmt: skip
    """Set ``key=value`` (or remove ``key`` when value is None) on the nodes.

    The rollback is one command per node that puts that node's own old value back (``key=<old>
    --overwrite``), or removes the key where the node had none; nodes already as asked are left out.
    """
    check_key_value("label", key, value)
    check_namespace(ns)
    changed = {}
    apply_cmd: dict[str, str] = {}
    rollback_cmd: dict[str, str] = {}
    unchanged: list[str] = []
    for n in targets:
        labels = dict(n.labels)
        old = labels.get(key)
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
        changed[n.name] = replace(n, labels=labels)
        if old == value:
            unchanged.append(n.name)
            continue
        apply_cmd[n.name] = label_node(n.name, key, value)
        rollback_cmd[n.name] = label_node(n.name, key, old)
    running = [p for n in targets for p in snapshot.pods_on(n.name) if key in _affinity_keys(p)]
    warnings = []
    writer = label_writer(key)
    owner = (
        f"{key} is written by {writer} from what the node is, and it writes its value back: the change does not "
        "make the node what the label says, and pods selecting the new value would land on hardware or a place "
        "they did not ask for. Select on a label people set (a pool label) instead"
        if writer
        else ""
    )
    if running:
        warnings.append(
            f"running pods select on {key} ({', '.join(p.key for p in running)}): node affinity is "
            "IgnoredDuringExecution, so they keep running, but a restart would not bring them back here"
        )
    if unchanged:
        state = "do not have" if value is None else "already have"
        what = key if value is None else f"{key}={value}"
        warnings.append(
            f"{', '.join(unchanged)} {state} {what}: nothing to do there, left out of the runbook"
        )
    summary = f"{'remove' if value is None else 'set'} label {key}{'' if value is None else '=' + value} on {len(apply_cmd)} node(s)"
    return _change("label", snapshot, targets, changed, [], now, summary, apply_cmd, rollback_cmd,
                   [f"kubectl -n {ns} get node {{node}} -L {key}"], warnings,
                   {"pods_selecting_key": [p.key for p in running], "unchanged": unchanged}, ns,
                   without_allocatable(targets, key, value), owner)  # fmt: skip


def _taint_spec(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def plan_taint(snapshot: ClusterSnapshot, targets: Sequence[Node], taint: Taint, remove: bool, now: datetime,
               ns: str = "default") -> NodeChange:  # fmt: skip
    """Add (or remove) ``taint``; NoExecute evicts every running pod that does not tolerate it.

    kubectl matches taints by key and effect: adding one a node already has with another value is refused
    unless ``--overwrite`` is given (then it replaces that value), so the runbook adds ``--overwrite`` on
    exactly those nodes and its rollback puts the old value back; removing restores each node's own value.
    Nodes that already have the taint as asked (or, for a removal, lack it) are left out of the runbook.

    NoExecute: the taint eviction controller deletes every pod that does not tolerate it at once, and a pod
    that tolerates it with tolerationSeconds after that long (``toleration_seconds``), with a plain delete,
    so PDBs are not consulted (pkg/controller/tainteviction/taint_eviction.go). A taint a controller or the
    cloud provider owns (``gpu_facts.taint_writer``) gets no runbook: the owner would undo it.
    """
    check_key_value("taint", taint.key, taint.value)
    check_namespace(ns)
    changed = {}
    evicted: list[Pod] = []
    daemonsets: dict[str, list[str]] = {}
    spec = _taint_spec(taint)
    undo = f"{taint.key}:{taint.effect}-"
    apply_cmd: dict[str, str] = {}
    rollback_cmd: dict[str, str] = {}
    unchanged: list[str] = []
    replaced: list[str] = []
    later: list[str] = []
    for n in targets:
        old = next((t for t in n.taints if (t.key, t.effect) == (taint.key, taint.effect)), None)
        taints = tuple(t for t in n.taints if (t.key, t.effect) != (taint.key, taint.effect))
        changed[n.name] = replace(n, taints=taints if remove else (*taints, taint))
        if remove:
            if old is None:
                unchanged.append(n.name)
            else:
                apply_cmd[n.name] = f"taint node {n.name} {undo}"
                rollback_cmd[n.name] = f"taint node {n.name} {_taint_spec(old)}"
            continue
        if old is not None and old.value == taint.value:
            unchanged.append(n.name)
            continue
        if old is None:
            apply_cmd[n.name] = f"taint node {n.name} {spec}"
            rollback_cmd[n.name] = f"taint node {n.name} {undo}"
        else:
            replaced.append(f"{n.name} ({_taint_spec(old)})")
            apply_cmd[n.name] = f"taint node {n.name} {spec} --overwrite"
            rollback_cmd[n.name] = f"taint node {n.name} {_taint_spec(old)} --overwrite"
        for p in snapshot.pods_on(n.name):
            if p.tolerates(taint):
                seconds = toleration_seconds(snapshot, p, taint) if taint.effect == "NoExecute" else None
                if seconds is not None:
                    evicted.append(p)
                    later.append(f"{p.key} after {seconds}s")
                continue
            if p.owner is not None and p.owner.kind == "DaemonSet":
                daemonsets.setdefault(f"{p.namespace}/{p.owner.name}", []).append(n.name)
            if taint.effect == "NoExecute":
                evicted.append(p)
    warnings = [
        f"DaemonSet {ds} does not tolerate {spec}: its pods on {', '.join(nodes)} "
        + ("are evicted now" if taint.effect == "NoExecute" else "keep running but are not recreated there")
        + " (logging, networking, storage or the device plugin itself may be among them)"
        for ds, nodes in sorted(daemonsets.items())
    ]
    if later:
        warnings.append(
            f"pods tolerating {spec} with tolerationSeconds are deleted by the taint eviction controller once it "
            f"runs out: {', '.join(later)}; the plan counts them as evicted"
        )
    if replaced:
        warnings.append(
            f"{', '.join(replaced)} already carry {taint.key} with effect {taint.effect} and another value: "
            "kubectl refuses to change it without --overwrite, so those lines carry it, and the rollback "
            "puts each old value back"
        )
    if unchanged:
        state = "do not have" if remove else "already have"
        warnings.append(
            f"{', '.join(unchanged)} {state} {spec}: nothing to do there, left out of the runbook"
        )
    if not remove and taint.effect != "NoExecute":
        warnings.append(
            "a NoSchedule/PreferNoSchedule taint evicts nothing; it only stops new pods that do not tolerate it"
        )
    warnings += pdb_warnings(snapshot, evicted, by_taint=True) + checkpoint_warnings(evicted)
    writer = taint_writer(taint.key)
    owner = (
        f"{taint.key} is put on and taken off by {writer}: {'removing' if remove else 'adding'} it by hand is not "
        f"the fix and {writer} reverts it on its next pass; change the condition it reads instead"
        if writer
        else ""
    )
    summary = f"{'remove' if remove else 'add'} taint {spec} on {len(apply_cmd)} node(s)"
    return _change("taint", snapshot, targets, changed, evicted, now, summary, apply_cmd, rollback_cmd,
                   [f"kubectl -n {ns} get node {{node}} -o jsonpath='{{{{.spec.taints}}}}'"], warnings,
                   {"daemonsets_not_tolerating": sorted(daemonsets), "unchanged": unchanged}, ns,
                   [] if remove else tolerating_without_gpu(snapshot, targets, taint), owner)  # fmt: skip


def plan_drain(snapshot: ClusterSnapshot, targets: Sequence[Node], now: datetime, *, evict: bool = True,
               ns: str = "default") -> NodeChange:  # fmt: skip
    """Cordon (and, with ``evict``, drain) the nodes: what ``kubectl drain`` evicts and what it leaves
    (``drain_outcome``). The rollback uncordons only the nodes that were schedulable before."""
    check_namespace(ns)
    changed = {n.name: replace(n, unschedulable=True) for n in targets}
    was_cordoned = [n.name for n in targets if n.unschedulable]
    evicted: list[Pod] = []
    blocked: list[Pod] = []
    warnings: list[str] = []
    if evict:
        for n in targets:
            gone, held, why = drain_outcome(snapshot, n.name)
            evicted += gone
            blocked += held
            warnings += why
        apply_cmd: NodeCommand = DRAIN
        summary = (
            f"drain {len(targets)} node(s): cordon, then evict {len(evicted)} pod(s) through the Eviction API"
            + (f"; {len(blocked)} pod(s) stay: drain refuses or a PDB blocks them" if blocked else "")
        )
        warnings.insert(0, "drain respects PDBs through the Eviction API and waits; never add --force or "
                           "--disable-eviction blindly: bare pods and local data are lost")  # fmt: skip
    else:
        apply_cmd = {n.name: f"cordon {n.name}" for n in targets if not n.unschedulable}
        summary = f"cordon {len(apply_cmd)} node(s): moves nothing, stops new pods"
    if was_cordoned:
        warnings.append(
            f"{', '.join(was_cordoned)} {'was' if len(was_cordoned) == 1 else 'were'} cordoned before this plan: "
            "the rollback leaves them cordoned (whoever cordoned them still needs them so)"
        )
    rollback_cmd = {n.name: f"uncordon {n.name}" for n in targets if not n.unschedulable}
    scope: dict[str, Any] = {"pods_evicted": [p.key for p in evicted]}
    if evict:
        scope["pods_staying"] = [p.key for p in blocked]
    scope["cordoned_before"] = was_cordoned
    return _change("drain" if evict else "cordon", snapshot, targets, changed, evicted, now, summary, apply_cmd,
                   rollback_cmd, [f"kubectl -n {ns} get node {{node}}",
                                  f"kubectl -n {ns} get pods -A -o wide --field-selector spec.nodeName={{node}}"],
                   warnings, scope, ns)  # fmt: skip
